// Accumulates the scored tokens of the current run in growable typed arrays.
//
// Chunks arrive in order; a replay resends from index 0, so tokens are
// written by index and sums are never double counted.  Chunks of another
// (older) run are ignored.  Pure: no DOM.

import { UNIT_BYTES, UNIT_CHARS, UNIT_WORDS } from "./protocol.js";

const SCALARS = [
  ["token_ids", Int32Array],
  ["start16", Int32Array],
  ["end16", Int32Array],
  ["surprisal", Float32Array],
  ["entropy", Float32Array],
  ["rank", Int32Array],
  ["context_length", Int32Array],
  ["word", Int32Array],
  ["sentence", Int32Array],
  ["bow_prob", Float32Array],
  ["context_gain", Float32Array],
];

const NO_LEVELS = Object.freeze({ word: null, sentence: null });

function grow(arr, n) {
  const out = new arr.constructor(n);
  out.set(arr.subarray(0, Math.min(arr.length, n)));
  return out;
}

/** Compare two run ids; numbers numerically, anything else only by equality. */
export function isNewerRun(a, b) {
  if (b == null) return a != null;
  if (typeof a === "number" && typeof b === "number") return a > b;
  return false;
}

export class TokenStore {
  constructor() {
    this.runId = null;
    this.retired = new Set(); // run ids whose text is gone (text trait changed)
    this.addEos = false; // the run appended an EOS (its settings' add_eos): the view sets it
    this._clearData(0, 0);
  }

  /** Token i is the EOS that add_eos appended: the run's last token, zero-width at the
   * end of the text (textLength UTF-16 units).  A zero-width token elsewhere, or one
   * at the end of a run without add_eos (an empty token, a split character), is not. */
  isAddedEos(i, textLength) {
    if (!this.addEos || i !== Math.max(this.totalTokens, this.length) - 1) return false;
    return !(this.end16[i] > this.start16[i]) && this.start16[i] >= textLength;
  }

  _clearData(capacity, topK) {
    this.version = (this.version || 0) + 1; // per-unit sums start again when it changes
    this.length = 0;
    this.capacity = capacity;
    this.topK = topK;
    this.totalTokens = 0;
    for (const [name, Ctor] of SCALARS) this[name] = new Ctor(capacity);
    this.units = new Int32Array(capacity * 3);
    this.topk_ids = new Int32Array(capacity * topK);
    this.topk_probs = new Float32Array(capacity * topK);
    this.vocab = new Map();
    this.sums = { nats: 0, words: 0, chars: 0, bytes: 0 };
    this.final = null; // {metrics, partial} from a `done` message / result_data
    this.unitSpans = NO_LEVELS; // {word: {start16, end16}|null, sentence: ...}
    this.levelNotes = {};
    this.wordCorrected = null; // Float32Array per word (nats), once the run is done
    this.divergence = null; // a divergence view's second model: {labels, fields} (decode.js)
    this.progress = null;
    this.error = null;
  }

  /** A new run starts (or the current one is about to be replayed). */
  reset(runId, totalTokens = 0, topK = 0) {
    const same = runId != null && runId === this.runId;
    if (!same) {
      this.runId = runId;
      this._clearData(Math.max(64, totalTokens | 0), topK | 0);
    } else {
      // Replay of the run we already hold: keep the data; chunks overwrite
      // by index.  The run is live again, so drop the final verdict.
      this.final = null;
      this.error = null;
      if ((topK | 0) !== this.topK && this.length === 0) this._setTopK(topK | 0);
    }
    this.totalTokens = totalTokens | 0;
    this.progress = { done: this.length, total: this.totalTokens };
  }

  /** Unit spans of the run: {word: {start16, end16}|null, sentence: ...}, notes. */
  setLevels(spans, notes) {
    this.unitSpans = spans || NO_LEVELS;
    this.levelNotes = notes || {};
  }

  /** The text changed: what we hold refers to old offsets.  Forget it. */
  invalidate() {
    if (this.runId != null) this.retired.add(this.runId);
    this.runId = null;
    this._clearData(0, 0);
  }

  isRetired(runId) {
    if (this.retired.has(runId)) return true;
    if (typeof runId === "number") {
      for (const r of this.retired) if (typeof r === "number" && runId <= r) return true;
    }
    return false;
  }

  /**
   * Does a message for `runId` belong to what we show?  "current" when it is
   * our run, "adopt" when it is a newer run we did not see the reset of (or
   * we hold nothing), "stale" otherwise.
   */
  classify(runId) {
    if (runId === this.runId && runId != null) return "current";
    if (this.isRetired(runId)) return "stale";
    if (this.runId == null || isNewerRun(runId, this.runId)) return "adopt";
    return "stale";
  }

  _ensureCapacity(n) {
    if (n <= this.capacity) return;
    let cap = Math.max(64, this.capacity);
    while (cap < n) cap *= 2;
    for (const [name] of SCALARS) this[name] = grow(this[name], cap);
    this.units = grow(this.units, cap * 3);
    this.topk_ids = grow(this.topk_ids, cap * this.topK);
    this.topk_probs = grow(this.topk_probs, cap * this.topK);
    this.capacity = cap;
  }

