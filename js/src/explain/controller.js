// "Why is this token surprising?" in the widget: a click on a token (or `e` on the focused
// one) asks the kernel to explain it; the kernel's messages and the `explanation` trait
// fill an ExplainState, which the text (through the view's colour hooks) and the panel
// draw.  Escape cancels a computation, or closes a finished one; another click starts
// another (the kernel cancels the first).
//
// What a click selects follows the view's level: at the token level the token (its
// context units are tokens); at the word or sentence level the token's word (its units
// are words).  A token outside any word falls back to itself.

import { fmtInt } from "../format.js";
import { MSG_EXPLAIN, MSG_EXPLAIN_CANCEL, MSG_EXPLAIN_CLEAR, TRAIT_EXPLANATION } from "../protocol.js";
import { TextView } from "../render.js";
import { ExplainPanel } from "./panel.js";
import { ExplainState, OUTSIDE, REQUESTED, TARGET } from "./state.js";

/** The target a click on token i selects: {token|word, first, last, start16, end16, text}. */
export function targetOf(store, wordStats, level, i, text) {
  const u = level !== "token" && wordStats ? wordStats.update().unitOf(i) : -1;
  if (u >= 0) {
    const first = wordStats.first[u];
    const last = wordStats.last[u];
    const s = store.start16[first];
    const e = store.end16[last];
    return { token: null, word: u, first, last, start16: s, end16: e, text: text.slice(s, e) };
  }
  return { token: i, word: null, first: i, last: i, start16: store.start16[i], end16: store.end16[i], text: text.slice(store.start16[i], store.end16[i]) };
}

export class ExplainController {
  /**
   * view: {model, store, root, scroller, textView, wordStats, level(), text(), live,
   * focusToken(i), changed() (recolour the text and redraw)}; live: false on a page with no kernel
   * (a saved explanation is shown; nothing new can be computed).
   */
  constructor(view) {
    this.view = view;
    this.state = new ExplainState();
    this.panel = new ExplainPanel(() => this.close());
    this.clickedAt = null; // performance.now() of the click being answered
    this.firstColouredMs = null; // click -> first coloured unit, as measured here
    this.kernelFirstS = null; // the kernel's own seconds to that first unit
    this.onClick = (ev) => {
      const i = TextView.tokenIndexOf(ev.target);
      const sel = document.getSelection && document.getSelection();
      if (i < 0 || (sel && !sel.isCollapsed)) return; // a drag selects text, no explanation
      this.explainToken(i);
    };
    this.onKey = (ev) => {
      // a key handled here goes no further (JupyterLab's command mode has its own)
      if (ev.key === "Escape" && this.state.shown) {
        ev.stopPropagation();
        this.escape();
        return;
      }
      if ((ev.key === "e" || ev.key === "E") && !ev.ctrlKey && !ev.metaKey && !ev.altKey) {
        const i = TextView.tokenIndexOf(ev.target);
        if (i < 0) return;
        ev.preventDefault();
        ev.stopPropagation();
        this.explainToken(i);
      }
    };
    view.scroller.addEventListener("click", this.onClick);
    view.root.addEventListener("keydown", this.onKey);
    this.load(view.model.get(TRAIT_EXPLANATION));
  }

  destroy() {
    this.view.scroller.removeEventListener("click", this.onClick);
    this.view.root.removeEventListener("keydown", this.onKey);
  }

  /** Explain what a click on token i selects (the same target again: close it); the token
   * becomes the focused one, so the keyboard goes on from there. */
  explainToken(i) {
    const v = this.view;
    if (i >= v.store.length) return;
    v.focusToken(i);
    if (!v.live) {
      this.panel.flashNote(); // no kernel: the panel says what a new explanation needs
      return;
    }
    const target = targetOf(v.store, v.wordStats, v.level(), i, v.text());
    const t = this.state.target;
    if (this.state.shown && t && t.first === target.first && t.last === target.last) {
      this.close();
      return;
    }
    const request = this.state.ask(target);
    this.clickedAt = now();
    this.clickedWall = Date.now(); // the kernel's clock is the same wall clock (diagnostics)
    this.firstColouredMs = null;
    this.kernelFirstS = null;
    const msg = { type: MSG_EXPLAIN, request };
    if (target.word != null) msg.word = target.word;
    else msg.token = target.token;
    v.model.send(msg);
    v.changed();
  }

