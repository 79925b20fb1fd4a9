// Editable mode: a plain-text box above the coloured view.  After the user stops
// typing for DEBOUNCE_MS the new text goes to the kernel, which re-scores only
// the windows the edit can change (scoring/runner/incremental.py) and streams them
// into the view below.  The box is a <textarea>: what is typed stays text.

import { h } from "./dom.js";

export const DEBOUNCE_MS = 400;

/**
 * Calls `send(value)` once typing has paused for `wait` ms (the latest value
 * only); `flush()` sends a pending value at once, `cancel()` drops it.
 * `wait` can be changed (the live page fits it to its model's cost).  `clock`
 * ({setTimeout, clearTimeout}) is injectable for tests.
 */
export function debounced(send, wait = DEBOUNCE_MS, clock = globalThis) {
  let timer = null;
  let pending = null;
  const fire = () => {
    timer = null;
    const v = pending;
    pending = null;
    send(v);
  };
  return {
    push(value) {
      pending = value;
      if (timer !== null) clock.clearTimeout(timer);
      timer = clock.setTimeout(fire, wait);
    },
    flush() {
      if (timer === null) return;
      clock.clearTimeout(timer);
      fire();
    },
    cancel() {
      if (timer !== null) clock.clearTimeout(timer);
      timer = null;
      pending = null;
    },
    get pending() {
      return timer !== null;
    },
    get wait() {
      return wait;
    },
    set wait(ms) {
      wait = ms;
    },
  };
}

/** The text box of the editable mode; `onText(text)` is called debounced. */
export class TextEditor {
  constructor(onText, wait = DEBOUNCE_MS) {
    this.box = h("textarea", {
      class: "pplw-editor",
      // an empty widget (editable=True with no text yet) says what the box is for
      attrs: { rows: 4, spellcheck: "false", "aria-label": "Text to score (edit to re-score)",
               placeholder: "Type a text to score it" },
    });
    this.note = h("div", { class: "pplw-editor-note", text: "Edit the text: it is scored again as you type (only the windows after your edit)." });
    this.el = h("div", { class: "pplw-editor-wrap", attrs: { hidden: true } }, this.box, this.note);
    this.send = debounced(onText, wait);
    this.box.addEventListener("input", () => this.send.push(this.box.value));
    this.box.addEventListener("blur", () => this.send.flush());
  }

  /** Show or hide the box; `text` is the kernel's text. */
  sync(editable, text) {
    this.el.hidden = !editable;
    // the kernel's text replaces the box's only when the user is not mid-edit
    if (!this.send.pending && this.box.value !== text) this.box.value = text;
  }

  /** "re-scored 464 of 2,000 tokens" from the run's settings (null when not known). */
  static rescoredNote(settings, total) {
    if (!settings || settings.reused_tokens == null || !(total > 0)) return null;
    const again = total - settings.reused_tokens;
    return `last edit: ${again.toLocaleString("en-US")} of ${total.toLocaleString("en-US")} tokens scored again`;
  }

  setNote(s) {
    this.note.textContent = s || "Edit the text: it is scored again as you type (only the windows after your edit).";
  }

  destroy() {
    this.send.cancel();
  }
}
