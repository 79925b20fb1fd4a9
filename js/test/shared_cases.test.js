// The shared table of cases (tests/cases/*.json, written by tests/cases/generate.py from the
// Python rules) against the front end's copies: token ranges and metrics agree case by case.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import test from "node:test";
import { normaliseMetrics } from "../src/decode.js";
import { metricsFromSums, rangeMetrics, tokensInRange } from "../src/metrics.js";
import { objectiveLabels } from "../src/objective.js";
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

// ---- the live page's copies (src/live/): window plans and text units ----------------
import { planWindows } from "../src/live/windows.js";
import { isPySpace, partitionOffsets, TextUnits } from "../src/live/text_units.js";

const WINDOWS = load("windows.json");
const TEXT_UNITS = load("text_units.json");

test("windows: planWindows gives Python's plan_windows on every case (and its refusals)", () => {
  const bad = [];
  for (const c of WINDOWS) {
    const label = `n=${c.n_positions} max_length=${c.max_length} stride=${c.stride} first=${c.first_target} every=${c.prefix_every_window}`;
    let got;
    try {
      got = planWindows(c.n_positions, c.max_length, c.stride, { firstTarget: c.first_target, prefixEveryWindow: c.prefix_every_window }).map((w) => [w.inputStart, w.inputEnd, w.targetStart, w.targetEnd, w.prefixed]);
    } catch (e) {
      if (c.error !== e.message) bad.push(`${label}: threw ${e.message}, want ${c.error ?? "a plan"}`);
      continue;
    }
    if (c.error) bad.push(`${label}: planned, want the error ${c.error}`);
    else if (JSON.stringify(got) !== JSON.stringify(c.windows)) bad.push(`${label}: ${JSON.stringify(got)}`);
  }
  assert.ok(WINDOWS.some((c) => c.error) && WINDOWS.some((c) => c.windows && c.windows.some((w) => w[4])));
  assert.deepEqual(bad, []);
});

test("text units: tiling and (words, chars, bytes) per token agree with Python's", () => {
  const bad = [];
  for (const c of TEXT_UNITS.filter((row) => "text" in row)) {
    const spans = partitionOffsets(Int32Array.from(c.offsets16.flat()), c.text);
    const units = new TextUnits(c.text).perSpan(spans);
    if (JSON.stringify([...spans]) !== JSON.stringify(c.spans16.flat())) bad.push(`${JSON.stringify(c.text)} ${JSON.stringify(c.offsets16)}: spans ${[...spans]}`);
    if (JSON.stringify([...units]) !== JSON.stringify(c.units.flat())) bad.push(`${JSON.stringify(c.text)} ${JSON.stringify(c.offsets16)}: units ${[...units]}`);
  }
  assert.deepEqual(bad, []);
});

test("text units: whitespace is Python's str.isspace(), not JS's \\s", () => {
  const py = TEXT_UNITS.find((row) => row.whitespace).whitespace;
  const got = [];
  for (let c = 0; c <= 0x10ffff; c++) if (isPySpace(c)) got.push(c);
  assert.deepEqual(got, py);
  assert.ok(!isPySpace(0xfeff) && /\s/.test("\ufeff")); // JS's \s has it, Python's has not
});

// ---- the reuse rule after an edit (src/live/reuse.js = scoring/runner/incremental.py) --------
import { planReuse } from "../src/live/reuse.js";

const REUSE = load("reuse.json");

/** A case's side as the live page holds it: the layout (new) or the run's record (old). */
function side(c, scored = c.ids.length) {
  const flat = (o) => Int32Array.from(o.flat());
  const off = flat(c.offsets);
  const start16 = Int32Array.from({ length: c.ids.length }, (_, i) => off[2 * i]);
  const end16 = Int32Array.from({ length: c.ids.length }, (_, i) => off[2 * i + 1]);
  const head = c.unscored_ids.length ? c.unscored_ids : [1]; // the prefix token, or the unscored one
  return {
    text: c.text, sequence: Int32Array.from([...head, ...c.ids]), firstTarget: 1, nTargets: c.ids.length,
    ids: Int32Array.from(c.ids.slice(0, scored)), start16, end16, isEos: Uint8Array.from(c.is_eos, Number),
    unscoredIds: Int32Array.from(c.unscored_ids), unscoredOffsets: flat(c.unscored_offsets),
    total: c.ids.length, partial: scored < c.ids.length,
  };
}

