// The compact legend of the views that colour their own items (minimal pairs, reading):
// a title, a strip of the colour bins, and the tick labels in a row.

import { h } from "./dom.js";

/** The legend's nodes for lg ({title, ticks: [{label}]}, colors.legendFor's shape) over
 * `bins` colour bins; cls prefixes the strip's and the ticks' classes. */
export function legendStrip(lg, bins, cls) {
  const bar = h("span", { class: `${cls}-legend-bar` });
  for (let k = 0; k < bins; k++) bar.append(h("span", { class: `pplw-c${k}` }));
  const ticks = lg.ticks.map((t) => t.label).join(" · ");
  return [h("span", { text: `${lg.title}: ` }), bar, h("span", { class: `${cls}-ticks`, text: ticks })];
}
