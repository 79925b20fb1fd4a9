// The comparison view's numbers.  Pure: no DOM.
//
// Each model sends its scored tokens (UTF-16 offsets, surprisal in nats, and
// the word each token belongs to, -1 for none) and the text's words are sent
// once.  A word's surprisal under a model is the sum over its tokens; the
// colour of a word is the difference between two models' sums, so models with
// different tokenizers are compared on the same units.

import { toTypedArray } from "../decode.js";

// Per-token buffers of one model, in the order compare_data.MODEL_FIELDS lists them.
export const MODEL_FIELDS = Object.freeze([
  ["start16", "<i4"],
  ["end16", "<i4"],
  ["surprisal", "<f4"],
  ["word", "<i4"],
]);

// Statuses after which a model's word sums are final.
export const FINAL = Object.freeze(["done", "cancelled", "error", "skipped"]);

/** The words of the text: {count, start16, end16} with typed arrays. */
export function decodeWords(w) {
  const count = w && w.count ? w.count : 0;
  if (!count) return { count: 0, start16: new Int32Array(0), end16: new Int32Array(0) };
  return { count, start16: toTypedArray(w.start16, "<i4", count), end16: toTypedArray(w.end16, "<i4", count) };
}

/** One model's entry (from models_data) with its buffers as typed arrays. */
export function decodeModel(entry) {
  const out = { ...entry, count: entry.count || 0 };
  for (const [name, dtype] of MODEL_FIELDS) {
    out[name] = out.count ? toTypedArray(entry[name], dtype, out.count) : new (dtype === "<f4" ? Float32Array : Int32Array)(0);
  }
  return out;
}

/**
 * Per word: the model's surprisal (nats, summed over the word's tokens), its
 * first token and token count, and whether the sum is final.  A word is final
 * once the model moved on to a later word (tokens arrive in text order) or the
 * model finished; words it never reached are NaN.
 */
export function wordSums(model, nWords) {
  const nats = new Float64Array(nWords).fill(NaN);
  const first = new Int32Array(nWords).fill(-1);
  const ntok = new Int32Array(nWords);
  let maxWord = -1;
  for (let i = 0; i < model.count; i++) {
    const w = model.word[i];
    if (w < 0 || w >= nWords) continue;
    if (first[w] < 0) {
      first[w] = i;
      nats[w] = 0;
    }
    nats[w] += model.surprisal[i];
    ntok[w] += 1;
    if (w > maxWord) maxWord = w;
  }
  const finished = model.status === "done";
  for (let w = 0; w < nWords; w++) {
    // the word being scored may still gain tokens; a cancelled model's last word too
    if (!finished && w >= maxWord) nats[w] = NaN;
  }
  return { nats, first, ntok };
}

/** The tokens model `m` split word `w` into: [{text, nats}] (text sliced by offsets). */
export function wordTokens(model, sums, w, text) {
  const out = [];
  const i0 = sums.first[w];
  if (i0 < 0) return out;
  for (let i = i0; i < model.count && out.length < sums.ntok[w]; i++) {
    if (model.word[i] !== w) continue;
    out.push({ text: text.slice(model.start16[i], model.end16[i]), nats: model.surprisal[i] });
  }
  return out;
}

/** Surprisal of a minus b per word (nats); NaN where either is not final. */
export function wordDiff(sumsA, sumsB) {
  const n = sumsA.nats.length;
  const out = new Float64Array(n);
  for (let w = 0; w < n; w++) out[w] = sumsA.nats[w] - sumsB.nats[w];
  return out;
}

const NICE = [0.5, 1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64];

/**
 * The scale's half-width, in the unit shown: a round number at or above the
 * 95th percentile of |difference| (at least 0.5), so a few outliers do not wash
 * out every other word.  Values beyond it are clamped (the legend says "≥").
 */
export function scaleMax(diffNats, unit = "bits") {
  const k = unit === "nats" ? 1 : 1 / Math.LN2;
  const abs = [];
  for (const d of diffNats) if (Number.isFinite(d)) abs.push(Math.abs(d) * k);
  if (!abs.length) return NICE[1];
  abs.sort((x, y) => x - y);
  const q = abs[Math.min(abs.length - 1, Math.floor(0.95 * abs.length))];
  return NICE.find((v) => v >= q) ?? Math.ceil(q);
}

/** Model statuses in a sentence: "A: done · B: scoring 40%". */
export function progressLabel(entry) {
  if (entry.status === "scoring" && entry.total) {
    return `scoring ${Math.floor((100 * (entry.done || 0)) / entry.total)}%`;
  }
  return entry.status || "waiting";
}
