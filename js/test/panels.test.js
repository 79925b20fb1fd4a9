// The panels' controls as a person meets them: Cancel only while something runs; a model
// with no window (an n-gram model) shows no window lines or controls; the BOS checkbox
// reads its words beside it.
import assert from "node:assert/strict";
import test from "node:test";

import { installFakeDocument } from "./fake_dom.js";

installFakeDocument();

const { ProgressRow } = await import("../src/toolbar.js");
const { SettingsPanel, WINDOW_CONTROLS, describeSettings } = await import("../src/panel.js");

const texts = (el) => (el.children || []).flatMap((c) => [c.textContent, ...texts(c)]).filter(Boolean);

test("Cancel shows only while a run can be cancelled: gone once done, errored or idle", () => {
  const row = new ProgressRow(() => {});
  for (const status of ["loading", "scoring"]) {
    row.update(status, { done: 1, total: 4 }, 1, null);
    assert.equal(row.cancel.hidden, false, status);
    assert.equal(row.cancel.disabled, false, status);
  }
  for (const status of ["done", "error", "cancelled", "idle"]) {
    row.update(status, { done: 4, total: 4, elapsed_s: 1 }, 4, null);
    assert.equal(row.cancel.hidden, true, status);
  }
});

const NEURAL = { model: "smollm2", max_length: 1024, stride: 512, prefix: "bos", device: "cpu", dtype: "float32" };
const NGRAM = { ...NEURAL, model: "bigram Kneser-Ney (words)", dtype: "float64", windowless: true };

test("an n-gram model's settings have no window or device line; a neural model's have both", () => {
  const neural = Object.fromEntries(describeSettings(NEURAL));
  // each name keeps its number (no-break spaces): a narrow panel wraps between the two
  assert.equal(neural.window, "max_length\u00a01024 · stride\u00a0512");
  assert.equal(neural.device, "cpu · float32");
  const ngram = Object.fromEntries(describeSettings(NGRAM));
  assert.equal(ngram.model, "bigram Kneser-Ney (words)");
  assert.ok(!("window" in ngram) && !("device" in ngram), JSON.stringify(ngram));
  assert.ok(!Object.values(ngram).some((v) => v.includes("float64")));
});

test("the settings panel hides the window controls for an n-gram model, shows them again for a neural one", () => {
  const panel = new SettingsPanel(() => {});
  panel.setSettings(NGRAM);
  for (const name of WINDOW_CONTROLS) assert.equal(panel.fields[name].hidden, true, name);
  assert.equal(panel.fields.prefix.hidden, false);
  assert.ok(!texts(panel.list).some((t) => /max_length|float64/.test(t)), texts(panel.list).join(" | "));
  panel.setSettings(NEURAL);
  for (const name of WINDOW_CONTROLS) assert.equal(panel.fields[name].hidden, false, name);
  assert.ok(texts(panel.list).includes("max_length\u00a01024 · stride\u00a0512"));
});

test("the BOS checkbox sits inside its label, beside words a person reads (not the raw trait name)", () => {
  const panel = new SettingsPanel(() => {});
  const field = panel.fields.prefix_every_window;
  const label = field.children[0];
  assert.equal(label.tag, "label");
  assert.equal(label.children[0], panel.every); // the box first, its words beside it
  assert.equal(label.children[1].textContent, "BOS in every window");
  assert.ok(!texts(field).includes("prefix_every_window"));
  // the text fields keep their name above the input
  assert.equal(panel.fields.max_length.children[0].textContent, "max_length");
});
