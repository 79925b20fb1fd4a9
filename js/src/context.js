// The context a continuation was scored after: shown before the text, uncoloured.
// A string as it was read; a chat as its turns (role, then content). Text only: every
// piece goes in through textContent, never as markup.
import { h, setText } from "./dom.js";
import { fmtInt } from "./format.js";
import { isPll } from "./objective.js";

/** "13 tokens, BOS included" / "12 tokens, no BOS" / "12 tokens" (bos unknown: null). */
export function tokenCount(n, bos = null) {
  const base = `${fmtInt(n)} token${n === 1 ? "" : "s"}`;
  return bos == null ? base : `${base}, ${bos ? "BOS included" : "no BOS"}`;
}

/**
 * The one count of a context: the tokens read before the first scored one (the kernel's
 * settings.context_tokens; context_bos says whether a BOS is among them, absent in results
 * saved before it did: then null).  null without a context.
 */
export function contextCount(settings) {
  if (!settings || settings.context == null || settings.context_tokens == null) return null;
  const bos = typeof settings.context_bos === "boolean" ? settings.context_bos : null;
  return { n: settings.context_tokens, bos, label: tokenCount(settings.context_tokens, bos) };
}

/**
 * Whether token i's context (contextLength positions, store.context_length) holds the
 * BOS: a window with the BOS in every window, or one reaching back to the sequence's
 * start.  null where the settings do not tell.
 */
export function bosInWindow(settings, i, contextLength) {
  // a masked LM reads no BOS: its special tokens frame every window (no note to make)
  if (!settings || !(contextLength >= 0) || isPll(settings)) return null;
  let bos;
  let before; // tokens before the first scored one
  if (settings.context != null) {
    if (typeof settings.context_bos !== "boolean" || settings.context_tokens == null) return null;
    bos = settings.context_bos;
    before = settings.context_tokens;
  } else {
    if (!("prefix" in settings)) return null;
    bos = settings.prefix === "bos";
    before = bos ? 1 : (settings.n_unscored ?? 0);
  }
  if (!bos) return false;
  return settings.prefix_every_window === true || contextLength === before + i;
}

export class ContextView {
  constructor() {
    this.el = h("div", { class: "pplw-context", attrs: { hidden: true, role: "note", "aria-label": "Context (read, not scored)" } });
    this.shown = undefined;
  }

  /** settings.context: a string, a list of {role, content}, or absent (hidden). */
  set(settings) {
    const ctx = settings && settings.context != null ? settings.context : null;
    const key = JSON.stringify(ctx);
    if (key === this.shown) return;
    this.shown = key;
    this.el.hidden = ctx == null;
    if (ctx == null) {
      this.el.replaceChildren();
      return;
    }
    const label = h("div", { class: "pplw-context-label" });
    const count = contextCount(settings);
    setText(label, `context${count ? ` · ${count.label}` : ""} · read, not scored`);
    const body = typeof ctx === "string" ? [this._text(ctx)] : Array.isArray(ctx) ? ctx.map((m) => this._turn(m)) : [];
    this.el.replaceChildren(label, ...body);
  }

  _text(s) {
    const el = h("div", { class: "pplw-context-text" });
    setText(el, s);
    return el;
  }

  _turn(m) {
    const role = h("span", { class: "pplw-context-role" });
    setText(role, String((m && m.role) ?? ""));
    const turn = h("div", { class: "pplw-context-turn" }, role, this._text(String((m && m.content) ?? "")));
    return turn;
  }
}
