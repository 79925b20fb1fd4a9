// The scored text: block elements of token spans, created lazily.
//
// content
//   div.pplw-block[data-s]   tokens [t0, t1): a plain text node until it
//                            nears the viewport, then one span per token
//                            (plus plain text between tokens); the last
//                            (open) block ends with span.pplw-pending, the
//                            not-yet-scored rest of the current line/piece
//   div.pplw-piece[data-s]   text after that, not covered by tokens yet
//
// Token spans carry data-i (token index); zero-width tokens (a split
// multi-byte character, EOS) are empty spans drawn by CSS pseudo-elements,
// so the text content of `content` is always exactly the text.

import { BlockPlan, pieceBounds, pieceOf } from "./blocks.js";
import { NBINS, tokenBin } from "./colors.js";

const KIND_TEXT = 0;
const KIND_ZW = 1;
const KIND_EOS = 2;
const KIND_CLASS = ["pplw-tok", "pplw-tok pplw-zw", "pplw-tok pplw-eos"];

// Class strings per (kind, bin), built once.
const CLASS_CACHE = KIND_CLASS.map((base) => {
  const arr = [];
  for (let b = 0; b < NBINS; b++) arr.push(`${base} pplw-c${b}`);
  arr.push(`${base} pplw-cna`);
  return arr;
});

export class TextView {
  /**
   * @param content  element that receives the blocks (inside the scroller)
   * @param scroller the scrolling element (IntersectionObserver root)
   * @param store    TokenStore
   * @param opts     {getBin(i): colour bin of token i (-1: none), getExtra(i): more classes
   *                  of token i ("" none: an explanation's target, ...), onRendered(block),
   *                  blockOptions}
   */
  constructor(content, scroller, store, opts = {}) {
    this.content = content;
    this.scroller = scroller;
    this.store = store;
    this.getBin = opts.getBin || ((i) => tokenBin("surprisal", store, i));
    this.getExtra = opts.getExtra || (() => "");
    this.onRendered = opts.onRendered || (() => {});
    // why text between scored tokens is not scored (a protocol's unscored tokens), "" if none
    this.unscoredNote = "";
    this.tailNote = "";
    this.blockOptions = opts.blockOptions || {};
    this.queue = new Set();
    this.raf = 0;
    this.observer =
      typeof IntersectionObserver !== "undefined"
        ? new IntersectionObserver((entries) => this._onIntersect(entries), {
            root: scroller,
            rootMargin: "600px 0px 600px 0px",
          })
        : null;
    this.setText("");
  }

  destroy() {
    if (this.observer) this.observer.disconnect();
    if (this.raf) cancelAnimationFrame(this.raf);
    this.queue.clear();
  }

  /** Drop everything and show `text` as plain text (no tokens). */
  setText(text) {
    this.text = text || "";
    if (this.observer) this.observer.disconnect();
    this.queue.clear();
    this.plan = new BlockPlan(this.text, this.blockOptions);
    this.blocks = []; // DOM state per plan block
    this.shown = 0;
    this.bounds = pieceBounds(this.text);
    this.pieceEls = [];
    this.firstPiece = 0; // pieces before this index have no element any more
    this.pending = null;
    const frag = document.createDocumentFragment();
    for (let q = 0; q + 1 < this.bounds.length; q++) {
      const s = this.bounds[q];
      const e = this.bounds[q + 1];
      if (e <= s) {
        this.pieceEls.push(null);
        continue;
      }
      const el = document.createElement("div");
      el.className = "pplw-piece";
      el.setAttribute("data-s", String(s));
      el.textContent = this.text.slice(s, e);
      this.pieceEls.push(el);
      frag.appendChild(el);
    }
    this.content.replaceChildren(frag);
  }

  /** setText + every token the store holds. */
  rebuild(text) {
    this.setText(text);
    this.update();
  }

  /** Show the tokens the store gained since the last call. */
  update() {
    const store = this.store;
    const n = store.length;
    if (n <= this.shown) return;
    const first = this.plan.extend(store.start16, store.end16, n);
    const planned = this.plan.blocks;
    for (let k = first; k < planned.length; k++) {
      let b = this.blocks[k];
      if (!b) {
        const el = document.createElement("div");
        el.className = "pplw-block";
        el.setAttribute("data-s", String(planned[k].s));
        el.setAttribute("data-b", String(k));
        this.content.insertBefore(el, this._firstPieceEl());
        b = { k, el, rendered: false, spans: null, kinds: null, doneT: 0, doneEnd: 0, textNode: null };
        this.blocks[k] = b;
        if (this.observer) this.observer.observe(el);
      }
      this._fill(b);
    }
    this.shown = n;
    this._updatePending();
  }

