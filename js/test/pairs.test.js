import assert from "node:assert/strict";
import { test } from "node:test";

import { fmtNats, pieceBin, sortedOrder } from "../src/pairs/data.js";
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
  assert.equal(fmtNats(Math.LN2, "bits"), "+1.00");
  assert.equal(fmtNats(-1, "nats"), "-1.00");
  assert.equal(fmtNats(null, "bits"), "—");
});
