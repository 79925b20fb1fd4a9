import assert from "node:assert/strict";
import test from "node:test";

import { normaliseMetrics } from "../src/decode.js";

// ppl_widget/core/jsonable.py writes NaN as null and infinities as "Infinity" strings
test("normaliseMetrics reads null, infinities, intervals and keeps text", () => {
  const m = normaliseMetrics({
    token_ppl: "Infinity",
    total_nll: "-Infinity",
    word_ppl: null,
    char_ppl: 12.5,
    word_ppl_ci: [3.5, "Infinity"],
    byte_ppl_ci: [null, 2],
    unigram_source: "in-sample",
  });
  assert.equal(m.token_ppl, Infinity);
  assert.equal(m.total_nll, -Infinity);
  assert.ok(Number.isNaN(m.word_ppl));
  assert.equal(m.char_ppl, 12.5);
  assert.deepEqual(m.word_ppl_ci, [3.5, Infinity]);
  assert.ok(Number.isNaN(m.byte_ppl_ci[0]) && m.byte_ppl_ci[1] === 2);
  assert.equal(m.unigram_source, "in-sample");
  assert.equal(normaliseMetrics(null), null);
});
