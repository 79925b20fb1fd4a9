// The page's tokenizer: a Hugging Face tokenizer.json (BPE, byte-level or Metaspace, no
// normalizer) read in the browser, giving the ids Python's fast tokenizer gives with
// add_special_tokens=False and split_special_tokens=True (special-token strings in the text
// are plain text), and each token's character span in UTF-16 code units, as Python's
// offset mapping (code points there) gives it.  Why our own: transformers.js's tokenizers
// give no offsets and always match special tokens in the text.  Python refuses to export a
// tokenizer.json with other parts (scoring/kinds/onnx/onnx_files.py: BROWSER_TOKENIZER); this file
// throws on them too.  Checked against Python on tests/cases/browser_tokenizer.json.
import { compileRegex } from "./tokenizer_regex.js";

// GPT-2's byte <-> printable character table (bytes_to_unicode)
function byteTable() {
  const bs = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bs.includes(b)) { bs.push(b); cs.push(256 + n); n++; }
  }
  const toChar = new Array(256);
  bs.forEach((b, i) => { toChar[b] = String.fromCodePoint(cs[i]); });
  return toChar;
}
const BYTE_CHAR = byteTable();
const CHAR_BYTE = new Map(BYTE_CHAR.map((c, b) => [c, b]));
const GPT2_PATTERN =
  "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const encoder = new TextEncoder();

// A piece of text on its way to the model: its characters (code points, already
// transformed: bytes as characters, spaces as the Metaspace mark) and, for each, the
// original UTF-16 span it came from.
function piece(chars, starts, ends) { return { chars, starts, ends }; }

function wholeText(text) {
  const chars = [], starts = [], ends = [];
  let i = 0;
  for (const ch of text) {
    chars.push(ch); starts.push(i); i += ch.length; ends.push(i);
  }
  return piece(chars, starts, ends);
}

// a character put in front, spanning the first character (tokenizers' prepend)
function prependChar(p, ch) {
  return piece([ch, ...p.chars], [p.starts[0], ...p.starts], [p.ends[0], ...p.ends]);
}

function slice(p, a, b) {
  return piece(p.chars.slice(a, b), p.starts.slice(a, b), p.ends.slice(a, b));
}

// split a piece where `pattern` matches, as tokenizers' SplitDelimiterBehavior does
function splitPiece(p, pattern, behavior, invert) {
  const s = p.chars.join("");
  // code-unit index -> char index
  const unitToChar = new Int32Array(s.length + 1);
  let u = 0;
  p.chars.forEach((c, i) => { for (let k = 0; k < c.length; k++) unitToChar[u + k] = i; u += c.length; });
  unitToChar[s.length] = p.chars.length;
  const spans = []; // [start, end, isMatch] in chars
  let last = 0;
  pattern.lastIndex = 0;
  for (const m of s.matchAll(pattern)) {
    if (m[0].length === 0) continue;
    const a = unitToChar[m.index], b = unitToChar[m.index + m[0].length];
    if (a > last) spans.push([last, a, invert]);
    spans.push([a, b, !invert]);
    last = b;
  }
  if (last < p.chars.length) spans.push([last, p.chars.length, invert]);
  const out = [];
  if (behavior === "Isolated") {
    for (const [a, b] of spans) out.push([a, b]);
  } else if (behavior === "Removed") {
    for (const [a, b, m] of spans) if (!m) out.push([a, b]);
  } else if (behavior === "MergedWithPrevious") {
    for (const [a, b, m] of spans) {
      if (m && out.length) out[out.length - 1][1] = b; else out.push([a, b]);
    }
  } else if (behavior === "MergedWithNext") {
    let pending = null;
    for (const [a, b, m] of spans) {
      if (m) { if (pending !== null) out.push([pending, a]); pending = a; }
      else { out.push([pending ?? a, b]); pending = null; }
    }
    if (pending !== null) out.push([pending, p.chars.length]);
  } else if (behavior === "Contiguous") {
    let prevMatch = false;
    for (const [a, b, m] of spans) {
      if (m && prevMatch) out[out.length - 1][1] = b; else out.push([a, b]);
      prevMatch = m;
    }
  } else {
    throw new Error(`tokenizer: split behavior ${behavior} is not supported`);
  }
  return out.map(([a, b]) => slice(p, a, b));
}

