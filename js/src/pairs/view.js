// The minimal-pairs view: each pair's two sentences one above the other, every token
// coloured by its surprisal on one scale (colors.js, the single-model view's bins),
// the delta and the verdict, a mark where the sentences first differ; sortable by
// delta.  The theme, the rich tooltip (hover and keyboard), the unit picker and the
// number formats are the shared ones.  All text goes in through textContent.

import { h, setText } from "../dom.js";
import { legendFor, NBINS, palette } from "../colors.js";
import { displayToken, fmtExact, fmtInt, fmtProb } from "../format.js";
import { ItemTips } from "../item_tips.js";
import { legendStrip } from "../legend_strip.js";
import { ModelListeners } from "../lifecycle.js";
import { objectiveLabels } from "../objective.js";
import { TRAIT_SURPRISAL_UNIT } from "../protocol.js";
import { followTheme, setPaletteVars } from "../theme.js";
import { fmtSurprisal, Tooltip } from "../tooltip.js";
import { asUnit, fmtDelta, unitSelect } from "../units.js";
import { pieceBin, pieceDetails, SORTS, sortedOrder } from "./data.js";

const CRITERIA = { total: ["delta", "correct"], mean: ["delta_mean", "correct_mean"] };
/** The criterion's name in the measure's words: a masked LM's NLL is its −PLL. */
const criterionName = (criterion, labels) => (criterion === "mean" ? `${labels.nll} per token` : `total ${labels.nll}`);

