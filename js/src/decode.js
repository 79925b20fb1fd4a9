// Binary buffers from the kernel -> typed arrays.
//
// Jupyter hands custom-message buffers (and binary trait values) over as
// DataViews that usually view a slice of a larger ArrayBuffer, so the view's
// byteOffset/byteLength must be honoured.  A view whose offset is not a
// multiple of the element size cannot back a typed array directly; it is
// copied.  The data is little-endian; a big-endian host gets a copy read
// through DataView getters.

import { CHUNK_FIELDS, DIVERGENCE_FIELDS, OPTIONAL_FIELDS, UNIT_SPAN_FIELDS } from "./protocol.js";

const HOST_LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

const KINDS = {
  "<i4": { Ctor: Int32Array, get: "getInt32" },
  "<f4": { Ctor: Float32Array, get: "getFloat32" },
};

/** Normalise anything buffer-like to {buffer, byteOffset, byteLength}. */
function bytesOf(buf) {
  if (buf == null) return null;
  if (buf instanceof ArrayBuffer) {
    return { buffer: buf, byteOffset: 0, byteLength: buf.byteLength };
  }
  if (ArrayBuffer.isView(buf)) {
    // DataView, Uint8Array, Int32Array, Node Buffer, ...
    return { buffer: buf.buffer, byteOffset: buf.byteOffset, byteLength: buf.byteLength };
  }
  if (typeof SharedArrayBuffer !== "undefined" && buf instanceof SharedArrayBuffer) {
    return { buffer: buf, byteOffset: 0, byteLength: buf.byteLength };
  }
  return null;
}

/**
 * Turn one buffer into a typed array of the given protocol dtype ("<i4" or
 * "<f4").  `expected` (optional) is the number of elements it must hold.
 * Plain JS arrays of numbers are accepted too (handy for tests and for state
 * restored without binary buffers).
 */
export function toTypedArray(buf, dtype, expected) {
  const kind = KINDS[dtype];
  if (!kind) throw new Error(`unknown dtype ${dtype}`);
  const { Ctor } = kind;
  let out;
  if (Array.isArray(buf)) {
    out = Ctor.from(buf, (v) => (v == null ? NaN : v));
  } else {
    const b = bytesOf(buf);
    if (!b) throw new Error(`not a binary buffer: ${Object.prototype.toString.call(buf)}`);
    const size = Ctor.BYTES_PER_ELEMENT;
    if (b.byteLength % size !== 0) {
      throw new Error(`buffer of ${b.byteLength} bytes is not a whole number of ${dtype} values`);
    }
    const n = b.byteLength / size;
    if (HOST_LITTLE_ENDIAN && b.byteOffset % size === 0) {
      out = new Ctor(b.buffer, b.byteOffset, n);
    } else if (HOST_LITTLE_ENDIAN) {
      // Misaligned: copy the bytes into a fresh, aligned buffer.
      const copy = new Uint8Array(b.byteLength);
      copy.set(new Uint8Array(b.buffer, b.byteOffset, b.byteLength));
      out = new Ctor(copy.buffer);
    } else {
      const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
      out = new Ctor(n);
      for (let i = 0; i < n; i++) out[i] = dv[kind.get](i * size, true);
    }
  }
  if (expected != null && out.length !== expected) {
    throw new Error(`expected ${expected} ${dtype} values, got ${out.length}`);
  }
  return out;
}

function expectedLength(per, count, topK) {
  return per === 0 ? count * topK : count * per;
}

/**
 * Decode a chunk message: content {start, count, top_k} plus buffers in
 * CHUNK_FIELDS order.  Returns {start, count, topK, fields: {name: TypedArray}}.
 */
export function decodeChunk(content, buffers) {
  const count = content.count | 0;
  const topK = content.top_k | 0;
  const start = content.start | 0;
  if (!buffers || buffers.length < CHUNK_FIELDS.length) {
    throw new Error(
      `chunk needs ${CHUNK_FIELDS.length} buffers, got ${buffers ? buffers.length : 0}`,
    );
  }
  const fields = {};
  CHUNK_FIELDS.forEach(([name, dtype, per], k) => {
    fields[name] = toTypedArray(buffers[k], dtype, expectedLength(per, count, topK));
  });
  return { start, count, topK, fields };
}

