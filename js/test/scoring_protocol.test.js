import { test } from "node:test";
import assert from "node:assert/strict";

import { describeSettings } from "../src/panel.js";

test("describeSettings: a protocol and the tokens it leaves unscored are named", () => {
  const rows = Object.fromEntries(
    describeSettings({ model: "m", prefix: null, protocol: "hf-guide", n_unscored: 1, guide_reported_ppl: 12.5 }),
  );
  assert.equal(rows.protocol, "hf-guide");
  assert.equal(rows.unscored, "1 token not scored by the protocol");
  assert.match(rows["guide prints"], /^12\.5.*one token short per window/);
  const llama = Object.fromEntries(describeSettings({ model: "m", protocol: "llama.cpp", n_unscored: 308 }));
  assert.equal(llama.unscored, "308 tokens not scored by the protocol");
  assert.ok(!("guide prints" in llama));
});

test("describeSettings: the exact protocol reads as before", () => {
  const rows = Object.fromEntries(describeSettings({ model: "m", prefix: null, protocol: "exact", n_unscored: 1 }));
  assert.ok(!("protocol" in rows));
  assert.equal(rows.unscored, "1 token at start");
});
