// A divergence view: KL as a colour mode with its own (log) scale, the second model's
// fields decoded from result_data.divergence, and the tooltip's details of both models.
import assert from "node:assert/strict";
import test from "node:test";

import { binFor, KL_MAX_NATS, KL_MIN_NATS, legendFor, MODES, NBINS } from "../src/colors.js";
import { decodeResult } from "../src/decode.js";
import { TokenStore } from "../src/store.js";
import { divergenceDetails, fmtDeltaP, fmtKl, tokenDetails } from "../src/tooltip.js";

const f32 = (a) => new Uint8Array(Float32Array.from(a).buffer);
const i32 = (a) => new Uint8Array(Int32Array.from(a).buffer);

function resultData(withDivergence = true) {
  const rd = {
    count: 2,
    top_k: 2,
    run_id: 1,
    vocab: { 5: "a", 6: " b", 7: " c" },
    token_ids: i32([5, 6]),
    start16: i32([0, 1]),
    end16: i32([1, 3]),
    surprisal: f32([0.1, 2.0]),
    entropy: f32([0.5, 1.5]),
    rank: i32([1, 3]),
    context_length: i32([1, 2]),
    units: i32([1, 1, 1, 1, 2, 2]),
    topk_ids: i32([5, 7, 7, 5]),
    topk_probs: f32([0.9, 0.05, 0.5, 0.2]),
  };
  if (withDivergence) {
    rd.divergence = {
      labels: ["fp32", "q4_0"],
      kl: f32([0.0005, 1.2]),
      same_top: i32([1, 0]),
      other_surprisal: f32([0.2, 1.0]),
      other_entropy: f32([0.6, 1.1]),
      other_rank: i32([1, 1]),
      other_topk_ids: i32([5, 6, 6, 7]),
      other_topk_probs: f32([0.8, 0.1, 0.37, 0.3]),
    };
  }
  return rd;
}

test("KL is a mode with a log scale from KL_MIN_NATS (palest) to KL_MAX_NATS (darkest)", () => {
  assert.ok(MODES.includes("kl"));
  assert.equal(binFor("kl", 0, 0, 1, NaN, 0), 0);
  assert.equal(binFor("kl", 0, 0, 1, NaN, KL_MIN_NATS), 0);
  assert.equal(binFor("kl", 0, 0, 1, NaN, KL_MAX_NATS), NBINS - 1);
  assert.equal(binFor("kl", 0, 0, 1, NaN, 1e6), NBINS - 1);
  // each decade the same number of bins: the geometric middle is the middle bin
  const mid = Math.sqrt(KL_MIN_NATS * KL_MAX_NATS);
  assert.equal(binFor("kl", 0, 0, 1, NaN, mid), NBINS / 2);
  assert.ok(binFor("kl", 0, 0, 1, NaN, 0.01) < binFor("kl", 0, 0, 1, NaN, 0.1));
  assert.equal(binFor("kl", 0, 0, 1, NaN, NaN), -1); // no divergence data: uncoloured
  assert.equal(binFor("kl", 0, 0, 1, NaN), -1);
});

test("the KL legend: decades in nats, converted labels in bits", () => {
  const nats = legendFor("kl", "nats");
  assert.match(nats.title, /KL.*nats.*log/);
  assert.deepEqual(
    nats.ticks.map((t) => t.label),
    ["≤0.001", "0.01", "0.1", "1", "≥10"],
  );
  const bits = legendFor("kl", "bits");
  assert.equal(bits.ticks[3].label, "1.4"); // 1 nat
});

test("result_data.divergence is decoded into the store; without it there is none", () => {
  const res = decodeResult(resultData());
  assert.deepEqual(res.divergence.labels, ["fp32", "q4_0"]);
  assert.ok(Math.abs(res.divergence.fields.kl[1] - 1.2) < 1e-6);
  const st = new TokenStore();
  st.loadResult(res);
  assert.ok(st.divergence);
  st.loadResult(decodeResult(resultData(false)));
  assert.equal(st.divergence, null);
});

test("a wrong length of a divergence field is an error, not a silent misalignment", () => {
  const rd = resultData();
  rd.divergence.kl = f32([0.1]);
  assert.throws(() => decodeResult(rd), /expected 2/);
});

test("tooltip details of both models: KL, Δp, top agreement, the other's top-k", () => {
  const st = new TokenStore();
  st.loadResult(decodeResult(resultData()));
  const d = tokenDetails(st, 1, "a b");
  assert.ok(d.div);
  assert.ok(Math.abs(d.div.klNats - 1.2) < 1e-6);
  assert.equal(d.div.sameTop, false);
  assert.ok(Math.abs(d.div.deltaP - (Math.exp(-1.0) - Math.exp(-2.0))) < 1e-6);
  assert.deepEqual(
    d.div.otherAlts.map((a) => [a.text, a.isTarget]),
    [
      [" b", true],
      [" c", false],
    ],
  );
  assert.equal(d.div.targetInOtherAlts, true);
  assert.equal(d.targetInAlts, false); // the base's top 2 lack " b"
  const plain = new TokenStore();
  plain.loadResult(decodeResult(resultData(false)));
  assert.equal(divergenceDetails(plain, 0, 5), null);
});

test("Δp is a signed percentage", () => {
  assert.equal(fmtDeltaP(0.0125), "+1.25%");
  assert.equal(fmtDeltaP(-0.004), "−0.40%");
  assert.equal(fmtDeltaP(NaN), "—");
});

test("KL is shown to 3 significant digits in the unit shown", () => {
  assert.equal(fmtKl(0.01234, "nats"), "0.0123 nats");
  assert.equal(fmtKl(Math.LN2, "bits"), "1 bits");
  assert.equal(fmtKl(2e-6, "nats"), "2.00e-6 nats");
  assert.equal(fmtKl(NaN, "nats"), "—");
});
