// One rendered view of the widget: wires the model (traits, messages) to the store and the
// pieces that draw it.  Each job lives in its own module: layout (the DOM skeleton), theme,
// stream (the kernel's messages), navigation (keyboard), token_tips (tooltips), selection.

import { attributionLegend, attributionPalette, modePalette, rampFor, tokenBin, UNIT_MODES, unitBin } from "./colors.js";
import { setText } from "./dom.js";
import { ExplainController } from "./explain/controller.js";
import { buildLayout } from "./layout.js";
import { UnitStats } from "./levels.js";
import { FrameScheduler, ModelListeners } from "./lifecycle.js";
import { shownMetrics } from "./metrics.js";
import { RovingFocus } from "./navigation.js";
import { TextEditor } from "./editor.js";
import { objectiveLabels } from "./objective.js";
import {
  MSG_CANCEL,
  STATUS_SCORING,
  TRAIT_EDITABLE,
  TRAIT_ERROR,
  TRAIT_EXPLANATION,
  TRAIT_MAX_LENGTH,
  TRAIT_PREFIX,
  TRAIT_PREFIX_EVERY_WINDOW,
  TRAIT_RESULT,
  TRAIT_SETTINGS,
  TRAIT_STATUS,
  TRAIT_STRIDE,
  TRAIT_TEXT,
} from "./protocol.js";
import { TextView } from "./render.js";
import { SelectionTracker } from "./selection.js";
import { TokenStore } from "./store.js";
import { StreamHandler } from "./stream.js";
import { followTheme, setAttributionVars, setPaletteVars } from "./theme.js";
import { TokenTips } from "./token_tips.js";
import { applyWindowSettings, showWindowSettings, ViewOptions } from "./view_options.js";
import { tokenDetails, unitDetails } from "./tooltip.js";

let viewCounter = 0;

export class PplView {
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.store = new TokenStore();
    this.frame = new FrameScheduler(() => this._flush());
    this.listeners = new ModelListeners(model);
    this.dirty = { recolorFrom: null };
    this.viewRunId = undefined;
    this.viewText = null;

    this.opts = new ViewOptions(model, (key) => this._optionChanged(key));
    this.stats = { word: new UnitStats(this.store, "word"), sentence: new UnitStats(this.store, "sentence") };

    this._build();
    // light or dark as the page is now, and again at each switch (the views' shared rule)
    this.stopThemeWatch = followTheme(el, this.root, (theme) => {
      this.theme = theme;
      setAttributionVars(this.root, theme);
      this._applyPalette();
    });
    this._listen();
    this._syncEditor();
    showWindowSettings(this.model, this.settings);

