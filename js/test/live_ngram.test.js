// The live page's n-gram scorer against Python's score() with an NGramModel, on the shared
// cases (tests/cases/ngram.json, written by tests/cases/generate.py): token ids, offsets,
// units, ranks, top-k and context lengths equal; surprisal and entropy equal to the bit
// where the C library's log is correctly rounded (see src/live/float64.js), else within
// one unit in the last place.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import test from "node:test";
import { asModel, NGramModel } from "../src/live/models/ngram.js";
import { layOut, runSettings, scoreText } from "../src/live/run.js";
import { CHUNK_FIELDS, MSG_CHUNK } from "../src/protocol.js";

const ROWS = JSON.parse(readFileSync(new URL("../../tests/cases/ngram.json", import.meta.url), "utf8"));
const MODELS = new Map(ROWS.filter((r) => r.kind === "model").map((r) => [r.id, r.model]));
const CASES = ROWS.filter((r) => r.kind === "score");
const LOADED = new Map(); // model id -> NGramModel (its distributions cached across cases)
const lmOf = (id) => LOADED.get(id) || LOADED.set(id, new NGramModel(MODELS.get(id))).get(id);
const num = (v) => (v == null ? NaN : Number(v));

/** Distance in units in the last place between two doubles (0: the same bits). */
function ulps(a, b) {
  if (Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b))) return 0;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return Infinity;
  const v = new DataView(new ArrayBuffer(16));
  v.setFloat64(0, a);
  v.setFloat64(8, b);
  return Number(v.getBigInt64(0) - v.getBigInt64(8)) * (a * b > 0 ? 1 : Infinity);
}

/** Every per-token array of one case, as the worker's chunks carry them (float64 kept). */
async function scoreCase(c) {
  const model = asModel(lmOf(c.model), { name: "case" });
  const out = { word: [], words: null, token_ids: [], start16: [], end16: [], units: [], rank: [], context_length: [], topk_ids: [], topk_probs: [], surprisal: [], entropy: [] };
  // float64 surprisal and entropy straight from scoreWindow (the chunks carry float32)
  const inner = model.scoreWindow;
  model.scoreWindow = async (...args) => {
    const s = await inner(...args);
    out.surprisal.push(...s.surprisal);
    out.entropy.push(...s.entropy);
    return s;
  };
  for await (const [msg, buffers] of scoreText(model, c.text, c.settings, 1)) {
    if (msg.type === "reset") out.words = [...new Int32Array(buffers[0])].map((s, u) => [s, new Int32Array(buffers[1])[u]]);
    if (msg.type !== MSG_CHUNK) continue;
    const f = Object.fromEntries(CHUNK_FIELDS.map(([name, dtype], i) => [name, dtype === "<f4" ? new Float32Array(buffers[i]) : new Int32Array(buffers[i])]));
    for (const key of ["token_ids", "start16", "end16", "rank", "context_length", "word"]) out[key].push(...f[key]);
    out.units.push(...f.units);
    out.topk_ids.push(...f.topk_ids);
    out.topk_probs.push(...f.topk_probs);
  }
  return { model, out };
}

test("the n-gram cases cover every smoothing, both units, EOS, no prefix and small windows", () => {
  const kinds = new Set([...MODELS.values()].map((m) => `${m.smoothing}/${m.unit}`));
  assert.ok(kinds.has("kneser-ney/word") && kinds.has("add-k/word") && kinds.has("mle/word") && kinds.has("kneser-ney/char"));
  assert.ok(CASES.some((c) => c.is_eos.includes(true)));
  assert.ok(CASES.some((c) => c.surprisal.includes("Infinity")));
  assert.ok(CASES.some((c) => c.settings.prefix === "none"));
  assert.ok(CASES.length > 50);
});

test("n-gram: the browser's scores are Python's, token by token", async () => {
  const bad = [];
  let exact = 0;
  let values = 0;
  for (const [n, c] of CASES.entries()) {
    const { out } = await scoreCase(c);
    const label = `case ${n} (model ${c.model}, ${JSON.stringify(c.text.slice(0, 20))}, ${JSON.stringify(c.settings)})`;
    if (JSON.stringify(out.words) !== JSON.stringify(c.word_spans16)) bad.push(`${label}: word spans ${JSON.stringify(out.words)}`);
    for (const key of ["token_ids", "start16", "end16", "rank", "context_length", "topk_ids", "word"]) {
      if (JSON.stringify(out[key]) !== JSON.stringify(c[key].flat())) bad.push(`${label}: ${key} ${out[key]} != ${c[key].flat()}`);
    }
    if (JSON.stringify(out.units) !== JSON.stringify(c.units.flat())) bad.push(`${label}: units`);
    const probs = c.topk_probs.flat().map((p) => Math.fround(p));
    if (JSON.stringify(out.topk_probs) !== JSON.stringify(probs)) bad.push(`${label}: topk_probs`);
    for (const key of ["surprisal", "entropy"]) {
      const want = c[key].map(num);
      if (out[key].length !== want.length) {
        bad.push(`${label}: ${out[key].length} ${key} values, want ${want.length}`);
        continue;
      }
      want.forEach((w, i) => {
        const d = Math.abs(ulps(out[key][i], w));
        values++;
        if (d === 0) exact++;
        else if (d > 1) bad.push(`${label}: ${key}[${i}] ${out[key][i]} != ${w} (${d} ulps)`);
      });
    }
  }
  assert.deepEqual(bad, []);
  console.log(`n-gram shared cases: ${exact} of ${values} surprisal/entropy values equal to the bit`);
  assert.ok(exact >= 0.995 * values); // V8's Math.log here: 98.4%
});

test("n-gram: prefix_every_window is refused as score() refuses it", () => {
  const model = asModel(new NGramModel(MODELS.get(0)), {});
  assert.throws(() => runSettings(model, { prefix_every_window: true }), /for neural models/);
  assert.throws(() => runSettings(model, { max_length: 4, stride: 5 }), (e) => e.field === "stride" && /must not exceed max_length/.test(e.message));
  assert.equal(layOut(model, "the cat", { prefix: "none" }).nUnscored, 1);
});

test("log: correctly rounded on every case (tests/cases/log.json, mpmath at 200 bits)", async () => {
  const { log } = await import("../src/live/float64.js");
  const cases = JSON.parse(readFileSync(new URL("../../tests/cases/log.json", import.meta.url), "utf8"));
  const hex = (s) => {
    // float.hex(): [-]0x1.hhhp±e or 0x0.hhhp-1022 (subnormal)
    const m = /^(-?)0x([01])\.([0-9a-f]*)p([+-]\d+)$/.exec(s);
    const mant = BigInt(`0x${m[2]}${m[3].padEnd(13, "0")}`);
    const e = Number(m[4]) - 52;
    const v = e < -1000 ? Number(mant) * 2 ** (e + 600) * 2 ** -600 : Number(mant) * 2 ** e; // exact
    return m[1] ? -v : v;
  };
  const bad = cases.filter((c) => log(hex(c.x)) !== hex(c.log)).map((c) => `${c.x}: ${log(hex(c.x))} != ${hex(c.log)}`);
  assert.ok(cases.length > 500);
  assert.deepEqual(bad, []);
  // and V8's own Math.log is not: the table tells them apart
  assert.ok(cases.some((c) => Math.log(hex(c.x)) !== hex(c.log)));
});
