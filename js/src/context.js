// The context a continuation was scored after: shown before the text, uncoloured.
// A string as it was read; a chat as its turns (role, then content). Text only: every
// piece goes in through textContent, never as markup.
import { h, setText } from "./dom.js";

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
    const n = settings.context_tokens;
    setText(label, `context${n != null ? ` · ${n} tokens` : ""} · read, not scored`);
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
