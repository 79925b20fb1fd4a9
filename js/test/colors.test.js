import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import test from "node:test";

import {
  binFor,
  binOfT,
  contrastRatio,
  ENTROPY_MAX_BITS,
  GAIN_BINS,
  GAIN_HALF,
  GAIN_MAX_BITS,
  hexToRgb,
  legendFor,
  luminance,
  modePalette,
  NBINS,
  palette,
  RAMPS,
  RANK_BINS,
  rampRgb,
  rankBucket,
  SURPRISAL_MAX_BITS,
  textColorFor,
} from "../src/colors.js";

const LN2 = Math.LN2;
const bits = (b) => b * LN2; // bits -> nats

test("ramp endpoints are the first and last control colours", () => {
  for (const theme of ["light", "dark"]) {
    const pts = RAMPS[theme];
    assert.deepEqual(rampRgb(theme, 0), hexToRgb(pts[0][1]));
    assert.deepEqual(rampRgb(theme, 1), hexToRgb(pts[pts.length - 1][1]));
  }
});

test("ramp clamps t outside [0, 1]", () => {
  assert.deepEqual(rampRgb("light", -3), rampRgb("light", 0));
  assert.deepEqual(rampRgb("light", 7), rampRgb("light", 1));
  assert.deepEqual(rampRgb("dark", -0.1), rampRgb("dark", 0));
});

test("light palette gets strictly darker, dark palette strictly brighter", () => {
  const light = palette("light").map((c) => luminance(c.bg));
  const dark = palette("dark").map((c) => luminance(c.bg));
  assert.equal(light.length, NBINS);
  for (let k = 1; k < NBINS; k++) {
    assert.ok(light[k] < light[k - 1], `light bin ${k}: ${light[k]} !< ${light[k - 1]}`);
    assert.ok(dark[k] > dark[k - 1], `dark bin ${k}: ${dark[k]} !> ${dark[k - 1]}`);
  }
  // the low end sits near its background: pale on light, dark on dark
  assert.ok(light[0] > 0.85);
  assert.ok(dark[0] < 0.05);
});

test("text colour keeps WCAG AA contrast (>= 4.5) on every bin of both themes", () => {
  for (const theme of ["light", "dark"]) {
    palette(theme).forEach(({ bg, fg }, k) => {
      const r = contrastRatio(bg, fg);
      assert.ok(r >= 4.5, `${theme} bin ${k}: contrast ${r.toFixed(2)}`);
    });
  }
});

test("text colour is chosen by background luminance", () => {
  assert.deepEqual(textColorFor([255, 255, 255]), [0, 0, 0]);
  assert.deepEqual(textColorFor([250, 240, 200]), [0, 0, 0]);
  assert.deepEqual(textColorFor([20, 10, 60]), [255, 255, 255]);
  assert.deepEqual(textColorFor([0, 0, 0]), [255, 255, 255]);
});

test("binOfT: endpoints, clamping, NaN", () => {
  assert.equal(binOfT(0), 0);
  assert.equal(binOfT(1), NBINS - 1);
  assert.equal(binOfT(0.5), NBINS / 2);
  assert.equal(binOfT(-1), 0);
  assert.equal(binOfT(42), NBINS - 1);
  assert.equal(binOfT(NaN), -1);
});

test("surprisal scale is in bits, clamped at SURPRISAL_MAX_BITS", () => {
  assert.equal(binFor("surprisal", 0, 0, 1), 0);
  assert.equal(binFor("surprisal", bits(SURPRISAL_MAX_BITS / 2), 0, 1), NBINS / 2);
  // just below the max is still the last bin; far above clamps to it too
  assert.equal(binFor("surprisal", bits(SURPRISAL_MAX_BITS - 0.01), 0, 1), NBINS - 1);
  assert.equal(binFor("surprisal", bits(100), 0, 1), NBINS - 1);
  assert.equal(binFor("surprisal", NaN, 0, 1), -1);
  // 4 bits out of 16 -> a quarter of the bins (nats would give 5.77 bits -> bin 11)
  assert.equal(binFor("surprisal", bits(4), 0, 1), 8);
  // monotonic
  let prev = -1;
  for (let b = 0; b <= 20; b += 0.25) {
    const k = binFor("surprisal", bits(b), 0, 1);
    assert.ok(k >= prev);
    prev = k;
  }
});

test("probability mode: p = 1 is the palest bin, p -> 0 the darkest", () => {
  assert.equal(binFor("probability", 0, 0, 1), 0); // p = 1
  assert.equal(binFor("probability", Math.LN2, 0, 1), NBINS / 2); // p = 0.5
  assert.equal(binFor("probability", 50, 0, 1), NBINS - 1); // p ~ 0
  assert.ok(binFor("probability", 0.1, 0, 1) < binFor("probability", 0.2, 0, 1));
});

