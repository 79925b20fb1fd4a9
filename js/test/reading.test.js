import assert from "node:assert/strict";
import { test } from "node:test";

import { binFor, GAIN_HALF, NBINS } from "../src/colors.js";
import { BAR_FLOOR, barFraction, groupRuns, nats, num, quantile, readingLegend, scales, textDeltaLL, textHeading, wordBin, wordDetails } from "../src/reading/data.js";

const data = {
  word: ["The", "<b>old</b>", "man", "the", "boat."],
  group: [0, 0, 0, 1, 1],
  rt: [200, 400, null, 300, 250],
  surprisal: [1.0, 6.0, "Infinity", null, 3.0],
  frequency: [7.1, 5.0, 6.0, 7.0, 4.2],
  length: [3, 3, 3, 3, 4],
  predicted: [null, 350, 300, 310, 260],
  residual: [null, 50, null, -10, -10],
  delta_ll: [null, 0.02, -0.01, 0.5, "Infinity"],
};
const groups = ["a", "b"];

test("quantiles skip missing values; scales come from the words' own values", () => {
  assert.equal(quantile([3, null, 1, 2], 0.5), 2);
  assert.ok(Number.isNaN(quantile([null], 0.5)));
  const sc = scales(data);
  assert.ok(sc.rtLo >= 200 && sc.rtLo < 210 && sc.rtHi > 390 && sc.rtHi <= 400);
  assert.ok(sc.resHalf > 10 && sc.resHalf <= 50);
  // nothing to scale by: a usable range all the same
  const empty = scales({ word: [], rt: [], residual: [] });
  assert.ok(empty.rtHi > empty.rtLo && empty.resHalf > 0);
});

test("colour bins: surprisal on the shared scale, RT along the ramp, residual two-sided", () => {
  const sc = { rtLo: 200, rtHi: 400, resHalf: 50 };
  assert.equal(wordBin("surprisal", data, 0, sc), binFor("surprisal", 1.0, NaN, NaN, NaN));
  assert.equal(wordBin("surprisal", data, 2, sc), NBINS - 1); // an infinite surprisal: darkest
  assert.equal(wordBin("surprisal", data, 3, sc), -1); // missing: no colour
  assert.equal(wordBin("rt", data, 0, sc), 0);
  assert.equal(wordBin("rt", data, 1, sc), NBINS - 1);
  assert.equal(wordBin("rt", data, 2, sc), -1);
  assert.equal(wordBin("residual", data, 1, sc), 2 * GAIN_HALF); // +50 ms: the far slow end
  assert.equal(wordBin("residual", data, 3, sc), GAIN_HALF - Math.round(GAIN_HALF / 5));
  assert.ok(wordBin("residual", data, 3, sc) < GAIN_HALF); // faster than predicted: below the middle
  assert.equal(wordBin("residual", data, 0, sc), -1);
});

test("the bar: a floor at the fast end, full at the slow end, none without an RT", () => {
  const sc = { rtLo: 200, rtHi: 400, resHalf: 50 };
  assert.equal(barFraction(data, 0, sc), BAR_FLOOR);
  assert.equal(barFraction(data, 1, sc), 1);
  assert.equal(barFraction(data, 2, sc), 0);
  assert.ok(Math.abs(barFraction(data, 3, sc) - (BAR_FLOOR + (1 - BAR_FLOOR) / 2)) < 1e-12);
});

test("a word's tooltip: its text as given, its text and place, its numbers", () => {
  const d = wordDetails(data, groups, 1);
  assert.equal(d.word, "<b>old</b>");
  assert.equal(d.group, "a");
  assert.equal(d.position, 1);
  assert.equal(d.nInGroup, 3);
  assert.deepEqual([d.rt, d.surprisal, d.frequency, d.length, d.predicted, d.residual], [400, 6, 5, 3, 350, 50]);
  const last = wordDetails(data, groups, 4);
  assert.equal(last.group, "b");
  assert.equal(last.position, 1);
  assert.equal(last.nInGroup, 2);
  assert.equal(wordDetails(data, groups, 2).surprisal, Infinity);
  assert.equal(wordDetails(data, groups, 0).predicted, null);
  assert.equal(num("x"), null);
});

test("texts are runs of the group column; legends in ms", () => {
  assert.deepEqual(groupRuns(data), [[0, 3], [3, 5]]);
  assert.deepEqual(groupRuns({ word: [] }), []);
  assert.deepEqual(groupRuns({ word: ["a", "b"] }), [[0, 2]]);
  const sc = { rtLo: 200, rtHi: 400, resHalf: 50 };
  assert.deepEqual(readingLegend("rt", sc, "gaze_rt").ticks.map((t) => t.label), ["≤200 ms", "300 ms", "≥400 ms"]);
  assert.match(readingLegend("residual", sc).title, /faster than predicted/);
  assert.equal(readingLegend("surprisal", sc), null);
});

test("each text's ΔLL: the mean over its words in the regression, beside its heading", () => {
  assert.deepEqual(textDeltaLL(data, 0, 3), { used: 2, mean: 0.005 });
  assert.deepEqual(textDeltaLL(data, 3, 5), { used: 1, mean: 0.5 }); // infinite: not averaged
  assert.deepEqual(textDeltaLL({ word: ["a"] }, 0, 1), { used: 0, mean: null });
  assert.deepEqual(textHeading("3", 180, { used: 178, mean: 0.0123 }), ["text 3 · 180 words", "ΔLL +0.0123 nats/word over its 178 words in the regression"]);
  assert.deepEqual(textHeading("1", 2107, { used: 0, mean: null }), ["text 1 · 2,107 words", ""]);
  assert.equal(nats(-0.00012), "−0.0001 nats"); // the typographic minus of fmtFixed
  assert.equal(nats(0.00001), "0.0000 nats"); // no sign on a value that rounds to zero, either way
  assert.equal(nats(-0.00001), "0.0000 nats");
  assert.equal(wordDetails(data, groups, 1).deltaLL, 0.02);
  assert.equal(wordDetails(data, groups, 0).deltaLL, null);
});
