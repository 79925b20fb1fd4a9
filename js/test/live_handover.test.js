// A run that a newer text stops hands over to the newer text's run.  run.js: what a stopped
// run leaves (memory.last) holds every row and cache of the run before it that the edit left
// valid, however early it stopped.  worker.js: a stand-in model with a key/value cache whose
// pieces the test paces, a text typed at several moments of a run (before its first piece,
// during and after a piece, after its last), and what the page's TokenStore (fed as index.js
// feeds it) holds at the end is the newest text's run from scratch, and "done".
import assert from "node:assert/strict";
import test from "node:test";

import { decodeChunk } from "../src/decode.js";
import { KINDS } from "../src/live/models/index.js";
import { scoreText } from "../src/live/run.js";
import { MSG_CHUNK, MSG_DONE } from "../src/protocol.js";
import { StreamHandler } from "../src/stream.js";
import { TokenStore } from "../src/store.js";

/** A character-level model with a cache: token = code unit + 10, BOS 1; a row's numbers
 * hash every input of the window before it, so a row read over the wrong cache shows.
 * `onStart(n)` / `onEnd(n)` are called as its n-th piece (0, 1, ... over all runs) begins
 * and as it gives its rows; the piece takes a task's time (a real one: a session.run). */
function pacedModel(onStart = () => {}, onEnd = () => {}) {
  let pieces = 0;
  const row = (ctx, target) => {
    let h = 7;
    for (const id of ctx) h = (h * 31 + id) % 1000003;
    return (h % 997) / 100 + target / 1000;
  };
  return {
    name: "paced", kind: "paced", maxLength: 64, contextLength: 256, vocabSize: 300, prefixId: 1, eosId: 2,
    tokenize(text) {
      const ids = Int32Array.from(text, (c) => c.charCodeAt(0) + 10);
      const offsets = new Int32Array(2 * text.length);
      for (let i = 0; i < text.length; i++) offsets.set([i, i + 1], 2 * i);
      return { ids, offsets };
    },
    decode: (id) => String.fromCharCode(id - 10),
    async scoreWindow() {
      throw new Error("a model with a cache runs in pieces");
    },
    async scorePiece(newIds, past, nTargets, topK, targetIds) {
      const n = pieces++;
      onStart(n);
      await new Promise((r) => setTimeout(r, 0));
      const ids = [...(past ? past.ids : []), ...newIds];
      const L = ids.length;
      const surprisal = Float64Array.from(targetIds, (t, i) => row(ids.slice(0, L - nTargets + i + 1), t));
      const scores = {
        surprisal, entropy: surprisal.map((s) => s / 2), rank: new Int32Array(nTargets).fill(1),
        topkIds: new Int32Array(nTargets * topK).fill(11), topkProbs: new Float32Array(nTargets * topK).fill(0.5),
      };
      onEnd(n);
      return { scores, past: { ids } };
    },
    pieces: () => pieces,
    truncatePast: (past, n) => ({ ids: past.ids.slice(0, n) }),
  };
}

// ---- run.js: what a stopped run hands to the next (the worker's memory.last) ----------

/** Messages of a run of `text` until `stopAfter` of them were taken (the worker stops a run
 * between two of its messages, or between two pieces); the model's pieces in `log`. */
async function stoppedRun(text, memory, stopAfter) {
  const model = pacedModel();
  let taken = 0;
  const gen = scoreText(model, text, { max_length: 64 }, 1, () => taken >= stopAfter, memory);
  for await (const _ of gen) {
    void _;
    if (++taken >= stopAfter) break; // the worker's `return` on a newer text
  }
}

/** The pieces a run of `text` runs over `memory`, each {start: inputs read before it}. */
async function piecesOf(text, memory) {
  const starts = [];
  const model = pacedModel();
  const scorePiece = model.scorePiece;
  model.scorePiece = (ids, past, ...rest) => (starts.push(past ? past.ids.length : 0), scorePiece(ids, past, ...rest));
  const got = { ids: [], surprisal: [], context: [] };
  for await (const [msg, buffers] of scoreText(model, text, { max_length: 64 }, 1, () => false, memory)) {
    if (msg.type !== MSG_CHUNK) continue;
    const c = decodeChunk(msg, buffers);
    got.ids.push(...c.fields.token_ids);
    got.surprisal.push(...c.fields.surprisal);
    got.context.push(...c.fields.context_length);
  }
  return { starts, got };
}

const SHORT = "name\tage\tcity\nann\t31\toslo\nbob\t27\tlima\n"; // one window of 64

for (const stopAfter of [1, 2, 3]) {
  test(`a run stopped after ${stopAfter} message(s), before its first piece, hands the last run's rows and cache on`, async () => {
    const memory = {};
    await piecesOf(SHORT, memory); // scored in full: its cache covers the window
    await stoppedRun(SHORT + "The", memory, stopAfter); // settings, reset, kept chunk: then a newer text
    const next = SHORT + "The table";
    const { starts, got } = await piecesOf(next, memory);
    assert.deepEqual(got, await fromScratch(next));
    // the new tokens only, over the cache of the text before them (not the window again)
    assert.ok(starts.length >= 1 && starts[0] >= SHORT.length, JSON.stringify(starts));
  });
}

test("a run stopped between pieces hands on its rows and cache; one stopped in a middle edit too", async () => {
  const memory = {};
  await piecesOf(SHORT, memory);
  const edited = SHORT.replace("bob", "rob");
  await stoppedRun(edited + "The table ends", memory, 4); // its first piece's rows went out
  const next = edited + "The table ends here";
  const { starts, got } = await piecesOf(next, memory);
  assert.deepEqual(got, await fromScratch(next));
  assert.ok(starts[0] >= SHORT.indexOf("bob"), JSON.stringify(starts)); // not from the start
});

