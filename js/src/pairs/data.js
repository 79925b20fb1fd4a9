// The minimal-pairs view's data rules.  Pure: no DOM.
//
// A pair (from ppl_widget/views/pairs_view.py) is {row, label, context, delta,
// delta_mean, correct, correct_mean, good: {pieces, first}, bad: {pieces, first}}:
// pieces are [text, surprisal nats | null] in order (null: not scored), `first` the
// index of the piece where the two sentences first differ (-1: none).

import { binFor } from "../colors.js";

export const SORTS = Object.freeze({
  input: "input order",
  delta_asc: "delta, smallest first",
  delta_desc: "delta, largest first",
});

/** Indices of `pairs` in the order `sort` asks for (NaN deltas last, ties by row). */
export function sortedOrder(pairs, sort, key = "delta") {
  const order = pairs.map((_, i) => i);
  if (sort === "input") return order;
  const sign = sort === "delta_desc" ? -1 : 1;
  const val = (i) => {
    const d = pairs[i][key];
    return typeof d === "number" && Number.isFinite(d) ? d : null;
  };
  return order.sort((a, b) => {
    const va = val(a);
    const vb = val(b);
    if (va === null || vb === null) return (va === null) - (vb === null) || a - b;
    return sign * (va - vb) || a - b;
  });
}

/** Colour bin of one piece on the single surprisal scale (-1: not scored). */
export function pieceBin(surprisalNats) {
  if (surprisalNats == null) return -1;
  return binFor("surprisal", surprisalNats, NaN, NaN, NaN);
}

/** What the tooltip shows for piece j of a pair's side ("good" | "bad") (pure). */
export function pieceDetails(pair, side, j) {
  const pieces = (pair[side] && pair[side].pieces) || [];
  const [text, nats] = pieces[j] || ["", null];
  let total = 0;
  let scored = 0;
  for (const [, v] of pieces) {
    if (typeof v === "number" && Number.isFinite(v)) {
      total += v;
      scored += 1;
    }
  }
  return {
    text,
    side,
    index: j,
    n: pieces.length,
    nats: typeof nats === "number" ? nats : null,
    prob: typeof nats === "number" ? Math.exp(-nats) : NaN,
    sentenceNats: scored ? total : NaN,
    scored,
    firstDifference: j === (pair[side] ? pair[side].first : -1),
  };
}
