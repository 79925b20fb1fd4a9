// Perplexity metrics from sums, and token ranges for a text selection.  Pure.

import { normaliseMetrics } from "./decode.js";
import { UNIT_BYTES, UNIT_CHARS, UNIT_WORDS } from "./protocol.js";

export const LN2 = Math.LN2;

function ratio(a, n) {
  return n > 0 ? a / n : NaN;
}

/**
 * Metrics with the same keys as Python's ScoreResult.metrics(), from
 * {nats, tokens, words, chars, bytes}.  A zero denominator gives NaN.
 */
export function metricsFromSums({ nats, tokens, words, chars, bytes }) {
  const bits = nats / LN2;
  return {
    total_nll: nats,
    total_bits: bits,
    n_tokens: tokens,
    n_words: words,
    n_chars: chars,
    n_bytes: bytes,
    token_ppl: Math.exp(ratio(nats, tokens)),
    word_ppl: Math.exp(ratio(nats, words)),
    char_ppl: Math.exp(ratio(nats, chars)),
    byte_ppl: Math.exp(ratio(nats, bytes)),
    bits_per_token: ratio(bits, tokens),
    bits_per_char: ratio(bits, chars),
    bits_per_byte: ratio(bits, bytes),
  };
}

/** Sums of surprisal (nats) and units over tokens [i0, i1) of a store. */
export function sumRange(store, i0, i1) {
  const s = { nats: 0, tokens: Math.max(0, i1 - i0), words: 0, chars: 0, bytes: 0 };
  for (let i = i0; i < i1; i++) {
    s.nats += store.surprisal[i];
    s.words += store.units[i * 3 + UNIT_WORDS];
    s.chars += store.units[i * 3 + UNIT_CHARS];
    s.bytes += store.units[i * 3 + UNIT_BYTES];
  }
  return s;
}

/** Running metrics of everything a store holds (its running sums). */
export function storeMetrics(store) {
  const { nats, words, chars, bytes } = store.sums;
  return metricsFromSums({ nats, tokens: store.length, words, chars, bytes });
}

/** What the metrics panel shows for a store: {metrics, state}; state "final" or "partial"
 * (the kernel's metrics of an ended run), "live" (running sums while scoring), "empty". */
export function shownMetrics(store, scoring) {
  if (store.final && store.final.metrics) {
    return { metrics: normaliseMetrics(store.final.metrics), state: store.final.partial ? "partial" : "final" };
  }
  if (store.length === 0) return { metrics: null, state: "empty" };
  return { metrics: storeMetrics(store), state: scoring || !store.final ? "live" : "partial" };
}

/** Metrics over tokens [i0, i1). */
export function rangeMetrics(store, i0, i1) {
  return metricsFromSums(sumRange(store, i0, i1));
}

// Smallest i in [0, n) with pred(i) true, n if none; pred must be monotone.
function lowerBound(n, pred) {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (pred(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * Tokens overlapping the UTF-16 range [a, b) of the text: returns [i0, i1), [0, 0] if none.
 * The rule of Python's core/tokens.tokens_in_span (tests/cases/token_ranges.json holds
 * the cases both run): tokens are in text order; a token [s, e) overlaps when s < b and
 * e > a; a zero-width token (the tail of a split character, EOS) goes with the token
 * before it; the first token, when zero-width, with the range holding its position, or
 * at the text's end the range ending there.
 */
export function tokensInRange(start16, end16, n, a, b, textLength) {
  if (!(b >= a)) return [0, 0]; // reversed (Python refuses it)
  const zw = (i) => !(end16[i] > start16[i]);
  // the tokens with a width that overlap are contiguous: from p (the first ending after
  // a) to q (the last starting before b); ends and starts only grow
  let p = lowerBound(n, (i) => end16[i] > a);
  while (p < n && zw(p)) p++;
  let q = lowerBound(n, (i) => start16[i] >= b) - 1;
  while (q >= 0 && zw(q)) q--;
  // a zero-width first token, and the zero-width tokens right after it
  let lead = 0;
  const s0 = start16[0];
  if (n > 0 && zw(0) && ((a <= s0 && s0 < b) || (s0 === b && b === textLength))) {
    while (lead < n && zw(lead)) lead++;
  }
  if (p > q || p >= n) return lead > 0 ? [0, lead] : [0, 0];
  let i1 = q + 1;
  while (i1 < n && zw(i1)) i1++; // zero-width tokens go with the token before them
  return [lead > 0 ? 0 : p, i1];
}
