import assert from "node:assert/strict";
import test from "node:test";

import { BlockPlan, pieceBounds, pieceOf } from "../src/blocks.js";

/** Tokens = words with their leading spaces, newlines apart, like GPT-2 style BPE. */
function tokenize(text) {
  const s = [];
  const e = [];
  for (const m of text.matchAll(/\n|[^\S\n]*\S+|[^\S\n]+/g)) {
    s.push(m.index);
    e.push(m.index + m[0].length);
  }
  return { s: Int32Array.from(s), e: Int32Array.from(e), n: s.length };
}

function textOfPlan(plan, text, s, e) {
  // Rebuild the text block by block the way render.js does.
  let out = "";
  plan.blocks.forEach((b, k) => {
    const end = plan.blockEnd(k);
    out += text.slice(b.s, end);
  });
  return out + text.slice(plan.covered);
}

test("blocks close after a newline once they hold minTokens", () => {
  const lines = [];
  for (let l = 0; l < 40; l++) lines.push(`line ${l} has five words`);
  const text = lines.join("\n");
  const { s, e, n } = tokenize(text);
  const plan = new BlockPlan(text, { minTokens: 12, maxTokens: 1000 });
  plan.extend(s, e, n);
  assert.ok(plan.blocks.length > 5);
  for (let k = 1; k < plan.blocks.length; k++) {
    const b = plan.blocks[k];
    assert.equal(text[b.s - 1], "\n", `block ${k} starts after a newline`);
    assert.ok(b.t0 - plan.blocks[k - 1].t0 >= 12);
  }
  assert.equal(textOfPlan(plan, text, s, e), text);
});

test("a text without newlines is cut at maxTokens", () => {
  const text = "word ".repeat(100).trimEnd();
  const { s, e, n } = tokenize(text);
  const plan = new BlockPlan(text, { minTokens: 5, maxTokens: 30 });
  plan.extend(s, e, n);
  assert.deepEqual(
    plan.blocks.map((b) => b.t1 - b.t0),
    [30, 30, 30, 10],
  );
  assert.equal(textOfPlan(plan, text, s, e), text);
});

test("incremental extension gives the same plan as one pass", () => {
  const text = Array.from({ length: 300 }, (_, i) => (i % 7 === 6 ? "end.\n" : `w${i}`)).join(" ");
  const { s, e, n } = tokenize(text);
  const one = new BlockPlan(text, { minTokens: 10, maxTokens: 25 });
  one.extend(s, e, n);
  const inc = new BlockPlan(text, { minTokens: 10, maxTokens: 25 });
  for (let k = 7; k <= n; k += 7) inc.extend(s, e, k);
  inc.extend(s, e, n);
  assert.deepEqual(inc.blocks, one.blocks);
  assert.equal(inc.covered, one.covered);
  assert.equal(one.blockOfToken(0), 0);
  assert.equal(one.blockOfToken(n - 1), one.blocks.length - 1);
  for (let i = 0; i < n; i += 13) {
    const b = one.blocks[one.blockOfToken(i)];
    assert.ok(b.t0 <= i && i < b.t1);
  }
  assert.equal(one.blockOfToken(n), -1);
});

test("unscored leading text belongs to block 0, trailing text stays uncovered", () => {
  const text = "Hello world again ";
  const plan = new BlockPlan(text);
  plan.extend(Int32Array.from([5, 11]), Int32Array.from([11, 17]), 2);
  assert.equal(plan.blocks[0].s, 0);
  assert.equal(plan.covered, 17);
  assert.equal(textOfPlan(plan, text), text);
});

test("bad offsets are clamped so the text is reproduced exactly once", () => {
  const text = "abcdef";
  const plan = new BlockPlan(text);
  // overlapping and out-of-range tokens
  plan.extend(Int32Array.from([0, 1, 4, 9]), Int32Array.from([3, 2, 99, 12]), 4);
  assert.equal(plan.covered, 6);
  assert.deepEqual(BlockPlan.clampToken(1, 2, 3, 6), [3, 3]);
  assert.deepEqual(BlockPlan.clampToken(4, 99, 3, 6), [4, 6]);
});

test("pieces end after newlines, respect max and never split surrogate pairs", () => {
  const text = `${"x".repeat(50)}\n${"y".repeat(50)}\n${"z".repeat(10)}`;
  const b = pieceBounds(text, 40, 80);
  assert.deepEqual(b, [0, 51, 102, 112]);
  const emoji = "😀".repeat(30); // 60 UTF-16 units, no newline
  const eb = pieceBounds(emoji, 7, 9);
  for (const p of eb) {
    const c = emoji.charCodeAt(p - 1);
    assert.ok(!(c >= 0xd800 && c <= 0xdbff), `cut at ${p} splits a pair`);
  }
  assert.equal(eb.at(-1), 60);
  assert.deepEqual(pieceBounds(""), [0, 0]);
  assert.equal(pieceOf(b, 0), 0);
  assert.equal(pieceOf(b, 51), 1);
  assert.equal(pieceOf(b, 111), 2);
  assert.equal(pieceOf(b, 112), 2);
});