export class PairsView {
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.listeners = new ModelListeners(model);
    this.items = []; // [{pair, side, j, el}] in the order shown: the tooltip's items
    this._build();
    // the single-model view's scale, light or dark as the page is now (a live switch)
    this.stopTheme = followTheme(el, this.root, (theme) => setPaletteVars(this.root, palette(theme), "pplw-c", "pplw-f"));
    this._listen();
    this._load();
  }

  _build() {
    this.root = h("div", { class: "pplw-root pplp-root" });
    this.sortPick = h("select", { class: "pplw-input pplp-sort", attrs: { "aria-label": "sort pairs by" } });
    for (const [value, label] of Object.entries(SORTS)) this.sortPick.append(h("option", { text: label, attrs: { value } }));
    this.criterionPick = h("select", { class: "pplw-input pplp-criterion", attrs: { "aria-label": "criterion" } });
    const labels = objectiveLabels(this.model.get("objective"));
    for (const value of Object.keys(CRITERIA)) this.criterionPick.append(h("option", { text: criterionName(value, labels), attrs: { value } }));
    this.unitPick = unitSelect("pplp-unit");
    const bar = h(
      "div",
      { class: "pplw-toolbar pplp-toolbar" },
      h("label", { class: "pplw-field pplw-inline" }, "sort ", this.sortPick),
      h("label", { class: "pplw-field pplw-inline" }, "criterion ", this.criterionPick),
      h("label", { class: "pplw-field pplw-inline" }, "unit ", this.unitPick),
    );
    this.summary = h("div", { class: "pplp-summary", attrs: { "aria-live": "polite" } });
    this.legend = h("div", { class: "pplp-legend" });
    this.list = h("div", { class: "pplw-scroller pplp-list", attrs: { tabindex: 0, role: "region", "aria-label": "minimal pairs, coloured by surprisal" } });
    this.root.append(bar, this.summary, this.legend, this.list);
    this.tooltip = new Tooltip(this.root);
    this.tips = new ItemTips({
      container: this.list,
      tooltip: this.tooltip,
      selector: ".pplp-tok",
      count: () => this.items.length,
      item: (k) => (this.items[k] ? this.items[k].el : null),
      describe: (k) => this._tipParts(this.items[k]),
    });
    this.el.appendChild(this.root);
  }

  _listen() {
    for (const t of ["pairs", "sort", "criterion", "objective", TRAIT_SURPRISAL_UNIT]) this.listeners.on(`change:${t}`, () => this._load());
    const bind = (el, trait) =>
      el.addEventListener("change", () => {
        this.model.set(trait, el.value);
        this.model.save_changes();
        this._load();
      });
    bind(this.sortPick, "sort");
    bind(this.criterionPick, "criterion");
    bind(this.unitPick, TRAIT_SURPRISAL_UNIT);
  }

  _load() {
    const m = this.model;
    const pairs = m.get("pairs") || [];
    const sort = m.get("sort") || "input";
    const criterion = CRITERIA[m.get("criterion")] ? m.get("criterion") : "total";
    const unit = asUnit(m.get(TRAIT_SURPRISAL_UNIT));
    // a masked LM's pairs (their objective: core/metrics.py's rule) are named pseudo-
    const labels = objectiveLabels(m.get("objective"));
    Object.assign(this, { unit, criterion, labels });
    this.sortPick.value = sort;
    this.criterionPick.value = criterion;
    this.unitPick.value = unit;
    const [deltaKey, verdictKey] = CRITERIA[criterion];
    const right = pairs.filter((p) => p[verdictKey]).length;
    const shown = m.get("n_total") || pairs.length;
    const pct = pairs.length ? `${((100 * right) / pairs.length).toFixed(1)}%` : "—";
    setText(
      this.summary,
      `${fmtInt(right)} of ${fmtInt(pairs.length)} pairs correct (${pct}, ${criterionName(criterion, labels)}: bad > good)` +
        (shown > pairs.length ? `; the first ${fmtInt(pairs.length)} of ${fmtInt(shown)} shown` : "") +
        ` · Δ = ${labels.pseudo ? "PLL(good) − PLL(bad)" : "NLL(bad) − NLL(good)"} in ${unit} (the frame's ${deltaKey} column is in nats)` +
        (labels.pseudo ? ` · ${labels.metric}` : ""),
    );
    this._legend(unit);
    this.items = [];
    const frag = document.createDocumentFragment();
    for (const i of sortedOrder(pairs, sort, deltaKey)) frag.append(this._pair(pairs[i], deltaKey, verdictKey, unit));
    this.list.replaceChildren(frag);
    this.tips.redrawn();
  }

  _legend(unit) {
    this.legend.replaceChildren(...legendStrip(legendFor("surprisal", unit, this.labels), NBINS, "pplp"));
  }

  _pair(p, deltaKey, verdictKey, unit) {
    const ok = Boolean(p[verdictKey]);
    const perToken = deltaKey === "delta_mean" ? "/token" : "";
    const head = h(
      "div",
      { class: "pplp-head" },
      h("span", { class: "pplp-row", text: `#${p.row}` }),
      p.label ? h("span", { class: "pplp-label", text: p.label }) : null,
      h("span", { class: "pplp-delta", text: `Δ ${fmtDelta(p[deltaKey], unit)} ${unit}${perToken}`, title: `${deltaKey} = ${fmtExact(p[deltaKey])} nats${perToken} (the frame's value)` }),
      h("span", { class: `pplp-verdict ${ok ? "pplp-ok" : "pplp-wrong"}`, text: ok ? "✓ prefers good" : "✗ prefers bad" }),
    );
    const line = (side) =>
      h("div", { class: `pplp-line pplp-${side}` }, h("span", { class: "pplp-side", text: side }), p.context ? h("span", { class: "pplp-context", text: p.context }) : null, this._sentence(p, side));
    return h("div", { class: `pplp-pair ${ok ? "pplp-is-ok" : "pplp-is-wrong"}`, attrs: { role: "group", "aria-label": `pair ${p.row}` } }, head, line("good"), line("bad"));
  }

  _sentence(p, side) {
    const s = p[side] || {};
    const el = h("span", { class: "pplp-text" });
    (s.pieces || []).forEach(([text, nats], j) => {
      const bin = pieceBin(nats);
      const cls = `pplp-tok ${bin < 0 ? "pplp-plain" : `pplw-tok pplw-c${bin}`}${j === s.first ? " pplp-first" : ""}`;
      const span = h("span", { class: cls, text });
      span.dataset.k = String(this.items.length);
      this.items.push({ pair: p, side, j, el: span });
      el.append(span);
    });
    return el;
  }

  /** The rich tooltip of one token: its surprisal and probability, its sentence, the pair. */
  _tipParts({ pair, side, j }) {
    const d = pieceDetails(pair, side, j);
    const unit = this.unit;
    const row = (k, v, strong) => [h("span", { class: "pplw-tt-k", text: k }), h("span", { class: strong ? "pplw-tt-v pplw-strong" : "pplw-tt-v", text: v })];
    const name = this.labels ? this.labels.surprisal : "surprisal";
    const rows = d.nats == null ? row(name, "not scored", true) : [...row(name, fmtSurprisal(d.nats, unit), true), ...row("probability", fmtProb(d.prob))];
    rows.push(...row(`${side} sentence`, `${fmtSurprisal(d.sentenceNats, unit)} (${fmtInt(d.scored)} scored)`));
    if (d.firstDifference) rows.push(...row("first difference", "here"));
    const [deltaKey] = CRITERIA[this.criterion];
    const perToken = deltaKey === "delta_mean" ? "/token" : "";
    return [
      h("div", { class: "pplw-tt-head" }, h("span", { class: "pplw-tt-token", text: displayToken(d.text) }), h("span", { class: "pplw-tt-meta", text: `token ${fmtInt(d.index + 1)} of ${fmtInt(d.n)} · ${side}` })),
      h("div", { class: "pplw-tt-grid" }, ...rows),
      h("div", { class: "pplw-tt-sub", text: `pair #${pair.row}: Δ ${fmtDelta(pair[deltaKey], unit)} ${unit}${perToken} · ${pair[CRITERIA[this.criterion][1]] ? "prefers good" : "prefers bad"}` }),
    ];
  }

  destroy() {
    this.stopTheme();
    this.tips.destroy();
    this.listeners.offAll();
  }
}
