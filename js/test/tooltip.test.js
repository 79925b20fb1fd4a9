import assert from "node:assert/strict";
import test from "node:test";

import { TokenStore } from "../src/store.js";
import { tokenDetails } from "../src/tooltip.js";

function store() {
  const st = new TokenStore();
  st.reset(1, 3, 2);
  const f = {
    token_ids: Int32Array.from([10, 11, 2]),
    start16: Int32Array.from([0, 3, 7]),
    end16: Int32Array.from([3, 7, 7]),
    surprisal: Float32Array.from([Math.LN2, 2 * Math.LN2, 0.5]),
    entropy: Float32Array.from([3 * Math.LN2, 0, 0]),
    rank: Int32Array.from([1, 42, 1]),
    context_length: Int32Array.from([1, 2, 3]),
    units: new Int32Array(9),
    topk_ids: Int32Array.from([10, 12, 12, 13, 2, -1]),
    topk_probs: Float32Array.from([0.5, 0.25, 0.5, 0.1, 0.6, 0]),
  };
  st.applyChunk(1, { start: 0, count: 3, topK: 2, fields: f }, { 10: "<b>", 11: " x\n", 12: " y", 13: "\t", 2: "</s>" });
  return st;
}

test("tooltip details: units, probability, alternatives", () => {
  const text = "<b> x\n";
  const st = store();
  const d = tokenDetails(st, 0, text + "!");
  assert.equal(d.text, "<b>");
  assert.ok(Math.abs(d.surprisalBits - 1) < 1e-6);
  assert.ok(Math.abs(d.prob - 0.5) < 1e-6);
  assert.ok(Math.abs(d.entropyBits - 3) < 1e-6);
  assert.equal(d.rank, 1);
  assert.equal(d.context, 1);
  assert.equal(d.targetInAlts, true);
  assert.deepEqual(
    d.alts.map((a) => [a.text, a.isTarget]),
    [
      ["<b>", true],
      [" y", false],
    ],
  );
  const d1 = tokenDetails(st, 1, text);
  assert.equal(d1.text, " x\n");
  assert.equal(d1.targetInAlts, false);
  assert.equal(d1.rank, 42);
});

test("EOS: zero width at the end of the text, text from vocab, padding dropped", () => {
  const st = store();
  st.addEos = true;
  const d = tokenDetails(st, 2, "<b> x\n!");
  assert.equal(d.eos, true);
  assert.equal(d.zeroWidth, true);
  assert.equal(d.text, "</s>");
  assert.equal(d.alts.length, 1); // id -1 padding dropped
});

test("(eos) only for the EOS that add_eos appended", () => {
  const text = "<b> x\n!";
  const st = store(); // its last token: zero-width at the end of the text
  assert.equal(tokenDetails(st, 2, text).eos, false, "no add_eos: an empty token at the end is no EOS");
  st.addEos = true;
  assert.equal(tokenDetails(st, 2, text).eos, true);
  assert.equal(tokenDetails(st, 1, text).eos, false);
  st.totalTokens = 5; // the run goes on past this token: the EOS comes later
  assert.equal(tokenDetails(st, 2, text).eos, false);
});

test("(eos): a zero-width token before the appended EOS is not it", () => {
  const st = new TokenStore();
  st.addEos = true;
  st.reset(1, 3, 0);
  const f = {
    token_ids: Int32Array.from([10, 11, 2]),
    start16: Int32Array.from([0, 2, 2]),
    end16: Int32Array.from([2, 2, 2]), // "ab", then an empty-string token, then EOS
    surprisal: new Float32Array(3),
    entropy: new Float32Array(3),
    rank: Int32Array.from([1, 1, 1]),
    context_length: Int32Array.from([1, 2, 3]),
    units: new Int32Array(9),
    topk_ids: new Int32Array(0),
    topk_probs: new Float32Array(0),
  };
  st.applyChunk(1, { start: 0, count: 3, topK: 0, fields: f }, { 10: "ab", 11: "", 2: "</s>" });
  assert.deepEqual([0, 1, 2].map((i) => tokenDetails(st, i, "ab").eos), [false, false, true]);
  assert.equal(tokenDetails(st, 1, "ab").zeroWidth, true);
});

test("token text is in spans, never <code> (a host page's code styles would box it)", async () => {
  const { readFileSync } = await import("node:fs");
  for (const f of ["../src/tooltip.js", "../src/compare/view.js"]) {
    assert.doesNotMatch(readFileSync(new URL(f, import.meta.url), "utf8"), /h\("code"/, f);
  }
});
