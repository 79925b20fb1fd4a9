import assert from "node:assert/strict";
import test from "node:test";

import { metricsFromSums, rangeMetrics, shownMetrics, storeMetrics, tokensInRange } from "../src/metrics.js";
import { TokenStore } from "../src/store.js";

const close = (a, b, eps = 1e-9) => assert.ok(Math.abs(a - b) <= eps * Math.max(1, Math.abs(b)), `${a} != ${b}`);

test("metricsFromSums: hand-computed values", () => {
  // 4 tokens, 6 nats in total, 3 words, 12 chars, 15 bytes
  const m = metricsFromSums({ nats: 6, tokens: 4, words: 3, chars: 12, bytes: 15 });
  close(m.total_nll, 6);
  close(m.total_bits, 8.656170245333781); // 6 / ln 2
  assert.equal(m.n_tokens, 4);
  close(m.token_ppl, 4.4816890703380645); // e^1.5
  close(m.word_ppl, 7.38905609893065); // e^2
  close(m.char_ppl, 1.6487212707001282); // e^0.5
  close(m.byte_ppl, 1.4918246976412703); // e^0.4
  close(m.bits_per_token, 2.1640425613334453);
  close(m.bits_per_char, 0.7213475204444817); // 0.5 / ln 2
  close(m.bits_per_byte, 0.5770780163555854);
});

test("a zero denominator gives NaN, not Infinity or a throw", () => {
  const m = metricsFromSums({ nats: 0, tokens: 0, words: 0, chars: 0, bytes: 0 });
  for (const k of ["token_ppl", "word_ppl", "char_ppl", "byte_ppl", "bits_per_char"]) assert.ok(Number.isNaN(m[k]), k);
});

function storeOf(tokens) {
  // tokens: [start16, end16, nats, words, chars, bytes]
  const st = new TokenStore();
  st.reset(1, tokens.length, 0);
  const n = tokens.length;
  const f = {
    token_ids: new Int32Array(n),
    start16: Int32Array.from(tokens, (t) => t[0]),
    end16: Int32Array.from(tokens, (t) => t[1]),
    surprisal: Float32Array.from(tokens, (t) => t[2]),
    entropy: new Float32Array(n),
    rank: new Int32Array(n).fill(1),
    context_length: new Int32Array(n),
    units: Int32Array.from(tokens.flatMap((t) => [t[3], t[4], t[5]])),
    topk_ids: new Int32Array(0),
    topk_probs: new Float32Array(0),
  };
  st.applyChunk(1, { start: 0, count: n, topK: 0, fields: f }, {});
  return st;
}

// text "ab cd😀" + EOS.  UTF-16: a0 b1 ' '2 c3 d4 😀5-6, length 7
//   0: "ab"  [0,2)  1 nat,  1 word, 2 chars, 2 bytes
//   1: " c"  [2,4)  2 nats, 1 word, 2 chars, 2 bytes
//   2: "d"   [4,5)  0.5,    0,      1,       1
//   3: (partial bytes of 😀) [5,5) 3 nats, 0, 0, 2
//   4: "😀"  [5,7)  0.25,   0,      1,       2
//   5: EOS   [7,7)  1.25,   0,      0,       0
const TOKENS = [
  [0, 2, 1, 1, 2, 2],
  [2, 4, 2, 1, 2, 2],
  [4, 5, 0.5, 0, 1, 1],
  [5, 5, 3, 0, 0, 2],
  [5, 7, 0.25, 0, 1, 2],
  [7, 7, 1.25, 0, 0, 0],
];
const LEN = 7;

test("running metrics from the store's sums", () => {
  const m = storeMetrics(storeOf(TOKENS));
  close(m.total_nll, 8);
  assert.equal(m.n_tokens, 6);
  assert.equal(m.n_words, 2);
  assert.equal(m.n_chars, 6);
  assert.equal(m.n_bytes, 9);
  close(m.token_ppl, Math.exp(8 / 6));
  close(m.word_ppl, Math.exp(4)); // 54.598...
  close(m.char_ppl, Math.exp(8 / 6));
  close(m.bits_per_char, 8 / 6 / Math.LN2);
  close(m.bits_per_byte, 8 / 9 / Math.LN2);
});

test("tokensInRange: overlap rules", () => {
  const st = storeOf(TOKENS);
  const r = (a, b) => tokensInRange(st.start16, st.end16, st.length, a, b, LEN);
  assert.deepEqual(r(0, 1), [0, 1]); // inside "ab"
  assert.deepEqual(r(1, 3), [0, 2]); // "b c" touches "ab" and " c"
  assert.deepEqual(r(2, 4), [1, 2]); // exactly " c"
  // a zero-width token goes with the token before it (Python's rule: the tail of a split
  // character, EOS): the one at 5 goes with "d"
  assert.deepEqual(r(4, 5), [2, 4]);
  assert.deepEqual(r(5, 6), [4, 6]); // (half) the emoji, and the EOS after it
  assert.deepEqual(r(6, 7), [4, 6]); // the end of the text: EOS comes along
  assert.deepEqual(r(5, 7), [4, 6]);
  assert.deepEqual(r(0, 7), [0, 6]); // everything, EOS included (selection reaches the end)
  assert.deepEqual(r(3, 3), [1, 2]); // an empty range inside a token: that token (as in Python)
  assert.deepEqual(r(5, 4), [0, 0]); // reversed
});

test("selection metrics over a token range, hand-computed", () => {
  const st = storeOf(TOKENS);
  // tokens 1..4: nats 2 + 0.5 + 3 + 0.25 = 5.75; words 1; chars 4; bytes 7
  const m = rangeMetrics(st, 1, 5);
  close(m.total_nll, 5.75);
  assert.equal(m.n_tokens, 4);
  assert.equal(m.n_words, 1);
  assert.equal(m.n_chars, 4);
  assert.equal(m.n_bytes, 7);
  close(m.token_ppl, Math.exp(5.75 / 4)); // 4.2098...
  close(m.token_ppl, 4.210157256, 1e-9);
  close(m.word_ppl, Math.exp(5.75));
  close(m.char_ppl, Math.exp(5.75 / 4));
  close(m.byte_ppl, Math.exp(5.75 / 7));
  close(m.bits_per_char, 5.75 / 4 / Math.LN2);
});

test("tokensInRange on a text with an unscored first token (offsets start late)", () => {
  // "Hello world": "Hello" unscored, scored token " world" [5, 11)
  const s = Int32Array.from([5]);
  const e = Int32Array.from([11]);
  assert.deepEqual(tokensInRange(s, e, 1, 0, 5, 11), [0, 0]); // selecting "Hello" hits nothing
  assert.deepEqual(tokensInRange(s, e, 1, 0, 6, 11), [0, 1]);
});

test("shownMetrics: the kernel's final metrics once the run ends, running sums before", () => {
  const st = storeOf(TOKENS);
  assert.equal(shownMetrics(st, true).state, "live");
  close(shownMetrics(st, true).metrics.total_nll, 8);
  st.final = { metrics: null, partial: true }; // cancelled before any metrics came
  assert.equal(shownMetrics(st, false).state, "partial");
  st.final = { metrics: { token_ppl: "Infinity", word_ppl: null }, partial: false };
  const m = shownMetrics(st, false);
  assert.equal(m.state, "final");
  assert.equal(m.metrics.token_ppl, Infinity);
  assert.ok(Number.isNaN(m.metrics.word_ppl));
  assert.deepEqual(shownMetrics({ final: null, length: 0 }, true), { metrics: null, state: "empty" });
});
