// What arrives from the kernel, applied to the store: a run's reset, its chunks, its end
// and errors (custom messages), and a finished result (the result_data trait).  A gap in
// the chunks asks the kernel to replay the run.

import { decodeChunk, decodeResult, decodeUnitSpans } from "./decode.js";
import { MSG_CHUNK, MSG_DONE, MSG_ERROR, MSG_LOADING, MSG_REPLAY, MSG_RESET, MSG_SETTINGS_ERROR, TRAIT_TEXT } from "./protocol.js";

const REPLAY_MIN_INTERVAL_MS = 2000;

export class StreamHandler {
  /** hooks: recolorFrom(i) (tokens from i changed), settingsError(field, message),
   * changed() (redraw). */
  constructor(model, store, hooks) {
    this.model = model;
    this.store = store;
    this.hooks = hooks;
    this.lastReplay = -Infinity;
    this.loading = null; // {message, fraction} of a first-time model preparation
  }

  onMessage(msg, buffers) {
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
            this.requestReplay();
            return;
          }
          if (res.status !== "ok") return;
          if (msg.progress) store.progress = msg.progress;
          if (res.overlap) this.hooks.recolorFrom(res.from);
          break;
        }
        case MSG_DONE: {
          if (store.classify(msg.run_id) !== "current") return;
          store.final = { metrics: msg.metrics || null, partial: !!msg.partial };
          break;
        }
        case MSG_SETTINGS_ERROR: {
          // a control's value was refused: nothing re-scored, the result stays
          this.hooks.settingsError(String(msg.field || ""), msg.message == null ? "invalid value" : String(msg.message));
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
    this.hooks.changed();
  }

  /** Load a result_data payload; false when it cannot be shown (bad, stale, another text). */
  loadResult(rd) {
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
      this.hooks.recolorFrom(0);
    } else if (store.isRetired(res.runId)) {
      return false;
    } else {
      store.loadResult(res);
    }
    this.hooks.changed();
    return true;
  }

  /** Ask the kernel to send the run again (at most once per REPLAY_MIN_INTERVAL_MS). */
  requestReplay() {
    const now = Date.now();
    if (now - this.lastReplay < REPLAY_MIN_INTERVAL_MS) return;
    this.lastReplay = now;
    this.model.send({ type: MSG_REPLAY });
  }
}
