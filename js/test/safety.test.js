// Static guard: the front end never turns data into markup or code.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import test from "node:test";

const SRC = new URL("../src/", import.meta.url);
const FORBIDDEN = [
  /\.innerHTML\b/,
  /\.outerHTML\b/,
  /insertAdjacentHTML/,
  /document\.write/,
  /\beval\s*\(/,
  /new\s+Function\s*\(/,
  /createContextualFragment/,
  /DOMParser/,
  /srcdoc/,
  /setTimeout\s*\(\s*["'`]/,
];

test("no HTML/code sinks in src/", () => {
  const files = readdirSync(SRC).filter((f) => f.endsWith(".js"));
  assert.ok(files.length >= 8);
  for (const f of files) {
    const code = readFileSync(new URL(f, SRC), "utf8");
    for (const re of FORBIDDEN) assert.doesNotMatch(code, re, `${f} uses ${re}`);
  }
});

test("no runtime fetches (everything is bundled)", () => {
  for (const f of readdirSync(SRC)) {
    const code = readFileSync(new URL(f, SRC), "utf8");
    assert.doesNotMatch(code, /https?:\/\//, `${f} mentions a URL`);
    assert.doesNotMatch(code, /\bimport\s*\(/, `${f} has a dynamic import`);
    assert.doesNotMatch(code, /@import/, `${f} has a CSS @import`);
  }
});
