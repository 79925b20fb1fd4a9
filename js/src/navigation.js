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

/** ArrowUp / ArrowDown: the direction of a line move (-1 up, +1 down), 0 for other keys. */
export function lineDirection(key) {
  return key === "ArrowUp" ? -1 : key === "ArrowDown" ? 1 : 0;
}

const mid = (r) => (r.top + r.bottom) / 2;

/**
 * The token a line move reaches from token i of n: on the nearest line above (dir -1) or
 * below (dir +1), the token whose box is nearest the current token's centre across; i
 * itself when there is no line that way.  rectsOf(j): token j's boxes, one per line it is
 * on ([{left, right, top, bottom}], empty when it has none).  At most `limit` tokens are
 * looked at (a long line).
 */
export function lineMove(rectsOf, i, n, dir, limit = 4000) {
  const own = rectsOf(i);
  if (!own.length || !dir) return i;
  const r = dir > 0 ? own[own.length - 1] : own[0]; // the line it leaves from
  const x = (r.left + r.right) / 2;
  let best = i;
  let bestDist = Infinity;
  let line = null; // the middle of the line found
  for (let j = i + dir, seen = 0; j >= 0 && j < n && seen < limit; j += dir, seen++) {
    const boxes = rectsOf(j);
    if (!boxes.length) continue;
    const q = dir > 0 ? boxes[0] : boxes[boxes.length - 1]; // its part nearest the line left
    const m = mid(q);
    if (line == null) {
      if (dir > 0 ? m <= r.bottom : m >= r.top) continue; // still on the line it leaves
      line = m;
    } else if (Math.abs(m - line) > (q.bottom - q.top) / 2) {
      break; // past that line
    }
    const d = q.right < x ? x - q.right : q.left > x ? q.left - x : 0;
    if (d < bestDist) {
      best = j;
      bestDist = d;
    }
  }
  return best;
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

  /** keydown in the text: on a token the arrows (Up and Down to the line above or below),
   * Home and End move; on the text area itself an arrow focuses the active token.  A key
   * handled here goes no further: JupyterLab would take Up and Down to the next cell. */
  onKey(ev) {
    const onToken = TextView.tokenIndexOf(ev.target);
    const dir = lineDirection(ev.key);
    const n = this.textView.shown;
    let move = dir ? onToken : keyMove(ev.key, onToken >= 0 ? onToken : this.active, n);
    if (move === ESCAPE) {
      this.onEscape();
      return;
    }
    if (onToken < 0 && (dir || ev.key.startsWith("Arrow"))) move = this.active;
    else if (dir && onToken >= 0) move = lineMove((j) => this._rects(j), onToken, n, dir);
    if (move == null || (onToken < 0 && (ev.key === "Home" || ev.key === "End"))) return;
    ev.preventDefault();
    ev.stopPropagation();
    this.focusToken(move);
  }

  /** Token j's boxes on the page, one per line (rendering its block if need be). */
  _rects(j) {
    const sp = this.textView.spanOf(j);
    return sp ? [...sp.getClientRects()].filter((r) => r.right > r.left || r.bottom > r.top) : [];
  }
}