  /** Escape: cancel what is computing (what is done stays), or close what is shown. */
  escape() {
    if (!this.state.running) {
      this.close();
      return;
    }
    if (this.view.live) this.view.model.send({ type: MSG_EXPLAIN_CANCEL });
    if (this.state.status === REQUESTED) this.state.clear(); // nothing to keep yet
    this.view.changed();
  }

  /** Close: nothing shown; the kernel forgets it too (a saved notebook no longer shows it). */
  close() {
    if (!this.state.shown) return;
    if (this.view.live) this.view.model.send({ type: MSG_EXPLAIN_CLEAR });
    this.state.clear();
    this.view.changed();
  }

  /** Draw the panel in the surprisal unit shown. */
  drawPanel(unit) {
    this.panel.update(this.state, unit, { where: (u) => this.unitPosition(u), live: this.view.live });
  }

  /** Where context unit u sits in the text, as the tooltips count: "word 12" (its first
   * token's word) or "token 40". */
  unitPosition(u) {
    const v = this.view;
    const i = this.state.firstTokenOf(v.store, u);
    if (i < 0) return `#${fmtInt(u + 1)}`;
    if (this.state.unit !== "token" && v.wordStats) {
      const w = v.wordStats.update().unitOf(i);
      if (w >= 0) return `word ${fmtInt(w + 1)}`;
    }
    return `token ${fmtInt(i + 1)}`;
  }

  /** A kernel message; true when it was an explanation's. */
  onMessage(msg) {
    if (!this.state.onMessage(msg)) return false;
    const first = msg.elapsed_s != null && this.kernelFirstS == null && this.clickedAt != null && (msg.index || []).length > 0;
    if (first) {
      this.kernelFirstS = Number(msg.elapsed_s);
      // where the time went: click -> kernel, kernel, kernel -> this view (wall clocks)
      const r = this.view.root.dataset;
      if (msg.requested_at != null) r.explainToKernelMs = (msg.requested_at * 1000 - this.clickedWall).toFixed(1);
      if (msg.sent_at != null) r.explainFromKernelMs = (Date.now() - msg.sent_at * 1000).toFixed(1);
    }
    this.view.changed();
    return true;
  }

  /** The `explanation` trait changed (or a view starts from it). */
  load(payload) {
    if (this.state.load(payload)) this.view.changed();
  }

  /** The text changed: an explanation of the old text means nothing. */
  reset() {
    if (this.state.shown) this.state.clear();
  }

  /** Colour bin of token i while an explanation is shown (-1: uncoloured). */
  bin(i) {
    const d = this.state.drawOf(this.view.store, i);
    return d === TARGET ? -1 : d;
  }

  /** Extra classes of token i while an explanation is shown. */
  extraClass(i) {
    const d = this.state.drawOf(this.view.store, i);
    if (d === TARGET) {
      // one box around the target's tokens: its ends draw the sides (explain.css)
      const t = this.state.target;
      return `pplw-ex-target${i === t.first ? " pplw-ex-first" : ""}${i === t.last ? " pplw-ex-last" : ""}`;
    }
    if (d !== OUTSIDE) return "";
    return i > (this.state.target ? this.state.target.last : -1) ? "pplw-ex-after" : "pplw-ex-pending";
  }

  /** After a redraw: the time from the click to the first coloured unit, once. */
  drawn() {
    if (this.clickedAt == null || this.firstColouredMs != null || !this.state.delta) return;
    if (!this.state.delta.some((d) => d === d)) return;
    this.firstColouredMs = now() - this.clickedAt;
    const r = this.view.root;
    r.dataset.explainFirstMs = this.firstColouredMs.toFixed(1);
    if (this.kernelFirstS != null) r.dataset.explainKernelFirstMs = (this.kernelFirstS * 1000).toFixed(1);
  }

  /** The attribution tooltip row of token i: {role: "target"|"context", nats} or null. */
  describe(i) {
    if (!this.state.shown) return null;
    const d = this.state.drawOf(this.view.store, i);
    if (d === TARGET) return { role: "target", nats: this.state.targetNats };
    const nats = this.state.deltaOfToken(this.view.store, i);
    return nats === nats ? { role: "context", nats } : null;
  }
}

const now = () => (typeof performance !== "undefined" ? performance.now() : Date.now());