  _firstPieceEl() {
    for (let q = this.firstPiece; q < this.pieceEls.length; q++) {
      if (this.pieceEls[q]) return this.pieceEls[q];
    }
    return null;
  }

  // Keep the pending span (rest of the piece after the last token) at the
  // end of the open block and drop pieces now covered by tokens.
  _updatePending() {
    const covered = this.plan.covered;
    const q = pieceOf(this.bounds, covered);
    for (let p = this.firstPiece; p <= q && p < this.pieceEls.length; p++) {
      if (this.pieceEls[p]) this.pieceEls[p].remove();
      this.pieceEls[p] = null;
    }
    this.firstPiece = Math.max(this.firstPiece, q + 1);
    const end = this.bounds[q + 1] ?? this.text.length;
    const rest = covered < end ? this.text.slice(covered, end) : "";
    const last = this.blocks[this.blocks.length - 1];
    if (!last) return;
    if (!this.pending) {
      this.pending = document.createElement("span");
      this.pending.className = "pplw-pending";
    }
    if (this.pending.textContent !== rest) this.pending.textContent = rest;
    if (this.pending.parentNode !== last.el || last.el.lastChild !== this.pending) {
      last.el.appendChild(this.pending);
    }
  }

  // Bring block b's DOM up to date with the plan (tokens and text end).
  _fill(b) {
    const pb = this.plan.blocks[b.k];
    const isLast = b.k === this.plan.blocks.length - 1;
    const end = this.plan.blockEnd(b.k);
    if (!b.rendered) {
      const s = this.text.slice(pb.s, end);
      if (!b.textNode) {
        b.textNode = document.createTextNode(s);
        b.el.insertBefore(b.textNode, b.el.firstChild);
      } else if (b.textNode.data !== s) {
        b.textNode.data = s;
      }
      return;
    }
    // Rendered: append spans for new tokens, then the gap up to the end.
    const pendingHere = this.pending && this.pending.parentNode === b.el ? this.pending : null;
    const frag = document.createDocumentFragment();
    this._appendTokens(frag, b, pb.t1);
    if (!isLast) {
      if (end > b.doneEnd) frag.appendChild(this._gap(this.text.slice(b.doneEnd, end)));
      b.doneEnd = end;
    }
    b.el.insertBefore(frag, pendingHere);
  }

  _appendTokens(frag, b, t1) {
    const store = this.store;
    const text = this.text;
    const len = text.length;
    const getBin = this.getBin;
    let pos = b.doneEnd;
    for (let i = b.doneT; i < t1; i++) {
      const [st, en] = BlockPlan.clampToken(store.start16[i], store.end16[i], pos, len);
      if (st > pos) frag.appendChild(this._gap(text.slice(pos, st)));
      const sp = document.createElement("span");
      let kind = KIND_TEXT;
      if (en > st) sp.textContent = text.slice(st, en);
      else kind = store.isAddedEos(i, len) ? KIND_EOS : KIND_ZW;
      const bin = getBin(i);
      const extra = this.getExtra(i);
      sp.className = extra ? `${CLASS_CACHE[kind][bin < 0 ? NBINS : bin]} ${extra}` : CLASS_CACHE[kind][bin < 0 ? NBINS : bin];
      sp.setAttribute("data-i", String(i));
      b.spans.push(sp);
      b.kinds.push(kind);
      frag.appendChild(sp);
      pos = en;
    }
    b.doneT = Math.max(b.doneT, t1);
    b.doneEnd = pos;
  }

  /** Text between scored tokens: plain, or greyed with the reason as its tooltip where a
   *  protocol leaves tokens unscored (always as text, never markup). */
  _gap(s) {
    if (!this.unscoredNote) return document.createTextNode(s);
    const sp = document.createElement("span");
    sp.className = "pplw-unscored";
    sp.title = this.unscoredNote;
    sp.textContent = s;
    return sp;
  }

  /** A protocol's unscored tokens: `note` says why (""/null: none); `finished`: the text
   *  after the last scored token is unscored too (not merely waiting). */
  setUnscored(note, finished) {
    this.unscoredNote = note || "";
    const tail = finished ? this.unscoredNote : "";
    if (tail === this.tailNote) return;
    this.tailNote = tail;
    for (const el of [this.pending, ...this.pieceEls]) {
      if (!el) continue;
      el.classList.toggle("pplw-unscored", !!tail);
      if (tail) el.title = tail;
      else el.removeAttribute("title");
    }
  }