  _setTopK(k) {
    // Re-pack the top-k arrays to a new stride (rare: a chunk disagrees).
    const old = this.topK;
    const ids = new Int32Array(this.capacity * k);
    const probs = new Float32Array(this.capacity * k);
    const m = Math.min(old, k);
    for (let i = 0; i < this.length; i++) {
      for (let j = 0; j < m; j++) {
        ids[i * k + j] = this.topk_ids[i * old + j];
        probs[i * k + j] = this.topk_probs[i * old + j];
      }
      for (let j = m; j < k; j++) {
        ids[i * k + j] = -1;
        probs[i * k + j] = NaN;
      }
    }
    this.topK = k;
    this.topk_ids = ids;
    this.topk_probs = probs;
  }

  /**
   * Write a decoded chunk ({start, count, topK, fields}) of run `runId`.
   * Returns {status, from, to, overlap}: status is "ok", "stale" (ignored) or
   * "gap" (a chunk is missing before it; ignored — ask for a replay).
   * [from, to) are the indices written; `overlap` says whether some of them
   * were already held (replay), i.e. already on screen.
   */
  applyChunk(runId, chunk, vocab) {
    const cls = this.classify(runId);
    if (cls === "stale") return { status: "stale", from: 0, to: 0, overlap: false };
    if (cls === "adopt") {
      if (chunk.start !== 0) return { status: "gap", from: 0, to: 0, overlap: false };
      this.reset(runId, Math.max(this.totalTokens, chunk.count), chunk.topK);
    }
    const { start, count } = chunk;
    if (start > this.length) return { status: "gap", from: 0, to: 0, overlap: false };
    if (chunk.topK !== this.topK) {
      if (this.length === 0 || chunk.topK > this.topK) this._setTopK(chunk.topK);
    }
    const end = start + count;
    this._ensureCapacity(end);
    const f = chunk.fields;
    for (const [name, Ctor] of SCALARS) {
      // fields a chunk lacks (an older kernel): no unit (-1), not computed (NaN)
      if (f[name]) this[name].set(f[name], start);
      else this[name].fill(Ctor === Int32Array ? -1 : NaN, start, end);
    }
    this.units.set(f.units, start * 3);
    const k = this.topK;
    if (chunk.topK === k) {
      this.topk_ids.set(f.topk_ids, start * k);
      this.topk_probs.set(f.topk_probs, start * k);
    } else {
      const ck = chunk.topK;
      for (let i = 0; i < count; i++) {
        for (let j = 0; j < k; j++) {
          const inside = j < ck;
          this.topk_ids[(start + i) * k + j] = inside ? f.topk_ids[i * ck + j] : -1;
          this.topk_probs[(start + i) * k + j] = inside ? f.topk_probs[i * ck + j] : NaN;
        }
      }
    }
    const overlap = start < this.length;
    if (overlap) {
      this.version++;
      this.length = Math.max(this.length, end);
      this._recomputeSums();
    } else {
      this._addSums(start, end);
      this.length = end;
    }
    if (vocab) this.mergeVocab(vocab);
    return { status: "ok", from: start, to: end, overlap };
  }

  /** Replace everything by a decoded result_data (see decode.decodeResult). */
  loadResult(res) {
    this.runId = res.runId;
    this._clearData(Math.max(64, res.count), res.topK);
    this.totalTokens = res.count;
    this.applyChunk(res.runId, res, res.vocab);
    this.final = { metrics: res.metrics, partial: res.partial };
    this.progress = { done: res.count, total: res.totalTokens || res.count };
    this.setLevels(res.unitSpans, res.levelNotes);
    this.wordCorrected = res.wordCorrected || null;
    this.divergence = res.divergence || null;
  }

  mergeVocab(vocab) {
    for (const key of Object.keys(vocab)) this.vocab.set(Number(key), String(vocab[key]));
  }

  _addSums(from, to) {
    const s = this.sums;
    for (let i = from; i < to; i++) {
      s.nats += this.surprisal[i];
      s.words += this.units[i * 3 + UNIT_WORDS];
      s.chars += this.units[i * 3 + UNIT_CHARS];
      s.bytes += this.units[i * 3 + UNIT_BYTES];
    }
  }

  _recomputeSums() {
    this.sums = { nats: 0, words: 0, chars: 0, bytes: 0 };
    this._addSums(0, this.length);
  }

  /** Text of token id `id` from the merged vocab (undefined if unknown). */
  tokenText(id) {
    return this.vocab.get(id);
  }

  /** Top-k alternatives of token i: [{id, prob}], best first, padding dropped
   * (`ids`/`probs`: another model's arrays of the same stride, a divergence view's). */
  alternatives(i, ids = this.topk_ids, probs = this.topk_probs) {
    const k = this.topK;
    const out = [];
    for (let j = 0; j < k; j++) {
      const id = ids[i * k + j];
      const prob = probs[i * k + j];
      if (id < 0 || !(prob >= 0)) continue;
      out.push({ id, prob });
    }
    return out;
  }
}
