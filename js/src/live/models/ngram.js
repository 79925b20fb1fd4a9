// The n-gram model of ppl_widget/scoring/kinds/ngram/ngram.py (NGramModel), in the browser: the counts
// exported by ppl_widget/scoring/kinds/ngram/ngram_export.py, the same tokenizer rule and the same
// float64 arithmetic in the same order, so every number equals Python's (the log is
// correctly rounded: see ../float64.js).  Checked on tests/cases/ngram.json.

import { log, pairwiseSum } from "../float64.js";
import { PY_SPACE } from "../text_units.js";

export const FORMAT = "ppl-widget-ngram";
const UNK_ID = 0;
const START_ID = 1;
const END_ID = 2;
const CACHE_SIZE = 4096; // distributions kept (each a vector over the vocabulary)

/** The model's segmentation (NGramTokenizer.segment): a line break with the whitespace
 * after it is one END token; words are runs of non-whitespace (Python's), or characters. */
function segmenter(unit) {
  const item = unit === "char" ? "[\\s\\S]" : `[^${PY_SPACE}]+`;
  return new RegExp(`([\\r\\n][${PY_SPACE}]*)|(${item})`, "gu");
}

function tables(list) {
  // [[context ids], [next ids], [counts]] -> Map "ids" -> {ids, counts, total}
  const out = new Map();
  for (const [ctx, ids, counts] of list) {
    const c = Float64Array.from(counts);
    let total = 0;
    for (const v of c) total += v; // whole numbers: any order gives the exact sum
    out.set(ctx.join(","), { ids: Int32Array.from(ids), counts: c, total });
  }
  return out;
}

export class NGramModel {
  constructor(data) {
    if (!data || data.format !== FORMAT) throw new Error(`not an n-gram model file (format ${data && data.format})`);
    if (data.version !== 1) throw new Error(`n-gram model file version ${data.version}: this page reads version 1`);
    this.order = data.order;
    this.smoothing = data.smoothing;
    this.k = data.k;
    this.discount = data.discount;
    this.symbols = data.symbols;
    this.index = new Map(this.symbols.map((s, i) => [s, i]));
    this.counts = data.counts.map(tables);
    this.cont = data.cont.map(tables);
    this.regex = segmenter(data.unit);
    this.cache = new Map();
    this.lower = new Map();
  }

  /** {ids, offsets} of a text: offsets in UTF-16 code units, two per token. */
  tokenize(text) {
    const ids = [];
    const offsets = [];
    for (const m of text.matchAll(this.regex)) {
      if (m[0].length === 0) continue;
      ids.push(m[1] !== undefined ? END_ID : (this.index.get(m[2]) ?? UNK_ID));
      offsets.push(m.index, m.index + m[0].length);
    }
    return { ids: Int32Array.from(ids), offsets: Int32Array.from(offsets) };
  }

  /** NGramModel._context: the n-gram context of the ids before a target. */
  context(before) {
    const n = this.order;
    if (n === 1) return [];
    let ctx = Array.from(before);
    const cut = ctx.lastIndexOf(END_ID);
    if (cut >= 0) ctx = [START_ID, ...ctx.slice(cut + 1)];
    if (ctx.length && ctx[0] === START_ID && ctx.length < n - 1) {
      ctx = [...new Array(n - 1 - ctx.length).fill(START_ID), ...ctx];
    }
    return ctx.slice(Math.max(0, ctx.length - (n - 1)));
  }

  /** NGramModel._vector: P(. | ctx) over all symbols; null for MLE's unseen context. */
  vector(ctx, top = true) {
    const size = this.symbols.length;
    const outcomes = size - 1;
    const raw = top || this.smoothing !== "kneser-ney";
    const table = (raw ? this.counts : this.cont)[ctx.length].get(ctx.join(",")) || null;
    if (this.smoothing === "mle") {
      if (!table) return null;
      const p = new Float64Array(size);
      for (let j = 0; j < table.ids.length; j++) p[table.ids[j]] = table.counts[j] / table.total;
      return p;
    }
    if (this.smoothing === "add-k") {
      const p = new Float64Array(size).fill(this.k);
      p[START_ID] = 0;
      if (table) for (let j = 0; j < table.ids.length; j++) p[table.ids[j]] += table.counts[j];
      const denom = (table ? table.total : 0) + this.k * outcomes;
      for (let i = 0; i < size; i++) p[i] /= denom;
      return p;
    }
    // interpolated Kneser-Ney: raw counts at the top, continuation counts below
    let lower;
    if (ctx.length) {
      lower = this.lowerVector(ctx.slice(1));
    } else {
      lower = new Float64Array(size).fill(1 / outcomes);
      lower[START_ID] = 0;
    }
    if (!table) return lower;
    const w = (this.discount * table.ids.length) / table.total;
    const p = new Float64Array(size);
    for (let i = 0; i < size; i++) p[i] = w * lower[i];
    for (let j = 0; j < table.ids.length; j++) {
      p[table.ids[j]] += Math.max(table.counts[j] - this.discount, 0) / table.total;
    }
    return p;
  }

