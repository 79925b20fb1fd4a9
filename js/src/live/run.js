// One scoring run of the live page, as the kernel's scorer does it: the text laid out as
// the model's input sequence (scoring/prepare.py _lay_out: prefix token, units, EOS), the
// windows planned by the one rule (windows.js), each window scored through model_api.js,
// and the widget's own messages (reset, chunk, done: views/protocol.py) made from them.
// Pure: no DOM, no Worker; worker.js posts what this yields.

import { CHUNK_FIELDS, MSG_CHUNK, MSG_DONE, MSG_RESET } from "../protocol.js";
import { metricsFromSums } from "../metrics.js";
import { checkScores, checkTokens } from "./model_api.js";
import { sentenceSpans } from "./sentences.js";
import { assignTokens, partitionOffsets, TextUnits, wordSpans } from "./text_units.js";
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
  // the sentence level: pysbd's sentences (sentences.js, its rules in JS), the same rule
  const sentences = sentenceSpans(text);
  const sentence = assignTokens(text, start16, end16, sentences, isEos);
  return { sequence, firstTarget: Math.max(1, head.length), start16, end16, units: tunits, nTargets: n + eos, nUnscored, words, word, sentences, sentence };
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

/**
 * Score `text`: yields [message, buffers] pairs: the run's settings trait ({type:
 * "settings"}), then messages shaped as the kernel's (reset, chunks, done) for PplView's
 * StreamHandler.  A setting it refuses throws an Error with `field`.  `isCancelled()` is asked between windows; a
 * cancelled run yields nothing more.
 */
export async function* scoreText(model, text, settings, runId, isCancelled = () => false) {
  const st = runSettings(model, settings);
  const lay = layOut(model, text, st);
  const windows = planWindows(lay.sequence.length, st.maxLength, st.stride, { firstTarget: lay.firstTarget, prefixEveryWindow: st.prefixEveryWindow });
  const total = lay.nTargets;
  yield [{ type: MSG_SETTINGS, run_id: runId, settings: settingsTrait(model, st, lay) }, []];
  const [wordStart, wordEnd] = startsAndEnds(lay.words);
  const [sentenceStart, sentenceEnd] = startsAndEnds(lay.sentences);
  const levels = { word: wordStart.length, sentence: sentenceStart.length };
  const spanBuffers = [wordStart.buffer, wordEnd.buffer, sentenceStart.buffer, sentenceEnd.buffer];
  yield [{ type: MSG_RESET, run_id: runId, total_tokens: total, top_k: st.topK, levels }, spanBuffers];
  const sent = new Set();
  const sums = { nats: 0, tokens: 0, words: 0, chars: 0, bytes: 0 };
  const t0 = performance.now();
  for (const w of windows) {
    if (isCancelled()) return;
    const inputs = lay.sequence.slice(w.inputStart, w.inputEnd);
    if (w.prefixed) inputs[0] = lay.sequence[0];
    const nT = w.targetEnd - w.targetStart;
    const targets = lay.sequence.slice(w.targetStart, w.targetEnd);
    const scores = checkScores(await model.scoreWindow(inputs, nT, st.topK, targets), nT, st.topK, model.name);
    if (isCancelled()) return;
    // a window's tokens go out in slices: the page draws each in a short task, so typing
    // is never held up by a thousand spans at once
    for (let a = 0; a < nT; a += CHUNK_MAX) {
      const n = Math.min(CHUNK_MAX, nT - a);
      const start = w.targetStart - lay.firstTarget + a;
      const fields = chunkFields(lay, start, a, n, targets, scores, w, st.topK);
      const vocab = {};
      for (const id of [...fields.token_ids, ...fields.topk_ids]) {
        if (!sent.has(id)) {
          sent.add(id);
          vocab[id] = model.decode(id);
        }
      }
      for (let i = 0; i < n; i++) {
        sums.nats += scores.surprisal[a + i];
        sums.words += fields.units[3 * i];
        sums.chars += fields.units[3 * i + 1];
        sums.bytes += fields.units[3 * i + 2];
      }
      sums.tokens += n;
      const elapsed = (performance.now() - t0) / 1000;
      const done = start + n;
      const rate = elapsed > 0 ? done / elapsed : null;
      const progress = { done, total, tokens_per_s: rate, eta_s: rate ? (total - done) / rate : null, elapsed_s: elapsed };
      const buffers = CHUNK_FIELDS.map(([name]) => fields[name].buffer);
      yield [{ type: MSG_CHUNK, run_id: runId, start, count: n, top_k: st.topK, vocab, progress }, buffers];
      if (isCancelled()) return;
    }
  }
  yield [{ type: MSG_DONE, run_id: runId, partial: false, metrics: metricsFromSums(sums) }, []];
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

/** The chunk fields of targets [a, a + n) of a window's scores (the run's tokens from start). */
function chunkFields(lay, start, a, n, targets, s, w, k) {
  const context = new Int32Array(n);
  for (let i = 0; i < n; i++) context[i] = s.contextLength ? s.contextLength[a + i] : w.targetStart + a + i - w.inputStart;
  return {
    token_ids: Int32Array.from(targets.subarray(a, a + n)),
    start16: lay.start16.slice(start, start + n),
    end16: lay.end16.slice(start, start + n),
    surprisal: Float32Array.from(s.surprisal.subarray(a, a + n)),
    entropy: Float32Array.from(s.entropy.subarray(a, a + n)),
    rank: Int32Array.from(s.rank.subarray(a, a + n)),
    context_length: context,
    units: lay.units.slice(3 * start, 3 * (start + n)),
    topk_ids: Int32Array.from(s.topkIds.subarray(a * k, (a + n) * k)),
    topk_probs: Float32Array.from(s.topkProbs.subarray(a * k, (a + n) * k)),
    word: lay.word.slice(start, start + n),
    sentence: lay.sentence.slice(start, start + n),
    bow_prob: new Float32Array(n).fill(NaN),
    context_gain: new Float32Array(n).fill(NaN),
  };
}
