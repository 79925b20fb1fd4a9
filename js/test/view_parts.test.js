// The view's pure parts: key moves (both views) and the display options' trait rules.
import assert from "node:assert/strict";
import test from "node:test";
import { ESCAPE, keyMove } from "../src/navigation.js";
import { ViewOptions } from "../src/view_options.js";

test("keyMove: arrows step and stop at the ends, Home/End jump, Escape, other keys ignored", () => {
  assert.equal(keyMove("ArrowRight", 3, 10), 4);
  assert.equal(keyMove("ArrowRight", 9, 10), 9);
  assert.equal(keyMove("ArrowLeft", 0, 10), 0);
  assert.equal(keyMove("ArrowLeft", -1, 10), 0); // nothing focused yet
  assert.equal(keyMove("ArrowRight", -1, 10), 0);
  assert.equal(keyMove("Home", 5, 10), 0);
  assert.equal(keyMove("End", 5, 10), 9);
  assert.equal(keyMove("Escape", 5, 10), ESCAPE);
  assert.equal(keyMove("a", 5, 10), null);
});

function fakeModel(traits) {
  const saved = [];
  return {
    saved,
    get: (k) => traits[k],
    set: (k, v) => {
      traits[k] = v;
      saved.push([k, v]);
    },
    save_changes: () => saved.push("save"),
  };
}

test("ViewOptions: bad trait values fall back, a control's change is saved, the kernel's is not", () => {
  const m = fakeModel({ color_mode: "nonsense", level: "word", surprisal_unit: "nats", bow_correction: 1, show_boundaries: true });
  const changes = [];
  const o = new ViewOptions(m, (k) => changes.push(k));
  assert.deepEqual([o.mode, o.level, o.unit, o.bow, o.boundaries], ["surprisal", "word", "nats", false, true]);
  o.set("mode", "rank");
  assert.deepEqual(m.saved, [["color_mode", "rank"], "save"]);
  o.set("mode", "rank"); // unchanged: nothing
  o.set("level", "paragraph"); // not a level: refused
  o.set("unit", "bits", false); // from the kernel: applied, not saved back
  assert.equal(o.unit, "bits");
  assert.deepEqual(changes, ["mode", "unit"]);
  assert.equal(m.saved.length, 2);
});

test("ViewOptions: a trait the kernel lacks is not created", () => {
  const m = fakeModel({});
  const o = new ViewOptions(m, () => {});
  o.set("bow", true);
  assert.equal(o.bow, true);
  assert.deepEqual(m.saved, []);
});

test("fit: the panel goes under a text column shorter than SHORT_TEXT_PX, not under a long one", async () => {
  const { isShort, SHORT_TEXT_PX } = await import("../src/fit.js");
  assert.equal(isShort(60), true);
  assert.equal(isShort(SHORT_TEXT_PX - 1), true);
  assert.equal(isShort(SHORT_TEXT_PX), false);
  assert.equal(isShort(500), false);
  assert.equal(isShort(0), false); // not laid out yet (a hidden output): leave it
});
