// The explanation, finished (issue 48): the colour key in words, a tooltip that keeps clear
// of the panel, Up/Down between lines (and no further: JupyterLab would take them), what
// the panel says after the last unit, each top unit's position, the whitespace key, the
// curve's axes and the window's cut, and a page with no kernel saying what a click needs.
import assert from "node:assert/strict";
import test from "node:test";

import { installFakeDocument } from "./fake_dom.js";

installFakeDocument();

const P = await import("../src/protocol.js");
const { ExplainState } = await import("../src/explain/state.js");
const { panelModel, NEEDS_KERNEL } = await import("../src/explain/panel.js");
const { ExplainController } = await import("../src/explain/controller.js");
const { curveGeometry, curveSummary, niceStep } = await import("../src/explain/curve.js");
const { placeTip } = await import("../src/tooltip.js");
const { lineMove, RovingFocus } = await import("../src/navigation.js");
const { whitespaceKey } = await import("../src/format.js");
const { attributionKey, attributionLegend } = await import("../src/colors.js");

// "the cold, the river floods": tokens the| cold|,| the| river| floods; five words
const TOK_START = [0, 3, 8, 9, 13, 19];
const TOK_END = [3, 8, 9, 13, 19, 26];
const store = { length: 6, start16: Int32Array.from(TOK_START), end16: Int32Array.from(TOK_END) };
const WORD_OF_TOKEN = [0, 1, 1, 2, 3, 4];
const UNITS = { text: ["the", "cold,", "the", "river"], start16: [0, 4, 10, 14], end16: [3, 9, 13, 19], tokens: [1, 2, 1, 1] };
const TARGET = { token: null, word: 4, first: 5, last: 5, start16: 19, end16: 26, text: " floods" };

/** A state whose units are all computed while the kernel still works (the curve). */
function allUnitsIn() {
  const s = new ExplainState();
  s.onMessage({ type: P.MSG_EXPLAIN_START, explain_id: 1, request: null, target: TARGET, unit: "word", method: "occlusion" });
  s.onMessage({ type: P.MSG_EXPLAIN_PART, explain_id: 1, units: UNITS, index: [0, 1, 2, 3], delta_nats: [0.5, -0.2, 0.8, 0.1], done: 4, total: 4, target_surprisal_nats: 3 });
  return s;
}

/** An ExplainController over fakes: enough for its panel's words. */
function controller(state, live = true) {
  const listen = { addEventListener() {} };
  const wordStats = { update: () => wordStats, unitOf: (i) => WORD_OF_TOKEN[i] };
  const c = new ExplainController({ model: { get: () => null }, store, root: listen, scroller: listen, wordStats, live });
  c.state = state;
  return c;
}

test("after the last unit the panel says it is computing the context curve, the bar stays full", () => {
  const m = panelModel(allUnitsIn());
  assert.match(m.progress, /^all 4 words computed · now the context curve/);
  assert.equal(m.fraction, 1);
  assert.ok(m.running && m.curveRunning);
  const half = new ExplainState();
  half.onMessage({ type: P.MSG_EXPLAIN_START, explain_id: 1, target: TARGET, unit: "word", method: "occlusion" });
  half.onMessage({ type: P.MSG_EXPLAIN_PART, explain_id: 1, units: UNITS, index: [3], delta_nats: [0.1], done: 1, total: 4 });
  assert.match(panelModel(half).progress, /^1 \/ 4 words computed/);
  assert.equal(panelModel(half).curveRunning, false);
});

test("the top lists name each unit's position in the text: the same word twice is told apart", () => {
  const s = allUnitsIn();
  const c = controller(s);
  assert.equal(c.unitPosition(2), "word 3");
  assert.equal(c.unitPosition(1), "word 2"); // "cold," spans two tokens: its first one's word
  const m = panelModel(s, "nats", { where: (u) => c.unitPosition(u) });
  assert.deepEqual(m.helped.map((r) => [r.text, r.where]), [["the", "word 3"], ["the", "word 1"], ["river", "word 4"]]);
  assert.deepEqual(m.hurt.map((r) => [r.text, r.where, r.delta]), [["cold,", "word 2", "−0.20"]]);
  assert.match(m.helped[0].title, /^word 3: "the", 0\.8 nats/);
  s.unit = "token"; // token units are counted as the tooltip counts tokens
  assert.equal(c.unitPosition(2), "token 4");
});