    const status = model.get(TRAIT_STATUS);
    const rd = model.get(TRAIT_RESULT);
    let loaded = false;
    if (rd && status !== STATUS_SCORING) loaded = this.stream.loadResult(rd);
    if (!loaded) this.stream.requestReplay();
    this._schedule();
  }

  _build() {
    const parts = buildLayout(this.el, ++viewCounter, {
      toolbar: {
        onMode: (m) => this.opts.set("mode", m),
        onBoundaries: (on) => this.opts.set("boundaries", !!on),
        onLevel: (l) => this.opts.set("level", l),
        onUnit: (u) => this.opts.set("unit", u),
        onBow: (b) => this.opts.set("bow", b === true),
      },
      cancel: () => this.model.send({ type: MSG_CANCEL }),
      settings: (v) => applyWindowSettings(this.model, this.settings, v),
      text: (t) => {
        this.model.set(TRAIT_TEXT, t);
        this.model.save_changes();
      },
    });
    Object.assign(this, parts);
    this.stream = new StreamHandler(this.model, this.store, {
      recolorFrom: (i) => this._recolorFrom(i),
      settingsError: (field, message) => this.settings.showError(field, message),
      changed: () => this._schedule(),
    });
    this.textView = new TextView(this.content, this.scroller, this.store, {
      getBin: (i) => this._bin(i),
      getExtra: (i) => (this.explain && this.explain.state.shown ? this.explain.extraClass(i) : ""),
      onRendered: (b) => this.focus.onBlockRendered(b),
    });
    this.tips = new TokenTips({
      scroller: this.scroller,
      tooltip: this.tooltip,
      textView: this.textView,
      store: this.store,
      describe: (i) => this._describe(i),
      onFocusToken: (i) => this.focus.setActive(i),
    });
    this.focus = new RovingFocus(this.textView, () => this.tips.hide());
    this.scroller.addEventListener("keydown", (ev) => this.focus.onKey(ev));
    this.selectionTracker = new SelectionTracker({
      content: this.content,
      textView: this.textView,
      store: this.store,
      panel: this.selPanel,
      changed: () => this._schedule(),
    });
    // a click (or `e`) explains a token; a page with no kernel shows a saved explanation
    this.explain = new ExplainController({
      model: this.model,
      store: this.store,
      root: this.root,
      scroller: this.scroller,
      textView: this.textView,
      wordStats: this.stats.word,
      level: () => this.opts.level,
      text: () => this.textView.text,
      live: !(this.el.closest && this.el.closest(".pplw-static")),
      focusToken: (i) => this.focus.focusToken(i),
      changed: () => this._explainChanged(),
    });
    this.aside.prepend(this.explain.panel.el);
    this.tooltip.keepClear = () => [this.explain.panel.el]; // a tooltip never covers the panel
    this._syncToolbar();
    this.scroller.classList.toggle("pplw-bounds", this.opts.boundaries);
  }

  /** The explanation shown changed: its colours replace the surprisal's, or give way. */
  _explainChanged() {
    this._recolorFrom(0);
    this._schedule();
  }

  /** The current selection ({a, b, i0, i1, metrics}) or null. */
  get selection() {
    return this.selectionTracker.selection;
  }

  /** The bins' colours for the theme and the mode in effect (context gain diverges). */
  _applyPalette() {
    const explaining = !!(this.explain && this.explain.state.shown);
    const mode = this._effectiveMode();
    const key = explaining ? `${this.theme}/explain` : `${this.theme}/${rampFor(mode, this.theme)}`;
    if (key === this.paletteKey) return;
    this.paletteKey = key;
    const pal = explaining ? attributionPalette(this.theme) : modePalette(mode, this.theme);
    setPaletteVars(this.root, pal, "pplw-c", "pplw-f");
  }

  _listen() {
    const on = (name, fn) => this.listeners.on(name, fn);
    on("msg:custom", (content, buffers) => {
      if (!this.explain.onMessage(content)) this.stream.onMessage(content, buffers);
    });
    on(`change:${TRAIT_EXPLANATION}`, () => this.explain.load(this.model.get(TRAIT_EXPLANATION)));
    for (const t of [TRAIT_EDITABLE, TRAIT_TEXT, TRAIT_SETTINGS]) on(`change:${t}`, () => this._syncEditor());
    on(`change:${TRAIT_TEXT}`, () => {
      this.store.invalidate();
      this.explain.reset();
      this.selectionTracker.clear();
      this._schedule();
    });
    for (const t of [TRAIT_STATUS, TRAIT_ERROR, TRAIT_SETTINGS]) on(`change:${t}`, () => this._schedule());
    on(`change:${TRAIT_RESULT}`, () => {
      const rd = this.model.get(TRAIT_RESULT);
      if (rd) this.stream.loadResult(rd);
    });
    for (const t of [TRAIT_MAX_LENGTH, TRAIT_STRIDE, TRAIT_PREFIX, TRAIT_PREFIX_EVERY_WINDOW]) on(`change:${t}`, () => showWindowSettings(this.model, this.settings));
    this.opts.listen(on);
  }

  _syncEditor() {
    const st = this.model.get(TRAIT_SETTINGS);
    this.editor.sync(this.model.get(TRAIT_EDITABLE) === true, this.model.get(TRAIT_TEXT) || "");
    this.editor.setNote(TextEditor.rescoredNote(st, st && st.total_tokens));
  }

  destroy() {
    this.editor.destroy();
    this.explain.destroy();
    this.listeners.offAll();
    this.selectionTracker.destroy();
    this.tips.destroy();
    this.stopThemeWatch();
    this.stopFit();
    this.frame.cancel();
    this.textView.destroy();
    this.root.remove();
  }

  // ------------------------------------------------------------- update

  _schedule() {
    this.frame.schedule();
  }

  /** Tokens from i on changed colour (a replayed overlap, a final result, a growing unit). */
  _recolorFrom(i) {
    const f = this.dirty.recolorFrom;
    this.dirty.recolorFrom = f == null ? i : Math.min(f, i);
  }

  _flush() {
    const model = this.model;
    const store = this.store;
    const text = model.get(TRAIT_TEXT) || "";
    const st0 = model.get(TRAIT_SETTINGS) || {};
    const addEos = st0.add_eos === true || st0.eos_scored === true;
    if (addEos !== store.addEos) {
      store.addEos = addEos; // the EOS mark is drawn with the text: draw it again
      this.viewRunId = undefined;
    }
    if (store.runId !== this.viewRunId || text !== this.viewText) {
      this.tips.hide();
      // a view built from data that is already complete (an exported page, a reload, a
      // second display) colours its units at once: their sums must exist before the spans
      if (this.opts.level !== "token") this.stats[this.opts.level].update();
      this.textView.rebuild(text);
      this.viewRunId = store.runId;
      this.viewText = text;
      this.dirty.recolorFrom = null;
      this.focus.clamp(store.length);
      this.selectionTracker.clear(); // the old selection's nodes are gone
    } else {
      if (this.opts.level !== "token") {
        // a unit's colour changes while its tokens arrive: recolour from its first token
        const st = this.stats[this.opts.level];
        const prev = st.upto;
        st.update();
        if (prev > 0 && prev < store.length) {
          const u = st.unitOf(prev - 1);
          this._recolorFrom(u >= 0 ? st.first[u] : prev);
        }
      }
      this.textView.update();
      if (this.dirty.recolorFrom != null) {
        this.textView.recolor(this.dirty.recolorFrom);
        this.dirty.recolorFrom = null;
      }
    }
    const status = model.get(TRAIT_STATUS) || "idle";
    if (status !== this.lastStatus) {
      this.lastStatus = status;
      if (status !== STATUS_SCORING) setText(this.settings.msg, "");
    }
    this.root.classList.toggle("pplw-live", status === STATUS_SCORING);
    this.progress.update(status, store.progress, store.length, this.stream.loading);

    const { metrics, state } = shownMetrics(store, status === STATUS_SCORING);
    this.metrics.update(metrics, state, this.opts.unit);
    this._syncToolbar();
    this.settings.setSettings(model.get(TRAIT_SETTINGS));
    const st = model.get(TRAIT_SETTINGS) || {};
    this.textView.setUnscored(st.unscored_why, status !== STATUS_SCORING);
    this.metrics.setContext(model.get(TRAIT_SETTINGS));
    this.metrics.setObjective(st);
    this.selPanel.setObjective(st);
    this.contextView.set(model.get(TRAIT_SETTINGS));

    const err = store.error || (model.get(TRAIT_ERROR) || "");
    this.errorBox.hidden = !err;
    setText(this.errorBox, err);

    this.selectionTracker.update();
    const ex = this.explain; // (its palette was set by _syncToolbar above)
    this.root.classList.toggle("pplw-explaining", ex.state.shown);
    ex.drawPanel(this.opts.unit);
    ex.drawn();
    this.tips.refresh(); // values can change on replay
  }

  // ------------------------------------------------------------ tokens

  /** What the tooltip shows for token i: its unit at a unit level, else the token. */
  _describe(i) {
    const labels = objectiveLabels(this.model.get(TRAIT_SETTINGS)); // pseudo- for a PLL result
    const opts = { unit: this.opts.unit, bow: this.opts.bow, gain: this._hasGain(), labels };
    const st = this.opts.level === "token" ? null : this.stats[this.opts.level].update();
    const u = st ? st.unitOf(i) : -1;
    const attribution = this.explain.describe(i);
    if (u >= 0) {
      const corrected = this.opts.level === "word" ? this.store.wordCorrected : null;
      return { details: { ...unitDetails(this.store, st, u, this.textView.text, corrected), attribution }, opts, stats: st, u };
    }
    return { details: { ...tokenDetails(this.store, i, this.textView.text, this.model.get(TRAIT_SETTINGS)), attribution }, opts, stats: null, u: -1 };
  }

  /** Colour bin of token i at the current level and mode. */
  _bin(i) {
    if (this.explain && this.explain.state.shown) return this.explain.bin(i);
    if (this.opts.level === "token") return tokenBin(this.opts.mode, this.store, i);
    const st = this.stats[this.opts.level];
    const u = st.unitOf(i);
    if (u < 0) return -1;
    const mode = UNIT_MODES.includes(this.opts.mode) ? this.opts.mode : "surprisal";
    const corrected = this.opts.level === "word" && this.opts.bow ? this.store.wordCorrected : null;
    return unitBin(mode, st, u, corrected);
  }

  _hasGain() {
    const g = this.store.context_gain;
    return this.store.length > 0 && g[0] === g[0];
  }

  /** A divergence view: the second model's fields are there to colour by KL. */
  _hasKl() {
    return this.store.divergence != null;
  }

  /** The mode in effect: rank/entropy/KL are per token; context gain needs a unigram,
   * KL a divergence view. */
  _effectiveMode() {
    if (this.opts.mode === "context_gain" && !this._hasGain()) return "surprisal";
    if (this.opts.mode === "kl" && !this._hasKl()) return "surprisal";
    if (this.opts.level !== "token" && !UNIT_MODES.includes(this.opts.mode)) return "surprisal";
    return this.opts.mode;
  }

  _syncToolbar() {
    if (this.theme) this._applyPalette();
    const spans = this.store.unitSpans;
    this.toolbar.set(this._effectiveMode(), this.opts.boundaries, {
      level: this.opts.level,
      unit: this.opts.unit,
      bow: this.opts.bow,
      hasGain: this._hasGain(),
      hasKl: this._hasKl(),
      levels: { word: !!spans.word || this.store.length === 0, sentence: !!spans.sentence || this.store.length === 0 },
      notes: this.store.levelNotes,
      labels: objectiveLabels(this.model.get(TRAIT_SETTINGS)),
      legend: this.explain && this.explain.state.shown ? attributionLegend(this.explain.state.scale, this.opts.unit) : null,
    });
  }

  // ----------------------------------------------------------- options

  /** A display option changed (here or from the kernel): redraw what depends on it. */
  _optionChanged(key) {
    if (key === "boundaries") this.scroller.classList.toggle("pplw-bounds", this.opts.boundaries);
    if (key === "mode" || key === "boundaries") {
      this._syncToolbar();
      if (key === "mode") this.textView.recolor();
      return;
    }
    // level, unit, BOW
    this.tips.unlight();
    if (key === "level") this.stats[this.opts.level === "token" ? "word" : this.opts.level]?.update();
    this.textView.recolor();
    this._syncToolbar();
    this.tips.refresh();
    this._schedule();
  }
}
