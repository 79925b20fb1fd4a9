// One scoring run of the live page, as the kernel's scorer does it: the text laid out as
// the model's input sequence (scoring/runner/prepare.py _lay_out: prefix token, units, EOS), the
// windows planned by the one rule (windows.js), each window scored through model_api.js,
// and the widget's own messages (reset, chunk, done: views/protocol.py) made from them.
// Pure: no DOM, no Worker; worker.js posts what this yields.

import { CHUNK_FIELDS, MSG_CHUNK, MSG_DONE, MSG_RESET } from "../protocol.js";
import { metricsFromSums } from "../metrics.js";
import { checkScores, checkTokens } from "./model_api.js";
import { sentenceSpans } from "./sentences.js";
import { assignTokens, partitionOffsets, TextUnits, wordSpans } from "./text_units.js";
import { planReuse } from "./reuse.js";
import { checkWindowSettings, defaultStride, planWindows } from "./windows.js";

export const DEFAULT_TOP_K = 5;
export const CHUNK_MAX = 256; // tokens per chunk message

/**
 * The run's settings, checked by the widget's rules: {max_length, stride, prefix ("bos" |
 * "none"), prefix_every_window, add_eos, top_k}; null max_length / stride: the model's
 * defaults.  An Error with `field` names the setting it refuses.
 */
export function runSettings(model, s = {}) {
  const contextLength = model.contextLength === undefined ? model.maxLength : model.contextLength;
  const every = s.prefix_every_window === true;
  let { maxLength, stride } = checkWindowSettings(s.max_length ?? null, s.stride ?? null, { contextLength, prefixEveryWindow: every });
  maxLength = maxLength ?? model.maxLength;
  stride = stride ?? defaultStride(maxLength);
  ({ maxLength, stride } = checkWindowSettings(maxLength, stride, { contextLength, prefixEveryWindow: every }));
  const prefix = s.prefix ?? "bos";
  const refuse = (field, message) => Object.assign(new Error(message), { field });
  if (prefix !== "bos" && prefix !== "none") throw refuse("prefix", `prefix must be 'bos' or None, got ${prefix}`);
  if (every && prefix !== "bos") throw refuse("prefix_every_window", "prefix_every_window=True reads the prefix token in every window: it needs prefix='bos'");
  if (every && model.prefixEveryWindow === false) throw refuse("prefix_every_window", "prefix_every_window=True is for neural models (an n-gram model reads no prefix token)");
  const topK = s.top_k ?? DEFAULT_TOP_K;
  if (!Number.isInteger(topK) || topK < 0) throw refuse("top_k", `top_k must be a non-negative integer, got ${topK}`);
  return { maxLength, stride, prefix, prefixEveryWindow: every, addEos: s.add_eos === true, topK: Math.min(topK, model.vocabSize) };
}

