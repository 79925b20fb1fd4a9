// The reading view's data rules.  Pure: no DOM.
//
// The payload (ppl_widget/views/reading_view.py) is columnar: data = {word, group, rt,
// surprisal (nats), frequency, length, predicted, residual, delta_ll}, one entry per word
// in reading order, null where a value is missing; groups = the texts' labels (group[i]
// indexes it).  Reading times, predictions and residuals are in ms; residual = rt -
// predicted (positive: read slower than the regression predicted); delta_ll: the word's
// gain in held-out log-likelihood (nats), null for a word left out of the regression.

import { binFor, binOfT, GAIN_BINS, GAIN_HALF } from "../colors.js";
import { fmtInt, fmtSigned, MISSING } from "../format.js";

export const COLOR_BY = Object.freeze({
  surprisal: "surprisal",
  rt: "reading time",
  residual: "residual (RT − predicted)",
});

const isNum = (x) => typeof x === "number" && Number.isFinite(x);

/** A payload value as a number: ±Infinity travel as "Infinity" strings (core/jsonable.py),
 * null (missing) stays null. */
export function num(v) {
  if (typeof v === "number") return Number.isNaN(v) ? null : v;
  if (v === "Infinity") return Infinity;
  if (v === "-Infinity") return -Infinity;
  return null;
}

/** The q-quantile (0..1) of the finite values of xs (NaN when there are none). */
export function quantile(xs, q) {
  const v = (xs || []).filter(isNum).sort((a, b) => a - b);
  if (!v.length) return NaN;
  const at = Math.min(v.length - 1, Math.max(0, q * (v.length - 1)));
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return v[lo] + (v[hi] - v[lo]) * (at - lo);
}

/**
 * The ranges the colours and bars are drawn on, from the words' own values (the 98th
 * percentile, so one very slow word does not flatten the rest): rt [lo, hi] and the
 * residual's symmetric half-width.
 */
export function scales(data) {
  const rt = (data && data.rt) || [];
  const res = (data && data.residual) || [];
  const lo = quantile(rt, 0.02);
  const hi = quantile(rt, 0.98);
  const abs = res.filter(isNum).map(Math.abs);
  const half = quantile(abs, 0.98);
  return { rtLo: isNum(lo) ? lo : 0, rtHi: isNum(hi) && hi > lo ? hi : (isNum(lo) ? lo + 1 : 1), resHalf: isNum(half) && half > 0 ? half : 1 };
}

/** Colour bin of word i for a colour mode (-1: no value to colour by). Surprisal uses
 * the single-model view's bins; reading time the theme's ramp over [rtLo, rtHi]; the
 * residual a two-sided ramp of GAIN_BINS bins, 0 ms in the middle one. */
export function wordBin(mode, data, i, sc) {
  if (mode === "rt") {
    const v = data.rt ? data.rt[i] : null;
    return isNum(v) ? binOfT((v - sc.rtLo) / (sc.rtHi - sc.rtLo)) : -1;
  }
  if (mode === "residual") {
    const v = data.residual ? data.residual[i] : null;
    if (!isNum(v)) return -1;
    const k = Math.round((v / sc.resHalf) * GAIN_HALF);
    return GAIN_HALF + Math.max(-GAIN_HALF, Math.min(GAIN_HALF, k));
  }
  const s = data.surprisal ? num(data.surprisal[i]) : null;
  return s == null ? -1 : binFor("surprisal", s, NaN, NaN, NaN);
}

/** Height of word i's reading-time bar as a fraction of the band: BAR_FLOOR at rtLo or
 * less, a full band at rtHi or more, linear between (0: no reading time).  The floor
 * keeps the fastest words' bars visible; the summary line states the range. */
export const BAR_FLOOR = 0.1;
export function barFraction(data, i, sc) {
  const v = data.rt ? num(data.rt[i]) : null;
  if (v == null || !Number.isFinite(v)) return 0;
  const t = Math.max(0, Math.min(1, (v - sc.rtLo) / (sc.rtHi - sc.rtLo)));
  return BAR_FLOOR + (1 - BAR_FLOOR) * t;
}

/** The legend of a colour mode: {title, ticks: [{at 0..1, label}], bins}. */
export function readingLegend(mode, sc, rtName = "reading time") {
  const ms = (x) => `${Math.round(x)} ms`;
  if (mode === "rt") {
    return {
      title: `${rtName} (ms)`,
      bins: null,
      ticks: [0, 0.5, 1].map((f) => ({ at: f, label: (f === 0 ? "≤" : f === 1 ? "≥" : "") + ms(sc.rtLo + f * (sc.rtHi - sc.rtLo)) })),
    };
  }
  if (mode === "residual") {
    return {
      title: `residual of ${rtName} (ms): blue = faster than predicted, orange = slower`,
      bins: GAIN_BINS,
      ticks: [
        { at: 0, label: `≤−${ms(sc.resHalf)}` },
        { at: 0.5, label: "0" },
        { at: 1, label: `≥+${ms(sc.resHalf)}` },
      ],
    };
  }
  return null; // surprisal: the shared legendFor("surprisal", unit)
}

/** Everything the tooltip shows for word i (pure). */
export function wordDetails(data, groups, i) {
  const get = (k) => (data[k] ? num(data[k][i]) : null);
  const group = data.group ? data.group[i] : 0;
  let first = i;
  while (first > 0 && data.group && data.group[first - 1] === group) first--;
  let n = 0;
  for (let j = first; j < data.word.length && (!data.group || data.group[j] === group); j++) n++;
  return {
    index: i,
    word: data.word[i] == null ? "" : String(data.word[i]),
    group: groups && groups[group] != null ? String(groups[group]) : String(group),
    position: i - first,
    nInGroup: n,
    rt: get("rt"),
    surprisal: get("surprisal"),
    frequency: get("frequency"),
    length: get("length"),
    predicted: get("predicted"),
    residual: get("residual"),
    deltaLL: get("delta_ll"),
  };
}

/** The ΔLL of a text's words [start, end): the mean over the words in the regression
 * (`used` of them; mean null when none has one). */
export function textDeltaLL(data, start, end) {
  const v = (data && data.delta_ll) || [];
  let used = 0;
  let sum = 0;
  for (let i = start; i < end; i++) {
    const x = num(v[i]);
    if (x != null && Number.isFinite(x)) {
      used++;
      sum += x;
    }
  }
  return { used, mean: used ? sum / used : null };
}

/** [[start, end), ...] of each text's words in the data (consecutive runs of `group`). */
export function groupRuns(data) {
  const g = (data && data.group) || [];
  const n = data && data.word ? data.word.length : 0;
  const runs = [];
  let start = 0;
  for (let i = 1; i <= n; i++) {
    if (i === n || g[i] !== g[start]) {
      if (n) runs.push([start, i]);
      start = i;
    }
  }
  return runs;
}

/** A signed ΔLL in nats ("+0.0123 nats"). */
export const nats = (x) => (x == null ? MISSING : `${fmtSigned(x, 4)} nats`);

/** A text's heading: "text 3 · 180 words", and (when its words carry a ΔLL) the text's
 * ΔLL beside it; "" when none does. */
export function textHeading(label, n, dll) {
  const head = `text ${label} · ${fmtInt(n)} words`;
  if (dll.mean == null) return [head, ""];
  return [head, `ΔLL ${nats(dll.mean)}/word over its ${fmtInt(dll.used)} words in the regression`];
}
