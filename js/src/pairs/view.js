// The minimal-pairs view: each pair's two sentences one above the other, every token
// coloured by its surprisal on one scale (colors.js, the single-model view's bins),
// the delta and the verdict, a mark where the sentences first differ; sortable by
// delta.  All text goes in through textContent.

import { h, setText } from "../dom.js";
import { legendFor, NBINS, palette } from "../colors.js";
import { ModelListeners } from "../lifecycle.js";
import { detectTheme, setPaletteVars, setThemeClass } from "../theme.js";
import { fmtNats, pieceBin, SORTS, sortedOrder } from "./data.js";

const CRITERIA = { total: ["delta", "correct"], mean: ["delta_mean", "correct_mean"] };

export class PairsView {
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.listeners = new ModelListeners(model);
    this._build();
    this._applyTheme();
    this._listen();
    this._load();
  }

  _build() {
    this.root = h("div", { class: "pplw-root pplp-root" });
    this.sortPick = h("select", { class: "pplw-input pplp-sort", attrs: { "aria-label": "sort pairs by" } });
    for (const [value, label] of Object.entries(SORTS)) this.sortPick.append(h("option", { text: label, attrs: { value } }));
    this.criterionPick = h("select", { class: "pplw-input pplp-criterion", attrs: { "aria-label": "criterion" } }, h("option", { text: "total NLL", attrs: { value: "total" } }), h("option", { text: "NLL per token", attrs: { value: "mean" } }));
    this.unitPick = h("select", { class: "pplw-input pplp-unit", attrs: { "aria-label": "unit" } }, h("option", { text: "bits", attrs: { value: "bits" } }), h("option", { text: "nats", attrs: { value: "nats" } }));
    const bar = h(
      "div",
      { class: "pplw-toolbar pplp-toolbar" },
      h("label", { class: "pplw-field pplw-inline" }, "sort ", this.sortPick),
      h("label", { class: "pplw-field pplw-inline" }, "criterion ", this.criterionPick),
      h("label", { class: "pplw-field pplw-inline" }, "unit ", this.unitPick),
    );
    this.summary = h("div", { class: "pplp-summary", attrs: { "aria-live": "polite" } });
    this.legend = h("div", { class: "pplp-legend" });
    this.list = h("div", { class: "pplw-scroller pplp-list", attrs: { role: "list", "aria-label": "minimal pairs" } });
    this.root.append(bar, this.summary, this.legend, this.list);
    this.el.appendChild(this.root);
  }

  _applyTheme() {
    this.theme = detectTheme(this.el);
    setThemeClass(this.root, this.theme);
    setPaletteVars(this.root, palette(this.theme), "pplw-c", "pplw-f");
  }

  _listen() {
    for (const t of ["pairs", "sort", "criterion", "unit"]) this.listeners.on(`change:${t}`, () => this._load());
    const bind = (el, trait) =>
      el.addEventListener("change", () => {
        this.model.set(trait, el.value);
        this.model.save_changes();
        this._load();
      });
    bind(this.sortPick, "sort");
    bind(this.criterionPick, "criterion");
    bind(this.unitPick, "unit");
  }

  _load() {
    const m = this.model;
    const pairs = m.get("pairs") || [];
    const sort = m.get("sort") || "input";
    const criterion = m.get("criterion") || "total";
    const unit = m.get("unit") || "bits";
    this.sortPick.value = sort;
    this.criterionPick.value = criterion;
    this.unitPick.value = unit;
    const [deltaKey, verdictKey] = CRITERIA[criterion] || CRITERIA.total;
    const right = pairs.filter((p) => p[verdictKey]).length;
    const shown = m.get("n_total") || pairs.length;
    setText(this.summary, `${right} of ${pairs.length} pairs correct (${pairs.length ? ((100 * right) / pairs.length).toFixed(1) : "—"}%, ${criterion === "mean" ? "NLL per token" : "total NLL"}: bad > good)` + (shown > pairs.length ? `; the first ${pairs.length} of ${shown} shown` : ""));
    this._legend(unit);
    const frag = document.createDocumentFragment();
    for (const i of sortedOrder(pairs, sort, deltaKey)) frag.append(this._pair(pairs[i], deltaKey, verdictKey, unit));
    this.list.replaceChildren(frag);
  }

  _legend(unit) {
    const lg = legendFor("surprisal", unit);
    const bar = h("span", { class: "pplp-legend-bar" });
    for (let k = 0; k < NBINS; k++) bar.append(h("span", { class: `pplw-c${k}` }));
    const ticks = lg.ticks.map((t) => t.label).join(" · ");
    this.legend.replaceChildren(h("span", { text: `${lg.title}: ` }), bar, h("span", { class: "pplp-ticks", text: ticks }));
  }

  _pair(p, deltaKey, verdictKey, unit) {
    const ok = Boolean(p[verdictKey]);
    const head = h(
      "div",
      { class: "pplp-head" },
      h("span", { class: "pplp-row", text: `#${p.row}` }),
      p.label ? h("span", { class: "pplp-label", text: p.label }) : null,
      h("span", { class: "pplp-delta", text: `Δ ${fmtNats(p[deltaKey], unit)} ${unit}${deltaKey === "delta_mean" ? "/token" : ""}` }),
      h("span", { class: `pplp-verdict ${ok ? "pplp-ok" : "pplp-wrong"}`, text: ok ? "✓ prefers good" : "✗ prefers bad" }),
    );
    const line = (side, label) =>
      h("div", { class: `pplp-line pplp-${side}` }, h("span", { class: "pplp-side", text: label }), p.context ? h("span", { class: "pplp-context", text: p.context }) : null, this._sentence(p[side], unit));
    return h("div", { class: `pplp-pair ${ok ? "pplp-is-ok" : "pplp-is-wrong"}`, attrs: { role: "listitem" } }, head, line("good", "good"), line("bad", "bad"));
  }

  _sentence(s, unit) {
    const el = h("span", { class: "pplp-text" });
    (s.pieces || []).forEach(([text, nats], k) => {
      const bin = pieceBin(nats);
      const cls = bin < 0 ? "pplp-plain" : `pplw-tok pplw-c${bin}`;
      const title = nats == null ? "not scored" : `${fmtNats(nats, unit).replace("+", "")} ${unit}`;
      const span = h("span", { class: cls + (k === s.first ? " pplp-first" : ""), text, title });
      el.append(span);
    });
    return el;
  }

  destroy() {
    this.listeners.offAll();
  }
}
