// Sentences for the live page's sentence level, as core/sentences.py makes them with pysbd
// (its English "Golden Rules" segmenter): paragraphs at blank lines, a sentence never
// crossing a line break, and within a line pysbd's main rules: its abbreviation lists
// (taken verbatim from pysbd.lang.common.standard), single capitals ("J. Smith"),
// multi-period abbreviations ("e.g.", "U.S.", "p.m."), ellipses, runs of ! and ?, "!"
// before a lower-case word, and punctuation inside quotes and parentheses.  It is a port
// of those rules, not of pysbd's whole pipeline (list items, numbered references, file
// extensions and ~20 rarer rules are left out): tests/cases/sentences.json lists texts
// on which both agree, and docs/live-transformer.md says where they can differ.

import { PY_SPACE } from "./text_units.js";

// pysbd 0.3.4, Standard.Abbreviation
const ABBREVIATIONS = new Set([
  "adj", "adm", "adv", "al", "ala", "alta", "apr", "arc", "ariz", "ark", "art", "assn", "asst",
  "attys", "aug", "ave", "bart", "bld", "bldg", "blvd", "brig", "bros", "btw", "cal", "calif",
  "capt", "cl", "cmdr", "co", "col", "colo", "comdr", "con", "conn", "corp", "cpl", "cres", "ct",
  "d.phil", "dak", "dec", "del", "dept", "det", "dist", "dr", "dr.phil", "dr.philos", "drs", "e.g",
  "ens", "esp", "esq", "etc", "exp", "expy", "ext", "feb", "fed", "fla", "ft", "fwy", "fy", "ga",
  "gen", "gov", "hon", "hosp", "hr", "hway", "hwy", "i.e", "ia", "id", "ida", "ill", "inc", "ind",
  "ing", "insp", "is", "jan", "jr", "jul", "jun", "kan", "kans", "ken", "ky", "la", "lt", "ltd",
  "maj", "man", "mar", "mass", "may", "md", "me", "med", "messrs", "mex", "mfg", "mich", "min",
  "minn", "miss", "mlle", "mm", "mme", "mo", "mont", "mr", "mrs", "ms", "msgr", "mssrs", "mt",
  "mtn", "neb", "nebr", "nev", "no", "nos", "nov", "nr", "oct", "ok", "okla", "ont", "op", "ord",
  "ore", "p", "pa", "pd", "pde", "penn", "penna", "pfc", "ph", "ph.d", "pl", "plz", "pp", "prof",
  "pvt", "que", "rd", "rs", "ref", "rep", "reps", "res", "rev", "rt", "sask", "sec", "sen", "sens",
  "sep", "sept", "sfc", "sgt", "sr", "st", "supt", "surg", "tce", "tenn", "tex", "univ", "usafa",
  "u.s", "ut", "va", "v", "ver", "viz", "vs", "vt", "wash", "wis", "wisc", "wy", "wyo", "yuk",
  "fig"
]);
const PREPOSITIVE = new Set([
  "adm", "attys", "brig", "capt", "cmdr", "col", "cpl", "det", "dr", "gen", "gov", "ing", "lt",
  "maj", "mr", "mrs", "ms", "mt", "messrs", "mssrs", "prof", "ph", "rep", "reps", "rev", "sen",
  "sens", "sgt", "st", "supt", "v", "vs", "fig"
]);
const NUMBER_ABBREVIATIONS = new Set(["art", "ext", "no", "nos", "p", "pp"]);
// English.AbbreviationReplacer.SENTENCE_STARTERS: after "U.S." or "I." these start a sentence
const STARTERS = new Set("A Being Did For He How However I In It Millions More She That The There They We What When Where Who Why".split(" "));
const STARTER_ABBREVIATIONS = /^(U\.S|U\.K|E\.U|U\.S\.A|I|i\.v|I\.V)$/;
const AM_PM = /^(a\.m|p\.m|A\.M|P\.M)$/;
const MULTI_PERIOD = /(?:^|[^\p{L}\p{N}_])[a-z](?:\.[a-z])+$/iu; // "e.g", "U.S" before the last period
const BLANK_LINE = new RegExp(`\\n[^\\S\\n]*\\n[${PY_SPACE}]*`, "g");
const SPACE = new RegExp(`[${PY_SPACE}]`);
// a run of sentence punctuation and the closing quotes or brackets after it
const CANDIDATE = /([.!?]+)(["'\u201d\u2019)\]]*)/g;
const WORD_CHAR = /[a-zA-Z0-9_]/;
// what pysbd keeps whole: text between double quotes, curly quotes, parentheses, brackets
const BETWEEN = /"[^"]*"|\u201c[^\u201d]*\u201d|\([^()]*\)|\[[^\[\]]*\]/g;

/** Where the sentence that the punctuation of `m` (a CANDIDATE match in `line`) ends, or
 * -1 where it does not end one. */
function endOf(line, m, protectedAt) {
  const punct = m[1];
  const closers = m[2];
  const afterPunct = m.index + punct.length;
  const glued = afterPunct < line.length && !SPACE.test(line[afterPunct]);
  if (closers && /["'\u201d\u2019]/.test(closers[0])) {
    // a quoted sentence ends after its quote, and only before a capital (pysbd's
    // QUOTATION_AT_END_OF_SENTENCE); a closing bracket: the period inside ends nothing
    const end = m.index + m[0].length;
    return end === line.length || /^\s[A-Z]/.test(line.slice(end)) ? end : -1;
  }
  if (protectedAt(m.index)) return -1; // inside quotes or brackets that close later
  if (glued) {
    // "3.14", "example.com", "it.Then": a period between letters or digits ends nothing;
    // elsewhere pysbd ends a sentence even with no space after it ("`~/.cache`")
    const prev = line[m.index - 1] || "";
    const nxt = line[afterPunct];
    if (punct === "." && ((WORD_CHAR.test(prev) && WORD_CHAR.test(nxt)) || /\d/.test(nxt) || /\d/.test(prev))) return -1;
    if (closers) return afterPunct; // an unmatched bracket starts the next sentence
  }
  return ends(line, m) ? afterPunct + (glued ? 0 : closers.length) : -1;
}

/** Is the punctuation of `m`, followed by a space or the line's end, a sentence's end? */
function ends(line, m) {
  const punct = m[1];
  const after = line.slice(m.index + m[0].length);
  const next = /^\s+(\S+)/.exec(after);
  if (!next) return true; // the line's end
  const word = next[1];
  const upper = /^[A-Z]/.test(word);
  if (/^[!?]{3,}$/.test(punct)) return false; // "!!!": pysbd's continuous punctuation
  if (/^\.{3,}$/.test(punct)) return upper; // an ellipsis ends a sentence before a capital
  if (punct === "!") return !/^[a-z]/.test(word); // "!" before a lower-case word: mid-sentence
  if (punct !== ".") return true;
  const before = /(\S+)$/.exec(line.slice(0, m.index));
  if (!before) return true;
  if (/^\s*\d{1,2}$/.test(line.slice(0, m.index))) return false; // "1. First item": a list item
  const prev = before[1];
  const lower = prev.toLowerCase();
  if (/^[A-Z]$/.test(prev)) return prev === "I" && STARTERS.has(word); // "J. Smith"
  if (AM_PM.test(prev)) return upper;
  if (MULTI_PERIOD.test(prev)) return STARTER_ABBREVIATIONS.test(prev.replace(/^[^A-Za-z]+/, "")) && STARTERS.has(word);
  if (!ABBREVIATIONS.has(lower)) return true;
  if (PREPOSITIVE.has(lower)) return false;
  if (upper) return true;
  if (NUMBER_ABBREVIATIONS.has(lower)) return !/^(\d|\()/.test(word);
  return !(/^([a-z]|\d|\()/.test(word) || /^I('m|'ll)?$/.test(word));
}

/** The sentence spans of one line: [start, end) pairs, relative to the line. */
function lineSentences(line) {
  const ranges = [];
  for (const b of line.matchAll(BETWEEN)) ranges.push([b.index, b.index + b[0].length]);
  const protectedAt = (i) => ranges.some(([a, z]) => i > a && i < z - 1);
  const out = [];
  let start = 0;
  for (const m of line.matchAll(CANDIDATE)) {
    // punctuation that opens a line ends nothing ("![an image](...)"); after a sentence's
    // space it is pysbd's sentence of its own
    if (m.index === start) continue;
    const end = endOf(line, m, protectedAt);
    if (end < 0) continue;
    out.push([start, end]);
    start = end;
  }
  out.push([start, line.length]);
  return out.flatMap(([s, e]) => leadingGroup(line, s, e));
}

/** A sentence that opens with a bracketed group followed by a capital: the group is a
 * sentence of its own (pysbd's SENTENCE_BOUNDARY_REGEX), "(see p. 5) It works." */
function leadingGroup(line, s, e) {
  const m = /^(\s*\([^)]{2,}\))(?=\s[A-Z])/.exec(line.slice(s, e));
  return m ? [[s, s + m[1].length], ...leadingGroup(line, s + m[1].length, e)] : [[s, e]];
}

/** The spans of core/sentences.sentence_spans(text): Int32Array, 2 per sentence, UTF-16
 * [start, end), surrounding whitespace excluded, empty ones dropped. */
export function sentenceSpans(text) {
  const out = [];
  const push = (s, e) => {
    while (s < e && SPACE.test(text[s])) s++;
    while (e > s && SPACE.test(text[e - 1])) e--;
    if (e > s) out.push(s, e);
  };
  // pysbd reads a line break (LF or CR) as a sentence's end; blank lines part paragraphs
  const lineRe = /[^\r\n]+/g;
  for (const l of text.matchAll(lineRe)) {
    for (const [s, e] of lineSentences(l[0])) push(l.index + s, l.index + e);
  }
  return Int32Array.from(out);
}