/** _lay_out: the input sequence and what each target is (offsets, units, EOS). */
export function layOut(model, text, { prefix = "bos", addEos = false } = {}) {
  const { ids, offsets } = checkTokens(model.tokenize(text), text, model.name);
  const head = [];
  if (prefix === "bos") {
    const pid = model.prefixId ?? model.eosId;
    if (pid == null) throw Object.assign(new Error("prefix='bos' needs a BOS or EOS token, and this tokenizer has neither; pass prefix=None to leave the first token unscored"), { field: "prefix" });
    head.push(pid);
  }
  if (addEos && model.eosId == null) throw new Error("add_eos=True needs an EOS token, and this tokenizer has none");
  const spans = partitionOffsets(offsets, text);
  const units = new TextUnits(text).perSpan(spans);
  const tail = addEos ? [model.eosId] : [];
  const sequence = Int32Array.from([...head, ...ids, ...tail]);
  const nUnscored = head.length ? 0 : Math.min(1, ids.length);
  const n = ids.length - nUnscored;
  const eos = tail.length && sequence.length > 1 ? 1 : 0;
  const start16 = new Int32Array(n + eos);
  const end16 = new Int32Array(n + eos);
  const tunits = new Int32Array((n + eos) * 3);
  for (let i = 0; i < n; i++) {
    start16[i] = spans[2 * (i + nUnscored)];
    end16[i] = spans[2 * (i + nUnscored) + 1];
    tunits.set(units.subarray(3 * (i + nUnscored), 3 * (i + nUnscored) + 3), 3 * i);
  }
  const isEos = new Uint8Array(n + eos);
  if (eos) {
    start16[n] = end16[n] = text.length;
    tunits.set([1, 1, 1], 3 * n); // EOS counts as one of every unit
    isEos[n] = 1;
  }
  // the word level (core/levels.py's rule over the default words, runs of non-whitespace)
  const words = wordSpans(text);
  const word = assignTokens(text, start16, end16, words, isEos);
  const unscoredIds = Int32Array.from(ids.subarray(0, nUnscored));
  const unscoredOffsets = Int32Array.from(spans.subarray(0, 2 * nUnscored));
  // the sentence level: pysbd's sentences (sentences.js, its rules in JS), the same rule
  const sentences = sentenceSpans(text);
  const sentence = assignTokens(text, start16, end16, sentences, isEos);
  return { sequence, firstTarget: Math.max(1, head.length), start16, end16, units: tunits, nTargets: n + eos, nUnscored, words, word, sentences, sentence, isEos, unscoredIds, unscoredOffsets };
}

/** The settings trait ("Scored with") of a run, as result_settings words it. */
export function settingsTrait(model, st, lay) {
  return {
    model: model.name,
    max_length: st.maxLength,
    stride: st.stride,
    prefix: st.prefix === "bos" ? "bos" : null,
    prefix_token: st.prefix === "bos" ? model.decode(model.prefixId ?? model.eosId) : null,
    add_eos: st.addEos,
    eos_scored: st.addEos && lay.nTargets > 0,
    top_k: st.topK,
    prefix_every_window: st.prefixEveryWindow,
    n_unscored: lay.nUnscored,
    total_tokens: lay.nTargets,
    device: "this browser",
    dtype: model.dtype || "",
  };
}

export const MSG_SETTINGS = "settings"; // the live page's own: {run_id, settings} first

/** Tokens a window runs at once over the model's cache: a newer text stops a run between
 * two pieces, and colours come piece by piece. */
export const PIECE_TOKENS = 32;
/** Windows whose cache a run keeps for the next edit (a 1024-token window of SmolLM2-135M
 * holds 47 MB). */
export const CACHED_WINDOWS = 3;

/**
 * Score `text`: yields [message, buffers] pairs: the run's settings trait ({type:
 * "settings"}), then messages shaped as the kernel's (reset, chunks, done) for PplView's
 * StreamHandler.  A setting it refuses throws an Error with `field`.  `isCancelled()` is
 * asked between pieces; a cancelled run yields nothing more.
 *
 * `memory` ({last}), kept by the caller per model: the previous run's numbers and caches.
 * The windows an edit leaves valid are kept (reuse.js, the kernel's rule), and in the
 * first window it changes, a model with a cache (scorePiece) runs only from the first
 * changed token; `memory.last` becomes this run (what it scored, if it stops).
 */
