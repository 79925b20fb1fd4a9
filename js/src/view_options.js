// The widget's display options (colour mode, level, surprisal unit, BOW correction, token
// boundaries) and its window settings form, each kept in step with its trait: a change
// here is saved, a change from the kernel is applied.

import { MODES } from "./colors.js";
import { setText } from "./dom.js";
import {
  LEVELS,
  SURPRISAL_UNITS,
  TRAIT_BOW,
  TRAIT_COLOR_MODE,
  TRAIT_LEVEL,
  TRAIT_MAX_LENGTH,
  TRAIT_PREFIX,
  TRAIT_PREFIX_EVERY_WINDOW,
  TRAIT_SHOW_BOUNDARIES,
  TRAIT_STRIDE,
  TRAIT_SURPRISAL_UNIT,
} from "./protocol.js";

const isBool = (v) => typeof v === "boolean";

// option -> its trait, the values it takes, and its value when the trait has none
const OPTIONS = Object.freeze({
  mode: { trait: TRAIT_COLOR_MODE, ok: (v) => MODES.includes(v), fallback: "surprisal" },
  level: { trait: TRAIT_LEVEL, ok: (v) => LEVELS.includes(v), fallback: "token" },
  unit: { trait: TRAIT_SURPRISAL_UNIT, ok: (v) => SURPRISAL_UNITS.includes(v), fallback: "bits" },
  bow: { trait: TRAIT_BOW, ok: isBool, fallback: false },
  boundaries: { trait: TRAIT_SHOW_BOUNDARIES, ok: isBool, fallback: false },
});

export class ViewOptions {
  /** changed(key): option key took a new value (redraw). */
  constructor(model, changed) {
    this.model = model;
    this.changed = changed;
    for (const [key, o] of Object.entries(OPTIONS)) {
      const v = model.get(o.trait);
      this[key] = o.ok(v) ? v : o.fallback;
    }
  }

  /** Set option key (from a control: save its trait, when the kernel has it). */
  set(key, value, save = true) {
    const o = OPTIONS[key];
    if (!o.ok(value) || this[key] === value) return;
    this[key] = value;
    this.changed(key);
    if (save && this.model.get(o.trait) !== undefined) {
      this.model.set(o.trait, value);
      this.model.save_changes();
    }
  }

  /** Follow the kernel's changes of the traits (on: ModelListeners.on). */
  listen(on) {
    for (const [key, o] of Object.entries(OPTIONS)) {
      on(`change:${o.trait}`, () => this.set(key, this.model.get(o.trait), false));
    }
  }
}

/** The window settings form shows the traits' max_length, stride, prefix and prefix_every_window. */
export function showWindowSettings(model, panel) {
  panel.setControls({
    max_length: model.get(TRAIT_MAX_LENGTH),
    stride: model.get(TRAIT_STRIDE),
    prefix: model.get(TRAIT_PREFIX),
    prefix_every_window: model.get(TRAIT_PREFIX_EVERY_WINDOW),
  });
}

/** The form was submitted: set the traits (the kernel re-scores), or say nothing changed. */
export function applyWindowSettings(model, panel, v) {
  const same =
    model.get(TRAIT_MAX_LENGTH) === v.max_length &&
    model.get(TRAIT_STRIDE) === v.stride &&
    model.get(TRAIT_PREFIX) === v.prefix &&
    (model.get(TRAIT_PREFIX_EVERY_WINDOW) === true) === v.prefix_every_window;
  if (!same) {
    model.set(TRAIT_MAX_LENGTH, v.max_length);
    model.set(TRAIT_STRIDE, v.stride);
    model.set(TRAIT_PREFIX, v.prefix);
    model.set(TRAIT_PREFIX_EVERY_WINDOW, v.prefix_every_window);
    model.save_changes();
  }
  setText(panel.msg, same ? "Settings unchanged." : "Re-scoring…");
  panel.msg.className = "pplw-form-msg";
}