test("reuse: planReuse keeps the windows and tokens Python's plan_reuse keeps, on every edit", () => {
  const bad = [];
  for (const c of REUSE) {
    const old = side(c.old, c.old.scored), lay = side(c.new);
    const st = { maxLength: c.max_length, stride: c.stride, prefixEveryWindow: false };
    const text = c.new.text;
    const windows = planWindows(lay.nTargets + 1, st.maxLength, st.stride); // as Python plans them
    const got = planReuse(old, lay, text, windows, st);
    const want = c.expected;
    if (got.changed !== want.changed || got.windows !== want.windows || got.tokens !== want.tokens) bad.push(`${c.name}: ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  }
  assert.ok(REUSE.length >= 20 && REUSE.some((c) => c.expected.windows > 0) && REUSE.some((c) => c.expected.windows === 0));
  assert.deepEqual(bad, []);
});

// ---- sentences: pysbd's spans (tests/cases/sentence_cases.py) and the page's port ----
import { sentenceSpans } from "../src/live/sentences.js";

const SENTENCES = load("sentences.json");

test("sentences: the page's segmenter gives pysbd's spans on every listed text", () => {
  const bad = [];
  for (const c of SENTENCES.filter((row) => !row.differs)) {
    const got = Array.from(sentenceSpans(c.text));
    if (JSON.stringify(got) !== JSON.stringify(c.spans16.flat())) bad.push(`${JSON.stringify(c.text.slice(0, 80))}: ${got} want ${c.spans16.flat()}`);
  }
  assert.deepEqual(bad, []);
  assert.ok(SENTENCES.length > 60);
});

test("sentences: the known differences from pysbd still differ (docs/live-transformer.md lists them)", () => {
  const differs = SENTENCES.filter((row) => row.differs);
  assert.ok(differs.length >= 1);
  for (const c of differs) assert.notDeepEqual(Array.from(sentenceSpans(c.text)), c.spans16.flat(), c.text);
});

// ---- what a result's numbers are called: core/metrics.py's rule and objective.js ----
test("objective labels: objectiveLabels agrees with the Python on every case", () => {
  const cases = load("objective.json");
  assert.ok(cases.some((c) => c.expected.pseudo) && cases.some((c) => !c.expected.pseudo));
  for (const c of cases) assert.deepEqual({ ...objectiveLabels(c.settings) }, c.expected, c.name);
});

// ---- the explanation's helped / hurt colours (views/attribution_colours.py) -----------
import { ATTRIBUTION_COLOURS, ATTRIBUTION_NAMES, attributionKey, attributionPalette, GAIN_BINS, hexToRgb } from "../src/colors.js";

const [COLOURS] = load("attribution_colours.json");

test("attribution colours: the widget's (and so the export's) helped / hurt are the Python rule's", () => {
  assert.deepEqual(ATTRIBUTION_NAMES, COLOURS.names);
  assert.deepEqual(JSON.parse(JSON.stringify(ATTRIBUTION_COLOURS)), COLOURS.themes);
  assert.equal(attributionKey(), COLOURS.key);
  for (const theme of ["light", "dark"]) {
    // the text's ramp ends at the rule's colours: hurt at bin 0, helped at the top bin
    const pal = attributionPalette(theme);
    assert.deepEqual(pal[0].bg, hexToRgb(COLOURS.themes[theme].hurt), theme);
    assert.deepEqual(pal[GAIN_BINS - 1].bg, hexToRgb(COLOURS.themes[theme].helped), theme);
  }
});
