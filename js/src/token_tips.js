// The widget's tooltip over its tokens: shown on hover and on keyboard focus, the
// focused token's kept while it is in view, the hovered unit (word, sentence) outlined.

import { TextView } from "./render.js";

export class TokenTips {
  /** describe(i): {details, opts, stats, u} of token i (stats and u: the unit shown, or
   * stats null at the token level); onFocusToken(i): a token got keyboard focus. */
  constructor({ scroller, tooltip, textView, store, describe, onFocusToken }) {
    this.scroller = scroller;
    this.tooltip = tooltip;
    this.textView = textView;
    this.store = store;
    this.describe = describe;
    this.hoverIndex = -1;
    this.span = null; // the token span the tooltip belongs to
    this.index = -1;
    this.unitLit = []; // spans outlined as the hovered unit
    this.handlers = {
      mouseover: (ev) => {
        const i = TextView.tokenIndexOf(ev.target);
        if (i >= 0) {
          this.hoverIndex = i;
          this.show(i, ev.target.closest(".pplw-tok"));
        } else if (this.hoverIndex >= 0) {
          this.hoverIndex = -1;
          this.restoreFocusTip();
        }
      },
      mouseleave: () => {
        this.hoverIndex = -1;
        this.restoreFocusTip();
      },
      focusin: (ev) => {
        const i = TextView.tokenIndexOf(ev.target);
        if (i >= 0) {
          onFocusToken(i);
          this.show(i, ev.target);
        }
      },
      focusout: (ev) => {
        if (!ev.relatedTarget || TextView.tokenIndexOf(ev.relatedTarget) < 0) {
          if (this.hoverIndex < 0) this.hide();
        }
      },
      scroll: () => this._onScroll(),
    };
    for (const [name, fn] of Object.entries(this.handlers)) {
      scroller.addEventListener(name, fn, name === "scroll" ? { passive: true } : undefined);
    }
  }

  _onScroll() {
    if (this.tooltip.index < 0) return;
    // A token the keyboard focused keeps its tooltip while it is in view: the view's own
    // scrollIntoView (End, Home, an arrow past the edge) fires this scroll after focusin
    // showed it.  A hovered token's tooltip goes.
    const f = this.span;
    if (this.hoverIndex < 0 && f && f === document.activeElement) {
      const r = f.getBoundingClientRect();
      const v = this.scroller.getBoundingClientRect();
      if (r.bottom > v.top && r.top < v.bottom) {
        this.show(this.index, f);
        return;
      }
    }
    this.hide();
  }

  show(i, span) {
    if (!span || i >= this.store.length) return;
    const prev = this.span;
    if (prev && prev !== span) {
      prev.classList.remove("pplw-active");
      prev.removeAttribute("aria-describedby");
    }
    span.classList.add("pplw-active");
    span.setAttribute("aria-describedby", this.tooltip.el.id);
    this.span = span;
    this.index = i;
    this._lightUnit(null, -1);
    const { details, opts, stats, u } = this.describe(i);
    if (stats && u >= 0) this._lightUnit(stats, u);
    this.tooltip.show(span, details, opts);
    this.tooltip.index = i;
  }

  /** Show the tooltip again (its values or level changed), if one is up. */
  refresh() {
    if (this.tooltip.index >= 0 && this.tooltip.index < this.store.length && this.span) this.show(this.index, this.span);
  }

  hide() {
    if (this.span) {
      this.span.classList.remove("pplw-active");
      this.span.removeAttribute("aria-describedby");
    }
    this.span = null;
    this._lightUnit(null, -1);
    this.tooltip.hide();
  }

  /** Take the unit outline off (the level changed). */
  unlight() {
    this._lightUnit(null, -1);
  }

  // After the mouse leaves: show the focused token's tooltip, if any.
  restoreFocusTip() {
    const f = document.activeElement;
    const i = f && this.scroller.contains(f) ? TextView.tokenIndexOf(f) : -1;
    if (i >= 0) this.show(i, f);
    else this.hide();
  }

  // Outline the rendered spans of unit u of stats (u = -1: none).
  _lightUnit(stats, u) {
    for (const sp of this.unitLit) sp.classList.remove("pplw-unit-active");
    this.unitLit = [];
    if (!stats || u < 0) return;
    for (let i = stats.first[u]; i >= 0 && i <= stats.last[u]; i++) {
      const sp = this.textView.renderedSpanOf(i);
      if (sp && stats.unitOf(i) === u) {
        sp.classList.add("pplw-unit-active");
        this.unitLit.push(sp);
      }
    }
  }

  destroy() {
    for (const [name, fn] of Object.entries(this.handlers)) this.scroller.removeEventListener(name, fn);
  }
}
