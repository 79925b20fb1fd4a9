// The comparison view: the text once, each word coloured by the difference in
// surprisal between two chosen models, a legend saying which colour means which
// model did better, a tooltip with every model's tokenization of the word, and
// the table of per-unit perplexities.  All text goes in through textContent.

import { h, setText, show } from "../dom.js";
import { ContextView } from "../context.js";
import { displayToken, fmtInt } from "../format.js";
import { fmtSurprisal, Tooltip } from "../tooltip.js";
import { errorBox } from "../layout.js";
import { FrameScheduler, ModelListeners, nextFrame } from "../lifecycle.js";
import { ItemTips } from "../item_tips.js";
import { inUnit } from "../levels.js";
import { asUnit, unitSelect } from "../units.js";
import { followTheme, setPaletteVars } from "../theme.js";
import { decodeModel, decodeWords, FINAL, progressLabel, scaleMax, wordDiff, wordSums, wordTokens } from "./data.js";
import { diffBin, diffTicks, divergingPalette, NDIV } from "./scale.js";
import { ComparisonTable } from "./table.js";

// words drawn per animation frame: a 100k-word text never blocks the page for long
const WORDS_PER_FRAME = 4000;

export class CompareView {
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.listeners = new ModelListeners(model);
    this.frame = new FrameScheduler(() => this._load()); // one redraw per frame however many traits a kernel update changed
    this._build();
    // the diverging scale, light or dark as the page is now (a live switch)
    this.stopTheme = followTheme(el, this.root, (theme) => setPaletteVars(this.root, divergingPalette(theme), "pplc-d", "pplc-f"));
    this._listen();
    this._load();
  }

  // ---------------------------------------------------------------- DOM
  _build() {
    this.root = h("div", { class: "pplw-root pplc-root" });
    this.pickA = h("select", { class: "pplw-input pplc-pick-a", attrs: { "aria-label": "model A" } });
    this.pickB = h("select", { class: "pplw-input pplc-pick-b", attrs: { "aria-label": "model B" } });
    this.swap = h("button", { class: "pplw-btn pplc-swap", text: "⇄", title: "swap A and B", attrs: { type: "button" } });
    this.unitPick = unitSelect("pplc-unit");
    this.cancelBtn = h("button", { class: "pplw-btn pplc-cancel", text: "Cancel", attrs: { type: "button" } });
    const bar = h(
      "div",
      { class: "pplw-toolbar pplc-toolbar" },
      h("span", { class: "pplc-title", text: "Colour: surprisal of" }),
      this.pickA,
      h("span", { text: "minus" }),
      this.pickB,
      this.swap,
      h("label", { class: "pplw-field pplw-inline" }, "unit ", this.unitPick),
      this.cancelBtn,
    );
    this.status = h("div", { class: "pplc-status", attrs: { "aria-live": "polite" } });
    this.errorBox = errorBox();
    this.legend = h("div", { class: "pplc-legend" });
    this.text = h("div", { class: "pplw-scroller pplc-text", attrs: { tabindex: 0, role: "region", "aria-label": "Text coloured by the difference in surprisal" } });
    this.table = new ComparisonTable();
    this.contextView = new ContextView(); // what every model read first, uncoloured
    this.root.append(bar, this.status, this.errorBox, this.legend, this.contextView.el, this.text, this.table.el);
    this.tooltip = new Tooltip(this.root);
    // every word's models on hover and on keyboard focus (the shared rich tooltip)
    this.tips = new ItemTips({
      container: this.text,
      tooltip: this.tooltip,
      selector: ".pplc-word",
      count: () => this.words.count,
      item: (w) => (w >= 0 && w < this.rendered ? this.spans[w] : null),
      describe: (w) => this._tipParts(w),
    });
    this.el.appendChild(this.root);
  }

  _listen() {
    const on = (name, fn) => this.listeners.on(name, fn);
    for (const t of ["models_data", "table", "status", "error", "pair", "surprisal_unit", "labels", "context"]) on(`change:${t}`, () => this.frame.schedule());
    on("change:text", () => {
      this.renderedText = null;
      this.frame.schedule();
    });
    const setPair = () => {
      const a = Number(this.pickA.value);
      let b = Number(this.pickB.value);
      if (a === b) b = this.pair[0] === a ? this.pair[1] : this.pair[0];
      this._setTrait("pair", [a, b]);
    };
    this.pickA.addEventListener("change", setPair);
    this.pickB.addEventListener("change", setPair);
    this.swap.addEventListener("click", () => this._setTrait("pair", [this.pair[1], this.pair[0]]));
    this.unitPick.addEventListener("change", () => this._setTrait("surprisal_unit", this.unitPick.value));
    this.cancelBtn.addEventListener("click", () => this.model.send({ type: "cancel" }));
  }

  _setTrait(name, value) {
    this.model.set(name, value);
    this.model.save_changes();
    this._load();
  }

  // ------------------------------------------------------------- state
  _load() {
    const m = this.model;
    this.labels = m.get("labels") || [];
    this.unit = asUnit(m.get("surprisal_unit"));
    const pair = m.get("pair") || [0, 1];
    this.pair = [pair[0] ?? 0, pair[1] ?? 1];
    this.words = decodeWords(m.get("words"));
    this.contextView.set({ context: m.get("context") }); // token counts differ by model: none shown
    this.models = (m.get("models_data") || []).map(decodeModel);
    this.sums = this.models.map((md) => wordSums(md, this.words.count));
    this._renderText();
    this._renderControls();
    this._renderStatus();
    this._recolor();
    this.table.update(m.get("table") || [], m.get("not_comparable") || [], m.get("note") || "", this.unit);
  }

  _renderControls() {
    const fill = (sel, chosen) => {
      const opts = this.labels.map((lb, k) => h("option", { text: lb, attrs: { value: k } }));
      sel.replaceChildren(...opts);
      sel.value = String(chosen);
    };
    fill(this.pickA, this.pair[0]);
    fill(this.pickB, this.pair[1]);
    this.unitPick.value = this.unit;
    const running = this.model.get("status") === "scoring";
    this.cancelBtn.disabled = !running;
    const err = this.model.get("error") || "";
    setText(this.errorBox, err);
    show(this.errorBox, !!err);
  }

  _renderStatus() {
    const chips = this.models.map((md, k) =>
      h("span", { class: `pplc-chip pplc-${md.status || "waiting"}` }, h("b", { text: this.labels[k] ?? md.label }), ` ${progressLabel(md)}`),
    );
    this.status.replaceChildren(...chips);
  }

  _renderText() {
    const text = this.model.get("text") || "";
    if (this.renderedText === text && this.spans) return;
    this.renderedText = text;
    this.spans = new Array(this.words.count);
    this.rendered = 0; // words drawn so far: long texts are drawn a slice per frame
    this.text.replaceChildren();
    this.tips.redrawn();
    const run = (this.renderRun = {});
    this._renderSlice(run);
  }

  _renderSlice(run) {
    if (run !== this.renderRun) return; // the text changed meanwhile
    const text = this.renderedText;
    const { count, start16, end16 } = this.words;
    const frag = document.createDocumentFragment();
    let at = this.rendered > 0 ? end16[this.rendered - 1] : 0;
    const stop = Math.min(count, this.rendered + WORDS_PER_FRAME);
    for (let w = this.rendered; w < stop; w++) {
      if (start16[w] > at) frag.appendChild(document.createTextNode(text.slice(at, start16[w])));
      const span = document.createElement("span");
      span.className = this._wordClass(w);
      span.dataset.k = String(w);
      span.textContent = text.slice(start16[w], end16[w]);
      frag.appendChild(span);
      this.spans[w] = span;
      at = end16[w];
    }
    this.rendered = stop;
    if (stop === count && at < text.length) frag.appendChild(document.createTextNode(text.slice(at)));
    this.text.appendChild(frag);
    if (stop < count) nextFrame(() => this._renderSlice(run));
  }

  _wordClass(w) {
    const bin = this.diff ? diffBin(inUnit(this.diff[w], this.unit), this.max) : -1;
    return bin < 0 ? "pplc-word pplc-pending" : `pplc-word pplc-d${bin}`;
  }

  _recolor() {
    const [a, b] = this.pair;
    const sa = this.sums[a];
    const sb = this.sums[b];
    this.diff = sa && sb ? wordDiff(sa, sb) : new Float64Array(this.words.count).fill(NaN);
    this.max = scaleMax(this.diff, this.unit);
    for (let w = 0; w < this.rendered; w++) {
      const cls = this._wordClass(w);
      if (this.spans[w].className !== cls) this.spans[w].className = cls;
    }
    this._renderLegend();
    this.tips.refresh();
  }

  _renderLegend() {
    const la = this.labels[this.pair[0]] ?? "A";
    const lb = this.labels[this.pair[1]] ?? "B";
    const bar = h("span", { class: "pplw-legend-bar pplc-legend-bar" });
    for (let b = 0; b < NDIV; b++) bar.appendChild(h("span", { class: `pplc-d${b}` }));
    const ticks = h("span", { class: "pplw-legend-ticks" });
    for (const t of diffTicks(this.max, this.unit)) {
      const s = h("span", { text: t.label });
      s.style.left = `${t.at * 100}%`;
      ticks.appendChild(s);
    }
    this.legend.replaceChildren(
      h("span", { class: "pplc-better pplc-better-a", text: `◀ ${la} predicted better` }),
      h("span", { class: "pplw-legend-scale" }, bar, ticks),
      h("span", { class: "pplc-better pplc-better-b", text: `${lb} predicted better ▶` }),
      h("span", { class: "pplc-legend-note", text: `word surprisal of ${la} minus ${lb}; grey: not scored by both yet` }),
    );
  }

  // ----------------------------------------------------------- tooltip
  _tipParts(w) {
    const text = this.renderedText;
    const parts = [h("div", { class: "pplw-tt-head" }, h("span", { class: "pplw-tt-token", text: displayToken(text.slice(this.words.start16[w], this.words.end16[w])) }), h("span", { class: "pplw-tt-meta", text: `word ${fmtInt(w + 1)} of ${fmtInt(this.words.count)}` }))];
    const grid = h("div", { class: "pplc-tt-models" });
    this.models.forEach((md, k) => {
      const sums = this.sums[k];
      const final = sums && sums.nats[w] === sums.nats[w];
      const mark = k === this.pair[0] ? " (A)" : k === this.pair[1] ? " (B)" : "";
      const toks = final ? wordTokens(md, sums, w, text) : [];
      const list = h("div", { class: "pplc-tt-toks" });
      for (const t of toks) list.appendChild(h("span", { class: "pplc-tt-tok" }, h("span", { class: "pplc-tt-toktext", text: displayToken(t.text) }), h("span", { class: "pplw-tt-altp", text: fmtSurprisal(t.nats, this.unit) })));
      grid.append(
        h("div", { class: "pplc-tt-model" }, h("span", { class: "pplw-tt-k", text: `${this.labels[k] ?? md.label}${mark}` }), h("span", { class: "pplw-tt-v pplw-strong", text: final ? fmtSurprisal(sums.nats[w], this.unit) : FINAL.includes(md.status) ? "not scored" : "scoring…" }), h("span", { class: "pplw-tt-meta", text: final ? `${toks.length} token${toks.length === 1 ? "" : "s"}` : "" })),
        list,
      );
    });
    parts.push(grid);
    const d = this.diff[w];
    if (d === d) {
      const la = this.labels[this.pair[0]];
      const lb = this.labels[this.pair[1]];
      const who = d > 0 ? `${lb} predicted it better` : d < 0 ? `${la} predicted it better` : "equal";
      parts.push(h("div", { class: "pplw-tt-sub pplc-tt-diff", text: `${la} − ${lb} = ${fmtSurprisal(d, this.unit)} (${who})` }));
    }
    return parts;
  }

  destroy() {
    this.stopTheme();
    this.frame.cancel();
    this.listeners.offAll();
    this.tips.destroy();
  }
}
