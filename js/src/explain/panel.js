// The explanation panel beside the text: the target and its surprisal, the method, a
// progress bar while the kernel computes (the units, then the context curve), the units
// that helped and hurt most (each with its position in the text), the colour key, the
// context curve.  What it says is panelModel (pure, tested); ExplainPanel draws it, text
// only (never markup).

import { attributionKey } from "../colors.js";
import { h, setText } from "../dom.js";
import { displayToken, fmtInt, whitespaceKey } from "../format.js";
import { fmtDelta } from "../units.js";
import { fmtSurprisal } from "../tooltip.js";
import { curveSvg } from "./curve.js";
import { CANCELLED, COMPUTING, DONE, FAILED, REQUESTED } from "./state.js";

export const TOP_N = 5;

const METHOD_LABELS = {
  occlusion: "occlusion: each unit deleted, the target rescored (exact)",
  gradient: "gradient × input (a fast approximation)",
};

/** What a page with no kernel says: it shows what was saved, and cannot compute more. */
export const NEEDS_KERNEL =
  "This page has no kernel: it shows the explanation saved with it. To explain another token, run the notebook and click it there (or call w.explain(...)).";

/** The kernel's work after the last unit: the context curve (widget_explain.py). */
export function curveStage(total, units) {
  return `all ${fmtInt(total)} ${units} computed · now the context curve: the target scored again with only its last 0, 1, 2, 4, … tokens`;
}

/**
 * What the panel shows for an ExplainState, in the surprisal unit shown.  where(u): the
 * position of context unit u in the text ("word 12"); live: false on a page with no kernel.
 */
export function panelModel(state, unit = "bits", { where = (u) => `#${fmtInt(u + 1)}`, live = true } = {}) {
  const t = state.target || {};
  const what = state.unit === "token" ? "token" : "word"; // the context's units
  const units = state.unit === "token" ? "tokens" : "words";
  const { helped, hurt } = state.top(TOP_N);
  const row = (r) => {
    const pos = where(r.unit);
    return { text: displayToken(r.text), where: pos, delta: fmtDelta(r.delta, unit), title: `${pos}: ${JSON.stringify(r.text)}, ${r.delta} nats` };
  };
  const done = state.done;
  const total = state.total;
  let progress;
  switch (state.status) {
    case REQUESTED:
      progress = "asking the kernel…";
      break;
    case COMPUTING:
      if (!(total > 0)) progress = "starting…";
      else if (done >= total) progress = curveStage(total, units);
      else progress = `${fmtInt(done)} / ${fmtInt(total)} ${units} computed · Escape cancels`;
      break;
    case CANCELLED:
      progress = `cancelled: ${fmtInt(done)} / ${fmtInt(total)} ${units} computed`;
      break;
    case FAILED:
      progress = state.message;
      break;
    default:
      progress = `${fmtInt(total)} context ${total === 1 ? what : units}`;
  }
  const shownRows = [...helped, ...hurt];
  const marks = whitespaceKey([t.text, ...shownRows.map((r) => r.text)]);
  return {
    title: `Why this ${t.word != null && t.token == null ? "word" : "token"}?`,
    target: t.text == null ? "" : displayToken(t.text),
    surprisal: state.targetNats === state.targetNats ? fmtSurprisal(state.targetNats, unit) : "—",
    method: METHOD_LABELS[state.method] || (state.method ? String(state.method) : ""),
    progress,
    fraction: total > 0 ? Math.min(1, done / total) : state.status === DONE ? 1 : 0,
    // the units are done, the curve is not: the bar runs on, full
    curveRunning: state.status === COMPUTING && total > 0 && done >= total,
    running: state.running,
    failed: state.status === FAILED,
    helped: helped.map(row),
    hurt: hurt.map(row),
    // "+" helped: deleting the unit made the target more surprising
    scale: `${attributionKey()} (± ${fmtDelta(state.scale, unit).replace(/^\+/, "")} ${unit} at the ends)`,
    // the marks that stand for whitespace in what the panel shows ("· a space")
    marks: marks ? `${marks} (whitespace made visible)` : "",
    curve: state.curve,
    curveContext: { before: Number.isInteger(t.first) ? t.first : null, maxLength: state.settings ? state.settings.max_length : null },
    note: live ? "" : NEEDS_KERNEL,
  };
}

function list(title, side) {
  const items = h("ol", { class: "pplw-ex-list" });
  const el = h("div", { class: `pplw-ex-col pplw-ex-${side}` }, h("div", { class: "pplw-ex-sub", text: title }), items);
  return { el, items };
}