export async function* scoreText(model, text, settings, runId, isCancelled = () => false, memory = {}) {
  const st = runSettings(model, settings);
  const lay = layOut(model, text, st);
  const windows = planWindows(lay.sequence.length, st.maxLength, st.stride, { firstTarget: lay.firstTarget, prefixEveryWindow: st.prefixEveryWindow });
  const key = JSON.stringify([model.name, st]);
  const old = memory.last && memory.last.key === key && !st.prefixEveryWindow ? memory.last : null;
  const kept = planReuse(old, lay, text, windows, st) || { windows: 0, tokens: 0, changed: 0 };
  const rec = newRecord(key, text, lay, st.topK);
  memory.last = rec;
  const resume = model.scorePiece ? windows.map((w, k) => resumeAt(old, k, w, lay, kept.changed)) : [];
  handOver(rec, old, kept, windows, resume, lay);
  // reused_tokens (the editor's "N of M tokens scored again"): the kept windows' targets,
  // and the rows kept over a window's cache
  let reused = kept.tokens;
  for (let k = kept.windows; k < resume.length; k++) reused += Math.max(0, resume[k] - (windows[k].targetStart - 1 - windows[k].inputStart));
  yield [{ type: MSG_SETTINGS, run_id: runId, settings: { ...settingsTrait(model, st, lay), reused_tokens: reused } }, []];
  yield resetMessage(lay, st, runId);
  const out = new Chunker(model, lay, st.topK, runId, rec);
  for (const c of out.upTo(kept.tokens)) yield c;
  for (let k = kept.windows; k < windows.length; k++) {
    if (isCancelled()) return;
    const w = windows[k];
    const inputs = lay.sequence.slice(w.inputStart, w.inputEnd);
    if (w.prefixed) inputs[0] = lay.sequence[0];
    if (!model.scorePiece) {
      const nT = w.targetEnd - w.targetStart;
      const targets = lay.sequence.slice(w.targetStart, w.targetEnd);
      const scores = checkScores(await model.scoreWindow(inputs, nT, st.topK, targets), nT, st.topK, model.name);
      if (isCancelled()) return;
      rec.write(w.targetStart - lay.firstTarget, scores, nT, (i) => w.targetStart + i - w.inputStart);
      for (const c of out.upTo(w.targetEnd - lay.firstTarget)) {
        yield c;
        if (isCancelled()) return;
      }
      continue;
    }
    const from = resume[k];
    let past = null;
    if (from > 0) {
      const cache = old.caches.get(k);
      past = from === cache.length ? cache.past : model.truncatePast(cache.past, from);
      rec.caches.set(k, { ...cache, inputs, length: from, past });
    }
    const firstRow = w.targetStart - 1 - w.inputStart; // the row predicting the first target
    const rowTarget = (j) => w.inputStart + j + 1 - lay.firstTarget; // its target's index
    if (from > firstRow) keepTargets(rec, old, rowTarget(firstRow), rowTarget(from));
    for (const c of out.upTo(rowTarget(Math.max(from, firstRow)))) yield c;
    for (let a = from; a < inputs.length; a += PIECE_TOKENS) {
      const b = Math.min(a + PIECE_TOKENS, inputs.length);
      const row0 = Math.max(a, firstRow);
      // a piece of context only still asks for one row (the graph gives at least one)
      const nT = Math.max(1, b - row0);
      const targets = lay.sequence.slice(w.inputStart + b - nT + 1, w.inputStart + b + 1);
      const res = await model.scorePiece(inputs.subarray(a, b), past, nT, st.topK, targets);
      past = res.past;
      rec.caches.delete(k); // newest last: the oldest windows' caches are dropped first
      rec.caches.set(k, { inputStart: w.inputStart, targetStart: w.targetStart, prefixed: w.prefixed, inputs, length: b, past });
      while (rec.caches.size > CACHED_WINDOWS) rec.caches.delete(rec.caches.keys().next().value);
      if (isCancelled()) return;
      if (b > firstRow) {
        const scores = checkScores(res.scores, nT, st.topK, model.name);
        rec.write(rowTarget(row0), scores, b - row0, (i) => row0 + i + 1, nT - (b - row0));
        for (const c of out.upTo(rowTarget(b))) {
          yield c;
          if (isCancelled()) return;
        }
      }
    }
  }
  rec.partial = false;
  yield [{ type: MSG_DONE, run_id: runId, partial: false, metrics: metricsFromSums(out.sums) }, []];
}

/**
 * The last run's rows and caches that hold for this text, in this run's record before it
 * yields anything: a run that a newer text stops at its first message (or before its first
 * piece) still hands all of them to the next run, which would otherwise start from nothing.
 * Rows: the kept windows' targets, and those of the first window run again that come before
 * its first changed target (contiguous: ids says how many rows hold).  Caches: every one,
 * as it was; resumeAt checks a cache's inputs against the text before it is read.
 */