test("the whitespace marks shown are explained where they appear", () => {
  assert.equal(whitespaceKey(["a b", "x\ny"]), "· a space, ⏎ a line break");
  assert.equal(whitespaceKey(["ab", null]), "");
  const m = panelModel(allUnitsIn()); // the target " floods" shows as "·floods"
  assert.equal(m.target, "·floods");
  assert.equal(m.marks, "· a space (whitespace made visible)");
});

test("one colour key in words: the panel, the legend", () => {
  assert.equal(attributionKey(), "orange = helped, blue = hurt");
  assert.ok(panelModel(allUnitsIn()).scale.startsWith(attributionKey()));
  assert.ok(attributionLegend(1, "bits").title.endsWith(attributionKey()));
});

test("a page with no kernel says what explaining another token needs; a live one does not", () => {
  assert.equal(panelModel(allUnitsIn(), "bits", { live: false }).note, NEEDS_KERNEL);
  assert.match(NEEDS_KERNEL, /no kernel/);
  assert.equal(panelModel(allUnitsIn()).note, "");
  // a click there flashes the note (the controller sends nothing: there is no kernel)
  const c = controller(allUnitsIn(), false);
  let flashed = 0;
  c.panel.flashNote = () => flashed++;
  c.view.focusToken = () => {};
  c.view.model.send = () => assert.fail("no kernel to send to");
  c.explainToken(1);
  assert.equal(flashed, 1);
});

const CURVE = { context_tokens: [0, 1, 2, 4, 8, 16, 32, 63], surprisal_nats: [9, 8, 7, 6, 5, 4.5, 4, 3.4] };

test("the curve's axes: round surprisal ticks from 0, context ticks that never overlap, both ends labelled", () => {
  assert.deepEqual([niceStep(12), niceStep(3.4), niceStep(0.7), niceStep(0)], [5, 2, 0.5, 1]);
  const g = curveGeometry(CURVE, { unit: "nats" });
  assert.deepEqual(g.yTicks.map((t) => t.label), ["0", "5", "10"]);
  const xs = g.xTicks.map((t) => t.at);
  for (let j = 1; j < xs.length; j++) assert.ok(xs[j] - xs[j - 1] >= 20, `ticks ${xs[j - 1]} and ${xs[j]} overlap`);
  assert.equal(g.xTicks[0].label, "0");
  assert.equal(g.xTicks[g.xTicks.length - 1].label, "63");
  assert.equal(g.cut, null);
});

test("the window's cut is marked when the target has more text before it than the window holds", () => {
  const g = curveGeometry(CURVE, { unit: "nats", before: 150 });
  assert.equal(g.cut.k, 63);
  assert.equal(g.cut.before, 150);
  assert.ok(g.cut.x < g.x1 && g.cut.xEnd === g.x1, "the text left out is shaded to the right edge");
  assert.equal(g.points[g.points.length - 1].x, g.cut.x); // the full context sits at the cut
  assert.equal(g.xTicks[g.xTicks.length - 1].label, "150"); // the text's start at the right end
  assert.ok(g.xTicks.some((t) => t.label === "63" && t.at === g.cut.x), "the cut has its tick");
  assert.match(curveSummary(CURVE, "nats", 150, 64), /the window \(max_length 64\) holds the last 63 of the 150 tokens before the target/);
  assert.equal(curveGeometry(CURVE, { before: 63 }).cut, null); // the whole text fits
  assert.equal(curveGeometry(CURVE, { before: 20 }).cut, null);
});

const clear = (a, b) => a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top;

test("a tooltip keeps clear of the panel: beside it, else above, else covering least", () => {
  const bounds = { left: 0, top: 0, right: 900, bottom: 600 };
  const size = { w: 300, h: 200 };
  const box = (p) => ({ left: p.left, top: p.top, right: p.left + size.w, bottom: p.top + size.h });
  // the panel beside the text: a token near it gets its tooltip below, shifted left of it
  const panel = { left: 600, right: 890, top: 0, bottom: 400 };
  const a = { left: 500, right: 540, top: 100, bottom: 118 };
  const p = placeTip(a, size, bounds, [panel]);
  assert.equal(p.top, 124);
  assert.ok(clear(box(p), panel), JSON.stringify(p));
  assert.equal(p.left, 296);
  // nothing in the way: at the anchor's left edge, below it (as before)
  assert.deepEqual(placeTip(a, size, bounds, []), { left: 500, top: 124 });
  // the panel under the text (a short text): the tooltip goes above the token
  const under = { left: 0, right: 900, top: 300, bottom: 600 };
  const b = { left: 100, right: 140, top: 260, bottom: 278 };
  const q = placeTip(b, size, bounds, [under]);
  assert.ok(clear(box(q), under) && q.top === 260 - 6 - 200, JSON.stringify(q));
  // no room anywhere: still a place, the one covering least
  const all = { left: 0, right: 900, top: 0, bottom: 600 };
  assert.ok(Number.isFinite(placeTip(a, size, bounds, [all]).left));
});

