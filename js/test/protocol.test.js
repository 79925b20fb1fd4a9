import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import test from "node:test";

import * as P from "../src/protocol.js";

const PY = new URL("../../ppl_widget/views/protocol.py", import.meta.url);

test("protocol.js mirrors ppl_widget/protocol.py", () => {
  const py = readFileSync(PY, "utf8");
  // MSG_* = "..."
  const msgs = {};
  for (const m of py.matchAll(/^(MSG_[A-Z_]+)\s*(?::\s*Final)?\s*=\s*"([^"]*)"/gm)) msgs[m[1]] = m[2];
  assert.ok(Object.keys(msgs).length >= 6, "found the MSG_ constants");
  for (const [k, v] of Object.entries(msgs)) assert.equal(P[k], v, k);
  // CHUNK_FIELDS tuples, in order
  const block = /CHUNK_FIELDS[^=]*=\s*\(([\s\S]*?)\n\)/.exec(py);
  assert.ok(block, "found CHUNK_FIELDS");
  const fields = [...block[1].matchAll(/\(\s*"(\w+)"\s*,\s*"([<>]?\w+)"\s*,\s*(\d+)\s*\)/g)].map((m) => [
    m[1],
    m[2],
    Number(m[3]),
  ]);
  assert.deepEqual(
    P.CHUNK_FIELDS.map((f) => [...f]),
    fields,
  );
  const div = /DIVERGENCE_FIELDS[^=]*=\s*\(([\s\S]*?)\n\)/.exec(py);
  assert.ok(div, "found DIVERGENCE_FIELDS");
  assert.deepEqual(
    P.DIVERGENCE_FIELDS.map((f) => [...f]),
    [...div[1].matchAll(/\(\s*"(\w+)"\s*,\s*"([<>]?\w+)"\s*,\s*(\d+)\s*\)/g)].map((m) => [m[1], m[2], Number(m[3])]),
  );
  const spans = /UNIT_SPAN_FIELDS[^=]*=\s*\(([\s\S]*?)\n\)/.exec(py);
  assert.ok(spans, "found UNIT_SPAN_FIELDS");
  assert.deepEqual([...P.UNIT_SPAN_FIELDS], [...spans[1].matchAll(/"(\w+)"/g)].map((m) => m[1]));
});

test("units triple order is words, chars, bytes", () => {
  assert.deepEqual([P.UNIT_WORDS, P.UNIT_CHARS, P.UNIT_BYTES], [0, 1, 2]);
  const units = P.CHUNK_FIELDS.find((f) => f[0] === "units");
  assert.equal(units[2], 3);
});

const METRICS_PY = new URL("../../ppl_widget/core/metrics.py", import.meta.url);

test("METRIC_KEYS mirrors ppl_widget/metrics.py", () => {
  const py = readFileSync(METRICS_PY, "utf8");
  const block = /METRIC_KEYS\s*=\s*\(([\s\S]*?)\n\)/.exec(py);
  assert.ok(block, "found METRIC_KEYS");
  const keys = [...block[1].matchAll(/"(\w+)"/g)].map((m) => m[1]);
  assert.ok(keys.length >= 13);
  assert.deepEqual([...P.METRIC_KEYS], keys);
});
