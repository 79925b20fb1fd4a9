import assert from "node:assert/strict";
import test from "node:test";

import { contrastRatio, luminance } from "../src/colors.js";
import { decodeModel, decodeWords, progressLabel, scaleMax, wordDiff, wordSums, wordTokens } from "../src/compare/data.js";
import { diffBin, diffTicks, divergingPalette, HALF, NDIV } from "../src/compare/scale.js";
import { COLUMNS, rowCells, unitCounts } from "../src/compare/table.js";

const LN2 = Math.LN2;
// "unbelievable results" -> words [0,12) and [13,20)
const TEXT = "unbelievable results";
const words = decodeWords({ count: 2, start16: Int32Array.from([0, 13]), end16: Int32Array.from([12, 20]) });

const bytes = (Ctor, values) => new DataView(Ctor.from(values).buffer);

// model A: "un|believ|able| results" ; model B: "unbelievable| res|ults"
const entryA = {
  label: "A",
  status: "done",
  count: 4,
  start16: bytes(Int32Array, [0, 2, 8, 12]),
  end16: bytes(Int32Array, [2, 8, 12, 20]),
  surprisal: bytes(Float32Array, [1 * LN2, 2 * LN2, 0.5 * LN2, 3 * LN2]),
  word: bytes(Int32Array, [0, 0, 0, 1]),
};
const entryB = {
  label: "B",
  status: "done",
  count: 3,
  start16: bytes(Int32Array, [0, 12, 16]),
  end16: bytes(Int32Array, [12, 16, 20]),
  surprisal: bytes(Float32Array, [2 * LN2, 4 * LN2, 1 * LN2]),
  word: bytes(Int32Array, [0, 1, 1]),
};

test("word surprisal is the sum over the model's tokens of the word", () => {
  const a = wordSums(decodeModel(entryA), 2);
  const b = wordSums(decodeModel(entryB), 2);
  assert.ok(Math.abs(a.nats[0] / LN2 - 3.5) < 1e-6);
  assert.ok(Math.abs(a.nats[1] / LN2 - 3) < 1e-6);
  assert.ok(Math.abs(b.nats[0] / LN2 - 2) < 1e-6);
  assert.ok(Math.abs(b.nats[1] / LN2 - 5) < 1e-6);
  assert.deepEqual([...a.ntok], [3, 1]);
  assert.deepEqual([...b.ntok], [1, 2]);
  const d = wordDiff(a, b);
  assert.ok(Math.abs(d[0] / LN2 - 1.5) < 1e-6); // A more surprised: B did better
  assert.ok(Math.abs(d[1] / LN2 + 2) < 1e-6); // A did better
});

test("each model's tokenization of a word, sliced from the text", () => {
  const ma = decodeModel(entryA);
  const mb = decodeModel(entryB);
  const ta = wordTokens(ma, wordSums(ma, 2), 0, TEXT);
  assert.deepEqual(ta.map((t) => t.text), ["un", "believ", "able"]);
  const tb = wordTokens(mb, wordSums(mb, 2), 1, TEXT);
  assert.deepEqual(tb.map((t) => t.text), [" res", "ults"]);
  assert.ok(Math.abs(tb[0].nats / LN2 - 4) < 1e-6);
});

test("while a model scores, the word it is on (and later ones) is not final", () => {
  const partial = { ...entryB, status: "scoring", count: 2 };
  partial.start16 = bytes(Int32Array, [0, 12]);
  partial.end16 = bytes(Int32Array, [12, 16]);
  partial.surprisal = bytes(Float32Array, [2 * LN2, 4 * LN2]);
  partial.word = bytes(Int32Array, [0, 1]);
  const s = wordSums(decodeModel(partial), 2);
  assert.ok(Math.abs(s.nats[0] / LN2 - 2) < 1e-6);
  assert.ok(Number.isNaN(s.nats[1])); // " res" scored, "ults" may follow
  const none = wordSums(decodeModel({ label: "C", status: "waiting", count: 0 }), 2);
  assert.ok(none.nats.every(Number.isNaN));
  const d = wordDiff(wordSums(decodeModel(entryA), 2), s);
  assert.ok(Number.isFinite(d[0]) && Number.isNaN(d[1]));
});

