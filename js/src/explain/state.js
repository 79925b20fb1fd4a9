// The explanation a view shows ("why is this token surprising?"): the target, its context
// units and their attribution as they arrive from the kernel (or whole, from the
// `explanation` trait of a saved page), the context curve, and how each token of the text
// is drawn meanwhile.  Pure: no DOM.  The messages and the payload are protocol.py's.

import { attributionBin, attributionScale } from "../colors.js";
import { MSG_EXPLAIN_DONE, MSG_EXPLAIN_ERROR, MSG_EXPLAIN_PART, MSG_EXPLAIN_START } from "../protocol.js";

export const IDLE = "idle"; // nothing shown
export const REQUESTED = "requested"; // clicked; the kernel has not answered yet
export const COMPUTING = "computing";
export const DONE = "done";
export const CANCELLED = "cancelled";
export const FAILED = "error";

/** How token i is drawn while an explanation is shown. */
export const TARGET = "target";
export const OUTSIDE = -1; // not a context unit (after the target, the prefix, whitespace)

const num = (v) => (v == null ? NaN : Number(v));

/**
 * For tokens [0, n) with UTF-16 spans (start16, end16), the context unit each belongs to
 * (-1: none): the first unit its span overlaps.  Both lists are in text order.
 */
export function tokenUnits(start16, end16, n, unitStart, unitEnd) {
  const out = new Int32Array(n).fill(-1);
  let u = 0;
  for (let i = 0; i < n; i++) {
    const s = start16[i];
    const e = end16[i];
    while (u < unitStart.length && unitEnd[u] <= s) u++;
    if (u < unitStart.length && unitStart[u] < e && unitEnd[u] > s) out[i] = u;
  }
  return out;
}

export class ExplainState {
  constructor() {
    this.version = 0; // bumps at every change: the view recolours when it moves
    this.request = 0; // the front end's own count of its requests
    this.seen = -Infinity; // the newest explain_id taken in (older ones are stale)
    this.clear();
  }

  /** Nothing shown. */
  clear() {
    this.status = IDLE;
    this.id = null; // the kernel's explain_id of what is shown
    this.pending = null; // the request this view waits on the kernel to start
    this.target = null; // {token, word, first, last, start16, end16, text}
    this.unit = null; // "token" | "word": what the context units are
    this.method = null;
    this.units = null; // {text: [], start16: Int32Array, end16: Int32Array, tokens: []}
    this.delta = null; // Float64Array of delta_nats per unit, NaN until computed
    this.done = 0;
    this.total = 0;
    this.targetNats = NaN;
    this.curve = null; // {context_tokens: [], surprisal_nats: []}
    this.settings = null; // the scoring settings it was computed with (max_length: the window)
    this.message = "";
    this.scale = attributionScale([]);
    this._tokenUnit = null;
    this.version++;
  }

  get shown() {
    return this.status !== IDLE;
  }

  get running() {
    return this.status === REQUESTED || this.status === COMPUTING;
  }

  /** A click (or `e`): show `target` outlined at once and wait for the kernel.  Returns the
   * request number the message to the kernel carries. */
  ask(target) {
    this.clear();
    this.status = REQUESTED;
    this.target = target;
    this.pending = ++this.request;
    return this.pending;
  }

  /** One kernel message; true when it changed what is shown. */
  onMessage(msg) {
    switch (msg && msg.type) {
      case MSG_EXPLAIN_START: {
        // a start this view asked for, or one the notebook started (request null)
        const ours = msg.request == null || msg.request === this.pending || this.pending == null;
        if (!ours || !(msg.explain_id > this.seen)) return false;
        this.clear();
        this.seen = msg.explain_id;
        this.status = COMPUTING;
        this.id = msg.explain_id;
        this.target = msg.target || null;
        this.unit = msg.unit || null;
        this.method = msg.method || null;
        return true;
      }
      case MSG_EXPLAIN_PART: {
        if (!this.running || msg.explain_id !== this.id) return false;
        if (msg.units) this._setUnits(msg.units);
        if (!this.delta) return false;
        const index = msg.index || [];
        const values = msg.delta_nats || [];
        for (let k = 0; k < index.length; k++) {
          const u = index[k];
          if (u >= 0 && u < this.delta.length) this.delta[u] = num(values[k]);
        }
        if (msg.target_surprisal_nats != null) this.targetNats = num(msg.target_surprisal_nats);
        this.done = msg.done ?? this.done;
        this.total = msg.total ?? this.total;
        this.scale = attributionScale(this.delta);
        this.version++;
        return true;
      }
      case MSG_EXPLAIN_DONE: {
        if (!this.running || msg.explain_id !== this.id) return false;
        this.status = msg.status === CANCELLED ? CANCELLED : DONE;
        this.version++;
        return true;
      }
      case MSG_EXPLAIN_ERROR: {
        if (msg.explain_id !== this.id && !(this.status === REQUESTED && msg.request === this.pending)) return false;
        this.status = FAILED;
        this.message = msg.message == null ? "error" : String(msg.message);
        this.version++;
        return true;
      }
      default:
        return false;
    }
  }

