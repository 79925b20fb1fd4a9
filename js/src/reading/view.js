// The reading view: a text as its readers saw it, each word coloured by its surprisal
// (or its reading time, or the regression's residual) with its reading time drawn as a
// bar hanging under it; the rich tooltip (hover and keyboard) gives the word's numbers.
// The theme, the tooltip, the unit picker and the number formats are the shared ones.
// All text goes in through textContent.

import { h, setText } from "../dom.js";
import { divergingRamp, GAIN_BINS, legendFor, NBINS, palette } from "../colors.js";
import { displayToken, fmtFixed, fmtInt, fmtSigned, MISSING } from "../format.js";
import { ItemTips } from "../item_tips.js";
import { legendStrip } from "../legend_strip.js";
import { ModelListeners } from "../lifecycle.js";
import { followTheme, setPaletteVars } from "../theme.js";
import { fmtSurprisal, Tooltip } from "../tooltip.js";
import { asUnit, unitSelect } from "../units.js";
import { barFraction, COLOR_BY, groupRuns, nats, readingLegend, scales, textDeltaLL, textHeading, wordBin, wordDetails } from "./data.js";

const ms = (x) => (x == null ? MISSING : `${fmtFixed(x, 0)} ms`);
const signedMs = (x) => (x == null ? MISSING : `${fmtSigned(x, 0)} ms`);

