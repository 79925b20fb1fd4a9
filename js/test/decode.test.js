import assert from "node:assert/strict";
import test from "node:test";

import { decodeChunk, decodeResult, toTypedArray } from "../src/decode.js";
import { CHUNK_FIELDS } from "../src/protocol.js";

/** A DataView over `bytes` placed at `offset` inside a bigger buffer full of junk. */
function embedded(bytes, offset) {
  const big = new Uint8Array(offset + bytes.byteLength + 13).fill(0xab);
  big.set(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset);
  return new DataView(big.buffer, offset, bytes.byteLength);
}

test("Int32 from a DataView with a non-zero, aligned byteOffset", () => {
  const src = new Int32Array([7, -2, 123456789]);
  const dv = embedded(src, 16);
  const out = toTypedArray(dv, "<i4", 3);
  assert.ok(out instanceof Int32Array);
  assert.deepEqual(Array.from(out), [7, -2, 123456789]);
  // it is a view over the same memory, not a copy
  assert.equal(out.buffer, dv.buffer);
  assert.equal(out.byteOffset, 16);
});

test("Float32 from a misaligned DataView is copied correctly", () => {
  const src = new Float32Array([1.5, -0.25, 3.0e-8]);
  const dv = embedded(src, 5);
  const out = toTypedArray(dv, "<f4", 3);
  assert.ok(out instanceof Float32Array);
  assert.deepEqual(Array.from(out), Array.from(src));
});

test("little-endian bytes are read as little-endian", () => {
  const u8 = new Uint8Array([0x01, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00]);
  assert.deepEqual(Array.from(toTypedArray(new DataView(u8.buffer), "<i4")), [1, 256]);
});

test("ArrayBuffer, Uint8Array and plain arrays are accepted", () => {
  const src = new Int32Array([4, 5]);
  assert.deepEqual(Array.from(toTypedArray(src.buffer, "<i4")), [4, 5]);
  assert.deepEqual(Array.from(toTypedArray(new Uint8Array(src.buffer), "<i4")), [4, 5]);
  assert.deepEqual(Array.from(toTypedArray([4, 5], "<i4")), [4, 5]);
  assert.ok(Number.isNaN(toTypedArray([null], "<f4")[0]));
});

test("wrong lengths and junk are rejected", () => {
  assert.throws(() => toTypedArray(new Int32Array([1, 2]).buffer, "<i4", 3), /expected 3/);
  assert.throws(() => toTypedArray(new Uint8Array(5), "<i4"), /whole number/);
  assert.throws(() => toTypedArray({ a: 1 }, "<i4"), /not a binary buffer/);
  assert.throws(() => toTypedArray(new ArrayBuffer(4), "<u8"), /unknown dtype/);
});

/** Build chunk buffers (each a DataView into one shared ArrayBuffer at odd offsets). */
function chunkBuffers(count, topK, seed = 1) {
  const parts = [];
  for (const [name, dtype, per] of CHUNK_FIELDS) {
    const n = per === 0 ? count * topK : count * per;
    const Ctor = dtype === "<i4" ? Int32Array : Float32Array;
    const arr = new Ctor(n);
    for (let i = 0; i < n; i++) arr[i] = name === "surprisal" ? (i + seed) / 4 : i + seed * 100;
    parts.push(arr);
  }
  // pack them into one buffer with padding between, like a message frame
  const total = parts.reduce((s, a) => s + a.byteLength + 8, 8);
  const big = new Uint8Array(total);
  let off = 8;
  const views = [];
  for (const a of parts) {
    big.set(new Uint8Array(a.buffer), off);
    views.push(new DataView(big.buffer, off, a.byteLength));
    off += a.byteLength + 8;
  }
  return { parts, views };
}

test("decodeChunk maps buffers to field names in protocol order", () => {
  const { parts, views } = chunkBuffers(3, 2);
  const c = decodeChunk({ start: 10, count: 3, top_k: 2 }, views);
  assert.equal(c.start, 10);
  assert.equal(c.count, 3);
  assert.equal(c.topK, 2);
  CHUNK_FIELDS.forEach(([name], k) => assert.deepEqual(Array.from(c.fields[name]), Array.from(parts[k]), name));
  assert.equal(c.fields.units.length, 9);
  assert.equal(c.fields.topk_probs.length, 6);
});

test("decodeChunk rejects a missing buffer or a wrong top_k", () => {
  const { views } = chunkBuffers(3, 2);
  assert.throws(() => decodeChunk({ start: 0, count: 3, top_k: 2 }, views.slice(0, 9)), new RegExp(`${CHUNK_FIELDS.length} buffers`));
  assert.throws(() => decodeChunk({ start: 0, count: 3, top_k: 3 }, views), /expected 9/);
});

test("decodeResult reads result_data and tolerates null", () => {
  assert.equal(decodeResult(null), null);
  assert.equal(decodeResult({}), null);
  const { parts, views } = chunkBuffers(4, 1);
  const rd = { count: 4, top_k: 1, vocab: { 5: "a" }, run_id: 3, partial: true, metrics: { n_tokens: 4 } };
  CHUNK_FIELDS.forEach(([name], k) => {
    rd[name] = views[k];
  });
  const r = decodeResult(rd);
  assert.equal(r.runId, 3);
  assert.equal(r.partial, true);
  assert.deepEqual(r.vocab, { 5: "a" });
  assert.deepEqual(Array.from(r.fields.end16), Array.from(parts[2]));
  assert.equal(r.totalTokens, 4); // no total_tokens: the count
  assert.equal(decodeResult({ ...rd, total_tokens: 30 }).totalTokens, 30); // a cancelled run
  // an empty run may come without buffers
  const empty = decodeResult({ count: 0, top_k: 5, run_id: 1 });
  assert.equal(empty.fields.token_ids.length, 0);
});

test("decodeResult fills optional fields result_data left out with their absent value", () => {
  const { views } = chunkBuffers(4, 1);
  const rd = { count: 4, top_k: 1, run_id: 1 };
  CHUNK_FIELDS.forEach(([name], k) => {
    if (!["sentence", "context_gain"].includes(name)) rd[name] = views[k];
  });
  const r = decodeResult(rd);
  assert.deepEqual(Array.from(r.fields.sentence), [-1, -1, -1, -1]);
  assert.ok(Array.from(r.fields.context_gain).every(Number.isNaN));
  delete rd.surprisal; // a required field is still required
  assert.throws(() => decodeResult(rd));
});