/**
 * Unit spans from buffers in UNIT_SPAN_FIELDS order (a reset message) and the
 * `levels` counts ({word: n|null, sentence: n|null}): {word: {start16, end16}|null, ...}.
 */
export function decodeUnitSpans(buffers, levels) {
  const out = { word: null, sentence: null };
  if (!buffers || !levels) return out;
  ["word", "sentence"].forEach((level, k) => {
    const n = levels[level];
    if (n == null || buffers[2 * k] == null) return;
    out[level] = {
      start16: toTypedArray(buffers[2 * k], "<i4", n),
      end16: toTypedArray(buffers[2 * k + 1], "<i4", n),
    };
  });
  return out;
}

/**
 * Decode the `result_data` trait: {count, top_k, vocab, run_id, partial,
 * metrics, <field name>: buffer, ...}.  Returns null when there is nothing
 * usable.  Same shape as decodeChunk plus runId/vocab/partial/metrics.
 */
export function decodeResult(rd) {
  if (!rd || typeof rd !== "object" || rd.count == null) return null;
  const count = rd.count | 0;
  const topK = rd.top_k | 0;
  const fields = {};
  for (const [name, dtype, per] of CHUNK_FIELDS) {
    const n = expectedLength(per, count, topK);
    const buf = rd[name];
    if (buf == null && (n === 0 || name in OPTIONAL_FIELDS)) {
      // left out: every token has the field's absent value (-1 or NaN)
      fields[name] = new KINDS[dtype].Ctor(n).fill(n === 0 ? 0 : OPTIONAL_FIELDS[name]);
      continue;
    }
    fields[name] = toTypedArray(buf, dtype, n);
  }
  return {
    start: 0,
    count,
    topK,
    fields,
    runId: rd.run_id ?? null,
    vocab: rd.vocab || {},
    partial: !!rd.partial,
    // what the whole run would have scored (a cancelled run: more than count)
    totalTokens: Math.max(count, Number(rd.total_tokens) | 0),
    metrics: rd.metrics || null,
    unitSpans: decodeUnitSpans(
      UNIT_SPAN_FIELDS.map((k) => rd[k]),
      rd.levels,
    ),
    levelNotes: rd.level_notes || {},
    bowProbEnd: rd.bow_prob_end == null ? NaN : Number(rd.bow_prob_end),
    wordCorrected:
      rd.word_corrected != null && rd.levels && rd.levels.word != null
        ? toTypedArray(rd.word_corrected, "<f4", rd.levels.word)
        : null,
    divergence: decodeDivergence(rd.divergence, count, topK),
  };
}

/** A divergence view's second model (result_data.divergence): {labels, fields}, or null. */
export function decodeDivergence(dv, count, topK) {
  if (!dv || typeof dv !== "object") return null;
  const fields = {};
  for (const [name, dtype, per] of DIVERGENCE_FIELDS) {
    fields[name] = toTypedArray(dv[name], dtype, expectedLength(per, count, topK));
  }
  const labels = Array.isArray(dv.labels) ? dv.labels.map(String) : ["base", "other"];
  return { labels, fields };
}

/** One metric from Python (core/jsonable.py): null is NaN, "Infinity"/"-Infinity" a number,
 * a [lo, hi] interval element by element; other strings (unigram_source) stay. */
function metricValue(v) {
  if (v == null) return NaN;
  if (Array.isArray(v)) return v.map(metricValue);
  return typeof v === "string" && v !== "Infinity" && v !== "-Infinity" ? v : Number(v);
}

/** Metrics dict from Python, its values read by metricValue. */
export function normaliseMetrics(m) {
  if (!m || typeof m !== "object") return null;
  const out = {};
  for (const [k, v] of Object.entries(m)) out[k] = metricValue(v);
  return out;
}
