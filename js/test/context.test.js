import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import test from "node:test";

import { describeSettings } from "../src/panel.js";

test("describeSettings: a context and the BOS in every window are named", () => {
  const rows = Object.fromEntries(
    describeSettings({ model: "m", prefix: "bos", prefix_every_window: true, context: "The quick", context_tokens: 3 }),
  );
  assert.equal(rows.BOS, "in every window");
  assert.equal(rows.context, "3 tokens, read, not scored");
  const plain = Object.fromEntries(describeSettings({ model: "m", prefix: "bos", prefix_every_window: false, context_tokens: 0 }));
  assert.ok(!("BOS" in plain) && !("context" in plain));
});

test("layout: the context box sits above the scored text (a column), not beside it", () => {
  const css = readFileSync(new URL("../src/css/base.css", import.meta.url), "utf8");
  const rule = css.match(/\.pplw-root \.pplw-textcol\s*\{([^}]*)\}/);
  assert.ok(rule, "no .pplw-textcol rule");
  assert.match(rule[1], /flex-direction:\s*column/);
});

test("styles: every --pplw-* variable a stylesheet reads is declared in base.css", () => {
  // an undeclared one falls back to a fixed colour, whatever the theme (the context's grey
  // text was #666 on JupyterLab Dark's #212121, a contrast of 2.8)
  const dir = new URL("../src/css/", import.meta.url);
  const base = readFileSync(new URL("base.css", dir), "utf8");
  const declared = new Set([...base.matchAll(/(--pplw-[\w-]+)\s*:/g)].map((m) => m[1]));
  for (const file of readdirSync(dir)) {
    const css = readFileSync(new URL(file, dir), "utf8");
    for (const [, name] of css.matchAll(/var\((--pplw-[\w-]+)/g)) {
      if (/^--pplw-[cf]\d+$/.test(name)) continue; // the colour scale's bins, set from theme.js
      assert.ok(declared.has(name), `${file} reads ${name}, which base.css does not declare`);
    }
  }
});