function handOver(rec, old, kept, windows, resume, lay) {
  if (!old) return;
  keepTargets(rec, old, 0, kept.tokens);
  const k = kept.windows;
  if (k < windows.length && resume[k] > 0) {
    const w = windows[k];
    const firstRow = w.targetStart - 1 - w.inputStart;
    const rowTarget = (j) => w.inputStart + j + 1 - lay.firstTarget;
    if (resume[k] > firstRow) keepTargets(rec, old, rowTarget(firstRow), rowTarget(resume[k]));
  }
  for (const [j, cache] of old.caches) rec.caches.set(j, cache);
}

/**
 * Where window k starts running over the last run's cache of it (0: from its start).  The
 * cache holds where that window began at the same position (same first input and first
 * target, so its keys and values are those of this plan); the rows before the first
 * changed target, and before the first input that differs, read what they read before.
 */
function resumeAt(old, k, w, lay, changed) {
  const cache = old && old.caches.get(k);
  if (!cache || cache.inputStart !== w.inputStart || cache.targetStart !== w.targetStart || cache.prefixed !== w.prefixed) return 0;
  // (no cache with prefix_every_window: old is null, as reuse= is refused there)
  const same = commonLength(cache.inputs, lay.sequence.subarray(w.inputStart, w.inputEnd), cache.length);
  return Math.max(0, Math.min(same, changed + lay.firstTarget - 1 - w.inputStart));
}

/** How many of the first `n` entries of a and b agree. */
function commonLength(a, b, n) {
  const m = Math.min(n, a.length, b.length);
  let i = 0;
  while (i < m && a[i] === b[i]) i++;
  return i;
}

/** The run's reset message: its token count and the word and sentence spans. */
function resetMessage(lay, st, runId) {
  const [wordStart, wordEnd] = startsAndEnds(lay.words);
  const [sentenceStart, sentenceEnd] = startsAndEnds(lay.sentences);
  const levels = { word: wordStart.length, sentence: sentenceStart.length };
  const spanBuffers = [wordStart.buffer, wordEnd.buffer, sentenceStart.buffer, sentenceEnd.buffer];
  return [{ type: MSG_RESET, run_id: runId, total_tokens: lay.nTargets, top_k: st.topK, levels }, spanBuffers];
}

/** Spans (2 per unit) as the reset message's two arrays: starts, ends. */
function startsAndEnds(spans) {
  const n = spans.length >> 1;
  const starts = new Int32Array(n);
  const ends = new Int32Array(n);
  for (let u = 0; u < n; u++) {
    starts[u] = spans[2 * u];
    ends[u] = spans[2 * u + 1];
  }
  return [starts, ends];
}

/**
 * What a run scored, target by target (the next run's `old`): the fields reuse.js reads
 * ({text, ids, start16, end16, isEos, unscoredIds, unscoredOffsets, total, partial}, ids
 * cut to the targets scored), the model's numbers, and the caches of its last windows.
 */
function newRecord(key, text, lay, k) {
  const n = lay.nTargets;
  const targetIds = lay.sequence.subarray(lay.firstTarget);
  const rec = {
    key, text, start16: lay.start16, end16: lay.end16, isEos: lay.isEos,
    unscoredIds: lay.unscoredIds, unscoredOffsets: lay.unscoredOffsets,
    total: n, partial: true, targetIds, ids: targetIds.subarray(0, 0), k,
    surprisal: new Float64Array(n), entropy: new Float64Array(n), rank: new Int32Array(n),
    context: new Int32Array(n), topkIds: new Int32Array(n * k), topkProbs: new Float32Array(n * k),
    caches: new Map(), // window index -> {inputStart, prefixed, inputs, length, past}
    /** Rows skip .. skip + n of `s` as targets t .. t + n (their context: ctx(i)). */
    write(t, s, n, ctx, skip = 0) {
      for (let i = 0; i < n; i++) {
        rec.surprisal[t + i] = s.surprisal[skip + i];
        rec.entropy[t + i] = s.entropy[skip + i];
        rec.rank[t + i] = s.rank[skip + i];
        rec.context[t + i] = s.contextLength ? s.contextLength[skip + i] : ctx(i);
      }
      rec.topkIds.set(s.topkIds.subarray(skip * k, (skip + n) * k), t * k);
      rec.topkProbs.set(s.topkProbs.subarray(skip * k, (skip + n) * k), t * k);
      rec.ids = targetIds.subarray(0, t + n);
    },
  };
  return rec;
}

