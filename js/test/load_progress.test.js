import assert from "node:assert/strict";
import test from "node:test";

import { installFakeDocument } from "./fake_dom.js";

installFakeDocument();

const { ProgressRow } = await import("../src/toolbar.js");

test("a first-time model preparation shows its note and how far it is", () => {
  const row = new ProgressRow(() => {});
  const note = "preparing the model, first time only, ~20 s";
  row.update("loading", null, 0, { message: note, fraction: 0.42 });
  assert.equal(row.status.textContent, "loading");
  assert.equal(row.text.textContent, `${note} · 42%`);
  assert.equal(row.fill.style.width, "42.0%");
  assert.equal(row.bar.attributes["aria-valuenow"], "42");
  assert.equal(row.cancel.disabled, false);
  // once scoring starts, the note gives way to the token progress
  row.update("scoring", { done: 3, total: 10 }, 3, { message: note, fraction: 1 });
  assert.equal(row.text.textContent, "3 / 10 tokens");
  assert.equal(row.fill.style.width, "30.0%");
});

test("a load with nothing to prepare shows the plain status", () => {
  const row = new ProgressRow(() => {});
  row.update("loading", null, 0, undefined);
  assert.equal(row.status.textContent, "loading");
  assert.equal(row.text.textContent, "");
  assert.equal(row.fill.style.width, "0.0%");
});
