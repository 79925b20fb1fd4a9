import assert from "node:assert/strict";
import test from "node:test";

import { TokenStore } from "../src/store.js";

/**
 * A decoded chunk of tokens [start, start+count): token i has id 100+i,
 * offsets [2i, 2i+2), surprisal s(i) nats, units (1 word, 2 chars, 3 bytes)
 * and top-k ids 1000+i*topK+j.
 */
function chunk(start, count, topK = 2, s = (i) => 0.5 * (i + 1)) {
  const f = {
    token_ids: new Int32Array(count),
    start16: new Int32Array(count),
    end16: new Int32Array(count),
    surprisal: new Float32Array(count),
    entropy: new Float32Array(count),
    rank: new Int32Array(count),
    context_length: new Int32Array(count),
    units: new Int32Array(count * 3),
    topk_ids: new Int32Array(count * topK),
    topk_probs: new Float32Array(count * topK),
  };
  for (let c = 0; c < count; c++) {
    const i = start + c;
    f.token_ids[c] = 100 + i;
    f.start16[c] = 2 * i;
    f.end16[c] = 2 * i + 2;
    f.surprisal[c] = s(i);
    f.entropy[c] = 1;
    f.rank[c] = 1 + (i % 3);
    f.context_length[c] = i + 1;
    f.units.set([1, 2, 3], c * 3);
    for (let j = 0; j < topK; j++) {
      f.topk_ids[c * topK + j] = 1000 + i * topK + j;
      f.topk_probs[c * topK + j] = 0.5 / (j + 1);
    }
  }
  return { start, count, topK, fields: f };
}

const sumS = (n) => (0.5 * n * (n + 1)) / 2; // sum of 0.5*(i+1) for i < n

test("chunks accumulate in order and sums follow", () => {
  const st = new TokenStore();
  st.reset(1, 10, 2);
  assert.equal(st.applyChunk(1, chunk(0, 4), { 100: "a" }).status, "ok");
  assert.equal(st.applyChunk(1, chunk(4, 3), { 104: "b" }).status, "ok");
  assert.equal(st.length, 7);
  assert.deepEqual(Array.from(st.token_ids.subarray(0, 7)), [100, 101, 102, 103, 104, 105, 106]);
  assert.equal(st.sums.nats, sumS(7));
  assert.equal(st.sums.words, 7);
  assert.equal(st.sums.chars, 14);
  assert.equal(st.sums.bytes, 21);
  assert.equal(st.tokenText(100), "a");
  assert.equal(st.tokenText(104), "b");
  assert.deepEqual(st.alternatives(5), [
    { id: 1010, prob: 0.5 },
    { id: 1011, prob: 0.25 },
  ]);
});

test("arrays grow past the announced total", () => {
  const st = new TokenStore();
  st.reset(1, 2, 2); // capacity 64 minimum
  for (let s = 0; s < 300; s += 50) st.applyChunk(1, chunk(s, 50), {});
  assert.equal(st.length, 300);
  assert.ok(st.capacity >= 300);
  assert.equal(st.token_ids[299], 399);
  assert.equal(st.end16[299], 600);
  assert.equal(st.topk_ids[299 * 2 + 1], 1000 + 299 * 2 + 1);
  assert.equal(st.sums.nats, sumS(300));
});

test("chunks of another run are ignored", () => {
  const st = new TokenStore();
  st.reset(5, 10, 2);
  st.applyChunk(5, chunk(0, 3), {});
  const r = st.applyChunk(4, chunk(3, 3), {});
  assert.equal(r.status, "stale");
  assert.equal(st.length, 3);
  assert.equal(st.sums.nats, sumS(3));
  // a reset for an older run does not wipe the current one either
  assert.equal(st.classify(4), "stale");
  assert.equal(st.classify(5), "current");
  assert.equal(st.classify(6), "adopt");
});

test("a replay (reset of the same run + chunk from 0) never double counts", () => {
  const st = new TokenStore();
  st.reset(2, 10, 2);
  st.applyChunk(2, chunk(0, 4), { 100: "a" });
  st.applyChunk(2, chunk(4, 2), {});
  const before = { ...st.sums };
  st.reset(2, 10, 2); // replay starts: same run, data kept
  assert.equal(st.length, 6);
  const r = st.applyChunk(2, chunk(0, 6), {});
  assert.equal(r.status, "ok");
  assert.equal(r.overlap, true);
  assert.equal(st.length, 6);
  assert.deepEqual(st.sums, before);
  // then the live stream goes on, partly overlapping the replay
  st.applyChunk(2, chunk(4, 4), {});
  assert.equal(st.length, 8);
  assert.equal(st.sums.nats, sumS(8));
  assert.equal(st.sums.words, 8);
  assert.equal(st.tokenText(100), "a"); // vocab kept across the replay
});

