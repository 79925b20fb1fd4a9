// Toolbar: colour mode, token-boundary toggle, legend; and the progress row.

import { legendFor, MODE_LABELS, MODES, NBINS, UNIT_MODES } from "./colors.js";
import { capitalised } from "./objective.js";
import { h, setText } from "./dom.js";
import { fmtDuration, fmtInt } from "./format.js";

export class Toolbar {
  /** onMode(mode), onBoundaries(bool), onLevel(level), onUnit(unit), onBow(bool) */
  constructor({ onMode, onBoundaries, onLevel = () => {}, onUnit = () => {}, onBow = () => {} }) {
    const select = (label, options, on) => {
      const el = h("select", { class: "pplw-input", attrs: { "aria-label": label } });
      for (const [value, text] of options) el.appendChild(h("option", { text, attrs: { value } }));
      el.addEventListener("change", () => on(el.value));
      return el;
    };
    this.level = select("Level", [["token", "Token"], ["word", "Word"], ["sentence", "Sentence"]], onLevel);
    this.unit = select("Surprisal unit", [["bits", "bits"], ["nats", "nats"]], onUnit);
    this.bow = h("input", { attrs: { type: "checkbox" } });
    this.bow.addEventListener("change", () => onBow(this.bow.checked));
    this.bowLabel = h("label", { class: "pplw-check", title: "Word surprisal corrected for leading whitespace (Pimentel & Meister 2024)" }, this.bow, h("span", { text: "BOW-corrected" }));
    this.mode = h("select", { class: "pplw-input", attrs: { "aria-label": "Colour tokens by" } });
    for (const m of MODES) this.mode.appendChild(h("option", { text: MODE_LABELS[m], attrs: { value: m } }));
    this.mode.addEventListener("change", () => onMode(this.mode.value));
    this.bounds = h("input", { attrs: { type: "checkbox" } });
    this.bounds.addEventListener("change", () => onBoundaries(this.bounds.checked));
    this.legend = h("div", { class: "pplw-legend", attrs: { "aria-hidden": "true" } });
    this.el = h(
      "div",
      { class: "pplw-toolbar" },
      h("label", { class: "pplw-field pplw-inline" }, h("span", { text: "Level" }), this.level),
      h("label", { class: "pplw-field pplw-inline" }, h("span", { text: "Colour by" }), this.mode),
      h("label", { class: "pplw-field pplw-inline" }, h("span", { text: "Unit" }), this.unit),
      this.bowLabel,
      h("label", { class: "pplw-check" }, this.bounds, h("span", { text: "token boundaries" })),
      this.legend,
    );
  }

  /**
   * mode: the colour mode in effect; opts {level, unit, bow, hasGain, levels:
   * {word: bool, sentence: bool} (available), notes: {level: why not}}.
   */
  set(mode, boundaries, opts = {}) {
    const { level = "token", unit = "bits", bow = false, hasGain = false, hasKl = false, levels = {}, notes = {}, legend = null, labels = null } = opts;
    // a PLL result colours pseudo-surprisal, and says so in the picker and the legend
    const surprisalName = labels && labels.pseudo ? capitalised(labels.surprisal) : MODE_LABELS.surprisal;
    if (this.mode.value !== mode) this.mode.value = mode;
    this.bounds.checked = !!boundaries;
    if (this.level.value !== level) this.level.value = level;
    if (this.unit.value !== unit) this.unit.value = unit;
    this.bow.checked = !!bow;
    // BOW correction needs b(i), a causal model's next-token probabilities: not a masked LM's
    this.bowLabel.hidden = level !== "word" || !!(labels && labels.pseudo);
    for (const opt of this.level.options) {
      const off = opt.value !== "token" && levels[opt.value] === false;
      opt.disabled = off;
      opt.title = off ? notes[opt.value] || "not available" : "";
    }
    for (const opt of this.mode.options) {
      if (opt.value === "surprisal" && opt.textContent !== surprisalName) opt.textContent = surprisalName;
      opt.disabled =
        (level !== "token" && !UNIT_MODES.includes(opt.value)) || (opt.value === "context_gain" && !hasGain) || (opt.value === "kl" && !hasKl);
      // KL is a divergence view's own mode: elsewhere it is not offered at all
      if (opt.value === "kl") opt.hidden = !hasKl;
    }
    this._legend(mode, unit, legend, labels);
  }