  /** The `explanation` trait: a whole explanation (a saved page, the end of a run), or
   * null (none).  True when it changed what is shown. */
  load(payload) {
    if (payload == null || !payload.target) { // {} too: a trait's empty value is no explanation
      if (this.status === IDLE || this.running) return false; // a new one is on its way
      this.clear();
      return true;
    }
    // while one runs only its own end is taken; otherwise nothing older than what was seen
    if (this.running ? payload.explain_id !== this.id : payload.explain_id < this.seen) return false;
    this.clear();
    if (payload.explain_id > this.seen) this.seen = payload.explain_id;
    this.status = [DONE, CANCELLED, FAILED].includes(payload.status) ? payload.status : DONE;
    this.id = payload.explain_id ?? null;
    this.target = payload.target || null;
    this.unit = payload.unit || null;
    this.method = payload.method || null;
    this.message = payload.message ? String(payload.message) : "";
    this.targetNats = num(payload.target_surprisal_nats);
    if (payload.units) {
      this._setUnits(payload.units);
      const d = payload.delta_nats || [];
      for (let u = 0; u < this.delta.length; u++) this.delta[u] = num(d[u]);
    }
    this.done = payload.done ?? 0;
    this.total = payload.total ?? (this.delta ? this.delta.length : 0);
    this.curve = payload.curve || null;
    this.settings = payload.settings || null;
    this.scale = attributionScale(this.delta || []);
    return true;
  }

  _setUnits(units) {
    const n = (units.text || []).length;
    this.units = {
      text: units.text.map(String),
      start16: Int32Array.from(units.start16 || []),
      end16: Int32Array.from(units.end16 || []),
      tokens: (units.tokens || []).map(Number),
    };
    this.delta = new Float64Array(n).fill(NaN);
    this.total = n;
    this._tokenUnit = null;
  }

  /** Context unit of token i of `store` (-1: none), from the tokens' spans. */
  unitOfToken(store, i) {
    if (!this.units || !this.target) return -1;
    const n = Math.min(this.target.first, store.length);
    if (!this._tokenUnit || this._tokenUnit.length !== n) {
      this._tokenUnit = tokenUnits(store.start16, store.end16, n, this.units.start16, this.units.end16);
    }
    return i < n ? this._tokenUnit[i] : -1;
  }

  /** The first token of `store` in context unit u (-1: none among the tokens shown). */
  firstTokenOf(store, u) {
    if (!this.units || !this.target) return -1;
    this.unitOfToken(store, 0); // (re)builds the token -> unit map
    const tu = this._tokenUnit;
    if (!tu) return -1;
    if (!this._unitFirst || this._unitFirstOf !== tu) {
      // one pass over the tokens, again only when the token -> unit map was rebuilt
      this._unitFirst = new Int32Array(this.units.text.length).fill(-1);
      this._unitFirstOf = tu;
      for (let i = tu.length - 1; i >= 0; i--) if (tu[i] >= 0) this._unitFirst[tu[i]] = i;
    }
    return u >= 0 && u < this._unitFirst.length ? this._unitFirst[u] : -1;
  }

  /** How token i is drawn: TARGET, an attribution bin, or OUTSIDE (-1, also while its
   * unit is not computed yet). */
  drawOf(store, i) {
    const t = this.target;
    if (!t) return OUTSIDE;
    if (i >= t.first && i <= t.last) return TARGET;
    const u = this.unitOfToken(store, i);
    return u >= 0 ? attributionBin(this.delta[u], this.scale) : OUTSIDE;
  }

  /** The n units that helped most (delta > 0, largest first) and hurt most (delta < 0). */
  top(n = 5) {
    const rows = [];
    if (this.delta) {
      for (let u = 0; u < this.delta.length; u++) {
        const d = this.delta[u];
        if (d === d) rows.push({ unit: u, text: this.units.text[u], delta: d });
      }
    }
    const helped = rows.filter((r) => r.delta > 0).sort((a, b) => b.delta - a.delta).slice(0, n);
    const hurt = rows.filter((r) => r.delta < 0).sort((a, b) => a.delta - b.delta).slice(0, n);
    return { helped, hurt };
  }

  /** The attribution of token i's unit in nats (NaN: none or not computed). */
  deltaOfToken(store, i) {
    const u = this.unitOfToken(store, i);
    return u >= 0 ? this.delta[u] : NaN;
  }
}
