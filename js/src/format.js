// Number formatting and visible whitespace.  Pure, locale-independent.

const WS = new Map([
  [" ", "·"],
  ["\n", "⏎"],
  ["\t", "→"],
  ["\r", "␍"],
  ["\u00a0", "⍽"],
]);

// What each mark stands for, for a key beside text that shows them ("· a space").
const WS_NAMES = new Map([
  [" ", "a space"],
  ["\n", "a line break"],
  ["\t", "a tab"],
  ["\r", "a carriage return"],
  ["\u00a0", "a no-break space"],
]);

/** The whitespace marks the raw strings show once made visible, in WS order, as
 * "· a space, ⏎ a line break" ("" when none). */
export function whitespaceKey(strings) {
  const seen = new Set();
  for (const s of strings) for (const ch of String(s ?? "")) if (WS.has(ch)) seen.add(ch);
  return [...WS.keys()]
    .filter((ch) => seen.has(ch))
    .map((ch) => `${WS.get(ch)} ${WS_NAMES.get(ch)}`)
    .join(", ");
}

/** Make whitespace visible: space→·, newline→⏎, tab→→ (also CR, NBSP). */
export function visibleWhitespace(s) {
  if (s == null) return "";
  let out = "";
  for (const ch of String(s)) {
    const v = WS.get(ch);
    if (v !== undefined) {
      out += v;
      continue;
    }
    const c = ch.codePointAt(0);
    // Other invisible control characters get a \uXXXX escape.
    if (c < 0x20 || c === 0x7f || (c >= 0x200b && c <= 0x200f) || c === 0xfeff) {
      out += `\\u${c.toString(16).padStart(4, "0")}`;
    } else {
      out += ch;
    }
  }
  return out;
}

/** Token text for display: visible whitespace, "∅" for the empty string. */
export function displayToken(s) {
  if (s == null) return "?";
  if (s === "") return "∅";
  return visibleWhitespace(s);
}

function isNum(x) {
  return typeof x === "number" && Number.isFinite(x);
}

export const MISSING = "—";

function group(intStr) {
  // "1234567" -> "1,234,567" (sign handled by caller)
  let out = "";
  for (let i = 0; i < intStr.length; i++) {
    if (i > 0 && (intStr.length - i) % 3 === 0) out += ",";
    out += intStr[i];
  }
  return out;
}

/** Integer with thousands separators: 1234567 -> "1,234,567". */
export function fmtInt(x) {
  if (x == null || Number.isNaN(x)) return MISSING;
  if (!Number.isFinite(x)) return x > 0 ? "∞" : "−∞";
  const r = Math.round(x);
  return (r < 0 ? "−" : "") + group(String(Math.abs(r)));
}

/** Fixed decimals with grouping: fmtFixed(1234.5, 2) -> "1,234.50". */
export function fmtFixed(x, digits = 2) {
  if (x == null || Number.isNaN(x)) return MISSING;
  if (!Number.isFinite(x)) return x > 0 ? "∞" : "−∞";
  const s = Math.abs(x).toFixed(digits);
  const [ip, fp] = s.split(".");
  const neg = x < 0 && Number(s) !== 0;
  return (neg ? "−" : "") + group(ip) + (fp ? `.${fp}` : "");
}

// From here on a metric is written in the compact form: "358,500,612.3" would not fit a
// panel cell, and a cell never cuts a number (the exact value goes in the tooltip).
export const COMPACT_FROM = 1e6;

/**
 * A metric value: 4 significant digits below 1000, else one decimal with
 * grouping; compact (scientific, 4 significant digits) for tiny values and from
 * COMPACT_FROM on, so it is never longer than "999,999.9".  12.3456 -> "12.35",
 * 1234.56 -> "1,234.6", 0.012345 -> "0.01235", 358500612.3 -> "3.585e+8".
 */
export function fmtMetric(x) {
  if (x == null || Number.isNaN(x)) return MISSING;
  if (!Number.isFinite(x)) return x > 0 ? "∞" : "−∞";
  const a = Math.abs(x);
  if (a === 0) return "0";
  // (999,999.96 would round up to a 10-character "1,000,000.0")
  if (a >= COMPACT_FROM - 0.05 || a < 1e-4) return (x < 0 ? "−" : "") + a.toExponential(3);
  if (a >= 1000) return fmtFixed(x, 1);
  const digits = Math.max(0, 3 - Math.floor(Math.log10(a)));
  return fmtFixed(x, digits);
}

/** Probability as a percentage: 0.1234 -> "12.34%", tiny -> "3.2e-5". */
export function fmtProb(p) {
  if (!isNum(p)) return MISSING;
  if (p >= 0.0001 || p === 0) {
    const pct = p * 100;
    const digits = pct >= 10 ? 1 : pct >= 1 ? 2 : 3;
    return `${pct.toFixed(digits)}%`;
  }
  return p.toExponential(1).replace("e-", "e−");
}

/** Seconds as a short duration: 5 -> "5 s", 125 -> "2 min 05 s". */
export function fmtDuration(s) {
  if (!isNum(s) || s < 0) return MISSING;
  if (s < 10) return `${s.toFixed(1)} s`;
  const t = Math.round(s);
  if (t < 60) return `${t} s`;
  const h = Math.floor(t / 3600);
  const m = Math.floor((t % 3600) / 60);
  const sec = t % 60;
  if (h > 0) return `${h} h ${String(m).padStart(2, "0")} min`;
  return `${m} min ${String(sec).padStart(2, "0")} s`;
}

/** A signed value with fixed decimals: +1.23, −0.50, 0.00 (a delta). */
export function fmtSigned(x, digits = 2) {
  const s = fmtFixed(x, digits);
  return isNum(x) && x > 0 && Number(Math.abs(x).toFixed(digits)) !== 0 ? `+${s}` : s;
}

/** Full-precision value for a title attribute (shortest round-trip digits). */
export function fmtExact(x) {
  if (x == null) return "NaN";
  if (typeof x !== "number") return String(x);
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  return String(x);
}
