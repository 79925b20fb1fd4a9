import assert from "node:assert/strict";
import { test } from "node:test";

import { pieceBin, sortedOrder } from "../src/pairs/data.js";
import { asUnit, fmtDelta, UNITS } from "../src/units.js";
import { binFor } from "../src/colors.js";

const pairs = [{ delta: 2 }, { delta: -1 }, { delta: null }, { delta: 2 }, { delta: 5 }];

test("sorting by delta keeps ties in input order and puts missing deltas last", () => {
  assert.deepEqual(sortedOrder(pairs, "input"), [0, 1, 2, 3, 4]);
  assert.deepEqual(sortedOrder(pairs, "delta_asc"), [1, 0, 3, 4, 2]);
  assert.deepEqual(sortedOrder(pairs, "delta_desc"), [4, 0, 3, 1, 2]);
  assert.deepEqual(sortedOrder([{ d: 1 }, { d: 0 }], "delta_asc", "d"), [1, 0]);
});

test("pieces use the single-model view's surprisal bins; unscored pieces none", () => {
  assert.equal(pieceBin(3.0), binFor("surprisal", 3.0, NaN, NaN, NaN));
  assert.equal(pieceBin(null), -1);
  assert.equal(pieceBin(0), 0);
});

test("deltas in bits or nats with a sign", () => {
  assert.equal(fmtDelta(Math.LN2, "bits"), "+1.00");
  assert.equal(fmtDelta(-1, "nats"), "−1.00");
  assert.equal(fmtDelta(-1, "bits"), "−1.44");
  assert.equal(fmtDelta(null, "bits"), "—");
  assert.equal(fmtDelta(NaN, "nats"), "—");
  assert.deepEqual(UNITS, ["bits", "nats"]);
  assert.equal(asUnit("nats"), "nats");
  assert.equal(asUnit("furlongs"), "bits");
});

test("a piece's tooltip: its surprisal, probability, the sentence's total, the first difference", async () => {
  const { pieceDetails } = await import("../src/pairs/data.js");
  const pair = { good: { pieces: [["The", null], [" dog", 2], [" sleeps", 3]], first: 2 }, bad: { pieces: [], first: -1 } };
  const d = pieceDetails(pair, "good", 2);
  assert.equal(d.text, " sleeps");
  assert.equal(d.nats, 3);
  assert.ok(Math.abs(d.prob - Math.exp(-3)) < 1e-12);
  assert.equal(d.sentenceNats, 5);
  assert.equal(d.scored, 2);
  assert.equal(d.n, 3);
  assert.equal(d.firstDifference, true);
  const u = pieceDetails(pair, "good", 0);
  assert.equal(u.nats, null);
  assert.equal(u.firstDifference, false);
  assert.ok(Number.isNaN(pieceDetails(pair, "bad", 0).sentenceNats));
});
