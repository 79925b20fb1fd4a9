// The context curve in the explanation panel: the target's surprisal given only the last k
// context tokens, k = 0, 1, 2, 4, ... and the full context.  A small inline SVG with
// readable axes (a tick at each k the curve has, room permitting; 0, the middle and the top
// of the surprisal) and, where the window left text out (the target has more tokens
// before it than its window holds), that cut marked: a dashed line at the full context
// and the text beyond it shaded.  The geometry is pure (tested); the drawing makes SVG
// elements (no markup parsed).

import { inUnit } from "../levels.js";
import { fmtFixed, fmtInt } from "../format.js";

const SVG = "http://www.w3.org/2000/svg";

// Room around the plot: the y labels on the left, the x labels and title below.
export const CURVE_BOX = Object.freeze({ width: 268, height: 156, left: 34, right: 12, top: 22, bottom: 34 });
// Two x labels closer than this (px) would overlap: the one of lower priority is left out.
const MIN_LABEL_GAP = 20;

/** A round step for about `n` ticks up to `max` (1, 2 or 5 times a power of ten). */
export function niceStep(max, n = 3) {
  if (!(max > 0)) return 1;
  const raw = max / n;
  const p = 10 ** Math.floor(Math.log10(raw));
  const m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/**
 * Points of the curve in a box (CURVE_BOX's shape): x on a log scale of k + 1 (k = 0 at
 * the left edge; the right edge is the full context, or the text's start when the window
 * cut it: `before` tokens of text before the target), y from 0 (bottom) to a round top
 * above the largest surprisal shown, in `unit`.  Returns null for fewer than two points.
 * `cut`: {k, x, xEnd} where the window cuts (null when it does not); xTicks, yTicks:
 * [{value, at, label}].
 */
export function curveGeometry(curve, { box = CURVE_BOX, unit = "bits", before = null } = {}) {
  if (!curve || !Array.isArray(curve.context_tokens)) return null;
  const rows = [];
  for (let j = 0; j < curve.context_tokens.length; j++) {
    const k = Number(curve.context_tokens[j]);
    const s = curve.surprisal_nats[j];
    if (k >= 0 && s != null && Number.isFinite(Number(s))) rows.push([k, inUnit(Number(s), unit)]);
  }
  if (rows.length < 2) return null;
  const kMax = Math.max(...rows.map((r) => r[0]));
  const cutBy = Number.isFinite(before) && before > kMax ? before : null; // text the window left out
  const kEnd = cutBy ?? kMax;
  const vMax = Math.max(...rows.map((r) => r[1]), 1e-9);
  const step = niceStep(vMax);
  const yMax = Math.ceil(vMax / step - 1e-9) * step;
  const { width, height, left, right, top, bottom } = box;
  const x0 = left;
  const x1 = width - right;
  const y0 = height - bottom;
  const y1 = top;
  const xOf = (k) => x0 + ((x1 - x0) * Math.log2(k + 1)) / Math.log2(kEnd + 1);
  const yOf = (v) => y0 - ((y0 - y1) * v) / yMax;
  const points = rows.map(([k, v]) => ({ k, value: v, x: xOf(k), y: yOf(v) }));
  const path = points.map((p, j) => `${j ? "L" : "M"}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" ");
  // x ticks at 0 and the curve's own k: the right end, the window's cut and the left end
  // first, then the others where there is room
  const ks = [...new Set([0, ...rows.map((r) => r[0])])].sort((a, b) => a - b);
  if (cutBy != null) ks.push(cutBy);
  const first = [ks[ks.length - 1], ...(cutBy != null ? [kMax] : []), 0];
  const order = [...first, ...ks.slice().reverse().filter((k) => !first.includes(k))];
  const xTicks = [];
  for (const k of order) {
    const at = xOf(k);
    if (xTicks.every((t) => Math.abs(t.at - at) >= MIN_LABEL_GAP)) xTicks.push({ value: k, at, label: fmtInt(k) });
  }
  xTicks.sort((a, b) => a.at - b.at);
  const yTicks = [];
  for (let v = 0; v <= yMax + 1e-9; v += step) yTicks.push({ value: v, at: yOf(v), label: fmtFixed(v, step < 1 ? 1 : 0) });
  const cut = cutBy == null ? null : { k: kMax, x: xOf(kMax), xEnd: x1, before: cutBy };
  return { points, path, kMax, yMax, box, x0, x1, y0, y1, xTicks, yTicks, cut };
}

/** A sentence a screen reader reads for the curve: the first and last points, and the cut. */
export function curveSummary(curve, unit = "bits", before = null, maxLength = null) {
  const g = curveGeometry(curve, { unit, before });
  if (!g) return "";
  const a = g.points[0];
  const b = g.points[g.points.length - 1];
  const u = unit === "nats" ? "nats" : "bits";
  const s = `surprisal ${fmtFixed(a.value, 2)} ${u} with ${fmtInt(a.k)} context tokens, ${fmtFixed(b.value, 2)} ${u} with ${fmtInt(b.k)}`;
  return g.cut ? `${s}; ${cutLabel(g.cut, maxLength)}` : s;
}

/** What the cut mark says: the window holds the last k tokens, of the `before` there are. */
export function cutLabel(cut, maxLength = null) {
  const win = Number.isFinite(maxLength) ? ` (max_length ${fmtInt(maxLength)})` : "";
  return `the window${win} holds the last ${fmtInt(cut.k)} of the ${fmtInt(cut.before)} tokens before the target`;
}

function svg(tag, attrs, text) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text != null) el.textContent = String(text);
  return el;
}

/** The curve as an <svg> element (null when there is nothing to draw).  ctx: {before (tokens
 * of text before the target), maxLength (the window)}. */
export function curveSvg(curve, unit = "bits", ctx = {}) {
  const { before = null, maxLength = null } = ctx || {};
  const g = curveGeometry(curve, { unit, before });
  if (!g) return null;
  const { width, height } = g.box;
  const u = unit === "nats" ? "nats" : "bits";
  const root = svg("svg", {
    class: "pplw-ex-curve",
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    role: "img",
    "aria-label": `Context curve: ${curveSummary(curve, unit, before, maxLength)}`,
  });
  if (g.cut) {
    // the text the window left out: shaded, named, its edge dashed
    const shade = svg("rect", { class: "pplw-ex-cut-area", x: g.cut.x.toFixed(1), y: g.y1, width: (g.cut.xEnd - g.cut.x).toFixed(1), height: g.y0 - g.y1 });
    shade.appendChild(svg("title", {}, cutLabel(g.cut, maxLength)));
    root.append(
      shade,
      svg("line", { class: "pplw-ex-cut", x1: g.cut.x.toFixed(1), y1: g.y1 - 18, x2: g.cut.x.toFixed(1), y2: g.y0 }),
      svg("text", { class: "pplw-ex-tick pplw-ex-cut-label", x: (g.cut.x - 3).toFixed(1), y: g.y1 - 8, "text-anchor": "end" }, `window: the last ${fmtInt(g.cut.k)}`),
    );
  }
  for (const t of g.yTicks) {
    root.append(
      svg("line", { class: t.value === 0 ? "pplw-ex-axis" : "pplw-ex-grid", x1: g.x0, y1: t.at.toFixed(1), x2: g.x1, y2: t.at.toFixed(1) }),
      svg("text", { class: "pplw-ex-tick", x: g.x0 - 4, y: (t.at + 3).toFixed(1), "text-anchor": "end" }, t.label),
    );
  }
  root.append(svg("line", { class: "pplw-ex-axis", x1: g.x0, y1: g.y1, x2: g.x0, y2: g.y0 }));
  for (const t of g.xTicks) {
    root.append(
      svg("line", { class: "pplw-ex-axis", x1: t.at.toFixed(1), y1: g.y0, x2: t.at.toFixed(1), y2: g.y0 + 3 }),
      svg("text", { class: "pplw-ex-tick", x: t.at.toFixed(1), y: g.y0 + 13, "text-anchor": t.at > g.x1 - 8 ? "end" : "middle" }, t.label),
    );
  }
  root.append(
    svg("text", { class: "pplw-ex-tick pplw-ex-axis-title", x: (g.x0 + g.x1) / 2, y: height - 4, "text-anchor": "middle" }, "tokens of context (log scale)"),
    svg("text", { class: "pplw-ex-tick pplw-ex-axis-title", x: 2, y: g.y1 - 10, "text-anchor": "start" }, u),
    svg("path", { class: "pplw-ex-line", d: g.path }),
  );
  for (const p of g.points) {
    const dot = svg("circle", { class: "pplw-ex-dot", cx: p.x.toFixed(1), cy: p.y.toFixed(1), r: 2.5 });
    dot.appendChild(svg("title", {}, `${fmtInt(p.k)} context tokens: ${fmtFixed(p.value, 2)} ${u}`));
    root.appendChild(dot);
  }
  return root;
}