  /** vector(ctx, false), kept: every context of a length shares its lower orders (read
   * only; a vector of the vocabulary's size is costly to allocate). */
  lowerVector(ctx) {
    const key = ctx.join(",");
    let v = this.lower.get(key);
    if (!v) {
      v = this.vector(ctx, false);
      this.lower.set(key, v);
      if (this.lower.size > CACHE_SIZE) this.lower.delete(this.lower.keys().next().value);
    }
    return v;
  }

  /** NGramModel._stats: the distribution and its entropy (top lists made on demand). */
  stats(ctx) {
    const key = ctx.join(",");
    const hit = this.cache.get(key);
    if (hit) {
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit;
    }
    let p = this.vector(ctx);
    let entropy;
    if (p === null) {
      p = new Float64Array(this.symbols.length);
      entropy = NaN;
    } else {
      // -sum p log p in numpy's order; a distribution holds few distinct values (every
      // unseen word of a context has the same), so each value's log is taken once
      const logs = new Map();
      const terms = this.scratch || (this.scratch = new Float64Array(p.length));
      let n = 0;
      for (let i = 0; i < p.length; i++) {
        const v = p[i];
        if (!(v > 0)) continue;
        let t = logs.get(v);
        if (t === undefined) logs.set(v, (t = v * log(v)));
        terms[n++] = t;
      }
      entropy = -pairwiseSum(terms, 0, n);
    }
    const stats = { p, entropy, tops: new Map() };
    this.cache.set(key, stats);
    if (this.cache.size > CACHE_SIZE) this.cache.delete(this.cache.keys().next().value);
    return stats;
  }

  /** The k outcomes most probable first, ties by id (Python's stable argsort; START is
   * never an outcome), without sorting the whole vocabulary. */
  top(stats, k) {
    let ids = stats.tops.get(k);
    if (ids) return ids;
    const p = stats.p;
    ids = [];
    for (let i = 0; i < p.length; i++) {
      if (i === START_ID) continue;
      if (ids.length === k && !(p[i] > p[ids[k - 1]])) continue; // not above the k-th
      let j = ids.length < k ? ids.length : k - 1;
      while (j > 0 && p[i] > p[ids[j - 1]]) j--; // earlier ids win ties: stay behind them
      ids.splice(j, 0, i);
      if (ids.length > k) ids.pop();
    }
    ids = Int32Array.from(ids);
    stats.tops.set(k, ids);
    return ids;
  }

  /** 1 + the outcomes strictly more probable than id; the last rank for probability 0. */
  rank(stats, id) {
    const p = stats.p;
    const pt = p[id];
    if (!(pt > 0)) return this.symbols.length - 1;
    let above = 0;
    for (let i = 0; i < p.length; i++) if (p[i] > pt) above++;
    return above + 1;
  }
}

/** The Model of model_api.js over an NGramModel. */
export function asModel(lm, entry = {}) {
  const vocabSize = lm.symbols.length - 1;
  return {
    name: entry.name || "n-gram",
    kind: "ngram",
    maxLength: (entry.settings && entry.settings.max_length) || 1024,
    contextLength: null, // an n-gram reads order - 1 symbols back: any window length
    vocabSize,
    prefixId: START_ID,
    eosId: END_ID,
    prefixEveryWindow: false, // it reads no prefix token (score()'s rule)
    dtype: "float64",
    tokenize: (text) => lm.tokenize(text),
    decode: (id) => lm.symbols[id] ?? "",
    lm,
    async scoreWindow(inputIds, nTargets, topK, targetIds) {
      const k = Math.min(topK, vocabSize);
      const out = {
        surprisal: new Float64Array(nTargets),
        entropy: new Float64Array(nTargets),
        rank: new Int32Array(nTargets),
        topkIds: new Int32Array(nTargets * k),
        topkProbs: new Float32Array(nTargets * k),
        contextLength: new Int32Array(nTargets),
      };
      const first = inputIds.length - nTargets + 1; // input index of the first target
      for (let i = 0; i < nTargets; i++) {
        const t = first + i; // the target's index, were it in inputIds
        const lo = Math.max(0, t - (lm.order - 1));
        const st = lm.stats(lm.context(inputIds.subarray(lo, t)));
        const target = targetIds[i];
        const pt = st.p[target];
        out.surprisal[i] = pt > 0 ? 0 - log(pt) : Infinity;
        out.entropy[i] = st.entropy;
        out.rank[i] = lm.rank(st, target);
        const top = lm.top(st, k);
        for (let j = 0; j < k; j++) {
          out.topkIds[i * k + j] = top[j];
          out.topkProbs[i * k + j] = st.p[top[j]];
        }
        out.contextLength[i] = t - lo;
      }
      return out;
    },
  };
}

/** model_api.js's load(): the manifest entry names the counts file (files.counts). */
export async function load(entry, baseUrl, fetchFn) {
  const file = entry.files && entry.files.counts;
  if (!file) throw new Error(`n-gram model "${entry.name}": the manifest names no counts file`);
  const url = new URL(file, baseUrl);
  const res = await fetchFn(url.href);
  if (!res.ok) throw new Error(`n-gram model "${entry.name}": ${file} is missing (HTTP ${res.status})`);
  return asModel(new NGramModel(await res.json()), entry);
}
