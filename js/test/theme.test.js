// The views' shared theme rule on a fake page: applied at once, again on a live switch
// (JupyterLab's body flag, or the OS scheme on an exported page), only when it changed.
import assert from "node:assert/strict";
import test from "node:test";
import { followTheme } from "../src/theme.js";

test("followTheme: the theme now, each switch once, nothing after stop", () => {
  const observers = [];
  globalThis.MutationObserver = class {
    constructor(fn) {
      this.fn = fn;
      this.on = false;
      observers.push(this);
    }
    observe() {
      this.on = true;
    }
    disconnect() {
      this.on = false;
    }
  };
  const media = { listeners: new Set(), addEventListener: (_, fn) => media.listeners.add(fn), removeEventListener: (_, fn) => media.listeners.delete(fn) };
  let flag = "true";
  const doc = { body: { getAttribute: () => flag }, defaultView: { matchMedia: () => media } };
  const el = { ownerDocument: doc };
  const classes = new Set();
  const root = { classList: { toggle: (c, on) => (on ? classes.add(c) : classes.delete(c)) } };
  const applied = [];
  const stop = followTheme(el, root, (t) => applied.push(t));
  assert.deepEqual(applied, ["light"]);
  assert.ok(classes.has("pplw-light"));
  const fire = () => observers.filter((o) => o.on).forEach((o) => o.fn());
  fire(); // a body attribute changed, not the theme: nothing to do
  assert.deepEqual(applied, ["light"]);
  flag = "false"; // JupyterLab switched to dark after the view was drawn
  fire();
  assert.deepEqual(applied, ["light", "dark"]);
  assert.ok(classes.has("pplw-dark") && !classes.has("pplw-light"));
  flag = "true";
  for (const fn of media.listeners) fn(); // the OS scheme listener runs the same check
  assert.deepEqual(applied, ["light", "dark", "light"]);
  stop();
  assert.equal(media.listeners.size, 0);
  assert.ok(observers.every((o) => !o.on));
  delete globalThis.MutationObserver;
});
