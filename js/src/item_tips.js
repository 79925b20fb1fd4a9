// The rich tooltip over the items of a view that has no token store (the minimal pairs'
// tokens, the comparison's words): shown on hover and on keyboard focus, as the single
// view's TokenTips does.  One item is in the tab order (a roving tabindex); the arrows,
// Home and End move it, Escape hides the tooltip.  The items are found by a selector and
// numbered by their data-k attribute.

import { ESCAPE, keyMove } from "./navigation.js";

let tipCounter = 0;

/** The item number of el's item (data-k), or -1 when el is in none. */
export function itemIndexOf(el, selector) {
  const node = el && el.nodeType === 1 ? el : el && el.parentElement;
  const item = node && node.closest ? node.closest(selector) : null;
  const k = item ? Number(item.dataset.k) : NaN;
  return Number.isInteger(k) ? k : -1;
}

export class ItemTips {
  /**
   * container: the element holding the items (focusable: keys go to it);
   * tooltip: a Tooltip; selector: an item's CSS selector; count(): how many items;
   * item(k): item k's element (null: not drawn); describe(k, el): the tooltip's nodes.
   */
  constructor({ container, tooltip, selector, count, item, describe }) {
    Object.assign(this, { container, tooltip, selector, count, item, describe });
    if (!tooltip.el.id) tooltip.el.id = `pplw-itt-${++tipCounter}`;
    this.active = 0; // the item in the tab order
    this.shown = -1; // the item whose tooltip is up
    this.hovered = -1;
    const at = (ev) => itemIndexOf(ev.target, selector);
    this.handlers = {
      mouseover: (ev) => {
        const k = at(ev);
        if (k >= 0) {
          this.hovered = k;
          this.show(k);
        } else if (this.hovered >= 0) {
          this.hovered = -1;
          this._restore();
        }
      },
      mouseleave: () => {
        this.hovered = -1;
        this._restore();
      },
      focusin: (ev) => {
        const k = at(ev);
        if (k >= 0) this.show(k, true);
      },
      focusout: (ev) => {
        if (itemIndexOf(ev.relatedTarget, selector) < 0 && this.hovered < 0) this.hide();
      },
      keydown: (ev) => this._onKey(ev, at(ev)),
      scroll: () => this._onScroll(),
    };
    for (const [name, fn] of Object.entries(this.handlers)) {
      container.addEventListener(name, fn, name === "scroll" ? { passive: true } : undefined);
    }
  }

  /** Show item k's tooltip (focused: it also takes the tab order). */
  show(k, focused = false) {
    const el = this.item(k);
    if (!el) return;
    if (this.shown >= 0 && this.shown !== k) this._unmark(this.item(this.shown));
    if (focused) this._setActive(k, el);
    el.classList.add("pplw-active");
    el.setAttribute("aria-describedby", this.tooltip.el.id);
    this.shown = k;
    this.tooltip.showParts(el, this.describe(k, el));
  }

  /** Show the tooltip again (values or unit changed), if one is up. */
  refresh() {
    if (this.shown >= 0 && this.shown < this.count()) this.show(this.shown);
    else this.hide();
  }

  hide() {
    if (this.shown >= 0) this._unmark(this.item(this.shown));
    this.shown = -1;
    this.tooltip.hide();
  }

  /** The items were drawn again: the one in the tab order keeps its place. */
  redrawn() {
    this.shown = -1;
    this.tooltip.hide();
    this.active = Math.max(0, Math.min(this.active, this.count() - 1));
    const el = this.item(this.active);
    if (el) el.tabIndex = 0;
  }

  /** Move keyboard focus to item k (clamped to the drawn items). */
  focusItem(k) {
    const el = this.item(k);
    if (!el) return;
    this._setActive(k, el);
    el.focus({ preventScroll: true });
    el.scrollIntoView({ block: "nearest", inline: "nearest" });
  }

  _onKey(ev, k) {
    const n = this.count();
    if (!n) return;
    let to = keyMove(ev.key, k >= 0 ? k : this.active, n);
    if (to === ESCAPE) {
      this.hide();
      return;
    }
    if (to == null) return;
    ev.preventDefault();
    // from the container itself an arrow enters at the item in the tab order (as the
    // single view's tokens do); Home and End go where they say
    if (k < 0 && ev.key !== "Home" && ev.key !== "End") to = this.active;
    // an item not drawn yet (a long text draws a slice per frame): the last drawn one
    let j = to;
    while (j > 0 && !this.item(j)) j--;
    this.focusItem(j);
  }

  // The items moved under the tooltip: a focused item still in view keeps it (placed
  // again), a hovered one's goes (as the single view's TokenTips does).
  _onScroll() {
    if (this.shown < 0) return;
    const el = this.item(this.shown);
    if (this.hovered < 0 && el && el === this.container.ownerDocument.activeElement) {
      const r = el.getBoundingClientRect();
      const v = this.container.getBoundingClientRect();
      if (r.bottom > v.top && r.top < v.bottom) {
        this.show(this.shown);
        return;
      }
    }
    this.hide();
  }

  _setActive(k, el) {
    if (k !== this.active) {
      const prev = this.item(this.active);
      if (prev) prev.removeAttribute("tabindex");
    }
    this.active = k;
    el.tabIndex = 0;
  }

  _unmark(el) {
    if (!el) return;
    el.classList.remove("pplw-active");
    el.removeAttribute("aria-describedby");
  }

  // After the mouse leaves: the focused item's tooltip, if any.
  _restore() {
    const f = this.container.ownerDocument.activeElement;
    const k = f && this.container.contains(f) ? itemIndexOf(f, this.selector) : -1;
    if (k >= 0) this.show(k);
    else this.hide();
  }

  destroy() {
    for (const [name, fn] of Object.entries(this.handlers)) this.container.removeEventListener(name, fn);
    this.hide();
  }
}
