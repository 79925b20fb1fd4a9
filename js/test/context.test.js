import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import test from "node:test";

import { bosInWindow, contextCount, tokenCount } from "../src/context.js";
import { describeSettings } from "../src/panel.js";

test("describeSettings: a context and the BOS in every window are named", () => {
  const rows = Object.fromEntries(
    describeSettings({ model: "m", prefix: "bos", prefix_every_window: true, context: "The quick", context_tokens: 3 }),
  );
  assert.equal(rows.BOS, "in every window");
  assert.equal(rows.context, "3 tokens, read, not scored"); // saved before context_bos
  const counted = Object.fromEntries(describeSettings({ prefix: "bos", context: "The quick", context_tokens: 4, context_bos: true }));
  assert.equal(counted.context, "4 tokens, BOS included, read, not scored");
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
      // the colour scale's bins and the attribution rule's helped / hurt, set from theme.js
      if (/^--pplw-([cf]\d+|helped|hurt)$/.test(name)) continue;
      assert.ok(declared.has(name), `${file} reads ${name}, which base.css does not declare`);
    }
  }
});

test("one count for a context: the header's number is the first token's context, BOS said", () => {
  const st = { prefix: "bos", context: "The quick brown fox", context_tokens: 13, context_bos: true, prefix_every_window: false };
  assert.deepEqual(contextCount(st), { n: 13, bos: true, label: "13 tokens, BOS included" });
  // the first scored token read all 13 (BOS + 12), the sixth 18: the window reaches the BOS
  assert.equal(bosInWindow(st, 0, 13), true);
  assert.equal(bosInWindow(st, 5, 18), true);
  // a later window starts after the BOS
  assert.equal(bosInWindow(st, 40, 32), false);
  assert.equal(bosInWindow({ ...st, prefix_every_window: true }, 40, 32), true);
  // no prefix: no BOS anywhere
  const none = { prefix: null, context: "The quick", context_tokens: 2, context_bos: false };
  assert.equal(contextCount(none).label, "2 tokens, no BOS");
  assert.equal(bosInWindow(none, 0, 2), false);
  // no context: the prefix token alone is read first
  assert.equal(bosInWindow({ prefix: "bos" }, 0, 1), true);
  assert.equal(bosInWindow({ prefix: null, n_unscored: 1 }, 0, 1), false);
  assert.equal(contextCount({ prefix: "bos", context_tokens: 0 }), null);
  // results that do not say: no claim
  assert.equal(bosInWindow({ context: "x", context_tokens: 3 }, 0, 3), null);
  assert.equal(bosInWindow(null, 0, 3), null);
  assert.equal(tokenCount(1, true), "1 token, BOS included");
  assert.equal(tokenCount(12345), "12,345 tokens");
});
