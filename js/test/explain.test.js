// "Why is this token surprising?" in the view: which tokens belong to which context unit,
// the attribution colours (diverging: helped one way, hurt the other, the target apart),
// the streamed parts and the saved explanation, the panel's words and the context curve.
import assert from "node:assert/strict";
import test from "node:test";

import { installFakeDocument } from "./fake_dom.js";

installFakeDocument();

const { attributionBin, attributionScale, GAIN_HALF, GAIN_BINS } = await import("../src/colors.js");
const { ExplainState, tokenUnits, TARGET, OUTSIDE, COMPUTING, DONE, CANCELLED, FAILED, IDLE } = await import("../src/explain/state.js");
const { panelModel, TOP_N } = await import("../src/explain/panel.js");
const { curveGeometry, curveSummary } = await import("../src/explain/curve.js");
const { targetOf } = await import("../src/explain/controller.js");
const P = await import("../src/protocol.js");

// "The cold winter brought floods": tokens The| cold| winter| brought| floods
const TEXT = "The cold winter brought floods";
const TOK_START = [0, 3, 8, 15, 23];
const TOK_END = [3, 8, 15, 23, 30];
const store = { length: 5, start16: Int32Array.from(TOK_START), end16: Int32Array.from(TOK_END), word: Int32Array.from([0, 1, 2, 3, 4]) };
// word units (no leading space), as the kernel sends them
const UNITS = { text: ["The", "cold", "winter", "brought"], start16: [0, 4, 9, 16], end16: [3, 8, 15, 23], tokens: [1, 1, 1, 1] };
const TARGET_FLOODS = { token: null, word: 4, first: 4, last: 4, start16: 23, end16: 30, text: " floods" };

function started(state, id = 1, request = null) {
  return state.onMessage({ type: P.MSG_EXPLAIN_START, explain_id: id, request, target: TARGET_FLOODS, unit: "word", method: "occlusion" });
}

test("a token belongs to the context unit its span overlaps (a leading space joins the word)", () => {
  const out = tokenUnits(store.start16, store.end16, 4, UNITS.start16, UNITS.end16);
  assert.deepEqual([...out], [0, 1, 2, 3]);
  // a whitespace-only token between words belongs to none
  const ws = tokenUnits(Int32Array.from([0, 3, 4]), Int32Array.from([3, 4, 8]), 3, [0, 4], [3, 8]);
  assert.deepEqual([...ws], [0, -1, 1]);
});

test("attribution bins diverge around the middle: helped above, hurt below, pending none", () => {
  assert.equal(attributionBin(0, 1), GAIN_HALF);
  assert.equal(attributionBin(1, 1), GAIN_BINS - 1);
  assert.equal(attributionBin(-1, 1), 0);
  assert.ok(attributionBin(0.3, 1) > GAIN_HALF && attributionBin(-0.3, 1) < GAIN_HALF);
  assert.equal(attributionBin(5, 1), GAIN_BINS - 1); // clamped
  assert.equal(attributionBin(NaN, 1), -1);
  assert.equal(attributionBin(null, 1), -1);
  // the scale is the largest |delta| shown, never below its floor (noise stays pale)
  assert.equal(attributionScale([0.01, -0.02, NaN]), 0.25);
  assert.equal(attributionScale([0.5, -2, NaN]), 2);
});

test("streamed parts colour units as they arrive; the target is outlined, the rest left out", () => {
  const s = new ExplainState();
  const request = s.ask(TARGET_FLOODS);
  // before the kernel answers: only the target is marked
  assert.equal(s.drawOf(store, 4), TARGET);
  assert.equal(s.drawOf(store, 2), OUTSIDE);
  assert.ok(started(s, 7, request));
  assert.equal(s.status, COMPUTING);
  // the nearest unit first: "brought" (3), then "winter" (2)
  assert.ok(s.onMessage({ type: P.MSG_EXPLAIN_PART, explain_id: 7, units: UNITS, index: [3], delta_nats: [-0.5], done: 1, total: 4, target_surprisal_nats: 6.0 }));
  assert.equal(s.drawOf(store, 3), attributionBin(-0.5, 0.5));
  assert.ok(s.drawOf(store, 3) < GAIN_HALF, "hurt: below the middle");
  assert.equal(s.drawOf(store, 2), -1, "not computed yet: no colour");
  assert.ok(s.onMessage({ type: P.MSG_EXPLAIN_PART, explain_id: 7, index: [2, 1, 0], delta_nats: [3.0, 0.2, null], done: 4, total: 4 }));
  assert.equal(s.drawOf(store, 2), GAIN_BINS - 1, "the largest help: the far end");
  assert.ok(s.drawOf(store, 1) > GAIN_HALF);
  assert.equal(s.drawOf(store, 0), -1, "a null delta stays uncoloured");
  assert.equal(s.targetNats, 6.0);
  // parts of another explanation are not ours
  assert.equal(s.onMessage({ type: P.MSG_EXPLAIN_PART, explain_id: 6, index: [0], delta_nats: [9], done: 4, total: 4 }), false);
  assert.ok(s.onMessage({ type: P.MSG_EXPLAIN_DONE, explain_id: 7, status: "done" }));
  assert.equal(s.status, DONE);
  const { helped, hurt } = s.top(5);
  assert.deepEqual(helped.map((r) => r.text), ["winter", "cold"]);
  assert.deepEqual(hurt.map((r) => r.text), ["brought"]);
});