export class ExplainPanel {
  /** onClose(): the close button; the view cancels and clears. */
  constructor(onClose) {
    this.close = h("button", { class: "pplw-btn pplw-ex-close", text: "×", attrs: { type: "button", "aria-label": "Close the explanation (Escape)", title: "Close (Escape)" } });
    this.close.addEventListener("click", () => onClose());
    this.titleEl = h("span", { class: "pplw-sec-title" });
    this.target = h("span", { class: "pplw-ex-label" });
    this.surprisal = h("span", { class: "pplw-ex-surprisal" });
    this.method = h("div", { class: "pplw-ex-method" });
    this.fill = h("div", { class: "pplw-progress-fill" });
    this.bar = h("div", { class: "pplw-progress-bar pplw-ex-bar", attrs: { role: "progressbar", "aria-valuemin": 0, "aria-valuemax": 100, "aria-label": "explanation progress" } }, this.fill);
    this.status = h("div", { class: "pplw-ex-status", attrs: { "aria-live": "polite" } });
    this.note = h("div", { class: "pplw-ex-note", attrs: { role: "note", hidden: true } });
    this.helped = list("helped most", "helped");
    this.hurt = list("hurt most", "hurt");
    this.marks = h("div", { class: "pplw-ex-marks", attrs: { hidden: true } });
    this.scale = h("div", { class: "pplw-ex-scale" });
    this.curveBox = h("div", { class: "pplw-ex-curvebox" });
    this.curveNote = h("div", { class: "pplw-ex-sub", text: "context curve: the target's surprisal given only the last k tokens before it" });
    this.el = h(
      "section",
      { class: "pplw-sec pplw-ex", attrs: { role: "region", "aria-label": "Why is this token surprising", hidden: true } },
      h("div", { class: "pplw-sec-head" }, this.titleEl, this.close),
      h("div", { class: "pplw-ex-head" }, this.target, this.surprisal),
      this.method,
      this.bar,
      this.status,
      this.note,
      h("div", { class: "pplw-ex-cols" }, this.helped.el, this.hurt.el),
      this.marks,
      this.scale,
      this.curveNote,
      this.curveBox,
    );
    this.curveKey = null;
  }

  /** Draw `state` (an ExplainState) in `unit`; hidden when nothing is shown.  opts:
   * panelModel's {where, live}. */
  update(state, unit = "bits", opts = {}) {
    this.el.hidden = !state.shown;
    if (!state.shown) return;
    const m = panelModel(state, unit, opts);
    setText(this.titleEl, m.title);
    setText(this.target, m.target);
    setText(this.surprisal, m.surprisal);
    setText(this.method, m.method);
    this.fill.style.width = `${(m.fraction * 100).toFixed(1)}%`;
    this.bar.setAttribute("aria-valuenow", String(Math.round(m.fraction * 100)));
    this.bar.classList.toggle("pplw-ex-running", m.running);
    this.bar.classList.toggle("pplw-ex-curve-running", m.curveRunning);
    setText(this.status, m.progress);
    this.status.classList.toggle("pplw-bad", m.failed);
    setText(this.note, m.note);
    this.note.hidden = !m.note;
    for (const [box, rows] of [[this.helped, m.helped], [this.hurt, m.hurt]]) {
      box.items.replaceChildren(
        ...(rows.length
          ? rows.map((r) =>
              h(
                "li",
                { title: r.title },
                h("span", { class: "pplw-ex-where", text: r.where }),
                h("span", { class: "pplw-ex-unit", text: r.text }),
                h("span", { class: "pplw-ex-delta", text: r.delta }),
              ),
            )
          : [h("li", { class: "pplw-ex-none", text: m.running ? "…" : "none" })]),
      );
    }
    setText(this.marks, m.marks);
    this.marks.hidden = !m.marks;
    setText(this.scale, m.scale);
    const c = m.curveContext;
    const key = m.curve ? `${unit}:${c.before}:${c.maxLength}:${m.curve.context_tokens.join(",")}:${m.curve.surprisal_nats.join(",")}` : null;
    if (key !== this.curveKey) {
      this.curveKey = key;
      const chart = m.curve ? curveSvg(m.curve, unit, c) : null;
      this.curveBox.replaceChildren(...(chart ? [chart] : []));
    }
    this.curveNote.hidden = !m.curve;
  }

  /** Flash the no-kernel note (a click on a page with no kernel). */
  flashNote() {
    if (this.note.hidden) return;
    this.note.classList.remove("pplw-ex-flash");
    void this.note.offsetWidth; // restart the animation
    this.note.classList.add("pplw-ex-flash");
  }
}
