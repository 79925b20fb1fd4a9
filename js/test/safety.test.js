// Static guard: the front end never turns data into markup or code.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import test from "node:test";

const SRC = new URL("../src/", import.meta.url);
// every file under src/, sub-folders included (compare/ ...), as paths relative to it
const ALL = readdirSync(SRC, { recursive: true }).filter((f) => /\.(js|css)$/.test(f));
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
  const files = ALL.filter((f) => f.endsWith(".js"));
  assert.ok(files.length >= 8);
  for (const f of files) {
    const code = readFileSync(new URL(f, SRC), "utf8");
    for (const re of FORBIDDEN) assert.doesNotMatch(code, re, `${f} uses ${re}`);
  }
});

// The static host (static.js) imports the widget bundle that is inlined in the exported
// page, through a blob: URL made from that embedded text: the one dynamic import allowed.
const EMBEDDED_BUNDLE_IMPORT =
  /URL\.createObjectURL\(new Blob\(\[source\][^)]*\)\);\s*modules\.set\(\s*source,\s*import\(\/\* webpackIgnore: true \*\/ url\)/;

// The live page (live/) fetches its manifest and its models' files from its own folder:
// these two calls only (the worker's refuses a URL outside the folder; the page's CSP too).
const LIVE_FETCHES = {
  "live/index.js": /fetch\(new URL\("manifest\.json", base\)\)/,
  "live/worker.js": /return fetch\(url\);/,
};

// The ONNX model kind (live/models/onnx.js) imports onnxruntime-web from the page's folder
// (the URL of its manifest entry's file, made relative to the page): that import only.
const LIVE_IMPORTS = {
  "live/models/onnx.js": /const ort = await import\(\/\* @vite-ignore \*\/ url\);/,
};

// The SVG namespace is a name createElementNS needs, never fetched: the one URL allowed.
const SVG_NAMESPACE = /const SVG = "http:\/\/www\.w3\.org\/2000\/svg";/;

test("no runtime fetches (everything is bundled)", () => {
  for (const f of ALL) {
    let code = readFileSync(new URL(f, SRC), "utf8");
    if (f.split("\\").join("/") === "explain/curve.js") code = code.replace(SVG_NAMESPACE, "");
    assert.doesNotMatch(code, /https?:\/\//, `${f} mentions a URL`);
    const allowed = LIVE_FETCHES[f.split("\\").join("/")];
    if (allowed) {
      assert.equal((code.match(/\bfetch\s*\(/g) || []).length, 1, `${f} fetches once`);
      assert.match(code, allowed, `${f} fetches only from its folder`);
      code = code.replace(allowed, "");
    }
    assert.doesNotMatch(code, /\bfetch\s*\(|XMLHttpRequest/, `${f} fetches`);
    const runtime = LIVE_IMPORTS[f.split("\\").join("/")];
    if (runtime) code = code.replace(runtime, "");
    if (f === "static.js") {
      assert.match(code, EMBEDDED_BUNDLE_IMPORT, "static.js imports only the embedded bundle");
      code = code.replace(EMBEDDED_BUNDLE_IMPORT, "");
    }
    assert.doesNotMatch(code, /\bimport\s*\(/, `${f} has a dynamic import`);
    // a stylesheet may @import its parts by a relative path: esbuild inlines them
    const imports = code.match(/@import[^;]*;/g) || [];
    for (const imp of imports) assert.match(imp, /^@import "\.\/[\w/-]+\.css";$/, `${f}: ${imp}`);
  }
});

test("the built stylesheets have no @import left", () => {
  const OUT = new URL("../../ppl_widget/static/", import.meta.url);
  const built = existsSync(OUT) ? readdirSync(OUT).filter((f) => f.endsWith(".css")) : [];
  for (const f of built) assert.doesNotMatch(readFileSync(new URL(f, OUT), "utf8"), /@import/, f);
});