/** Targets [a, b) taken from the previous run's record (the reuse rule said they hold). */
function keepTargets(rec, old, a, b) {
  if (b <= a) return;
  const k = rec.k;
  for (const f of ["surprisal", "entropy", "rank", "context"]) rec[f].set(old[f].subarray(a, b), a);
  rec.topkIds.set(old.topkIds.subarray(a * k, b * k), a * k);
  rec.topkProbs.set(old.topkProbs.subarray(a * k, b * k), a * k);
  rec.ids = rec.targetIds.subarray(0, Math.max(rec.ids.length, b));
}

/** The run's chunk messages: each target once, in order, with the vocabulary it needs. */
class Chunker {
  constructor(model, lay, k, runId, rec) {
    Object.assign(this, { model, lay, k, runId, rec, next: 0, sent: new Set(), t0: performance.now() });
    this.sums = { nats: 0, tokens: 0, words: 0, chars: 0, bytes: 0 };
  }

  /** Chunks of the recorded targets from the last one sent up to `end` (CHUNK_MAX each). */
  *upTo(end) {
    const { lay, rec, k, sums } = this;
    while (this.next < end) {
      const start = this.next;
      const n = Math.min(CHUNK_MAX, end - start);
      const fields = chunkFields(lay, rec, start, n, k);
      const vocab = {};
      for (const id of [...fields.token_ids, ...fields.topk_ids]) {
        if (!this.sent.has(id)) {
          this.sent.add(id);
          vocab[id] = this.model.decode(id);
        }
      }
      for (let i = 0; i < n; i++) {
        sums.nats += rec.surprisal[start + i];
        sums.words += fields.units[3 * i];
        sums.chars += fields.units[3 * i + 1];
        sums.bytes += fields.units[3 * i + 2];
      }
      sums.tokens += n;
      this.next = start + n;
      const elapsed = (performance.now() - this.t0) / 1000;
      const total = lay.nTargets;
      const rate = elapsed > 0 ? this.next / elapsed : null;
      const progress = { done: this.next, total, tokens_per_s: rate, eta_s: rate ? (total - this.next) / rate : null, elapsed_s: elapsed };
      const buffers = CHUNK_FIELDS.map(([name]) => fields[name].buffer);
      yield [{ type: MSG_CHUNK, run_id: this.runId, start, count: n, top_k: k, vocab, progress }, buffers];
    }
  }
}

/** The chunk fields of the run's targets [start, start + n), from the record. */
function chunkFields(lay, rec, start, n, k) {
  const end = start + n;
  return {
    token_ids: lay.sequence.slice(lay.firstTarget + start, lay.firstTarget + end),
    start16: lay.start16.slice(start, end),
    end16: lay.end16.slice(start, end),
    surprisal: Float32Array.from(rec.surprisal.subarray(start, end)),
    entropy: Float32Array.from(rec.entropy.subarray(start, end)),
    rank: rec.rank.slice(start, end),
    context_length: rec.context.slice(start, end),
    units: lay.units.slice(3 * start, 3 * end),
    topk_ids: rec.topkIds.slice(start * k, end * k),
    topk_probs: rec.topkProbs.slice(start * k, end * k),
    word: lay.word.slice(start, end),
    sentence: lay.sentence.slice(start, end),
    bow_prob: new Float32Array(n).fill(NaN),
    context_gain: new Float32Array(n).fill(NaN),
  };
}
