// Characters, bytes and words of a text, and which token each one belongs to: the rules of
// core/text_units.py (partition_offsets, TextUnits.per_span) on UTF-16 offsets, for the
// live page.  Characters are code points, bytes UTF-8 bytes, words runs of non-whitespace
// as Python's str.isspace() (and so regex \s) defines whitespace, which is not JS's \s.
// Checked against Python on tests/cases/text_units.json.

// str.isspace(): every code point Python calls whitespace (JS's \s differs: it has U+FEFF,
// lacks U+001C..U+001F and U+0085)
export const PY_SPACE = "\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const SPACE_RE = new RegExp(`[${PY_SPACE}]`);

/** Is the code point c whitespace by Python's rule? */
export function isPySpace(c) {
  return c <= 0x3000 && SPACE_RE.test(String.fromCharCode(c));
}

const isHigh = (u) => u >= 0xd800 && u <= 0xdbff;
const isLow = (u) => u >= 0xdc00 && u <= 0xdfff;

/** A UTF-16 index moved off the middle of a surrogate pair (to after the pair). */
function snap(text, i) {
  return i > 0 && i < text.length && isLow(text.charCodeAt(i)) && isHigh(text.charCodeAt(i - 1)) ? i + 1 : i;
}

/**
 * partition_offsets: token spans (Int32Array, 2 per token, UTF-16) that tile the text:
 * each token ends where the tokenizer said (made non-decreasing, the last at the text's
 * end) and starts where the one before ended.  An end inside a surrogate pair moves past
 * it (Python counts code points, so a character is never split there).
 */
export function partitionOffsets(offsets, text) {
  const n = offsets.length >> 1;
  const out = new Int32Array(n * 2);
  let end = 0;
  for (let i = 0; i < n; i++) {
    const e = snap(text, Math.min(Math.max(offsets[2 * i + 1], 0), text.length));
    end = Math.max(end, e);
    out[2 * i] = i > 0 ? out[2 * i - 1] : 0;
    out[2 * i + 1] = i === n - 1 ? text.length : end;
  }
  return out;
}

/** Prefix counts over the text's UTF-16 units: code points, UTF-8 bytes, word starts. */
export class TextUnits {
  constructor(text) {
    const n = text.length;
    this.text = text;
    this.chars = new Int32Array(n + 1);
    this.bytes = new Int32Array(n + 1);
    this.words = new Int32Array(n + 1);
    let prevSpace = true;
    for (let i = 0; i < n; i++) {
      const u = text.charCodeAt(i);
      let c = 1;
      let b;
      if (isLow(u) && i > 0 && isHigh(text.charCodeAt(i - 1))) {
        c = 0; // the second half of a pair: its character and 4 bytes are counted
        b = 0;
      } else if (isHigh(u) && i + 1 < n && isLow(text.charCodeAt(i + 1))) {
        b = 4;
      } else {
        b = u < 0x80 ? 1 : u < 0x800 ? 2 : 3; // a lone surrogate: 3, as Python's surrogatepass
      }
      const space = c === 0 ? prevSpace : isPySpace(u);
      const start = c === 1 && !space && prevSpace;
      if (c === 1) prevSpace = space;
      this.chars[i + 1] = this.chars[i] + c;
      this.bytes[i + 1] = this.bytes[i] + b;
      this.words[i + 1] = this.words[i] + (start ? 1 : 0);
    }
  }

  /** (words, chars, bytes) of each span (UTF-16 [start, end) pairs): Int32Array 3 per span. */
  perSpan(spans) {
    const n = spans.length >> 1;
    const out = new Int32Array(n * 3);
    for (let i = 0; i < n; i++) {
      const s = spans[2 * i];
      const e = spans[2 * i + 1];
      out[3 * i] = this.words[e] - this.words[s];
      out[3 * i + 1] = this.chars[e] - this.chars[s];
      out[3 * i + 2] = this.bytes[e] - this.bytes[s];
    }
    return out;
  }
}

/** Words as core/text_units.word_spans' default makes them (runs of Python's non-whitespace):
 * Int32Array, 2 per word, UTF-16 [start, end). */
export function wordSpans(text) {
  const out = [];
  let start = -1;
  for (let i = 0; i <= text.length; i++) {
    const space = i === text.length || isPySpace(text.charCodeAt(i));
    if (!space && start < 0) start = i;
    else if (space && start >= 0) {
      out.push(start, i);
      start = -1;
    }
  }
  return Int32Array.from(out);
}

// first index i of sorted starts with starts[i] > v (right) or >= v (left)
function search(spans, v, right) {
  let lo = 0;
  let hi = spans.length >> 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const s = spans[2 * mid];
    if (s < v || (right && s === v)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * core/levels.assign_tokens: the unit (index into spans) each token belongs to, -1 for
 * none: the unit holding its first non-whitespace character; a whitespace-only token the
 * unit it lies in, else the next one; an empty token goes with the one before; EOS none.
 */
export function assignTokens(text, start16, end16, spans, isEos = null) {
  const n = start16.length;
  const out = new Int32Array(n).fill(-1);
  const nUnits = spans.length >> 1;
  if (n === 0 || nUnits === 0) return out;
  const next = new Int32Array(text.length + 1); // first non-whitespace index >= i
  next[text.length] = text.length;
  for (let i = text.length - 1; i >= 0; i--) next[i] = isPySpace(text.charCodeAt(i)) ? next[i + 1] : i;
  for (let i = 0; i < n; i++) {
    const s = start16[i];
    const e = end16[i];
    if (s === e) {
      out[i] = i > 0 ? out[i - 1] : -1;
    } else if (next[s] < e) {
      const k = search(spans, next[s], true) - 1;
      if (k >= 0 && next[s] < spans[2 * k + 1]) out[i] = k;
    } else {
      const k = search(spans, s, true) - 1;
      if (k >= 0 && s < spans[2 * k + 1]) out[i] = k;
      else {
        const nxt = search(spans, e, false);
        if (nxt < nUnits) out[i] = nxt;
      }
    }
    if (isEos && isEos[i]) out[i] = -1;
  }
  return out;
}
