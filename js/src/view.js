// One rendered view of the widget: wires model, store, DOM pieces together.

import { MODES, modePalette, NBINS, rampFor, rgbCss, tokenBin, UNIT_MODES, unitBin } from "./colors.js";
import { decodeChunk, decodeResult, decodeUnitSpans } from "./decode.js";
import { TextEditor } from "./editor.js";
import { UnitStats } from "./levels.js";
import { h, setText } from "./dom.js";
import { rangeMetrics, storeMetrics, tokensInRange } from "./metrics.js";
import { MetricsPanel, SelectionPanel, SettingsPanel } from "./panel.js";
import {
  MSG_CANCEL,
  MSG_CHUNK,
  MSG_DONE,
  MSG_ERROR,
  MSG_LOADING,
  MSG_REPLAY,
  MSG_RESET,
  MSG_SETTINGS_ERROR,
  LEVELS,
  STATUS_SCORING,
  SURPRISAL_UNITS,
  TRAIT_BOW,
  TRAIT_COLOR_MODE,
  TRAIT_EDITABLE,
  TRAIT_LEVEL,
  TRAIT_SURPRISAL_UNIT,
  TRAIT_ERROR,
  TRAIT_MAX_LENGTH,
  TRAIT_PREFIX,
  TRAIT_PREFIX_EVERY_WINDOW,
  TRAIT_RESULT,
  TRAIT_SETTINGS,
  TRAIT_SHOW_BOUNDARIES,
  TRAIT_STATUS,
  TRAIT_STRIDE,
  TRAIT_TEXT,
} from "./protocol.js";
import { ContextView } from "./context.js";
import { TextView } from "./render.js";
import { TokenStore } from "./store.js";
import { ProgressRow, Toolbar } from "./toolbar.js";
import { tokenDetails, Tooltip, unitDetails } from "./tooltip.js";

let viewCounter = 0;
const REPLAY_MIN_INTERVAL_MS = 2000;

/** One metric from Python (core/jsonable.py): null is NaN, "Infinity"/"-Infinity" a number,
 * a [lo, hi] interval element by element; other strings (unigram_source) stay. */
function metricValue(v) {
  if (v == null) return NaN;
  if (Array.isArray(v)) return v.map(metricValue);
  return typeof v === "string" && v !== "Infinity" && v !== "-Infinity" ? v : Number(v);
}

/** Metrics dict from Python, its values read by metricValue. */
export function normaliseMetrics(m) {
  if (!m || typeof m !== "object") return null;
  const out = {};
  for (const [k, v] of Object.entries(m)) out[k] = metricValue(v);
  return out;
}

/** "light" or "dark" for the surroundings of el (JupyterLab, else computed, else OS). */
export function detectTheme(el) {
  const body = el.ownerDocument.body;
  const flag = body && body.getAttribute("data-jp-theme-light");
  if (flag === "true") return "light";
  if (flag === "false") return "dark";
  for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
    const m = /rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)/.exec(getComputedStyle(n).backgroundColor);
    if (m && (m[4] === undefined || Number(m[4]) > 0.5)) {
      const lum = (0.2126 * m[1] + 0.7152 * m[2] + 0.0722 * m[3]) / 255;
      return lum < 0.5 ? "dark" : "light";
    }
  }
  return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

export class PplView {
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.id = ++viewCounter;
    this.store = new TokenStore();
    this.raf = 0;
    this.dirty = { recolorFrom: null };
    this.viewRunId = undefined;
    this.viewText = null;
    this.lastReplay = -Infinity;
    this.active = 0; // roving tabindex token
    this.hoverIndex = -1;
    this.selection = null;
    this.selOffsets = null; // selected UTF-16 range of the text
    this.selLength = -1;
    this.listeners = [];

