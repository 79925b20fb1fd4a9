// Toolbar: colour mode, token-boundary toggle, legend; and the progress row.

import { legendFor, MODE_LABELS, MODES, NBINS } from "./colors.js";
import { h, setText } from "./dom.js";
import { fmtDuration, fmtInt } from "./format.js";

export class Toolbar {
  /** onMode(mode), onBoundaries(bool) */
  constructor({ onMode, onBoundaries }) {
    this.mode = h("select", { class: "pplw-input", attrs: { "aria-label": "Colour tokens by" } });
    for (const m of MODES) this.mode.appendChild(h("option", { text: MODE_LABELS[m], attrs: { value: m } }));
    this.mode.addEventListener("change", () => onMode(this.mode.value));
    this.bounds = h("input", { attrs: { type: "checkbox" } });
    this.bounds.addEventListener("change", () => onBoundaries(this.bounds.checked));
    this.legend = h("div", { class: "pplw-legend", attrs: { "aria-hidden": "true" } });
    this.el = h(
      "div",
      { class: "pplw-toolbar" },
      h("label", { class: "pplw-field pplw-inline" }, h("span", { text: "Colour by" }), this.mode),
      h("label", { class: "pplw-check" }, this.bounds, h("span", { text: "token boundaries" })),
      this.legend,
    );
  }

  set(mode, boundaries) {
    if (this.mode.value !== mode) this.mode.value = mode;
    this.bounds.checked = !!boundaries;
    this._legend(mode);
  }

  _legend(mode) {
    if (this.legendMode === mode) return;
    this.legendMode = mode;
    const lg = legendFor(mode);
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
    for (let k = 0; k < NBINS; k++) bar.appendChild(h("span", { class: `pplw-c${k}` }));
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

  /** status: trait value; progress: {done, total, tokens_per_s, eta_s, elapsed_s} or null. */
  update(status, progress, shown) {
    const scoring = status === "scoring";
    const st = /^[a-z]+$/.test(status || "") ? status : "idle";
    setText(this.status, st);
    this.status.className = `pplw-status pplw-status-${st}`;
    // "loading" (model being loaded) can be cancelled too: the run stops before scoring
    this.cancel.disabled = !(scoring || st === "loading");
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