test("tokens outside every word (EOS: -1) are left out of the word sums", () => {
  const withEos = { ...entryA, count: 5 };
  withEos.start16 = bytes(Int32Array, [0, 2, 8, 12, 20]);
  withEos.end16 = bytes(Int32Array, [2, 8, 12, 20, 20]);
  withEos.surprisal = bytes(Float32Array, [LN2, 2 * LN2, 0.5 * LN2, 3 * LN2, 9 * LN2]);
  withEos.word = bytes(Int32Array, [0, 0, 0, 1, -1]);
  const s = wordSums(decodeModel(withEos), 2);
  assert.ok(Math.abs(s.nats[1] / LN2 - 3) < 1e-6);
});

test("the scale is symmetric, centred on zero, with its own bin for equal", () => {
  assert.equal(NDIV % 2, 1);
  assert.equal(diffBin(0, 4), HALF);
  assert.equal(diffBin(4, 4), NDIV - 1);
  assert.equal(diffBin(-4, 4), 0);
  assert.equal(diffBin(99, 4), NDIV - 1); // clamped
  assert.equal(diffBin(-2, 4), HALF - HALF / 2);
  assert.equal(diffBin(2, 4), HALF + HALF / 2);
  assert.equal(diffBin(NaN, 4), -1);
  const t = diffTicks(4, "bits");
  assert.deepEqual(t.map((x) => x.label), ["≥4", "2", "0 bits", "2", "≥4"]);
});

test("the scale's width is a round number at the 95th percentile of |difference|", () => {
  const d = Array.from({ length: 100 }, (_, i) => ((i % 2 ? 1 : -1) * (i + 1) * LN2) / 40); // up to 2.5 bits
  assert.equal(scaleMax(d, "bits"), 3);
  assert.equal(scaleMax([NaN, NaN], "bits"), 1);
  assert.equal(scaleMax([0.1 * LN2], "bits"), 0.5);
  assert.equal(scaleMax([5], "nats"), 5);
});

test("diverging palette: both ends saturated, the middle closest to the background", () => {
  for (const theme of ["light", "dark"]) {
    const pal = divergingPalette(theme);
    assert.equal(pal.length, NDIV);
    const mid = pal[HALF].bg;
    const bg = theme === "light" ? [255, 255, 255] : [17, 17, 17];
    for (const k of [0, NDIV - 1]) assert.ok(contrastRatio(pal[k].bg, bg) > contrastRatio(mid, bg), `${theme} end ${k}`);
    // the two ends are different hues (blue vs orange): blue channel decides
    assert.ok(pal[0].bg[2] > pal[0].bg[0] && pal[NDIV - 1].bg[0] > pal[NDIV - 1].bg[2]);
    for (const c of pal) assert.ok(contrastRatio(c.bg, c.fg) >= 4.5, `${theme} text contrast ${luminance(c.bg)}`);
  }
});

test("table cells: dashes for missing, infinity shown, token perplexity column present", () => {
  const row = { word_ppl: 12.3456, char_ppl: "Infinity", byte_ppl: null, bits_per_byte: 1.5, total_bits: 100, n_tokens: 42, vocab_size: 50257, token_ppl: 7 };
  const cells = rowCells(row);
  assert.equal(cells[0], "12.35");
  assert.equal(cells[1], "∞");
  assert.equal(cells[2], "—");
  assert.equal(cells[COLUMNS.findIndex((c) => c[0] === "vocab_size")], "50,257");
  assert.ok(COLUMNS.some((c) => c[0] === "token_ppl"));
  assert.match(unitCounts([{ n_words: 3, n_chars: 20, n_bytes: 21 }]), /3 words · 20 characters · 21 bytes/);
});

test("progress labels", () => {
  assert.equal(progressLabel({ status: "scoring", done: 50, total: 200 }), "scoring 25%");
  assert.equal(progressLabel({ status: "done" }), "done");
  assert.equal(progressLabel({}), "waiting");
});