    const m0 = model.get(TRAIT_COLOR_MODE);
    this.mode = MODES.includes(m0) ? m0 : "surprisal";
    const b0 = model.get(TRAIT_SHOW_BOUNDARIES);
    this.boundaries = typeof b0 === "boolean" ? b0 : false;
    const l0 = model.get(TRAIT_LEVEL);
    this.level = LEVELS.includes(l0) ? l0 : "token";
    const u0 = model.get(TRAIT_SURPRISAL_UNIT);
    this.unit = SURPRISAL_UNITS.includes(u0) ? u0 : "bits";
    this.bow = model.get(TRAIT_BOW) === true;
    this.stats = { word: new UnitStats(this.store, "word"), sentence: new UnitStats(this.store, "sentence") };
    this.unitLit = []; // spans outlined as the hovered unit

    this._buildDom();
    this._applyTheme();
    this._listen();
    this._syncEditor();
    this._syncControls();

    const status = model.get(TRAIT_STATUS);
    const rd = model.get(TRAIT_RESULT);
    let loaded = false;
    if (rd && status !== STATUS_SCORING) loaded = this._loadResult(rd);
    if (!loaded) this._requestReplay();
    this._schedule();
  }

  // ---------------------------------------------------------------- DOM

  _buildDom() {
    const root = h("div", { class: "pplw-root" });
    this.root = root;
    this.toolbar = new Toolbar({
      onMode: (m) => this._setMode(m),
      onBoundaries: (on) => this._setBoundaries(on),
      onLevel: (l) => this._setView(TRAIT_LEVEL, "level", l),
      onUnit: (u) => this._setView(TRAIT_SURPRISAL_UNIT, "unit", u),
      onBow: (b) => this._setView(TRAIT_BOW, "bow", b),
    });
    this.progress = new ProgressRow(() => this.model.send({ type: MSG_CANCEL }));
    this.errorBox = h("div", { class: "pplw-error", attrs: { role: "alert", hidden: true } });
    this.content = h("div", { class: "pplw-content" });
    this.scroller = h(
      "div",
      { class: "pplw-scroller", attrs: { tabindex: 0, role: "region", "aria-label": "Scored text" } },
      this.content,
    );
    this.metrics = new MetricsPanel();
    this.selPanel = new SelectionPanel();
    this.settings = new SettingsPanel((v) => this._applySettings(v));
    const panel = h("aside", { class: "pplw-panel" }, this.metrics.el, this.selPanel.el, this.settings.el);
    // what the model read first (not scored): uncoloured, before the text
    this.contextView = new ContextView();
    const main = h("div", { class: "pplw-main" }, h("div", { class: "pplw-textcol" }, this.contextView.el, this.scroller), panel);
    // editable mode: the text box sets the text trait; the kernel re-scores what changed
    this.editor = new TextEditor((t) => {
      this.model.set(TRAIT_TEXT, t);
      this.model.save_changes();
    });
    root.append(this.toolbar.el, this.editor.el, this.progress.el, this.errorBox, main);
    this.tooltip = new Tooltip(root);
    this.tooltip.el.id = `pplw-tt-${this.id}`;
    this.el.appendChild(root);

    this.textView = new TextView(this.content, this.scroller, this.store, {
      getBin: (i) => this._bin(i),
      onRendered: (b) => this._onBlockRendered(b),
    });
    this._syncToolbar();
    this.scroller.classList.toggle("pplw-bounds", this.boundaries);
  }

  _applyTheme() {
    const theme = detectTheme(this.el);
    if (theme === this.theme) return;
    this.theme = theme;
    this._applyPalette();
    this.root.classList.toggle("pplw-dark", theme === "dark");
    this.root.classList.toggle("pplw-light", theme === "light");
  }

  /** The bins' colours for the theme and the mode in effect (context gain diverges). */
  _applyPalette() {
    const mode = this._effectiveMode();
    const key = `${this.theme}/${rampFor(mode, this.theme)}`;
    if (key === this.paletteKey) return;
    this.paletteKey = key;
    const pal = modePalette(mode, this.theme);
    for (let k = 0; k < NBINS; k++) {
      this.root.style.setProperty(`--pplw-c${k}`, rgbCss(pal[k].bg));
      this.root.style.setProperty(`--pplw-f${k}`, rgbCss(pal[k].fg));
    }
  }

  // ---------------------------------------------------------- listeners

  _on(name, fn) {
    this.model.on(name, fn);
    this.listeners.push([name, fn]);
  }

  _listen() {
    this._on("msg:custom", (content, buffers) => this._onMessage(content, buffers));
    for (const t of [TRAIT_EDITABLE, TRAIT_TEXT, TRAIT_SETTINGS]) this._on(`change:${t}`, () => this._syncEditor());
    this._on(`change:${TRAIT_TEXT}`, () => {
      this.store.invalidate();
      this.selection = null;
      this.selOffsets = null;
      this._schedule();
    });
    this._on(`change:${TRAIT_STATUS}`, () => this._schedule());
    this._on(`change:${TRAIT_ERROR}`, () => this._schedule());
    this._on(`change:${TRAIT_SETTINGS}`, () => this._schedule());
    this._on(`change:${TRAIT_RESULT}`, () => {
      const rd = this.model.get(TRAIT_RESULT);
      if (rd) this._loadResult(rd);
    });
    for (const t of [TRAIT_MAX_LENGTH, TRAIT_STRIDE, TRAIT_PREFIX, TRAIT_PREFIX_EVERY_WINDOW]) this._on(`change:${t}`, () => this._syncControls());
    this._on(`change:${TRAIT_COLOR_MODE}`, () => {
      const m = this.model.get(TRAIT_COLOR_MODE);
      if (MODES.includes(m) && m !== this.mode) this._setMode(m, false);
    });
    for (const [trait, key] of [[TRAIT_LEVEL, "level"], [TRAIT_SURPRISAL_UNIT, "unit"], [TRAIT_BOW, "bow"]]) {
      this._on(`change:${trait}`, () => this._setView(trait, key, this.model.get(trait), false));
    }
    this._on(`change:${TRAIT_SHOW_BOUNDARIES}`, () => {
      const b = this.model.get(TRAIT_SHOW_BOUNDARIES);
      if (typeof b === "boolean" && b !== this.boundaries) this._setBoundaries(b, false);
    });

    const sc = this.scroller;
    this.onMouseOver = (ev) => {
      const i = TextView.tokenIndexOf(ev.target);
      if (i >= 0) {
        this.hoverIndex = i;
        this._showTip(i, ev.target.closest(".pplw-tok"));
      } else if (this.hoverIndex >= 0) {
        this.hoverIndex = -1;
        this._restoreFocusTip();
      }
    };
    this.onMouseLeave = () => {
      this.hoverIndex = -1;
      this._restoreFocusTip();
    };
    this.onFocusIn = (ev) => {
      const i = TextView.tokenIndexOf(ev.target);
      if (i >= 0) {
        this._setActive(i);
        this._showTip(i, ev.target);
      }
    };
    this.onFocusOut = (ev) => {
      if (!ev.relatedTarget || TextView.tokenIndexOf(ev.relatedTarget) < 0) {
        if (this.hoverIndex < 0) this._hideTip();
      }
    };
    this.onKeyDown = (ev) => this._onKey(ev);
    sc.addEventListener("mouseover", this.onMouseOver);
    sc.addEventListener("mouseleave", this.onMouseLeave);
    sc.addEventListener("focusin", this.onFocusIn);
    sc.addEventListener("focusout", this.onFocusOut);
    sc.addEventListener("keydown", this.onKeyDown);
    this.onScroll = () => {
      if (this.tooltip.index < 0) return;
      // A token the keyboard focused keeps its tooltip while it is in view: the view's own
      // scrollIntoView (End, Home, an arrow past the edge) fires this scroll after focusin
      // showed it.  A hovered token's tooltip goes.
      const f = this.tipSpan;
      if (this.hoverIndex < 0 && f && f === document.activeElement) {
        const r = f.getBoundingClientRect();
        const v = this.scroller.getBoundingClientRect();
        if (r.bottom > v.top && r.top < v.bottom) {
          this._showTip(this.tipIndex, f);
          return;
        }
      }
      this._hideTip();
    };
    sc.addEventListener("scroll", this.onScroll, { passive: true });

    // Read the selection here, never in _flush: Selection getters can force
    // a synchronous layout, which right after DOM updates is expensive.
    this.onSelection = () => {
      const next = this._selectionOffsets();
      const prev = this.selOffsets;
      if (!next && !prev) return;
      if (next && prev && next.a === prev.a && next.b === prev.b) return;
      this.selOffsets = next;
      this.selLength = -1;
      this._schedule();
    };
    document.addEventListener("selectionchange", this.onSelection);

    this.themeObserver = new MutationObserver(() => this._applyTheme());
    this.themeObserver.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-light", "class"] });
  }

  _syncEditor() {
    const st = this.model.get(TRAIT_SETTINGS);
    this.editor.sync(this.model.get(TRAIT_EDITABLE) === true, this.model.get(TRAIT_TEXT) || "");
    this.editor.setNote(TextEditor.rescoredNote(st, st && st.total_tokens));
  }

  destroy() {
    this.editor.destroy();
    for (const [name, fn] of this.listeners) this.model.off(name, fn);
    this.listeners = [];
    document.removeEventListener("selectionchange", this.onSelection);
    this.themeObserver.disconnect();
    if (this.raf) cancelAnimationFrame(this.raf);
    this.textView.destroy();
    this.root.remove();
  }

  // ----------------------------------------------------------- messages

  _onMessage(msg, buffers) {
    if (!msg || typeof msg !== "object") return;
    const store = this.store;
    try {
      switch (msg.type) {
        case MSG_RESET: {
          if (store.classify(msg.run_id) === "stale") return;
          store.reset(msg.run_id, msg.total_tokens, msg.top_k);
          if (msg.levels) store.setLevels(decodeUnitSpans(buffers, msg.levels), msg.level_notes);
          break;
        }
        case MSG_CHUNK: {
          if (store.classify(msg.run_id) === "stale") return;
          const chunk = decodeChunk(msg, buffers);
          const res = store.applyChunk(msg.run_id, chunk, msg.vocab);
          if (res.status === "gap") {
            this._requestReplay();
            return;
          }
          if (res.status !== "ok") return;
          if (msg.progress) store.progress = msg.progress;
          if (res.overlap) {
            const f = this.dirty.recolorFrom;
            this.dirty.recolorFrom = f == null ? res.from : Math.min(f, res.from);
          }
          break;
        }
        case MSG_DONE: {
          if (store.classify(msg.run_id) !== "current") return;
          store.final = { metrics: msg.metrics || null, partial: !!msg.partial };
          break;
        }
        case MSG_SETTINGS_ERROR: {
          // a control's value was refused: nothing re-scored, the result stays
          this.settings.showError(String(msg.field || ""), msg.message == null ? "invalid value" : String(msg.message));
          return;
        }
        case MSG_LOADING: {
          // a first-time model preparation: the progress row shows it while status is loading
          this.loading = { message: String(msg.message || ""), fraction: Number(msg.fraction) || 0 };
          break;
        }
        case MSG_ERROR: {
          if (store.classify(msg.run_id) === "stale") return;
          store.error = msg.message == null ? "error" : String(msg.message);
          break;
        }
        default:
          return;
      }
    } catch (err) {
      console.error("[ppl-widget] bad message", msg && msg.type, err);
      store.error = `front end could not read a ${msg.type} message: ${err && err.message}`;
    }
    this._schedule();
  }

  _loadResult(rd) {
    let res;
    try {
      res = decodeResult(rd);
    } catch (err) {
      console.error("[ppl-widget] bad result_data", err);
      return false;
    }
    if (!res) return false;
    const text = this.model.get(TRAIT_TEXT) || "";
    if (res.count > 0 && res.fields.end16[res.count - 1] > text.length) {
      console.warn("[ppl-widget] result_data does not match the text; ignored");
      return false;
    }
    const store = this.store;
    const cls = store.classify(res.runId);
    if (cls === "current" && store.length === res.count) {
      store.mergeVocab(res.vocab);
      store.final = { metrics: res.metrics, partial: res.partial };
      store.wordCorrected = res.wordCorrected;
      if (res.unitSpans.word || res.unitSpans.sentence) store.setLevels(res.unitSpans, res.levelNotes);
      this.dirty.recolorFrom = 0;
    } else if (store._isRetired(res.runId)) {
      return false;
    } else {
      store.loadResult(res);
    }
    this._schedule();
    return true;
  }

  _requestReplay() {
    const now = Date.now();
    if (now - this.lastReplay < REPLAY_MIN_INTERVAL_MS) return;
    this.lastReplay = now;
    this.model.send({ type: MSG_REPLAY });
  }

  // ------------------------------------------------------------- update

  _schedule() {
    if (this.raf) return;
    this.raf = requestAnimationFrame(() => {
      this.raf = 0;
      this._flush();
    });
  }

  _flush() {
    const model = this.model;
    const store = this.store;
    const text = model.get(TRAIT_TEXT) || "";
    if (store.runId !== this.viewRunId || text !== this.viewText) {
      this._hideTip();
      // a view built from data that is already complete (an exported page, a reload, a
      // second display) colours its units at once: their sums must exist before the spans
      if (this.level !== "token") this.stats[this.level].update();
      this.textView.rebuild(text);
      this.viewRunId = store.runId;
      this.viewText = text;
      this.dirty.recolorFrom = null;
      this.active = Math.min(this.active, Math.max(0, store.length - 1));
      this.selOffsets = null; // the old selection's nodes are gone
      this.selLength = -1;
    } else {
      if (this.level !== "token") {
        // a unit's colour changes while its tokens arrive: recolour from its first token
        const st = this.stats[this.level];
        const prev = st.upto;
        st.update();
        if (prev > 0 && prev < store.length) {
          const u = st.unitOf(prev - 1);
          const from = u >= 0 ? st.first[u] : prev;
          const f = this.dirty.recolorFrom;
          this.dirty.recolorFrom = f == null ? from : Math.min(f, from);
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
    this.progress.update(status, store.progress, store.length, this.loading);

    let state = "empty";
    let metrics = null;
    if (store.final && store.final.metrics) {
      state = store.final.partial ? "partial" : "final";
      metrics = normaliseMetrics(store.final.metrics);
    } else if (store.length > 0) {
      state = status === STATUS_SCORING || !store.final ? "live" : "partial";
      metrics = storeMetrics(store);
    }
    this.metrics.update(metrics, state, this.unit);
    this._syncToolbar();
    this.settings.setSettings(model.get(TRAIT_SETTINGS));
    this.metrics.setContext(model.get(TRAIT_SETTINGS));
    this.contextView.set(model.get(TRAIT_SETTINGS));

    const err = store.error || (model.get(TRAIT_ERROR) || "");
    this.errorBox.hidden = !err;
    setText(this.errorBox, err);

    if (store.length !== this.selLength) {
      this.selLength = store.length;
      this._updateSelection();
    }
    if (this.tooltip.index >= 0 && this.tooltip.index < store.length && this.tipSpan) {
      this._showTip(this.tipIndex, this.tipSpan); // refresh (values can change on replay)
    }
  }

  /** UTF-16 range [a, b) of the text selected inside the text area, or null. */
  _selectionOffsets() {
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

  _updateSelection() {
    let out = null;
    const o = this.selOffsets;
    if (o) {
      const st = this.store;
      const [i0, i1] = tokensInRange(st.start16, st.end16, st.length, o.a, o.b, this.textView.text.length);
      if (i1 > i0) out = { a: o.a, b: o.b, i0, i1, metrics: rangeMetrics(st, i0, i1) };
    }
    this.selection = out;
    this.selPanel.update(out);
  }

  // ------------------------------------------------------------ tokens

  _showTip(i, span) {
    if (!span || i >= this.store.length) return;
    const prev = this.tipSpan;
    if (prev && prev !== span) {
      prev.classList.remove("pplw-active");
      prev.removeAttribute("aria-describedby");
    }
    span.classList.add("pplw-active");
    span.setAttribute("aria-describedby", this.tooltip.el.id);
    this.tipSpan = span;
    this.tipIndex = i;
    this._lightUnit(-1);
    const opts = { unit: this.unit, bow: this.bow, gain: this._hasGain() };
    const st = this.level === "token" ? null : this.stats[this.level].update();
    const u = st ? st.unitOf(i) : -1;
    if (u >= 0) {
      this._lightUnit(u);
      const corrected = this.level === "word" ? this.store.wordCorrected : null;
      this.tooltip.show(span, unitDetails(this.store, st, u, this.textView.text, corrected), opts);
    } else {
      this.tooltip.show(span, tokenDetails(this.store, i, this.textView.text), opts);
    }
    this.tooltip.index = i;
  }

  // Outline the rendered spans of unit u of the current level (-1: none).
  _lightUnit(u) {
    for (const sp of this.unitLit) sp.classList.remove("pplw-unit-active");
    this.unitLit = [];
    if (u < 0) return;
    const st = this.stats[this.level];
    for (let i = st.first[u]; i >= 0 && i <= st.last[u]; i++) {
      const sp = this.textView.renderedSpanOf(i);
      if (sp && st.unitOf(i) === u) {
        sp.classList.add("pplw-unit-active");
        this.unitLit.push(sp);
      }
    }
  }

  /** Colour bin of token i at the current level and mode. */
  _bin(i) {
    if (this.level === "token") return tokenBin(this.mode, this.store, i);
    const st = this.stats[this.level];
    const u = st.unitOf(i);
    if (u < 0) return -1;
    const mode = UNIT_MODES.includes(this.mode) ? this.mode : "surprisal";
    const corrected = this.level === "word" && this.bow ? this.store.wordCorrected : null;
    return unitBin(mode, st, u, corrected);
  }

  _hasGain() {
    const g = this.store.context_gain;
    return this.store.length > 0 && g[0] === g[0];
  }

  /** The mode in effect: rank/entropy are per token; context gain needs a unigram. */
  _effectiveMode() {
    if (this.mode === "context_gain" && !this._hasGain()) return "surprisal";
    if (this.level !== "token" && !UNIT_MODES.includes(this.mode)) return "surprisal";
    return this.mode;
  }

  _syncToolbar() {
    if (this.theme) this._applyPalette();
    const spans = this.store.unitSpans;
    this.toolbar.set(this._effectiveMode(), this.boundaries, {
      level: this.level,
      unit: this.unit,
      bow: this.bow,
      hasGain: this._hasGain(),
      levels: { word: !!spans.word || this.store.length === 0, sentence: !!spans.sentence || this.store.length === 0 },
      notes: this.store.levelNotes,
    });
  }

  /** Level, unit or BOW toggle changed (here or from the kernel): redraw, save. */
  _setView(trait, key, value, save = true) {
    const ok = { level: LEVELS, unit: SURPRISAL_UNITS }[key];
    const v = key === "bow" ? value === true : value;
    if ((ok && !ok.includes(v)) || this[key] === v) return;
    this[key] = v;
    this._lightUnit(-1);
    if (key === "level") this.stats[v === "token" ? "word" : v]?.update();
    this.textView.recolor();
    this._syncToolbar();
    if (this.tooltip.index >= 0 && this.tipSpan) this._showTip(this.tipIndex, this.tipSpan);
    this._schedule();
    if (save && this.model.get(trait) !== undefined) {
      this.model.set(trait, v);
      this.model.save_changes();
    }
  }

  _hideTip() {
    if (this.tipSpan) {
      this.tipSpan.classList.remove("pplw-active");
      this.tipSpan.removeAttribute("aria-describedby");
    }
    this.tipSpan = null;
    this._lightUnit(-1);
    this.tooltip.hide();
  }

  // After the mouse leaves: show the focused token's tooltip, if any.
  _restoreFocusTip() {
    const f = document.activeElement;
    const i = f && this.scroller.contains(f) ? TextView.tokenIndexOf(f) : -1;
    if (i >= 0) this._showTip(i, f);
    else this._hideTip();
  }

  _setActive(i) {
    if (i === this.active) {
      const sp = this.textView.renderedSpanOf(i);
      if (sp && sp.tabIndex !== 0) sp.tabIndex = 0;
      return;
    }
    const old = this.textView.renderedSpanOf(this.active);
    if (old) old.removeAttribute("tabindex");
    this.active = i;
    const sp = this.textView.renderedSpanOf(i);
    if (sp) sp.tabIndex = 0;
  }

  _onBlockRendered(b) {
    const t0 = this.textView.plan.blocks[b.k].t0;
    const j = this.active - t0;
    if (j >= 0 && j < b.spans.length) b.spans[j].tabIndex = 0;
  }

  _focusToken(i) {
    const n = this.textView.shown;
    if (n === 0) return;
    const k = Math.max(0, Math.min(n - 1, i));
    const sp = this.textView.spanOf(k);
    if (!sp) return;
    this._setActive(k);
    sp.focus({ preventScroll: true });
    sp.scrollIntoView({ block: "nearest", inline: "nearest" });
  }

  _onKey(ev) {
    const onToken = TextView.tokenIndexOf(ev.target);
    const i = onToken >= 0 ? onToken : this.active;
    let next = null;
    switch (ev.key) {
      case "ArrowRight":
        next = onToken >= 0 ? i + 1 : i;
        break;
      case "ArrowLeft":
        next = onToken >= 0 ? i - 1 : i;
        break;
      case "Home":
        if (onToken >= 0) next = 0;
        break;
      case "End":
        if (onToken >= 0) next = this.textView.shown - 1;
        break;
      case "Escape":
        this._hideTip();
        return;
      default:
        return;
    }
    if (next == null) return;
    ev.preventDefault();
    this._focusToken(next);
  }

  // ----------------------------------------------------------- controls

  _setMode(m, save = true) {
    if (!MODES.includes(m)) return;
    this.mode = m;
    this._syncToolbar();
    this.textView.recolor();
    if (save && this.model.get(TRAIT_COLOR_MODE) !== undefined) {
      this.model.set(TRAIT_COLOR_MODE, m);
      this.model.save_changes();
    }
  }

  _setBoundaries(on, save = true) {
    this.boundaries = !!on;
    this._syncToolbar();
    this.scroller.classList.toggle("pplw-bounds", this.boundaries);
    if (save && this.model.get(TRAIT_SHOW_BOUNDARIES) !== undefined) {
      this.model.set(TRAIT_SHOW_BOUNDARIES, this.boundaries);
      this.model.save_changes();
    }
  }

  _syncControls() {
    const m = this.model;
    this.settings.setControls({
      max_length: m.get(TRAIT_MAX_LENGTH),
      stride: m.get(TRAIT_STRIDE),
      prefix: m.get(TRAIT_PREFIX),
      prefix_every_window: m.get(TRAIT_PREFIX_EVERY_WINDOW),
    });
  }

  _applySettings(v) {
    const m = this.model;
    const same =
      m.get(TRAIT_MAX_LENGTH) === v.max_length &&
      m.get(TRAIT_STRIDE) === v.stride &&
      m.get(TRAIT_PREFIX) === v.prefix &&
      (m.get(TRAIT_PREFIX_EVERY_WINDOW) === true) === v.prefix_every_window;
    if (same) {
      setText(this.settings.msg, "Settings unchanged.");
      this.settings.msg.className = "pplw-form-msg";
      return;
    }
    m.set(TRAIT_MAX_LENGTH, v.max_length);
    m.set(TRAIT_STRIDE, v.stride);
    m.set(TRAIT_PREFIX, v.prefix);
    m.set(TRAIT_PREFIX_EVERY_WINDOW, v.prefix_every_window);
    m.save_changes();
    setText(this.settings.msg, "Re-scoring…");
    this.settings.msg.className = "pplw-form-msg";
  }
}
