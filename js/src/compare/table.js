// The comparison table: one row per model, its perplexity per word, character
// and byte (comparable) and per token (not: marked, greyed and explained).

import { h } from "../dom.js";
import { fmtExact, fmtInt, fmtMetric, MISSING } from "../format.js";
import { objectiveLabels } from "../objective.js";

// [key, header, formatter]; the unit counts are the text's and shown once, below.
export const COLUMNS = Object.freeze([
  ["word_ppl", "PPL / word", fmtMetric],
  ["char_ppl", "PPL / char", fmtMetric],
  ["byte_ppl", "PPL / byte", fmtMetric],
  ["bits_per_byte", "bits / byte", fmtMetric],
  ["n_tokens", "tokens", fmtInt],
  ["token_ppl", "PPL / token", fmtMetric],
  ["vocab_size", "vocabulary", fmtInt],
]);

const num = (v) => (v == null ? NaN : Number(v));

/** The cells of one row as strings (pure; null/NaN shown as a dash). */
export function rowCells(row) {
  return COLUMNS.map(([key, , fmt]) => {
    const v = num(row[key]);
    return v === v ? fmt(v) : MISSING;
  });
}

/** "n_words 120 · n_chars 640 · n_bytes 652": the same for every model. */
export function unitCounts(rows) {
  const r = rows[0];
  if (!r) return "";
  return `the text: ${fmtInt(num(r.n_words))} words · ${fmtInt(num(r.n_chars))} characters · ${fmtInt(num(r.n_bytes))} bytes (the same denominators for every model)`;
}

export class ComparisonTable {
  constructor() {
    this.el = h("div", { class: "pplc-table-wrap" });
  }

  update(rows, notComparable, note) {
    const marked = new Set(notComparable);
    const head = h("tr", {}, h("th", { text: "model" }));
    for (const [key, label] of COLUMNS) {
      head.appendChild(h("th", { class: marked.has(key) ? "pplc-nc" : "", text: marked.has(key) ? `${label} †` : label, title: marked.has(key) ? note : key }));
    }
    const body = h("tbody");
    for (const row of rows) {
      const tr = h("tr", { class: row.partial ? "pplc-partial" : "" });
      const status = row.status && row.status !== "done" ? ` (${row.status}${row.partial ? ", partial" : ""})` : "";
      // a masked LM's row holds pseudo-perplexities (its objective keys: objective.js)
      const named = objectiveLabels(row);
      const pseudo = named.pseudo ? ` · ${named.perplexity} (${named.metric})` : "";
      tr.appendChild(h("th", { attrs: { scope: "row" }, title: row.conventions || "" }, h("b", { text: row.label }), h("span", { class: "pplc-model", text: `${row.model || ""}${pseudo}${status}` })));
      // the exact value in the cell's tooltip: a compact "6.062e+25" keeps its digits
      rowCells(row).forEach((cell, j) => tr.appendChild(h("td", { class: marked.has(COLUMNS[j][0]) ? "pplc-nc" : "", text: cell, title: fmtExact(num(row[COLUMNS[j][0]])) })));
      body.appendChild(tr);
    }
    const table = h("table", { class: "pplc-table" }, h("thead", {}, head), body);
    const parts = [table];
    if (rows.length) parts.push(h("div", { class: "pplc-counts", text: unitCounts(rows) }));
    if (marked.size) parts.push(h("div", { class: "pplc-note", text: `† ${note}` }));
    if (!rows.length) parts.unshift(h("div", { class: "pplc-counts", text: "no model has scored yet" }));
    this.el.replaceChildren(...parts);
  }
}