export class ReadingView {
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.listeners = new ModelListeners(model);
    this.items = []; // word spans in reading order (the tooltip's items)
    this.theme = "light";
    this._build();
    this.stopTheme = followTheme(el, this.root, (theme) => {
      this.theme = theme;
      this._palette();
    });
    this._listen();
    this._load();
  }

  _build() {
    this.root = h("div", { class: "pplw-root pplr-root" });
    this.colorPick = h("select", { class: "pplw-input pplr-color", attrs: { "aria-label": "colour words by" } });
    for (const [value, label] of Object.entries(COLOR_BY)) this.colorPick.append(h("option", { text: label, attrs: { value } }));
    this.unitPick = unitSelect("pplr-unit");
    const bar = h(
      "div",
      { class: "pplw-toolbar pplr-toolbar" },
      h("label", { class: "pplw-field pplw-inline" }, "colour by ", this.colorPick),
      h("label", { class: "pplw-field pplw-inline" }, "unit ", this.unitPick),
    );
    this.summary = h("div", { class: "pplr-summary", attrs: { "aria-live": "polite" } });
    this.legend = h("div", { class: "pplr-legend" });
    this.list = h("div", { class: "pplw-scroller pplr-list", attrs: { tabindex: 0, role: "region", "aria-label": "the text, each word coloured, its reading time drawn under it" } });
    this.root.append(bar, this.summary, this.legend, this.list);
    this.tooltip = new Tooltip(this.root);
    this.tips = new ItemTips({
      container: this.list,
      tooltip: this.tooltip,
      selector: ".pplr-word",
      count: () => this.items.length,
      item: (k) => this.items[k] || null,
      describe: (k) => this._tipParts(k),
    });
    this.el.appendChild(this.root);
  }

  _listen() {
    for (const t of ["data", "groups", "note", "rt_name", "frequency_name"]) this.listeners.on(`change:${t}`, () => this._load());
    for (const t of ["color_by", "surprisal_unit"]) this.listeners.on(`change:${t}`, () => this._recolour());
    const bind = (el, trait) =>
      el.addEventListener("change", () => {
        this.model.set(trait, el.value);
        this.model.save_changes();
        this._recolour();
      });
    bind(this.colorPick, "color_by");
    bind(this.unitPick, "surprisal_unit");
  }

  _mode() {
    const m = this.model.get("color_by");
    return COLOR_BY[m] ? m : "surprisal";
  }

  // the bins' colours: the theme's ramp, or the two-sided one for the residual
  _palette() {
    const pal = this._mode() === "residual" ? palette(divergingRamp(this.theme), GAIN_BINS) : palette(this.theme);
    setPaletteVars(this.root, pal, "pplw-c", "pplw-f");
  }

  _load() {
    const m = this.model;
    this.data = m.get("data") || { word: [] };
    if (!Array.isArray(this.data.word)) this.data.word = [];
    this.groups = m.get("groups") || [];
    this.rtName = m.get("rt_name") || "reading time";
    this.freqName = m.get("frequency_name") || "frequency";
    this.sc = scales(this.data);
    this.items = [];
    const frag = document.createDocumentFragment();
    for (const [start, end] of groupRuns(this.data)) {
      const g = this.data.group ? this.data.group[start] : 0;
      const label = this.groups[g] != null ? String(this.groups[g]) : String(g);
      const words = h("p", { class: "pplr-words" });
      for (let i = start; i < end; i++) {
        const band = h("span", { class: "pplr-band", attrs: { "aria-hidden": "true" } }, h("span", { class: "pplr-bar" }));
        const w = h("span", { class: "pplr-word" }, h("span", { class: "pplr-w pplw-tok", text: this.data.word[i] == null ? "" : String(this.data.word[i]) }), band);
        w.dataset.k = String(i);
        this.items.push(w);
        words.append(w, " ");
      }
      const [head, dll] = textHeading(label, end - start, textDeltaLL(this.data, start, end));
      const heading = h("div", { class: "pplr-head" }, h("span", { text: head }), dll ? h("span", { class: "pplr-dll", text: dll }) : null);
      frag.append(h("section", { class: "pplr-text", attrs: { "aria-label": `text ${label}` } }, heading, words));
    }
    this.list.replaceChildren(frag);
    this._recolour();
    this.tips.redrawn();
  }

  // colours, bars, legend and summary for the mode and unit now (no words rebuilt)
  _recolour() {
    const mode = this._mode();
    this.unit = asUnit(this.model.get("surprisal_unit"));
    this.colorPick.value = mode;
    this.unitPick.value = this.unit;
    this._palette();
    for (let i = 0; i < this.items.length; i++) {
      const w = this.items[i];
      const bin = wordBin(mode, this.data, i, this.sc);
      w.firstChild.className = `pplr-w pplw-tok ${bin < 0 ? "pplw-cna pplr-none" : `pplw-c${bin}`}`;
      const f = barFraction(this.data, i, this.sc);
      w.lastChild.firstChild.style.height = `${(100 * f).toFixed(1)}%`;
      w.classList.toggle("pplr-nort", !(this.data.rt && typeof this.data.rt[i] === "number"));
    }
    this._legend(mode);
    const note = this.model.get("note") || "";
    setText(
      this.summary,
      `${fmtInt(this.items.length)} words · colour: ${COLOR_BY[mode]} · the bar under each word: ${this.rtName}, from ${ms(this.sc.rtLo)} or less (shortest) to ${ms(this.sc.rtHi)} or more (full)` + (note ? ` · ${note}` : ""),
    );
    this.tips.refresh();
  }

  _legend(mode) {
    const own = readingLegend(mode, this.sc, this.rtName);
    const lg = own || legendFor("surprisal", this.unit);
    this.legend.replaceChildren(...legendStrip(lg, own && own.bins ? own.bins : NBINS, "pplr"));
  }

  /** The rich tooltip of word k: its reading time, surprisal, frequency, length, the
   * regression's prediction and residual. */
  _tipParts(k) {
    const d = wordDetails(this.data, this.groups, k);
    const row = (key, v, strong) => [h("span", { class: "pplw-tt-k", text: key }), h("span", { class: strong ? "pplw-tt-v pplw-strong" : "pplw-tt-v", text: v })];
    const rows = [
      ...row(this.rtName, ms(d.rt), true),
      ...row("surprisal", d.surprisal == null ? MISSING : fmtSurprisal(d.surprisal, this.unit), true),
      ...row(this.freqName, d.frequency == null ? MISSING : fmtFixed(d.frequency, 2)),
      ...row("length", d.length == null ? MISSING : `${fmtInt(d.length)} characters`),
      ...row("predicted", ms(d.predicted)),
      ...row("residual", signedMs(d.residual)),
      ...(d.deltaLL == null ? [] : row("ΔLL of the word", nats(d.deltaLL))),
    ];
    return [
      h("div", { class: "pplw-tt-head" }, h("span", { class: "pplw-tt-token", text: displayToken(d.word) }), h("span", { class: "pplw-tt-meta", text: `text ${d.group} · word ${fmtInt(d.position + 1)} of ${fmtInt(d.nInGroup)}` })),
      h("div", { class: "pplw-tt-grid" }, ...rows),
      d.predicted == null ? h("div", { class: "pplw-tt-sub", text: "no prediction: the word was not in the regression (a missing value, or too few words before it)" }) : null,
    ].filter(Boolean);
  }

  destroy() {
    this.stopTheme();
    this.tips.destroy();
    this.listeners.offAll();
  }
}
