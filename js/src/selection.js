// The text the user selects in the widget: its UTF-16 range, the tokens it covers and
// their metrics, shown in the selection panel.

import { rangeMetrics, tokensInRange } from "./metrics.js";

export class SelectionTracker {
  /** changed(): the selection moved (redraw). */
  constructor({ content, textView, store, panel, changed }) {
    this.content = content;
    this.textView = textView;
    this.store = store;
    this.panel = panel;
    this.offsets = null; // selected UTF-16 range {a, b} of the text
    this.seenLength = -1; // store length the panel was computed for
    this.selection = null;
    // Read the selection here, never while drawing: Selection getters can force
    // a synchronous layout, which right after DOM updates is expensive.
    this.onSelectionChange = () => {
      const next = this._readOffsets();
      const prev = this.offsets;
      if (!next && !prev) return;
      if (next && prev && next.a === prev.a && next.b === prev.b) return;
      this.offsets = next;
      this.seenLength = -1;
      changed();
    };
    document.addEventListener("selectionchange", this.onSelectionChange);
  }

  /** The text was rebuilt: the old selection's nodes are gone. */
  clear() {
    this.selection = null;
    this.offsets = null;
    this.seenLength = -1;
  }

  /** Recompute the panel when tokens arrived or the selection moved. */
  update() {
    if (this.store.length === this.seenLength) return;
    this.seenLength = this.store.length;
    let out = null;
    const o = this.offsets;
    if (o) {
      const st = this.store;
      const [i0, i1] = tokensInRange(st.start16, st.end16, st.length, o.a, o.b, this.textView.text.length);
      if (i1 > i0) out = { a: o.a, b: o.b, i0, i1, metrics: rangeMetrics(st, i0, i1) };
    }
    this.selection = out;
    this.panel.update(out);
  }

  /** UTF-16 range [a, b) of the text selected inside the text area, or null. */
  _readOffsets() {
    const sel = document.getSelection();
    if (!sel || sel.rangeCount === 0) return null;
    const inside = (n) => n != null && this.content.contains(n);
    if (!inside(sel.anchorNode) && !inside(sel.focusNode)) return null;
    if (sel.isCollapsed) return null;
    const r = sel.getRangeAt(0);
    const a = this.textView.textOffsetAt(r.startContainer, r.startOffset);
    const b = this.textView.textOffsetAt(r.endContainer, r.endOffset);
    return a != null && b != null && b > a ? { a, b } : null;
  }

  destroy() {
    document.removeEventListener("selectionchange", this.onSelectionChange);
  }
}
