import assert from "node:assert/strict";
import test from "node:test";

import { debounced, TextEditor } from "../src/editor.js";

/** A clock whose time moves only when told. */
function fakeClock() {
  let now = 0;
  let next = 1;
  const timers = new Map();
  return {
    setTimeout(fn, ms) {
      const id = next++;
      timers.set(id, { at: now + ms, fn });
      return id;
    },
    clearTimeout(id) {
      timers.delete(id);
    },
    advance(ms) {
      now += ms;
      for (const [id, t] of [...timers].sort((a, b) => a[1].at - b[1].at)) {
        if (t.at <= now) {
          timers.delete(id);
          t.fn();
        }
      }
    },
  };
}

test("typing sends nothing until a pause, then only the latest text", () => {
  const clock = fakeClock();
  const sent = [];
  const d = debounced((v) => sent.push(v), 400, clock);
  d.push("a");
  clock.advance(200);
  d.push("ab");
  clock.advance(399);
  assert.deepEqual(sent, []);
  assert.equal(d.pending, true);
  clock.advance(1);
  assert.deepEqual(sent, ["ab"]);
  assert.equal(d.pending, false);
  clock.advance(1000);
  assert.deepEqual(sent, ["ab"]); // once per pause
});

test("flush sends a pending text at once (leaving the box); cancel drops it", () => {
  const clock = fakeClock();
  const sent = [];
  const d = debounced((v) => sent.push(v), 400, clock);
  d.push("x");
  d.flush();
  assert.deepEqual(sent, ["x"]);
  d.flush(); // nothing pending: nothing sent
  assert.deepEqual(sent, ["x"]);
  d.push("y");
  d.cancel();
  clock.advance(1000);
  assert.deepEqual(sent, ["x"]);
});

test("the note says how many tokens the last edit scored again", () => {
  assert.equal(TextEditor.rescoredNote({ reused_tokens: 1536 }, 2000), "last edit: 464 of 2,000 tokens scored again");
  assert.equal(TextEditor.rescoredNote({}, 2000), null); // a first run
  assert.equal(TextEditor.rescoredNote(null, 5), null);
});

test("the wait can change between pauses (the live page fits it to its model)", () => {
  const clock = fakeClock();
  const sent = [];
  const d = debounced((v) => sent.push(v), 400, clock);
  assert.equal(d.wait, 400);
  d.wait = 150;
  d.push("a");
  clock.advance(149);
  assert.deepEqual(sent, []);
  clock.advance(1);
  assert.deepEqual(sent, ["a"]);
});
