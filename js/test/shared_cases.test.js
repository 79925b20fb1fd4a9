// The shared table of cases (tests/cases/*.json, written by tests/cases/generate.py from the
// Python rules) against the front end's copies: token ranges and metrics agree case by case.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import test from "node:test";
import { normaliseMetrics } from "../src/decode.js";
import { metricsFromSums, rangeMetrics, tokensInRange } from "../src/metrics.js";
import { UNIT_BYTES, UNIT_CHARS, UNIT_WORDS } from "../src/protocol.js";

const load = (name) => JSON.parse(readFileSync(new URL(`../../tests/cases/${name}`, import.meta.url), "utf8"));
const TOKEN_RANGES = load("token_ranges.json");
const METRICS = load("metrics.json");
// a number as core/jsonable.py writes it: null is NaN, "Infinity" / "-Infinity"
const num = (v) => (v == null ? NaN : Number(v));

function same(got, want) {
  if (Number.isNaN(want)) return Number.isNaN(got);
  if (!Number.isFinite(want)) return got === want;
  return Math.abs(got - want) <= 1e-12 * Math.max(1, Math.abs(want));
}

test("the table has its edges: zero-width tokens, EOS, empty text, NaN and infinities", () => {
  assert.ok(TOKEN_RANGES.length > 100);
  assert.ok(TOKEN_RANGES.some((c) => c.text_length === 0));
  assert.ok(METRICS.some((c) => Object.values(c.expected).includes(null)));
  assert.ok(METRICS.some((c) => Object.values(c.expected).includes("Infinity")));
});

test("token ranges: tokensInRange agrees with the Python on every case", () => {
  const bad = [];
  for (const c of TOKEN_RANGES) {
    const start = Int32Array.from(c.offsets, (o) => o[0]);
    const end = Int32Array.from(c.offsets, (o) => o[1]);
    const [a, b] = c.span;
    const got = tokensInRange(start, end, c.offsets.length, a, b, c.text_length);
    if (got[0] !== c.expected[0] || got[1] !== c.expected[1]) bad.push(`${c.name} [${a}, ${b}): got ${got}, want ${c.expected}`);
  }
  assert.deepEqual(bad, []);
});

// a store with just what rangeMetrics reads
function storeOf(c) {
  const n = c.surprisal.length;
  const units = new Int32Array(n * 3);
  c.units.forEach((u, i) => {
    units[i * 3 + UNIT_WORDS] = u[0];
    units[i * 3 + UNIT_CHARS] = u[1];
    units[i * 3 + UNIT_BYTES] = u[2];
  });
  return { length: n, surprisal: Float64Array.from(c.surprisal, num), units };
}

test("metrics: metricsFromSums and rangeMetrics agree with the Python on every case", () => {
  const bad = [];
  for (const c of METRICS) {
    let got;
    if (c.kind === "totals") {
      const [tokens, words, chars, bytes] = c.counts;
      got = metricsFromSums({ nats: num(c.total_nll), tokens, words, chars, bytes });
    } else {
      got = rangeMetrics(storeOf(c), 0, c.upto);
    }
    const want = normaliseMetrics(c.expected);
    for (const [key, w] of Object.entries(want)) {
      if (!same(got[key], w)) bad.push(`${c.name}: ${key} got ${got[key]}, want ${w}`);
    }
  }
  assert.deepEqual(bad, []);
});

// The Python loop (core/tokens.tokens_in_span) written out, for random tokenizations.
function pythonRule(start, end, n, a, b, len) {
  const chosen = [];
  for (let i = 0; i < n; i++) {
    if (end[i] > start[i]) chosen.push(start[i] < b && end[i] > a);
    else chosen.push(i > 0 ? chosen[i - 1] : (a <= start[i] && start[i] < b) || (start[i] === b && b === len));
  }
  const first = chosen.indexOf(true);
  return first < 0 ? [0, 0] : [first, chosen.lastIndexOf(true) + 1];
}

test("token ranges: random tokenizations with zero-width tokens agree with the Python loop", () => {
  let seed = 7;
  const rand = (k) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % k;
  };
  for (let t = 0; t < 300; t++) {
    const start = [];
    const end = [];
    let pos = rand(3);
    const n = rand(9);
    for (let i = 0; i < n; i++) {
      pos += rand(4) === 0 ? 1 : 0; // an unscored gap now and then
      const w = rand(3) === 0 ? 0 : 1 + rand(3); // a third zero-width
      start.push(pos);
      end.push(pos + w);
      pos += w;
    }
    const len = pos + rand(2);
    for (let a = 0; a <= len; a++) {
      for (let b = a; b <= len; b++) {
        const want = pythonRule(start, end, n, a, b, len);
        assert.deepEqual(tokensInRange(start, end, n, a, b, len), want, `${start}/${end} [${a}, ${b}) len ${len}`);
      }
    }
  }
});
