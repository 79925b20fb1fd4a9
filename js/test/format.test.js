import assert from "node:assert/strict";
import test from "node:test";

import {
  displayToken,
  fmtDuration,
  fmtExact,
  fmtFixed,
  fmtInt,
  fmtMetric,
  fmtProb,
  visibleWhitespace,
} from "../src/format.js";

test("whitespace made visible", () => {
  assert.equal(visibleWhitespace(" the"), "·the");
  assert.equal(visibleWhitespace("a\nb"), "a⏎b");
  assert.equal(visibleWhitespace("\t\tx"), "→→x");
  assert.equal(visibleWhitespace("  \n\n"), "··⏎⏎");
  assert.equal(visibleWhitespace("\r\n"), "␍⏎");
  assert.equal(visibleWhitespace("a\u00a0b"), "a⍽b");
  assert.equal(visibleWhitespace("\u0000\u200b"), "\\u0000\\u200b");
});

test("non-whitespace text is untouched (emoji, CJK, markup)", () => {
  assert.equal(visibleWhitespace("😀漢字"), "😀漢字");
  assert.equal(visibleWhitespace("<img src=x>"), "<img·src=x>");
  assert.equal(visibleWhitespace(null), "");
});

test("displayToken marks empty and unknown tokens", () => {
  assert.equal(displayToken(""), "∅");
  assert.equal(displayToken(undefined), "?");
  assert.equal(displayToken(" a"), "·a");
});

test("integers and fixed decimals with grouping", () => {
  assert.equal(fmtInt(0), "0");
  assert.equal(fmtInt(999), "999");
  assert.equal(fmtInt(1000), "1,000");
  assert.equal(fmtInt(1234567), "1,234,567");
  assert.equal(fmtInt(-4321), "−4,321");
  assert.equal(fmtInt(NaN), "—");
  assert.equal(fmtInt(null), "—");
  assert.equal(fmtFixed(1234.5, 2), "1,234.50");
  assert.equal(fmtFixed(-0.001, 2), "0.00");
  assert.equal(fmtFixed(Infinity), "∞");
});

test("metric values: 4 significant digits, grouping, scientific at the extremes", () => {
  assert.equal(fmtMetric(12.3456), "12.35");
  assert.equal(fmtMetric(1.23456), "1.235");
  assert.equal(fmtMetric(0.012345), "0.01235");
  assert.equal(fmtMetric(123.456), "123.5");
  assert.equal(fmtMetric(1234.56), "1,234.6");
  assert.equal(fmtMetric(3.2e21), "3.200e+21");
  assert.equal(fmtMetric(0), "0");
  assert.equal(fmtMetric(null), "—");
  assert.equal(fmtMetric(NaN), "—");
  assert.equal(fmtMetric(Infinity), "∞");
});

test("probabilities as percentages", () => {
  assert.equal(fmtProb(1), "100.0%");
  assert.equal(fmtProb(0.1234), "12.3%");
  assert.equal(fmtProb(0.05), "5.00%");
  assert.equal(fmtProb(0.001234), "0.123%");
  assert.equal(fmtProb(3.2e-5), "3.2e−5");
  assert.equal(fmtProb(NaN), "—");
});

test("durations", () => {
  assert.equal(fmtDuration(3.25), "3.3 s");
  assert.equal(fmtDuration(42), "42 s");
  assert.equal(fmtDuration(125), "2 min 05 s");
  assert.equal(fmtDuration(3725), "1 h 02 min");
  assert.equal(fmtDuration(-1), "—");
  assert.equal(fmtDuration(Infinity), "—");
});

test("exact values keep every digit", () => {
  assert.equal(fmtExact(16.991234567891233), "16.991234567891233");
  assert.equal(fmtExact(null), "NaN");
  assert.equal(fmtExact(Infinity), "inf");
});

test("fmtMetric never writes more than 9 characters: compact from a million", async () => {
  const { fmtMetric, fmtExact, COMPACT_FROM } = await import("../src/format.js");
  assert.equal(fmtMetric(358500612.3), "3.585e+8");
  assert.equal(fmtMetric(999999.9), "999,999.9");
  assert.equal(fmtMetric(999999.97), "1.000e+6");
  assert.equal(fmtMetric(COMPACT_FROM), "1.000e+6");
  assert.equal(fmtMetric(-2.5e7), "−2.500e+7");
  for (let e = -6; e <= 30; e += 0.37) {
    const x = 10 ** e;
    assert.ok(fmtMetric(x).length <= 9, `${x} -> ${fmtMetric(x)}`);
    assert.equal(Number(fmtExact(x)), x); // the exact value, for the tooltip
  }
});

test("fmtSigned: a delta with its sign, a true minus, no -0.00", async () => {
  const { fmtSigned } = await import("../src/format.js");
  assert.equal(fmtSigned(1.234), "+1.23");
  assert.equal(fmtSigned(-23.176), "−23.18");
  assert.equal(fmtSigned(0), "0.00");
  assert.equal(fmtSigned(-0.001), "0.00");
  assert.equal(fmtSigned(0.001), "0.00");
  assert.equal(fmtSigned(12345.678, 1), "+12,345.7");
  assert.equal(fmtSigned(NaN), "—");
});
