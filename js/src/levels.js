// Words and sentences: per-unit sums from the tokens' unit indices, which the
// kernel computes (core.levels' rule, one implementation).  Pure: no DOM.

import { LN2 } from "./metrics.js";
import { UNIT_WORDS } from "./protocol.js";

/** nats -> the chosen unit ("bits" | "nats"). */
export function inUnit(nats, unit) {
  return unit === "nats" ? nats : nats / LN2;
}

/**
 * Sums per unit of one level over the tokens a store holds, kept up to date
 * incrementally: nats (surprisal), gain (context gain, nats), words (word
 * units of its tokens), tokens, first/last token index.
 */
export class UnitStats {
  constructor(store, level) {
    this.store = store;
    this.level = level;
    this._reset();
  }

  _reset() {
    const spans = this.store.unitSpans[this.level];
    const n = spans ? spans.start16.length : 0;
    this.spans = spans;
    this.n = n;
    this.nats = new Float64Array(n);
    this.gain = new Float64Array(n);
    this.words = new Int32Array(n);
    this.tokens = new Int32Array(n);
    this.first = new Int32Array(n).fill(-1);
    this.last = new Int32Array(n).fill(-1);
    this.upto = 0;
    this.runId = this.store.runId;
    this.version = this.store.version;
  }

  /** Bring the sums up to the store's tokens (from scratch after a reset or a replay). */
  update() {
    const st = this.store;
    if (st.runId !== this.runId || st.unitSpans[this.level] !== this.spans || st.version !== this.version) {
      this._reset();
    }
    const owner = st[this.level];
    for (let i = this.upto; i < st.length; i++) {
      const u = owner[i];
      if (!(u >= 0 && u < this.n)) continue;
      this.nats[u] += st.surprisal[i];
      const g = st.context_gain[i];
      this.gain[u] += g;
      this.words[u] += st.units[i * 3 + UNIT_WORDS];
      this.tokens[u] += 1;
      if (this.first[u] < 0) this.first[u] = i;
      this.last[u] = i;
    }
    this.upto = st.length;
    return this;
  }

  /** Unit of token i (-1: none). */
  unitOf(i) {
    const u = this.store[this.level][i];
    return u >= 0 && u < this.n ? u : -1;
  }

  /**
   * The value a unit is coloured and labelled by, in nats: a word's surprisal
   * (its tokens' sum, or the BOW-corrected value when `corrected` holds one); a
   * sentence's mean surprisal per word.  `kind` "surprisal" | "context_gain".
   */
  value(u, kind = "surprisal", corrected = null) {
    if (u < 0 || u >= this.n || this.tokens[u] === 0) return NaN;
    const sum = kind === "context_gain" ? this.gain[u] : this.nats[u];
    if (this.level === "sentence") return this.words[u] > 0 ? sum / this.words[u] : NaN;
    if (kind === "surprisal" && corrected && corrected[u] === corrected[u]) return corrected[u];
    return sum;
  }
}
