// Keyboard navigation over a row of items (tokens, words): which key moves where, and the
// widget's roving tabindex (one token in the tab order; the arrows move it).

import { TextView } from "./render.js";

export const ESCAPE = "escape";

/** What a key does with item i of n focused: the item to move to (in [0, n-1]), ESCAPE,
 * or null (a key the view leaves alone). */
export function keyMove(key, i, n) {
  switch (key) {
    case "ArrowRight":
      return Math.min(n - 1, i + 1);
    case "ArrowLeft":
      return Math.max(0, i - 1);
    case "Home":
      return 0;
    case "End":
      return n - 1;
    case "Escape":
      return ESCAPE;
    default:
      return null;
  }
}

/** The widget's tokens as a roving-tabindex list over a TextView. */
export class RovingFocus {
  /** onEscape(): hide the tooltip. */
  constructor(textView, onEscape) {
    this.textView = textView;
    this.onEscape = onEscape;
    this.active = 0; // the token in the tab order
  }

  /** Make token i the one in the tab order. */
  setActive(i) {
    const tv = this.textView;
    if (i === this.active) {
      const sp = tv.renderedSpanOf(i);
      if (sp && sp.tabIndex !== 0) sp.tabIndex = 0;
      return;
    }
    const old = tv.renderedSpanOf(this.active);
    if (old) old.removeAttribute("tabindex");
    this.active = i;
    const sp = tv.renderedSpanOf(i);
    if (sp) sp.tabIndex = 0;
  }

  /** A block of spans was drawn: the active token among them joins the tab order. */
  onBlockRendered(b) {
    const j = this.active - this.textView.plan.blocks[b.k].t0;
    if (j >= 0 && j < b.spans.length) b.spans[j].tabIndex = 0;
  }

  /** After a rebuild: keep the active token inside the n tokens there are. */
  clamp(n) {
    this.active = Math.min(this.active, Math.max(0, n - 1));
  }

  focusToken(i) {
    const n = this.textView.shown;
    if (n === 0) return;
    const k = Math.max(0, Math.min(n - 1, i));
    const sp = this.textView.spanOf(k);
    if (!sp) return;
    this.setActive(k);
    sp.focus({ preventScroll: true });
    sp.scrollIntoView({ block: "nearest", inline: "nearest" });
  }

  /** keydown in the text: on a token the arrows, Home and End move; on the text area
   * itself an arrow focuses the active token. */
  onKey(ev) {
    const onToken = TextView.tokenIndexOf(ev.target);
    const move = keyMove(ev.key, onToken >= 0 ? onToken : this.active, this.textView.shown);
    if (move === ESCAPE) {
      this.onEscape();
      return;
    }
    if (move == null || (onToken < 0 && (ev.key === "Home" || ev.key === "End"))) return;
    ev.preventDefault();
    this.focusToken(onToken >= 0 ? move : this.active);
  }
}
