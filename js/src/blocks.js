// How the text is cut into block elements.  Pure: no DOM.
//
// Tokens are grouped into blocks of consecutive tokens; a block's token
// spans are only created when it nears the viewport (until then it holds its
// text as one plain text node).  Blocks are display:block, so a cut in the
// middle of a line would break that line: a block is therefore closed right
// after a newline once it holds minTokens tokens, and only cut mid-line when
// it reaches maxTokens without meeting one.  Text not yet covered by tokens
// is cut the same way into "pieces" (by characters).

export const BLOCK_MIN_TOKENS = 500;
export const BLOCK_MAX_TOKENS = 2000;
export const PIECE_CHARS = 8000;
export const PIECE_MAX_CHARS = 24000;

const NL = 10;

/**
 * Incremental block plan over the scored tokens of one text.
 * blocks[k] = {t0, t1, s}: tokens [t0, t1), text starting at UTF-16 offset
 * s; a block's text ends where the next one starts (the last one at
 * `covered`, the end of the last token, while more may come).
 *
 * Offsets are made safe: each token's effective start is clamped to
 * [end of the previous token, text length] and its end to [start, text
 * length], so the blocks and spans always reproduce the text exactly once.
 */
export class BlockPlan {
  constructor(text, { minTokens = BLOCK_MIN_TOKENS, maxTokens = BLOCK_MAX_TOKENS } = {}) {
    this.text = text;
    this.minTokens = minTokens;
    this.maxTokens = maxTokens;
    this.blocks = [];
    this.n = 0; // tokens planned
    this.covered = 0; // effective end of the last planned token
  }

  /** Effective [start, end) of a token given the end of the previous one. */
  static clampToken(s, e, prevEnd, len) {
    const st = Math.min(Math.max(s, prevEnd), len);
    const en = Math.min(Math.max(e, st), len);
    return [st, en];
  }

  /** Plan tokens [this.n, n).  Returns the index of the first block touched. */
  extend(start16, end16, n) {
    const len = this.text.length;
    const text = this.text;
    let firstTouched = Math.max(0, this.blocks.length - 1);
    if (this.blocks.length === 0 && n > this.n) {
      this.blocks.push({ t0: 0, t1: 0, s: 0 });
      firstTouched = 0;
    }
    let pos = this.covered;
    for (let i = this.n; i < n; i++) {
      const [st, en] = BlockPlan.clampToken(start16[i], end16[i], pos, len);
      let cur = this.blocks[this.blocks.length - 1];
      const size = i - cur.t0;
      if (
        size > 0 &&
        ((size >= this.minTokens && st > 0 && text.charCodeAt(st - 1) === NL) ||
          size >= this.maxTokens)
      ) {
        cur = { t0: i, t1: i, s: st };
        this.blocks.push(cur);
      }
      cur.t1 = i + 1;
      pos = en;
    }
    this.n = Math.max(this.n, n);
    this.covered = pos;
    return firstTouched;
  }

  /** Text end of block k (exclusive). */
  blockEnd(k) {
    return k + 1 < this.blocks.length ? this.blocks[k + 1].s : this.covered;
  }

  /** Index of the block holding token i (-1 if not planned). */
  blockOfToken(i) {
    const b = this.blocks;
    if (i < 0 || i >= this.n) return -1;
    let lo = 0;
    let hi = b.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (b[mid].t0 <= i) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}

/**
 * Cut [0, text.length) into pieces of about `target` UTF-16 units, each
 * ending right after a newline when one is near, never longer than `max`
 * and never splitting a surrogate pair.  Returns the boundaries
 * [0, b1, ..., text.length] (just [0, 0] for an empty text).
 */
export function pieceBounds(text, target = PIECE_CHARS, max = PIECE_MAX_CHARS) {
  const len = text.length;
  const out = [0];
  let pos = 0;
  while (pos < len) {
    if (len - pos <= target) {
      pos = len;
    } else {
      let cut = -1;
      const back = text.lastIndexOf("\n", pos + target - 1);
      if (back >= pos + (target >> 2)) cut = back + 1;
      else {
        const fwd = text.indexOf("\n", pos + target);
        if (fwd >= 0 && fwd + 1 - pos <= max) cut = fwd + 1;
      }
      if (cut < 0) {
        cut = pos + target;
        const c = text.charCodeAt(cut - 1);
        if (c >= 0xd800 && c <= 0xdbff) cut += 1; // keep surrogate pairs whole
      }
      pos = Math.min(cut, len);
    }
    out.push(pos);
  }
  if (out.length === 1) out.push(0);
  return out;
}

/** Index q of the piece holding offset p (bounds[q] <= p < bounds[q+1]); last piece for p == len. */
export function pieceOf(bounds, p) {
  let lo = 0;
  let hi = bounds.length - 2;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (bounds[mid] <= p) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
