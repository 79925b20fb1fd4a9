import assert from "node:assert/strict";
import test from "node:test";

import { binFor, GAIN_HALF, legendFor, unitBin } from "../src/colors.js";
import { inUnit, UnitStats } from "../src/levels.js";
import { parseControl } from "../src/panel.js";
import { TokenStore } from "../src/store.js";
import { unitDetails } from "../src/tooltip.js";

const LN2 = Math.LN2;
// "Hi there. Bye" -> tokens "Hi" " there" "." " Bye"; words Hi / there. / Bye; 2 sentences
const TEXT = "Hi there. Bye";

function store() {
  const st = new TokenStore();
  st.reset(1, 4, 0);
  st.setLevels(
    {
      word: { start16: Int32Array.from([0, 3, 10]), end16: Int32Array.from([2, 9, 13]) },
      sentence: { start16: Int32Array.from([0, 10]), end16: Int32Array.from([9, 13]) },
    },
    {},
  );
  const f = {
    token_ids: Int32Array.from([1, 2, 3, 4]),
    start16: Int32Array.from([0, 2, 8, 9]),
    end16: Int32Array.from([2, 8, 9, 13]),
    surprisal: Float32Array.from([LN2, 2 * LN2, 3 * LN2, 4 * LN2]), // 1, 2, 3, 4 bits
    entropy: new Float32Array(4),
    rank: Int32Array.from([1, 1, 1, 1]),
    context_length: Int32Array.from([1, 2, 3, 4]),
    units: Int32Array.from([1, 2, 2, 1, 6, 6, 0, 1, 1, 1, 4, 4]), // words, chars, bytes
    topk_ids: new Int32Array(0),
    topk_probs: new Float32Array(0),
    word: Int32Array.from([0, 1, 1, 2]),
    sentence: Int32Array.from([0, 0, 0, 1]),
    bow_prob: new Float32Array(4).fill(NaN),
    context_gain: Float32Array.from([LN2, -LN2, 0, 2 * LN2]),
  };
  // in two chunks: the word "there." is split across them
  const pick = (a, b) => Object.fromEntries(Object.entries(f).map(([k, v]) => [k, k === "units" ? v.slice(a * 3, b * 3) : v.slice(a, b)]));
  st.applyChunk(1, { start: 0, count: 2, topK: 0, fields: pick(0, 2) }, {});
  return { st, rest: () => st.applyChunk(1, { start: 2, count: 2, topK: 0, fields: pick(2, 4) }, {}) };
}

test("word sums follow chunks; a sentence is coloured by its mean surprisal per word", () => {
  const { st, rest } = store();
  const words = new UnitStats(st, "word").update();
  assert.ok(Math.abs(inUnit(words.value(1), "bits") - 2) < 1e-6); // only " there" so far
  rest();
  words.update();
  assert.deepEqual([0, 1, 2].map((u) => Math.round(inUnit(words.value(u), "bits") * 1e6) / 1e6), [1, 5, 4]);
  assert.deepEqual([...words.first], [0, 1, 3]);
  assert.deepEqual([...words.last], [0, 2, 3]);
  const sents = new UnitStats(st, "sentence").update();
  // sentence 0: 6 bits over 2 words = 3 bits per word; sentence 1: 4 bits, 1 word
  assert.ok(Math.abs(sents.value(0) / LN2 - 3) < 1e-6);
  assert.ok(Math.abs(sents.value(1) / LN2 - 4) < 1e-6);
  assert.equal(unitBin("surprisal", sents, 0), binFor("surprisal", 3 * LN2));
  // nats: the same numbers times ln 2
  assert.ok(Math.abs(inUnit(words.value(1), "nats") - 5 * LN2) < 1e-6);
  // context gain: word "there." = -1 + 0 bits
  assert.ok(Math.abs(words.value(1, "context_gain") / LN2 + 1) < 1e-6);
  // negative gain: below the neutral middle bin (-1 bit of 16 is one bin of 15 down)
  assert.equal(unitBin("context_gain", words, 1), GAIN_HALF - 1);
  // the BOW-corrected value replaces the sum when given
  assert.ok(Math.abs(words.value(1, "surprisal", Float32Array.from([0, 1.5, 0])) - 1.5) < 1e-6);
  // a replay from 0 starts the sums again instead of adding twice
  st.reset(1, 4, 0);
  st.applyChunk(1, { start: 0, count: 2, topK: 0, fields: { ...st, units: st.units.slice(0, 6), token_ids: st.token_ids.slice(0, 2), start16: st.start16.slice(0, 2), end16: st.end16.slice(0, 2), surprisal: st.surprisal.slice(0, 2), entropy: st.entropy.slice(0, 2), rank: st.rank.slice(0, 2), context_length: st.context_length.slice(0, 2), word: st.word.slice(0, 2), sentence: st.sentence.slice(0, 2), bow_prob: st.bow_prob.slice(0, 2), context_gain: st.context_gain.slice(0, 2), topk_ids: new Int32Array(0), topk_probs: new Float32Array(0) } }, {});
  words.update();
  assert.ok(Math.abs(inUnit(words.value(1), "bits") - 5) < 1e-6);
});

test("unit tooltip lists the unit's tokens with their surprisals", () => {
  const { st, rest } = store();
  rest();
  const words = new UnitStats(st, "word").update();
  const d = unitDetails(st, words, 1, TEXT);
  assert.equal(d.text, "there.");
  assert.equal(d.nTokens, 2);
  assert.deepEqual(d.tokens.map((t) => t.text), [" there", "."]);
  assert.deepEqual(d.tokens.map((t) => Math.round(t.nats / LN2)), [2, 3]);
  assert.equal(d.more, 0);
});

test("legend ticks in the chosen unit, same colours", () => {
  const bits = legendFor("surprisal", "bits");
  const nats = legendFor("surprisal", "nats");
  assert.equal(bits.title, "surprisal (bits)");
  assert.equal(nats.title, "surprisal (nats)");
  assert.deepEqual(bits.ticks.map((t) => t.label), ["0", "4", "8", "12", "≥16"]);
  assert.deepEqual(nats.ticks.map((t) => t.label), ["0", "2.8", "5.5", "8.3", "≥11.1"]);
  assert.deepEqual(bits.ticks.map((t) => t.at), nats.ticks.map((t) => t.at));
});

test("control text reaches the kernel as typed (it names what is wrong)", () => {
  assert.equal(parseControl(" 32 "), 32);
  assert.equal(parseControl("2.5"), 2.5);
  assert.equal(parseControl(""), null);
  assert.equal(parseControl("abc"), "abc");
});