function byteLevel(p) {
  const chars = [], starts = [], ends = [];
  p.chars.forEach((c, i) => {
    for (const b of encoder.encode(c)) {
      chars.push(BYTE_CHAR[b]); starts.push(p.starts[i]); ends.push(p.ends[i]);
    }
  });
  return piece(chars, starts, ends);
}

// one pre-tokenizer step: pieces in, pieces out
function preStep(spec) {
  switch (spec.type) {
    case "Sequence": {
      const steps = spec.pretokenizers.map((s) => preStep(s));
      return (pieces) => steps.reduce((acc, step) => step(acc), pieces);
    }
    case "ByteLevel": {
      const re = spec.use_regex === false ? null : compileRegex(GPT2_PATTERN);
      return (pieces) => pieces.flatMap((p) => {
        if (spec.add_prefix_space && p.chars.length && p.chars[0] !== " ") {
          p = prependChar(p, " ");
        }
        return (re ? splitPiece(p, re, "Isolated", false) : [p]).map(byteLevel);
      });
    }
    case "Split": {
      const pat = spec.pattern;
      const re = "Regex" in pat ? compileRegex(pat.Regex)
        : new RegExp(pat.String.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gu");
      return (pieces) => pieces.flatMap((p) => splitPiece(p, re, spec.behavior, !!spec.invert));
    }
    case "Digits": {
      // Rust's char::is_numeric: every Unicode number (\p{N}: '4', '½', '٣'), not 0-9 only
      const re = spec.individual_digits ? /\p{N}/gu : /\p{N}+/gu;
      return (pieces) => pieces.flatMap((p) => splitPiece(p, re, "Isolated", false));
    }
    case "Metaspace": {
      const mark = spec.replacement ?? "\u2581";
      const scheme = spec.prepend_scheme ?? (spec.add_prefix_space === false ? "never" : "always");
      const split = spec.split !== false;
      const re = new RegExp(mark, "gu");
      return (pieces) => pieces.flatMap((p) => {
        let q = piece(p.chars.map((c) => (c === " " ? mark : c)), p.starts, p.ends);
        const front = scheme === "always" || (scheme === "first" && q.starts[0] === 0);
        if (front && q.chars.length && q.chars[0] !== mark) {
          q = prependChar(q, mark);
        }
        return split ? splitPiece(q, re, "MergedWithNext", false) : [q];
      });
    }
    default:
      throw new Error(`tokenizer: pre-tokenizer ${spec.type} is not supported`);
  }
}

class BPE {
  constructor(model) {
    if (model.type !== "BPE") throw new Error(`tokenizer: model ${model.type} is not supported`);
    if (model.continuing_subword_prefix || model.end_of_word_suffix) {
      throw new Error("tokenizer: BPE with a subword prefix or suffix is not supported");
    }
    this.vocab = new Map(Object.entries(model.vocab));
    this.ranks = new Map();
    model.merges.forEach((m, i) => {
      const [a, b] = typeof m === "string" ? m.split(" ") : m;
      this.ranks.set(a + " " + b, i);
    });
    this.byteFallback = !!model.byte_fallback;
    this.unk = model.unk_token ?? null;
    this.fuseUnk = !!model.fuse_unk;
    this.ignoreMerges = !!model.ignore_merges;
    this.cache = new Map();
  }

  // the symbols of one word: [text, firstChar, endChar] after every merge
  merge(chars) {
    const word = chars.join("");
    const hit = this.cache.get(word);
    if (hit) return hit;
    let syms = chars.map((c, i) => [c, i, i + 1]);
    if (this.ignoreMerges && this.vocab.has(word)) syms = [[word, 0, chars.length]];
    for (;;) {
      let best = -1, bestRank = Infinity;
      for (let i = 0; i + 1 < syms.length; i++) {
        const r = this.ranks.get(syms[i][0] + " " + syms[i + 1][0]);
        if (r !== undefined && r < bestRank) { bestRank = r; best = i; }
      }
      if (best < 0) break;
      const a = syms[best], b = syms[best + 1];
      syms.splice(best, 2, [a[0] + b[0], a[1], b[2]]);
    }
    if (this.cache.size < 100000) this.cache.set(word, syms);
    return syms;
  }

  // ids and char ranges (within the piece) of one piece
  tokens(chars) {
    const out = [];
    for (const [text, a, b] of this.merge(chars)) {
      const id = this.vocab.get(text);
      if (id !== undefined) { out.push([id, a, b]); continue; }
      if (this.byteFallback) {
        const bytes = encoder.encode(text);
        const ids = [...bytes].map((x) => this.vocab.get(`<0x${x.toString(16).toUpperCase().padStart(2, "0")}>`));
        if (ids.every((x) => x !== undefined)) { for (const x of ids) out.push([x, a, b]); continue; }
      }
      if (this.unk === null || !this.vocab.has(this.unk)) {
        throw new Error(`tokenizer: ${JSON.stringify(text)} is not in the vocabulary and there is no unknown token`);
      }
      const unk = this.vocab.get(this.unk), prev = out[out.length - 1];
      if (this.fuseUnk && prev && prev[0] === unk) prev[2] = b; else out.push([unk, a, b]);
    }
    return out;
  }
}

export function loadTokenizer(spec) {
  if (spec.normalizer) throw new Error(`tokenizer: normalizer ${spec.normalizer.type} is not supported`);
  const model = new BPE(spec.model);
  const pre = spec.pre_tokenizer ? preStep(spec.pre_tokenizer) : (x) => x;
  // added tokens that are not special are still matched in the text (split_special_tokens
  // only makes the special ones plain text)
  const added = (spec.added_tokens ?? []).filter((t) => !t.special);
  const addedRe = added.length ? new RegExp(added.map((t) => t.content.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "gu") : null;
  const addedId = new Map(added.map((t) => [t.content, t.id]));
  const idToToken = [];
  for (const [t, id] of model.vocab) idToToken[id] = t;
  for (const t of spec.added_tokens ?? []) idToToken[t.id] = t.content;
  const byteLevelDecode = JSON.stringify(spec.decoder ?? {}).includes("ByteLevel");
  const metaspace = JSON.stringify(spec.pre_tokenizer ?? {}).includes("Metaspace");
  const stripFirst = metaspace && (spec.decoder?.prepend_scheme ?? "always") !== "never";

  function encode(text) {
    const ids = [], offsets = [];
    const whole = wholeText(text);
    const sections = [];
    if (addedRe) {
      for (const p of splitPiece(whole, addedRe, "Isolated", false)) {
        const s = p.chars.join("");
        sections.push(addedId.has(s) ? { added: addedId.get(s), p } : { p });
      }
    } else {
      sections.push({ p: whole });
    }
    sections.forEach(({ added: id, p }) => {
      if (id !== undefined) { ids.push(id); offsets.push(p.starts[0], p.ends[p.ends.length - 1]); return; }
      for (const q of pre([p])) {
        for (const [tid, a, b] of model.tokens(q.chars)) {
          ids.push(tid); offsets.push(q.starts[a], q.ends[b - 1]);
        }
      }
    });
    return { ids: Int32Array.from(ids), offsets: Int32Array.from(offsets) };
  }

  // one id's own text, as Python's decode of [id] shows it
  function decode(id) {
    const t = idToToken[id];
    if (t === undefined) return "";
    const m = /^<0x([0-9A-F]{2})>$/.exec(t);
    if (m && model.byteFallback) return new TextDecoder().decode(Uint8Array.of(parseInt(m[1], 16)));
    if (byteLevelDecode && !(spec.added_tokens ?? []).some((a) => a.id === id)) {
      const bytes = [...t].map((c) => CHAR_BYTE.get(c) ?? 63);
      return new TextDecoder().decode(Uint8Array.from(bytes));
    }
    // Metaspace's decoder drops the mark it would have put in front of a first token
    if (metaspace) return t.replaceAll("\u2581", " ").replace(stripFirst ? /^ / : /^$/, "");
    return t;
  }

  return { encode, decode, vocabSize: idToToken.length };
}