test("a duplicate chunk with changed values replaces, not adds", () => {
  const st = new TokenStore();
  st.reset(1, 4, 2);
  st.applyChunk(1, chunk(0, 2, 2, () => 1), {});
  st.applyChunk(1, chunk(0, 2, 2, () => 3), {});
  assert.equal(st.sums.nats, 6);
  assert.equal(st.length, 2);
});

test("a missing chunk is a gap: nothing stored", () => {
  const st = new TokenStore();
  st.reset(1, 10, 2);
  st.applyChunk(1, chunk(0, 2), {});
  const r = st.applyChunk(1, chunk(5, 2), {});
  assert.equal(r.status, "gap");
  assert.equal(st.length, 2);
});

test("a newer run whose reset was missed is adopted from start 0 only", () => {
  const st = new TokenStore();
  st.reset(1, 10, 2);
  st.applyChunk(1, chunk(0, 3), {});
  assert.equal(st.applyChunk(2, chunk(3, 2), {}).status, "gap");
  assert.equal(st.runId, 1);
  assert.equal(st.applyChunk(2, chunk(0, 2), {}).status, "ok");
  assert.equal(st.runId, 2);
  assert.equal(st.length, 2);
  assert.equal(st.sums.nats, sumS(2));
});

test("a new run drops the previous one", () => {
  const st = new TokenStore();
  st.reset(1, 10, 2);
  st.applyChunk(1, chunk(0, 3), { 100: "a" });
  st.final = { metrics: {}, partial: false };
  st.reset(2, 5, 3);
  assert.equal(st.length, 0);
  assert.equal(st.topK, 3);
  assert.deepEqual(st.sums, { nats: 0, words: 0, chars: 0, bytes: 0 });
  assert.equal(st.final, null);
  assert.equal(st.tokenText(100), undefined);
});

test("after the text changes, late chunks of the old run are refused", () => {
  const st = new TokenStore();
  st.reset(3, 10, 2);
  st.applyChunk(3, chunk(0, 2), {});
  st.invalidate();
  assert.equal(st.length, 0);
  assert.equal(st.applyChunk(3, chunk(0, 2), {}).status, "stale");
  assert.equal(st.applyChunk(2, chunk(0, 2), {}).status, "stale");
  assert.equal(st.applyChunk(4, chunk(0, 2), {}).status, "ok");
});

test("top_k mismatch: alternatives re-packed, padding dropped", () => {
  const st = new TokenStore();
  st.reset(1, 10, 2);
  st.applyChunk(1, chunk(0, 2, 2), {});
  st.applyChunk(1, chunk(2, 1, 3), {});
  assert.equal(st.topK, 3);
  assert.deepEqual(
    st.alternatives(0).map((a) => a.id),
    [1000, 1001],
  );
  assert.deepEqual(
    st.alternatives(2).map((a) => a.id),
    [1006, 1007, 1008],
  );
});

test("loadResult replaces everything and records the final metrics", () => {
  const st = new TokenStore();
  st.reset(1, 10, 2);
  st.applyChunk(1, chunk(0, 3), {});
  const c = chunk(0, 5);
  st.loadResult({ ...c, runId: 7, vocab: { 101: "x" }, partial: true, metrics: { n_tokens: 5 } });
  assert.equal(st.runId, 7);
  assert.equal(st.length, 5);
  assert.equal(st.sums.nats, sumS(5));
  assert.deepEqual(st.final, { metrics: { n_tokens: 5 }, partial: true });
  assert.equal(st.tokenText(101), "x");
  assert.deepEqual(st.progress, { done: 5, total: 5 });
});

test("a cancelled run's result keeps the whole run's total for the progress bar", () => {
  const st = new TokenStore();
  st.loadResult({ ...chunk(0, 5), runId: 3, vocab: {}, partial: true, metrics: null,
    totalTokens: 40 });
  assert.deepEqual(st.progress, { done: 5, total: 40 });
});
