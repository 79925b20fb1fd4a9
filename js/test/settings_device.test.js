import assert from "node:assert/strict";
import test from "node:test";

import { describeSettings } from "../src/panel.js";

test("describeSettings: bf16 on a CPU names the matrix products that ran", () => {
  const row = (st) => Object.fromEntries(describeSettings(st)).device;
  assert.equal(row({ device: "cpu", dtype: "bfloat16", bf16_products: "float32" }), "cpu · bfloat16 (float32 products)");
  assert.equal(row({ device: "cpu", dtype: "bfloat16", bf16_products: "native" }), "cpu · bfloat16 (native products)");
  assert.equal(row({ device: "cuda", dtype: "bfloat16" }), "cuda · bfloat16");
  assert.equal(row({ device: "cpu", dtype: "float32" }), "cpu · float32");
});