// tokens on a grid: line r, column c (50 px apart); line 1 has two wide tokens
function grid() {
  const rects = [];
  for (let c = 0; c < 4; c++) rects.push({ left: c * 50, right: c * 50 + 45, top: 0, bottom: 18 });
  rects.push({ left: 0, right: 90, top: 20, bottom: 38 }, { left: 100, right: 190, top: 20, bottom: 38 });
  for (let c = 0; c < 4; c++) rects.push({ left: c * 50, right: c * 50 + 45, top: 40, bottom: 58 });
  return rects;
}

test("Up and Down move to the token nearest across on the line above or below; at the edges they stay", () => {
  const r = grid();
  const rectsOf = (j) => [r[j]];
  assert.equal(lineMove(rectsOf, 1, r.length, 1), 4); // x 22: the first wide token
  assert.equal(lineMove(rectsOf, 3, r.length, 1), 5); // x 172: the second
  assert.equal(lineMove(rectsOf, 5, r.length, 1), 8); // x 145: column 2 (100-145)
  assert.equal(lineMove(rectsOf, 8, r.length, -1), 5);
  assert.equal(lineMove(rectsOf, 4, r.length, -1), 0);
  assert.equal(lineMove(rectsOf, 2, r.length, -1), 2); // the first line: nowhere up
  assert.equal(lineMove(rectsOf, 7, r.length, 1), 7); // the last line: nowhere down
  // a token over two lines leaves from its last line going down, its first going up
  const two = [r[0], { left: 50, right: 95, top: 0, bottom: 18 }, r[4], r[5]];
  const tall = (j) => (j === 1 ? [two[1], { left: 0, right: 20, top: 20, bottom: 38 }] : [two[j]]);
  assert.equal(lineMove(tall, 0, 4, 1), 2); // token 1's tail on line 2 does not count as a line
});

test("the text's keys: Down on a token focuses the one below and goes no further (JupyterLab)", () => {
  const r = grid();
  const spans = r.map((rect, j) => ({
    nodeType: 1,
    tabIndex: -1,
    closest: function () {
      return this;
    },
    getAttribute: (k) => (k === "data-i" ? String(j) : null),
    removeAttribute() {},
    getClientRects: () => [rect],
    focus() {
      focused = j;
    },
    scrollIntoView() {},
  }));
  let focused = -1;
  const textView = { shown: spans.length, spanOf: (j) => spans[j], renderedSpanOf: (j) => spans[j] };
  const nav = new RovingFocus(textView, () => {});
  const key = (k, target) => {
    const ev = { key: k, target, stopped: false, prevented: false, stopPropagation() { this.stopped = true; }, preventDefault() { this.prevented = true; } };
    nav.onKey(ev);
    return ev;
  };
  const down = key("ArrowDown", spans[1]);
  assert.equal(focused, 4);
  assert.ok(down.stopped && down.prevented);
  const up = key("ArrowUp", spans[9]);
  assert.equal(focused, 5);
  assert.ok(up.stopped);
  assert.ok(key("ArrowRight", spans[9]).stopped);
  const other = key("a", spans[9]);
  assert.ok(!other.stopped && !other.prevented, "a key the text does not use goes on");
});

test("the tooltip explains the whitespace marks it shows, and only then", async () => {
  const { Tooltip } = await import("../src/tooltip.js");
  const tip = new Tooltip({ appendChild() {} });
  const d = (text, alts) => ({ index: 0, total: 1, id: 7, text, zeroWidth: false, eos: false, surprisalNats: 1, prob: 0.4, rank: 1, entropyBits: 1, context: 3, contextBos: null, gainNats: NaN, alts, targetInAlts: false });
  const last = (parts) => parts[parts.length - 1].textContent;
  assert.equal(last(tip._tokenContent(d(" f\n", []))), "· a space, ⏎ a line break");
  const plain = tip._tokenContent(d("f", []));
  assert.ok(!plain.some((p) => p.className === "pplw-tt-sub pplw-tt-marks"));
});
