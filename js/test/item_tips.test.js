// The shared item tooltip (pairs' tokens, the comparison's words) on a fake DOM: hover
// shows, keys walk a roving tabindex, Escape and leaving hide, a redraw keeps the place.
import assert from "node:assert/strict";
import test from "node:test";
import { ItemTips, itemIndexOf } from "../src/item_tips.js";

class FakeEl {
  constructor(k) {
    this.nodeType = 1;
    this.dataset = k == null ? {} : { k: String(k) };
    this.attrs = {};
    this.classes = new Set();
    this.classList = { add: (c) => this.classes.add(c), remove: (c) => this.classes.delete(c) };
    this.tabIndex = -1;
  }
  closest(sel) {
    return sel === ".it" && this.dataset.k != null ? this : null;
  }
  setAttribute(k, v) {
    this.attrs[k] = v;
  }
  removeAttribute(k) {
    delete this.attrs[k];
    if (k === "tabindex") this.tabIndex = -1;
  }
  focus() {
    doc.activeElement = this;
  }
  scrollIntoView() {}
  getBoundingClientRect() {
    return this.rect || { top: 10, bottom: 20 };
  }
}
const doc = { activeElement: null };

function setup(n = 4) {
  const items = Array.from({ length: n }, (_, k) => new FakeEl(k));
  const handlers = {};
  const container = { ownerDocument: doc, getBoundingClientRect: () => ({ top: 0, bottom: 100 }), addEventListener: (name, fn) => (handlers[name] = fn), removeEventListener: (name) => delete handlers[name], contains: (el) => items.includes(el) };
  const shown = [];
  const tooltip = { el: { id: "" }, showParts: (anchor, parts) => shown.push([anchor, parts]), hide: () => shown.push(null) };
  const tips = new ItemTips({ container, tooltip, selector: ".it", count: () => items.length, item: (k) => items[k] || null, describe: (k) => [`item ${k}`] });
  const key = (key, target = container) => {
    const ev = { key, target, prevented: false, preventDefault() { this.prevented = true; } };
    handlers.keydown(ev);
    if (doc.activeElement && doc.activeElement !== target) handlers.focusin({ target: doc.activeElement });
    return ev;
  };
  return { items, handlers, container, shown, tooltip, tips, key };
}

test("itemIndexOf: an item's data-k, -1 outside one", () => {
  assert.equal(itemIndexOf(new FakeEl(3), ".it"), 3);
  assert.equal(itemIndexOf(new FakeEl(), ".it"), -1);
  assert.equal(itemIndexOf(null, ".it"), -1);
});

test("hover shows an item's tooltip, described by it; leaving hides it", () => {
  const { items, handlers, shown, tooltip } = setup();
  assert.ok(tooltip.el.id, "the tooltip gets an id for aria-describedby");
  handlers.mouseover({ target: items[2] });
  assert.deepEqual(shown.at(-1), [items[2], ["item 2"]]);
  assert.equal(items[2].attrs["aria-describedby"], tooltip.el.id);
  assert.ok(items[2].classes.has("pplw-active"));
  handlers.mouseleave();
  assert.equal(shown.at(-1), null);
  assert.equal(items[2].attrs["aria-describedby"], undefined);
});

test("keys: an arrow from the container enters at the item in the tab order, then walks", () => {
  doc.activeElement = null;
  const { items, shown, key } = setup();
  assert.ok(key("ArrowRight").prevented);
  assert.equal(doc.activeElement, items[0]);
  key("ArrowRight", items[0]);
  assert.equal(doc.activeElement, items[1]);
  assert.equal(items[1].tabIndex, 0);
  assert.equal(items[0].tabIndex, -1, "one item in the tab order");
  assert.deepEqual(shown.at(-1), [items[1], ["item 1"]]);
  key("End", items[1]);
  assert.equal(doc.activeElement, items[3]);
  key("ArrowRight", items[3]);
  assert.equal(doc.activeElement, items[3], "stops at the end");
  key("Escape", items[3]);
  assert.equal(shown.at(-1), null);
  assert.equal(key("a", items[3]).prevented, false);
});

test("an item not drawn yet: the keys stop at the last drawn one; a redraw clamps", () => {
  const { items, tips, key } = setup(5);
  items[4] = null;
  items[3] = null;
  key("End", items[0]);
  assert.equal(doc.activeElement, items[2]);
  items.length = 2;
  tips.redrawn();
  assert.equal(tips.active, 1);
  assert.equal(items[1].tabIndex, 0);
});

test("scrolling: a hovered item's tooltip goes, a focused one in view stays, out of view goes", () => {
  doc.activeElement = null;
  const { items, handlers, shown, key } = setup();
  handlers.mouseover({ target: items[1] });
  handlers.scroll();
  assert.equal(shown.at(-1), null);
  handlers.mouseleave();
  key("ArrowRight");
  const before = shown.length;
  handlers.scroll();
  assert.deepEqual(shown.at(-1), [items[0], ["item 0"]]);
  assert.equal(shown.length, before + 1, "placed again");
  items[0].rect = { top: 200, bottom: 210 };
  handlers.scroll();
  assert.equal(shown.at(-1), null);
});
