// The explanation panel beside the text: the target and its surprisal, the method, a
// progress bar while the kernel computes, the units that helped and hurt most, the
// context curve.  What it says is panelModel (pure, tested); ExplainPanel draws it, text
// only (never markup).

import { h, setText } from "../dom.js";
import { displayToken, fmtInt } from "../format.js";
import { fmtDelta } from "../units.js";
import { fmtSurprisal } from "../tooltip.js";
import { curveSvg } from "./curve.js";
import { CANCELLED, COMPUTING, DONE, FAILED, REQUESTED } from "./state.js";

export const TOP_N = 5;

const METHOD_LABELS = {
  occlusion: "occlusion: each unit deleted, the target rescored (exact)",
  gradient: "gradient × input (a fast approximation)",
};

/** What the panel shows for an ExplainState, in the surprisal unit shown. */
export function panelModel(state, unit = "bits") {
  const t = state.target || {};
  const what = state.unit === "token" ? "token" : "word"; // the context's units
  const units = state.unit === "token" ? "tokens" : "words";
  const { helped, hurt } = state.top(TOP_N);
  const row = (r) => ({ text: displayToken(r.text), delta: fmtDelta(r.delta, unit), title: `${r.delta} nats` });
  const done = state.done;
  const total = state.total;
  let progress;
  switch (state.status) {
    case REQUESTED:
      progress = "asking the kernel…";
      break;
    case COMPUTING:
      progress = total > 0 ? `${fmtInt(done)} / ${fmtInt(total)} ${units} computed · Escape cancels` : "starting…";
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
  return {
    title: `Why this ${t.word != null && t.token == null ? "word" : "token"}?`,
    target: t.text == null ? "" : displayToken(t.text),
    surprisal: state.targetNats === state.targetNats ? fmtSurprisal(state.targetNats, unit) : "—",
    method: METHOD_LABELS[state.method] || (state.method ? String(state.method) : ""),
    progress,
    fraction: total > 0 ? Math.min(1, done / total) : state.status === DONE ? 1 : 0,
    running: state.running,
    failed: state.status === FAILED,
    helped: helped.map(row),
    hurt: hurt.map(row),
    // "+" helped: deleting the unit made the target more surprising
    scale: `colour: orange helped, blue hurt (± ${fmtDelta(state.scale, unit).replace(/^\+/, "")} ${unit} at the ends)`,
    curve: state.curve,
  };
}

function list(title) {
  const items = h("ol", { class: "pplw-ex-list" });
  const el = h("div", { class: "pplw-ex-col" }, h("div", { class: "pplw-ex-sub", text: title }), items);
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
    this.helped = list("helped most");
    this.hurt = list("hurt most");
    this.scale = h("div", { class: "pplw-ex-scale" });
    this.curveBox = h("div", { class: "pplw-ex-curvebox" });
    this.curveNote = h("div", { class: "pplw-ex-sub", text: "surprisal given only the last k tokens" });
    this.el = h(
      "section",
      { class: "pplw-sec pplw-ex", attrs: { role: "region", "aria-label": "Why is this token surprising", hidden: true } },
      h("div", { class: "pplw-sec-head" }, this.titleEl, this.close),
      h("div", { class: "pplw-ex-head" }, this.target, this.surprisal),
      this.method,
      this.bar,
      this.status,
      h("div", { class: "pplw-ex-cols" }, this.helped.el, this.hurt.el),
      this.scale,
      this.curveNote,
      this.curveBox,
    );
    this.curveKey = null;
  }

  /** Draw `state` (an ExplainState) in `unit`; hidden when nothing is shown. */
  update(state, unit = "bits") {
    this.el.hidden = !state.shown;
    if (!state.shown) return;
    const m = panelModel(state, unit);
    setText(this.titleEl, m.title);
    setText(this.target, m.target);
    setText(this.surprisal, m.surprisal);
    setText(this.method, m.method);
    this.fill.style.width = `${(m.fraction * 100).toFixed(1)}%`;
    this.bar.setAttribute("aria-valuenow", String(Math.round(m.fraction * 100)));
    this.bar.classList.toggle("pplw-ex-running", m.running);
    setText(this.status, m.progress);
    this.status.classList.toggle("pplw-bad", m.failed);
    for (const [box, rows] of [[this.helped, m.helped], [this.hurt, m.hurt]]) {
      box.items.replaceChildren(
        ...(rows.length
          ? rows.map((r) => h("li", { title: r.title }, h("span", { class: "pplw-ex-unit", text: r.text }), h("span", { class: "pplw-ex-delta", text: r.delta })))
          : [h("li", { class: "pplw-ex-none", text: m.running ? "…" : "none" })]),
      );
    }
    setText(this.scale, m.scale);
    const key = m.curve ? `${unit}:${m.curve.context_tokens.join(",")}:${m.curve.surprisal_nats.join(",")}` : null;
    if (key !== this.curveKey) {
      this.curveKey = key;
      const chart = m.curve ? curveSvg(m.curve, unit) : null;
      this.curveBox.replaceChildren(...(chart ? [chart] : []));
    }
    this.curveNote.hidden = !m.curve;
  }
}
