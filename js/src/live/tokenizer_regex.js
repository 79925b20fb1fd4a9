// A tokenizer.json split pattern (Oniguruma syntax, as Rust's tokenizers runs it) as a
// JavaScript RegExp with the same matches: Oniguruma's \s is Unicode White_Space (it has
// U+0085 and not U+FEFF, unlike JavaScript's), and (?i:...) groups, which Node 20's
// RegExp lacks, become character classes of both cases.
const WS = "\\t\\n\\v\\f\\r \\x85\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000";

export function translatePattern(pattern) {
  let out = "", inClass = false, caseless = 0;
  const groups = []; // true where a group is (?i:
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "\\") {
      const n = pattern[i + 1];
      i++;
      if (n === "s") out += inClass ? WS : `[${WS}]`;
      else if (n === "S") {
        if (inClass) throw new Error(`tokenizer: \\S inside a class in ${pattern} is not supported`);
        out += `[^${WS}]`;
      } else if (n === "p" || n === "P") {
        const end = pattern.indexOf("}", i);
        out += "\\" + pattern.slice(i, end + 1);
        i = end;
      } else out += "\\" + n;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      out += c;
      continue;
    }
    if (c === "[") { inClass = true; out += c; if (pattern[i + 1] === "^") { out += "^"; i++; } continue; }
    if (c === "(") {
      if (pattern.startsWith("(?i:", i)) { groups.push(true); caseless++; out += "(?:"; i += 3; continue; }
      groups.push(false);
      out += c;
      continue;
    }
    if (c === ")") { if (groups.pop()) caseless--; out += c; continue; }
    if (caseless && /\p{L}/u.test(c) && c.toLowerCase() !== c.toUpperCase()) {
      out += `[${c.toLowerCase()}${c.toUpperCase()}]`;
      continue;
    }
    out += c;
  }
  return out;
}

export function compileRegex(pattern) {
  return new RegExp(translatePattern(pattern), "gu");
}
