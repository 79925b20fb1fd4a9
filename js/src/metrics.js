// Perplexity metrics from sums, and token ranges for a text selection.  Pure.

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
 * Tokens overlapping the UTF-16 range [a, b) of the text: returns [i0, i1).
 * Tokens are in text order.  A token [s, e) overlaps when s < b and e > a;
 * a zero-width token at p (a split multi-byte character, or EOS) overlaps
 * when a <= p < b, and the EOS at the very end of the text also when the
 * selection reaches the end (b == textLength).
 */
export function tokensInRange(start16, end16, n, a, b, textLength) {
  if (!(b > a) || n === 0) return [0, 0];
  const i0 = lowerBound(n, (i) => {
    const s = start16[i];
    const e = end16[i];
    return e > s ? e > a : s >= a;
  });
  const i1 = lowerBound(n, (i) => {
    const s = start16[i];
    const e = end16[i];
    if (e > s) return s >= b;
    if (s === b && b === textLength) return false;
    return s >= b;
  });
  return i1 > i0 ? [i0, i1] : [i0, i0];
}