  /** Replace block b's plain text by token spans. */
  renderBlock(b) {
    if (b.rendered) return;
    const pb = this.plan.blocks[b.k];
    b.rendered = true;
    b.spans = [];
    b.kinds = [];
    b.doneT = pb.t0;
    b.doneEnd = pb.s;
    if (b.textNode) {
      b.textNode.remove();
      b.textNode = null;
    }
    if (this.observer) this.observer.unobserve(b.el);
    this._fill(b);
    this.onRendered(b);
  }

  _onIntersect(entries) {
    for (const e of entries) {
      if (!e.isIntersecting) continue;
      const k = Number(e.target.getAttribute("data-b"));
      const b = this.blocks[k];
      if (b && !b.rendered) this.queue.add(b);
    }
    this._scheduleRender();
  }

  _scheduleRender() {
    if (this.raf || this.queue.size === 0) return;
    this.raf = requestAnimationFrame(() => {
      this.raf = 0;
      // Spans plus the layout they cause: a few hundred tokens per frame
      // keeps each frame short; the rest waits for the next one.
      let budget = 700;
      for (const b of this.queue) {
        this.queue.delete(b);
        if (this.blocks[b.k] !== b || b.rendered) continue;
        this.renderBlock(b);
        budget -= b.spans.length;
        if (budget <= 0) break;
      }
      this._scheduleRender();
    });
  }

  /** Re-colour the rendered blocks only (mode change, replayed values). */
  recolor(fromToken = 0) {
    const getBin = this.getBin;
    for (const b of this.blocks) {
      if (!b || !b.rendered) continue;
      const t0 = this.plan.blocks[b.k].t0;
      if (t0 + b.spans.length <= fromToken) continue;
      for (let j = Math.max(0, fromToken - t0); j < b.spans.length; j++) {
        const bin = getBin(t0 + j);
        const sp = b.spans[j];
        const extra = this.getExtra(t0 + j);
        let cls = CLASS_CACHE[b.kinds[j]][bin < 0 ? NBINS : bin];
        if (extra) cls = `${cls} ${extra}`;
        const active = sp.classList.contains("pplw-active");
        sp.className = active ? `${cls} pplw-active` : cls;
      }
    }
  }

  /** Number of rendered blocks / spans (for tests and diagnostics). */
  stats() {
    let rendered = 0;
    let spans = 0;
    for (const b of this.blocks) {
      if (b && b.rendered) {
        rendered++;
        spans += b.spans.length;
      }
    }
    return { blocks: this.blocks.length, rendered, spans };
  }

  /** The span of token i, rendering its block first if needed (null if not shown). */
  spanOf(i) {
    if (i < 0 || i >= this.shown) return null;
    const k = this.plan.blockOfToken(i);
    const b = this.blocks[k];
    if (!b) return null;
    if (!b.rendered) {
      this.queue.delete(b);
      this.renderBlock(b);
    }
    return b.spans[i - this.plan.blocks[k].t0] || null;
  }

  /** The span of token i if its block is rendered, without rendering it. */
  renderedSpanOf(i) {
    if (i < 0 || i >= this.shown) return null;
    const k = this.plan.blockOfToken(i);
    const b = this.blocks[k];
    if (!b || !b.rendered) return null;
    return b.spans[i - this.plan.blocks[k].t0] || null;
  }

  /** Token index of a node inside a token span, or -1. */
  static tokenIndexOf(node) {
    const el = node && node.nodeType === 1 ? node : node && node.parentElement;
    const sp = el && el.closest ? el.closest(".pplw-tok") : null;
    if (!sp) return -1;
    const v = Number(sp.getAttribute("data-i"));
    return Number.isInteger(v) ? v : -1;
  }

  /** UTF-16 offset into the text of a DOM position (node, offset), clamped to the content. */
  textOffsetAt(node, offset) {
    const content = this.content;
    const all = document.createRange();
    all.selectNodeContents(content);
    let cmp;
    try {
      cmp = all.comparePoint(node, offset);
    } catch {
      return null;
    }
    if (cmp < 0) return 0;
    if (cmp > 0) return this.text.length;
    // Nearest block/piece ancestor with a known text start.
    let el = node.nodeType === 1 ? node : node.parentElement;
    while (el && el !== content && !el.hasAttribute("data-s")) el = el.parentElement;
    if (!el || el === content) {
      // A position between children of `content`.
      const child = node === content ? content.childNodes[offset] : null;
      return child && child.getAttribute ? Number(child.getAttribute("data-s")) : this.text.length;
    }
    const r = document.createRange();
    r.setStart(el, 0);
    r.setEnd(node, offset);
    return Number(el.getAttribute("data-s")) + r.toString().length;
  }
}