test("entropy mode uses bits over [0, ENTROPY_MAX_BITS]", () => {
  assert.equal(binFor("entropy", 5, 0, 1), 0);
  assert.equal(binFor("entropy", 0, bits(ENTROPY_MAX_BITS / 2), 1), NBINS / 2);
  assert.equal(binFor("entropy", 0, bits(3 * ENTROPY_MAX_BITS), 1), NBINS - 1);
  assert.equal(binFor("entropy", 0, NaN, 1), -1);
});

test("rank buckets: top10 / top100 / top1000 / rest", () => {
  const cases = [
    [1, 0],
    [10, 0],
    [11, 1],
    [100, 1],
    [101, 2],
    [1000, 2],
    [1001, 3],
    [250000, 3],
    [0, -1],
    [-5, -1],
  ];
  for (const [rank, bucket] of cases) assert.equal(rankBucket(rank), bucket, `rank ${rank}`);
  assert.equal(binFor("rank", 0, 0, 7), RANK_BINS[0]);
  assert.equal(binFor("rank", 0, 0, 5000), RANK_BINS[3]);
  assert.equal(binFor("rank", 0, 0, 0), -1);
  for (let b = 1; b < RANK_BINS.length; b++) assert.ok(RANK_BINS[b] > RANK_BINS[b - 1]);
});

test("legend ticks span the bar and name the units", () => {
  const s = legendFor("surprisal");
  assert.match(s.title, /bits/);
  assert.equal(s.ticks[0].at, 0);
  assert.equal(s.ticks.at(-1).at, 1);
  assert.equal(s.ticks.at(-1).label, `≥${SURPRISAL_MAX_BITS}`);
  assert.match(legendFor("entropy").title, /bits/);
  assert.deepEqual(
    legendFor("rank").buckets.map((b) => b.label),
    ["top 10", "top 100", "top 1000", "rest"],
  );
});

test("the tokens stylesheet defines a rule for every colour bin", () => {
  const css = readFileSync(new URL("../src/css/tokens.css", import.meta.url), "utf8");
  for (let k = 0; k < NBINS; k++) {
    const re = new RegExp(
      `\\.pplw-c${k}\\s*\\{\\s*background-color:\\s*var\\(--pplw-c${k}\\);\\s*color:\\s*var\\(--pplw-f${k}\\);`,
    );
    assert.match(css, re, `bin ${k}`);
  }
  assert.doesNotMatch(css, new RegExp(`\\.pplw-c${NBINS}\\b`));
});

test("context gain is diverging: zero in the middle bin, the sign on either side", () => {
  const gain = (b) => binFor("context_gain", NaN, NaN, 0, bits(b));
  assert.equal(gain(0), GAIN_HALF);
  assert.ok(gain(-1) < GAIN_HALF && gain(1) > GAIN_HALF); // one bit either way shows
  assert.equal(gain(-1), 2 * GAIN_HALF - gain(1)); // symmetric
  assert.equal(gain(-GAIN_MAX_BITS), 0);
  assert.equal(gain(-1000), 0);
  assert.equal(gain(GAIN_MAX_BITS), GAIN_BINS - 1);
  assert.equal(gain(1000), GAIN_BINS - 1);
  assert.equal(binFor("context_gain", 1, 1, 1, NaN), -1);
});

test("context gain palette: neutral middle, blue below, orange above, legible text", () => {
  for (const theme of ["light", "dark"]) {
    const pal = modePalette("context_gain", theme);
    assert.equal(pal.length, NBINS); // every bin class has a colour
    const mid = pal[GAIN_HALF].bg;
    const [lo, hi] = [pal[0].bg, pal[GAIN_BINS - 1].bg];
    assert.ok(lo[2] > lo[0], `${theme}: the hurt end is blue`);
    assert.ok(hi[0] > hi[2], `${theme}: the helped end is orange`);
    const chroma = ([r, g, b]) => Math.max(r, g, b) - Math.min(r, g, b);
    assert.ok(chroma(mid) < 20, `${theme}: zero is neutral`);
    pal.forEach(({ bg, fg }, k) => assert.ok(contrastRatio(bg, fg) >= 4.5, `${theme} bin ${k}`));
  }
  // other modes keep the theme's sequential ramp
  assert.deepEqual(modePalette("surprisal", "light"), palette("light"));
});

test("context gain legend: one tick at zero, both ends, its own number of bins", () => {
  const lg = legendFor("context_gain", "bits");
  assert.equal(lg.bins, GAIN_BINS);
  assert.deepEqual(lg.ticks.map((t) => t.label), ["≤−16", "−8", "0", "8", "≥16"]);
  assert.match(lg.title, /blue = context hurt, orange = helped/);
  assert.equal(legendFor("context_gain", "nats").ticks[4].label, "≥11.1");
});
