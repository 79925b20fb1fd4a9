import assert from "node:assert/strict";
import test from "node:test";

import { describeSettings } from "../src/panel.js";

test("describeSettings: a context and the BOS in every window are named", () => {
  const rows = Object.fromEntries(
    describeSettings({ model: "m", prefix: "bos", prefix_every_window: true, context: "The quick", context_tokens: 3 }),
  );
  assert.equal(rows.BOS, "in every window");
  assert.equal(rows.context, "3 tokens, read, not scored");
  const plain = Object.fromEntries(describeSettings({ model: "m", prefix: "bos", prefix_every_window: false, context_tokens: 0 }));
  assert.ok(!("BOS" in plain) && !("context" in plain));
});