test("a stale start (an older explanation, or another view's request) is ignored", () => {
  const s = new ExplainState();
  started(s, 3);
  assert.equal(started(s, 2), false, "older than what is shown");
  const mine = s.ask(TARGET_FLOODS);
  assert.equal(started(s, 4, mine + 100), false, "someone else's request");
  assert.ok(started(s, 5, mine));
  assert.equal(s.id, 5);
});

test("Escape while computing keeps what is done; the kernel's cancelled end says so", () => {
  const s = new ExplainState();
  started(s, 1);
  s.onMessage({ type: P.MSG_EXPLAIN_PART, explain_id: 1, units: UNITS, index: [3], delta_nats: [1], done: 1, total: 4 });
  s.onMessage({ type: P.MSG_EXPLAIN_DONE, explain_id: 1, status: "cancelled" });
  assert.equal(s.status, CANCELLED);
  assert.equal(s.drawOf(store, 3), GAIN_BINS - 1);
  const m = panelModel(s, "nats");
  assert.match(m.progress, /cancelled: 1 \/ 4 words/);
  assert.equal(m.running, false);
});

test("an error names the rule and keeps the view usable", () => {
  const s = new ExplainState();
  const r = s.ask(TARGET_FLOODS);
  assert.ok(s.onMessage({ type: P.MSG_EXPLAIN_ERROR, explain_id: 1, request: r, message: "ExplainError: the first token has no context" }));
  assert.equal(s.status, FAILED);
  const m = panelModel(s);
  assert.equal(m.failed, true);
  assert.match(m.progress, /no context/);
});

const SAVED = {
  explain_id: 2,
  status: "done",
  target: TARGET_FLOODS,
  unit: "word",
  method: "gradient",
  target_surprisal_nats: Math.LN2 * 8,
  units: UNITS,
  delta_nats: [0.1, -0.3, 2.0, null],
  done: 3,
  total: 4,
  curve: { context_tokens: [0, 1, 2, 4], surprisal_nats: [12, 9, 7, 5.5] },
};

test("a saved explanation (the trait, an exported page) is shown whole, curve included", () => {
  const s = new ExplainState();
  assert.ok(s.load(SAVED));
  assert.equal(s.status, DONE);
  assert.equal(s.drawOf(store, 4), TARGET);
  assert.equal(s.drawOf(store, 2), GAIN_BINS - 1);
  assert.ok(s.drawOf(store, 1) < GAIN_HALF);
  assert.equal(s.drawOf(store, 3), -1);
  const m = panelModel(s, "bits");
  assert.equal(m.title, "Why this word?");
  assert.equal(m.target, "·floods"); // whitespace made visible
  assert.equal(m.surprisal, "8.00 bits");
  assert.match(m.method, /approximation/);
  assert.deepEqual(m.helped.map((r) => r.text), ["winter", "The"]);
  assert.deepEqual(m.hurt.map((r) => [r.text, r.delta]), [["cold", "−0.43"]]);
  assert.ok(m.helped.length <= TOP_N);
  assert.deepEqual(m.curve, SAVED.curve);
  // null clears it (the kernel's explain_clear); an older payload does not replace it
  assert.equal(s.load({ ...SAVED, explain_id: 1 }), false);
  assert.ok(s.load(null));
  assert.equal(s.status, IDLE);
});

test("while a new request waits, a late end of the previous explanation does not replace it", () => {
  const s = new ExplainState();
  s.load(SAVED);
  s.ask({ ...TARGET_FLOODS, first: 3, last: 3 });
  assert.equal(s.load({ ...SAVED, explain_id: 2 }), false);
  assert.equal(s.load(null), false);
  assert.equal(s.target.first, 3);
});

test("the context curve: log-scaled x from no context to the full one, y from zero to a round top", () => {
  const box = { width: 220, height: 120, left: 10, right: 10, top: 10, bottom: 10 };
  const g = curveGeometry(SAVED.curve, { box, unit: "nats" });
  assert.equal(g.points.length, 4);
  assert.equal(g.points[0].x, 10); // k = 0 at the left edge
  assert.equal(g.points[3].x, 210); // the full context at the right
  assert.ok(g.points[0].y < g.points[3].y, "more context, less surprisal: lower on the chart");
  assert.equal(g.yMax, 15); // 12 nats rounds up to a step of 5
  assert.equal(g.points[0].y, 110 - (100 * 12) / 15);
  assert.equal(g.cut, null); // no text before the context: nothing cut
  assert.equal(curveGeometry({ context_tokens: [4], surprisal_nats: [1] }), null);
  assert.match(curveSummary(SAVED.curve, "nats"), /12\.00 nats with 0 context tokens, 5\.50 nats with 4/);
});

test("a click selects the token at the token level, its word at the word and sentence levels", () => {
  const stats = {
    first: Int32Array.from([0, 1, 2, 3, 4]),
    last: Int32Array.from([0, 1, 2, 3, 4]),
    update() {
      return this;
    },
    unitOf: (i) => i,
  };
  assert.deepEqual(targetOf(store, stats, "token", 2, TEXT), { token: 2, word: null, first: 2, last: 2, start16: 8, end16: 15, text: " winter" });
  assert.equal(targetOf(store, stats, "word", 2, TEXT).word, 2);
  assert.equal(targetOf(store, stats, "sentence", 2, TEXT).word, 2);
  const none = { ...stats, unitOf: () => -1 };
  assert.equal(targetOf(store, none, "word", 2, TEXT).token, 2, "a token outside any word: itself");
});
