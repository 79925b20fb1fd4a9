// The context curve in the explanation panel: the target's surprisal given only the last k
// context tokens, k = 0, 1, 2, 4, ... and the full context.  A small inline SVG; the
// geometry is pure (tested), the drawing makes SVG elements (no markup parsed).

import { inUnit } from "../levels.js";
import { fmtFixed, fmtInt } from "../format.js";

const SVG = "http://www.w3.org/2000/svg";

/**
 * Points of the curve in a width x height box with `pad` on every side: x on a log scale
 * of k + 1 (k = 0 at the left edge, the full context at the right), y from 0 (bottom) to
 * the largest surprisal shown (top), in `unit`.  Returns null for fewer than two points.
 */
export function curveGeometry(curve, { width = 260, height = 90, pad = 18, unit = "bits" } = {}) {
  if (!curve || !Array.isArray(curve.context_tokens)) return null;
  const rows = [];
  for (let j = 0; j < curve.context_tokens.length; j++) {
    const k = Number(curve.context_tokens[j]);
    const s = curve.surprisal_nats[j];
    if (k >= 0 && s != null && Number.isFinite(Number(s))) rows.push([k, inUnit(Number(s), unit)]);
  }
  if (rows.length < 2) return null;
  const kMax = Math.max(...rows.map((r) => r[0]));
  const yMax = Math.max(...rows.map((r) => r[1]), 1e-9);
  const xOf = (k) => pad + ((width - 2 * pad) * Math.log2(k + 1)) / Math.log2(kMax + 1);
  const yOf = (v) => height - pad - ((height - 2 * pad) * v) / yMax;
  const points = rows.map(([k, v]) => ({ k, value: v, x: xOf(k), y: yOf(v) }));
  const path = points.map((p, j) => `${j ? "L" : "M"}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" ");
  return { points, path, kMax, yMax, width, height, pad };
}

/** A sentence a screen reader reads for the curve: the first and last points. */
export function curveSummary(curve, unit = "bits") {
  const g = curveGeometry(curve, { unit });
  if (!g) return "";
  const a = g.points[0];
  const b = g.points[g.points.length - 1];
  const u = unit === "nats" ? "nats" : "bits";
  return `surprisal ${fmtFixed(a.value, 2)} ${u} with ${fmtInt(a.k)} context tokens, ${fmtFixed(b.value, 2)} ${u} with ${fmtInt(b.k)}`;
}

function svg(tag, attrs, text) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text != null) el.textContent = String(text);
  return el;
}

/** The curve as an <svg> element (null when there is nothing to draw). */
export function curveSvg(curve, unit = "bits") {
  const g = curveGeometry(curve, { unit });
  if (!g) return null;
  const { width, height, pad } = g;
  const root = svg("svg", {
    class: "pplw-ex-curve",
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    role: "img",
    "aria-label": `Context curve: ${curveSummary(curve, unit)}`,
  });
  root.append(
    svg("line", { class: "pplw-ex-axis", x1: pad, y1: height - pad, x2: width - pad, y2: height - pad }),
    svg("line", { class: "pplw-ex-axis", x1: pad, y1: pad, x2: pad, y2: height - pad }),
    svg("path", { class: "pplw-ex-line", d: g.path }),
  );
  for (const p of g.points) {
    const dot = svg("circle", { class: "pplw-ex-dot", cx: p.x.toFixed(1), cy: p.y.toFixed(1), r: 2.5 });
    dot.appendChild(svg("title", {}, `${fmtInt(p.k)} context tokens: ${fmtFixed(p.value, 2)} ${unit}`));
    root.appendChild(dot);
  }
  const u = unit === "nats" ? "nats" : "bits";
  root.append(
    svg("text", { class: "pplw-ex-tick", x: pad, y: height - 4, "text-anchor": "start" }, "0"),
    svg("text", { class: "pplw-ex-tick", x: width - pad, y: height - 4, "text-anchor": "end" }, `${fmtInt(g.kMax)} tokens of context`),
    svg("text", { class: "pplw-ex-tick", x: pad + 3, y: pad - 6, "text-anchor": "start" }, `${fmtFixed(g.yMax, 1)} ${u}`),
  );
  return root;
}
