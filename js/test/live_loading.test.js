import assert from "node:assert/strict";
import test from "node:test";

import { DEBOUNCE_MS } from "../src/editor.js";
import { fetchWithProgress } from "../src/live/fetch_progress.js";
import { fittedWait, MIN_WAIT_MS, progressText, sizeText } from "../src/live/loading.js";
import { loadsOnDemand } from "../src/live/models/index.js";

/** A fetch whose body arrives in the given chunks, with the given headers. */
function fakeFetch(chunks, headers = {}, status = 200) {
  return async () =>
    new Response(
      new ReadableStream({
        start(c) {
          for (const ch of chunks) c.enqueue(Uint8Array.from(ch));
          c.close();
        },
      }),
      { status, headers },
    );
}

test("a streamed fetch counts bytes as they come and keeps the body whole", async () => {
  const seen = [];
  const res = await fetchWithProgress("x", (l, t) => seen.push([l, t]), fakeFetch([[1, 2, 3], [4, 5]], { "content-length": "5" }));
  assert.deepEqual(seen, [[0, 5], [3, 5], [5, 5]]);
  assert.deepEqual([...new Uint8Array(await res.arrayBuffer())], [1, 2, 3, 4, 5]);
});

test("no length, or a compressed one: the total is unknown and the buffer grows", async () => {
  const big = Array.from({ length: 70000 }, (_, i) => i & 255);
  const seen = [];
  const res = await fetchWithProgress("x", (l, t) => seen.push([l, t]), fakeFetch([big, [7]], { "content-encoding": "gzip", "content-length": "10" }));
  assert.deepEqual(seen.at(-1), [70001, null]);
  const got = new Uint8Array(await res.arrayBuffer());
  assert.equal(got.length, 70001);
  assert.equal(got[69999], 69999 & 255);
  assert.equal(got[70000], 7);
});

test("a streamed fetch reads text and JSON; a 404 comes back untouched", async () => {
  const json = new TextEncoder().encode('{"a": "é"}');
  const res = await fetchWithProgress("x", () => {}, fakeFetch([json]));
  assert.deepEqual(await res.json(), { a: "é" });
  const missing = await fetchWithProgress("x", () => assert.fail("no progress for a 404"), fakeFetch([], {}, 404));
  assert.equal(missing.status, 404);
});

test("the pause after typing fits the model's cost", () => {
  assert.equal(fittedWait(undefined), DEBOUNCE_MS);
  assert.equal(fittedWait(3), MIN_WAIT_MS); // the n-gram: soon after the last key
  assert.equal(fittedWait(100), 200);
  assert.equal(fittedWait(2500), DEBOUNCE_MS); // a transformer: the full debounce
});

test("what the page says about sizes and downloads", () => {
  assert.equal(sizeText(840_000), "840 kB");
  assert.equal(sizeText(541_912_345), "541.9 MB");
  assert.equal(sizeText(null), "size unknown");
  assert.equal(progressText(12_300_000, 541_900_000), "downloading 12.3 of 541.9 MB");
  assert.equal(progressText(5e6, null), "downloading 5.0 MB");
  assert.match(progressText(541_900_000, 541_900_000), /building the model/);
});

test("the n-gram loads with the page, other kinds when chosen", () => {
  assert.equal(loadsOnDemand("ngram"), false);
  assert.equal(loadsOnDemand("onnx"), true);
});