// the worker module reads `self`; one instance for the file, a model name per case (the
// worker keeps a model's last run per name)
const posted = [];
globalThis.self = { postMessage: (data) => posted.push(data) };
let current = null; // the model the stand-in kind loads next
KINDS.paced = { load: async () => current };
await import("../src/live/worker.js");
const send = (data) => self.onmessage({ data });
let cases = 0;

/** The page's side (index.js): a model of its own, and the messages of its newest run only
 * into the view's TokenStore. */
class Page {
  constructor(model) {
    this.name = `paced ${++cases}`;
    this.runId = 0;
    this.store = new TokenStore();
    this.status = "idle";
    this.text = "";
    this.stream = new StreamHandler({ get: () => this.text, send: () => {} }, this.store, { recolorFrom() {}, settingsError() {}, changed() {} });
    this.seen = posted.length;
    current = model;
    send({ type: "init", baseUrl: "http://page/", manifest: { models: [{ name: this.name, kind: "paced" }] }, first: this.name });
  }

  /** The reader's text reaches the page: the view forgets the old run, a new one starts. */
  type(text) {
    this.text = text;
    this.store.invalidate();
    this.runId += 1;
    this.status = "scoring";
    send({ type: "score", runId: this.runId, text, model: this.name, settings: { max_length: 64 } });
  }

  /** Deliver what the worker posted since last time. */
  drain() {
    for (const d of posted.splice(0)) {
      const { msg, buffers } = d;
      if (!msg || msg.run_id !== this.runId) continue;
      this.stream.onMessage(msg, buffers);
      if (msg.type === MSG_DONE) this.status = "done";
      if (msg.type === "error") this.status = `error: ${msg.message}`;
    }
  }

  /** Until the page's run is over (the worker's messages come as tasks). */
  async settle() {
    for (let i = 0; i < 10000; i++) {
      await new Promise((r) => setTimeout(r, 0));
      this.drain();
      if (this.status !== "scoring") return this.status;
    }
    return this.status;
  }

  held() {
    const s = this.store, n = s.length;
    return { ids: [...s.token_ids.slice(0, n)], surprisal: [...s.surprisal.slice(0, n)], context: [...s.context_length.slice(0, n)] };
  }
}

/** What a run of `text` from scratch gives, as the store holds it (float32). */
async function fromScratch(text) {
  const got = { ids: [], surprisal: [], context: [] };
  for await (const [msg, buffers] of scoreText(pacedModel(), text, { max_length: 64 }, 1, () => false, {})) {
    if (msg.type !== MSG_CHUNK) continue;
    const c = decodeChunk(msg, buffers);
    got.ids.push(...c.fields.token_ids);
    got.surprisal.push(...c.fields.surprisal);
    got.context.push(...c.fields.context_length);
  }
  return got;
}

// tab-separated columns, ~100 tokens: windows of 64 every 32, pieces of 32
const BASE = "name\tage\tcity\nann\t31\toslo\nbob\t27\tlima\ncyd\t45\tbonn\ndee\t38\tkiev\neve\t29\tnice\n";
const EDITS = [
  ["an append", BASE + "The table", BASE + "The table ends here."],
  ["an edit in the middle", BASE + "The table", BASE.replace("bob", "rob") + "The table"],
];

/** BASE scored, then `first` typed, and `second` typed at a moment of first's run:
 * "with it" (before the worker took first), or {piece, phase}: while first's piece
 * `piece` (0, 1, ...) runs ("start"), or as the worker posts that piece's rows ("end").
 * Returns the page once its run is over. */
async function handOver(first, second, moment) {
  let page = null;
  let from = null; // the model's piece count when first's run began
  let typed = false;
  const typeSecond = () => {
    if (!typed) page.type(second);
    typed = true;
  };
  const model = pacedModel(
    (n) => from !== null && moment.phase === "start" && n - from === moment.piece && typeSecond(),
    (n) => from !== null && moment.phase === "end" && n - from === moment.piece && setTimeout(typeSecond, 0),
  );
  page = new Page(model);
  page.type(BASE);
  assert.equal(await page.settle(), "done");
  from = model.pieces();
  page.type(first);
  if (moment === "with it") typeSecond();
  const status = await page.settle();
  return { page, status, typed, pieces: model.pieces() - from };
}

const MOMENTS = ["with it", { piece: 0, phase: "start" }, { piece: 0, phase: "end" }, { piece: 1, phase: "start" }, { piece: 1, phase: "end" }, "last"];

for (const [name, first, second] of EDITS) {
  test(`${name}, typed at several moments of the run before it: the page ends done with the new text's numbers`, async () => {
    const want = await fromScratch(second);
    // how many pieces first's run takes on its own: "last" is its last piece
    const alone = await handOver(first, first, "with it");
    assert.equal(alone.status, "done");
    assert.ok(alone.pieces >= 2, `first's run has ${alone.pieces} pieces`);
    for (const m of MOMENTS) {
      const moment = m === "last" ? { piece: alone.pieces - 1, phase: "end" } : m;
      const { page, status, typed } = await handOver(first, second, moment);
      const label = `${name} at ${JSON.stringify(moment)}`;
      assert.ok(typed, `${label}: the second text was typed`);
      assert.equal(status, "done", label);
      assert.equal(page.store.totalTokens, want.ids.length, label);
      assert.deepEqual(page.held(), want, label);
    }
  });
}