  /** The legend of `mode`, or `override` (an explanation's, legendFor's shape). */
  _legend(mode, unit = "bits", override = null, labels = null) {
    const pseudo = !!(labels && labels.pseudo);
    const key = override ? `${override.title}/${override.ticks.map((t) => t.label).join()}` : `${mode}/${unit}/${pseudo}`;
    if (this.legendMode === key) return;
    this.legendMode = key;
    const lg = override || legendFor(mode, unit, labels);
    const title = h("span", { class: "pplw-legend-title", text: lg.title });
    if (lg.kind === "buckets") {
      this.legend.replaceChildren(
        title,
        ...lg.buckets.map((b) =>
          h("span", { class: "pplw-legend-item" }, h("span", { class: `pplw-swatch pplw-c${b.bin}` }), b.label),
        ),
      );
      return;
    }
    const bar = h("div", { class: "pplw-legend-bar" });
    for (let k = 0; k < (lg.bins || NBINS); k++) bar.appendChild(h("span", { class: `pplw-c${k}` }));
    const ticks = h("div", { class: "pplw-legend-ticks" });
    for (const t of lg.ticks) {
      const tick = h("span", { text: t.label });
      tick.style.left = `${(t.at * 100).toFixed(2)}%`;
      ticks.appendChild(tick);
    }
    this.legend.replaceChildren(title, h("div", { class: "pplw-legend-scale" }, bar, ticks));
  }
}

export class ProgressRow {
  constructor(onCancel) {
    this.fill = h("div", { class: "pplw-progress-fill" });
    this.bar = h(
      "div",
      { class: "pplw-progress-bar", attrs: { role: "progressbar", "aria-valuemin": 0, "aria-valuemax": 100 } },
      this.fill,
    );
    this.status = h("span", { class: "pplw-status" });
    this.text = h("span", { class: "pplw-progress-text" });
    this.cancel = h("button", { class: "pplw-btn", text: "Cancel", attrs: { type: "button" } });
    this.cancel.addEventListener("click", () => onCancel());
    this.el = h("div", { class: "pplw-progress" }, this.status, this.bar, this.text, this.cancel);
  }

  /** status: trait value; progress: {done, total, tokens_per_s, eta_s, elapsed_s} or null;
   * loading: {message, fraction} of a first-time model preparation, or null. */
  update(status, progress, shown, loading) {
    const scoring = status === "scoring";
    const st = /^[a-z]+$/.test(status || "") ? status : "idle";
    setText(this.status, st);
    this.status.className = `pplw-status pplw-status-${st}`;
    // "loading" (model being loaded) can be cancelled too: the run stops before scoring;
    // with nothing running there is nothing to cancel, and no greyed button to puzzle over
    const running = scoring || st === "loading";
    this.cancel.disabled = !running;
    this.cancel.hidden = !running;
    if (st === "loading" && loading && loading.message) {
      const frac = Math.min(1, Math.max(0, loading.fraction || 0));
      this.fill.style.width = `${(frac * 100).toFixed(1)}%`;
      this.bar.setAttribute("aria-valuenow", String(Math.round(frac * 100)));
      this.el.classList.remove("pplw-scoring");
      setText(this.text, `${loading.message} · ${Math.round(frac * 100)}%`);
      return;
    }
    const p = progress || {};
    const total = p.total > 0 ? p.total : 0;
    const done = p.done != null ? p.done : shown;
    const frac = total > 0 ? Math.min(1, done / total) : status === "done" ? 1 : 0;
    this.fill.style.width = `${(frac * 100).toFixed(1)}%`;
    this.bar.setAttribute("aria-valuenow", String(Math.round(frac * 100)));
    this.el.classList.toggle("pplw-scoring", scoring);
    const parts = [];
    if (total > 0) parts.push(`${fmtInt(done)} / ${fmtInt(total)} tokens`);
    else if (done > 0) parts.push(`${fmtInt(done)} tokens`);
    if (scoring) {
      if (p.tokens_per_s > 0) parts.push(`${fmtInt(p.tokens_per_s)} tok/s`);
      if (p.eta_s != null && p.eta_s >= 0 && Number.isFinite(p.eta_s)) parts.push(`${fmtDuration(p.eta_s)} left`);
    } else if (p.elapsed_s > 0) {
      parts.push(`in ${fmtDuration(p.elapsed_s)}`);
    }
    setText(this.text, parts.join(" · "));
  }
}
