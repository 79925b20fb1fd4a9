// One run of the live page (src/live/run.js) with a stand-in model that follows
// model_api.js: the messages are the kernel's (decodable by decode.js, contiguous, every
// target once), the window's targets reach scoreWindow as the interface says, a cancelled
// run stops, and the validator names what a model gets wrong.
import assert from "node:assert/strict";
import test from "node:test";
import { decodeChunk } from "../src/decode.js";
import { checkModel, checkScores, checkTokens } from "../src/live/model_api.js";
import { CHUNK_MAX, MSG_SETTINGS, runSettings, scoreText } from "../src/live/run.js";
import { MSG_CHUNK, MSG_DONE, MSG_RESET } from "../src/protocol.js";

/** A character-level "transformer": token = code unit + 10, BOS 1, EOS 2; surprisal of a
 * target = its id / 10 + the row's context (so a wrong row or target shows). */
function standIn(calls = []) {
  return {
    name: "stand-in",
    kind: "test",
    maxLength: 8,
    vocabSize: 300,
    prefixId: 1,
    eosId: 2,
    tokenize(text) {
      const ids = Int32Array.from(text, (c) => c.charCodeAt(0) + 10);
      const offsets = new Int32Array(2 * text.length);
      for (let i = 0; i < text.length; i++) offsets.set([i, i + 1], 2 * i);
      return { ids, offsets };
    },
    decode: (id) => String.fromCharCode(id - 10),
    async scoreWindow(inputIds, nTargets, topK, targetIds) {
      calls.push({ inputIds: [...inputIds], nTargets, targetIds: [...targetIds] });
      const k = topK;
      return {
        surprisal: Float64Array.from(targetIds, (t) => t / 10),
        entropy: new Float64Array(nTargets).fill(1),
        rank: new Int32Array(nTargets).fill(1),
        topkIds: new Int32Array(nTargets * k).fill(11),
        topkProbs: new Float32Array(nTargets * k).fill(0.5),
      };
    },
  };
}

async function collect(model, text, settings, cancelAfter = Infinity) {
  const out = [];
  let chunks = 0;
  for await (const [msg, buffers] of scoreText(model, text, settings, 7, () => chunks >= cancelAfter)) {
    out.push([msg, buffers]);
    if (msg.type === MSG_CHUNK) chunks++;
  }
  return out;
}

test("a run: settings, reset, contiguous chunks covering every target once, done", async () => {
  const calls = [];
  const text = "héllo world, a longer text";
  const msgs = await collect(standIn(calls), text, { max_length: 8, stride: 3, top_k: 2, add_eos: true });
  assert.deepEqual(msgs.map(([m]) => m.type).slice(0, 2), [MSG_SETTINGS, MSG_RESET]);
  assert.equal(msgs.at(-1)[0].type, MSG_DONE);
  const chunks = msgs.filter(([m]) => m.type === MSG_CHUNK).map(([m, b]) => decodeChunk(m, b));
  assert.ok(chunks.length > 3);
  let next = 0;
  const ids = [];
  for (const c of chunks) {
    assert.equal(c.start, next);
    next += c.count;
    ids.push(...c.fields.token_ids);
  }
  const n = text.length + 1; // every character, then the EOS
  assert.equal(next, n);
  assert.equal(msgs[1][0].total_tokens, n);
  assert.deepEqual(ids, [...Array.from(text, (ch) => ch.charCodeAt(0) + 10), 2]);
  // the EOS: zero-width at the end, one of every unit
  const last = chunks.at(-1);
  const e = last.count - 1;
  assert.deepEqual([last.fields.start16[e], last.fields.end16[e]], [text.length, text.length]);
  assert.deepEqual([...last.fields.units.slice(3 * e)], [1, 1, 1]);
  // scoreWindow's targets follow its inputs: the last target is not among them
  for (const c of calls) {
    const L = c.inputIds.length;
    assert.ok(L <= 8 && c.targetIds.length === c.nTargets);
    for (let i = 0; i < c.nTargets - 1; i++) assert.equal(c.targetIds[i], c.inputIds[L - c.nTargets + i + 1]);
  }
  // context length defaults to the window before each target
  assert.equal(chunks[0].fields.context_length[0], 1);
  assert.ok(Math.max(...chunks.at(-1).fields.context_length) <= 8);
  const done = msgs.at(-1)[0];
  assert.equal(done.metrics.n_tokens, n);
  assert.ok(Math.abs(done.metrics.total_nll - ids.reduce((a, t) => a + t / 10, 0)) < 1e-9);
});

test("prefix none: the first token is read, not scored; prefix_every_window puts BOS first", async () => {
  const calls = [];
  const msgs = await collect(standIn(calls), "abcdefghijkl", { prefix: "none", max_length: 4, stride: 2 });
  assert.equal(msgs[0][0].settings.n_unscored, 1);
  assert.equal(msgs[1][0].total_tokens, 11);
  const every = [];
  await collect(standIn(every), "abcdefghijkl", { max_length: 4, stride: 2, prefix_every_window: true });
  assert.ok(every.length > 2 && every.every((c) => c.inputIds[0] === 1));
});

test("a cancelled run stops between windows", async () => {
  const msgs = await collect(standIn(), "a".repeat(40), { max_length: 4, stride: 2 }, 2);
  assert.equal(msgs.filter(([m]) => m.type === MSG_CHUNK).length, 2);
  assert.ok(!msgs.some(([m]) => m.type === MSG_DONE));
});

test("settings: the model's defaults, and score()'s rules with the field they break", () => {
  const m = standIn();
  assert.deepEqual([runSettings(m).maxLength, runSettings(m).stride], [8, 4]);
  assert.throws(() => runSettings(m, { max_length: 9 }), (e) => e.field === "max_length" && /context length \(8\)/.test(e.message));
  assert.throws(() => runSettings(m, { stride: "x" }), (e) => e.field === "stride");
  assert.throws(() => runSettings(m, { prefix: "eos" }), (e) => e.field === "prefix");
  assert.throws(() => runSettings(m, { prefix: "none", prefix_every_window: true }), /needs prefix='bos'/);
});

test("the validator names what a model breaks", () => {
  const m = standIn();
  assert.equal(checkModel(m), m);
  assert.throws(() => checkModel({ ...m, scoreWindow: null }), /scoreWindow must be a function/);
  assert.throws(() => checkModel({ ...m, eosId: "2" }), /eosId must be a token id or null/);
  assert.throws(() => checkTokens({ ids: new Int32Array(2), offsets: new Int32Array(3) }, "ab"), /2 per token/);
  assert.throws(() => checkTokens({ ids: [1], offsets: [0, 1] }, "a"), /Int32Array/);
  assert.throws(() => checkTokens({ ids: new Int32Array(1), offsets: Int32Array.from([0, 5]) }, "ab"), /outside the text/);
  const good = { surprisal: new Float64Array(2), entropy: new Float64Array(2), rank: new Int32Array(2), topkIds: new Int32Array(6), topkProbs: new Float32Array(6) };
  assert.equal(checkScores(good, 2, 3), good);
  assert.throws(() => checkScores({ ...good, surprisal: new Float32Array(2) }, 2, 3), /surprisal as a Float64Array of 2/);
  assert.throws(() => checkScores({ ...good, topkIds: new Int32Array(4) }, 2, 3), /topkIds as a Int32Array of 6/);
});

test("a long window goes out in slices of CHUNK_MAX tokens, each its own targets", async () => {
  const model = { ...standIn(), maxLength: 1024 };
  const text = "x".repeat(700);
  const msgs = await collect(model, text, { top_k: 3 });
  const chunks = msgs.filter(([m]) => m.type === MSG_CHUNK).map(([m, b]) => decodeChunk(m, b));
  assert.deepEqual(chunks.map((c) => c.count), [CHUNK_MAX, CHUNK_MAX, 700 - 2 * CHUNK_MAX]);
  assert.deepEqual(chunks.map((c) => c.start), [0, CHUNK_MAX, 2 * CHUNK_MAX]);
  assert.deepEqual([...chunks[2].fields.context_length.slice(-1)], [700]);
  assert.deepEqual([...chunks[1].fields.surprisal.slice(0, 1)], [Math.fround(("x".charCodeAt(0) + 10) / 10)]);
});

// ---- a model with a key/value cache: pieces, and an edit run from its first change ----
import { PIECE_TOKENS } from "../src/live/run.js";

/** The stand-in with a cache: a row's numbers depend on every input of the window before
 * it (a hash), so a cache or a kept token from the wrong context shows. */
function cached(log = []) {
  const base = standIn();
  const row = (ctx, target) => {
    let h = 7;
    for (const id of ctx) h = (h * 31 + id) % 1000003;
    return ((h % 997) / 100) + target / 1000;
  };
  return {
    ...base,
    maxLength: 64,
    contextLength: 256,
    async scoreWindow() {
      throw new Error("a model with a cache runs in pieces");
    },
    async scorePiece(newIds, past, nTargets, topK, targetIds) {
      const ids = [...(past ? past.ids : []), ...newIds];
      log.push({ start: past ? past.ids.length : 0, n: newIds.length, window0: ids[0] });
      const L = ids.length;
      const surprisal = Float64Array.from(targetIds, (t, i) => row(ids.slice(0, L - nTargets + i + 1), t));
      const scores = {
        surprisal, entropy: surprisal.map((s) => s / 2), rank: new Int32Array(nTargets).fill(1),
        topkIds: new Int32Array(nTargets * topK).fill(11), topkProbs: new Float32Array(nTargets * topK).fill(0.5),
      };
      return { scores, past: { ids } };
    },
    truncatePast: (past, n) => ({ ids: past.ids.slice(0, n) }),
  };
}

/** A run's tokens as the view's store would hold them: {ids, surprisal, context}. */
async function runOf(model, text, settings, memory, cancelAfter = Infinity) {
  const got = { ids: [], surprisal: [], context: [], done: false, chunks: 0 };
  for await (const [msg, buffers] of scoreText(model, text, settings, 1, () => got.chunks >= cancelAfter, memory)) {
    if (msg.type === MSG_CHUNK) {
      const c = decodeChunk(msg, buffers);
      assert.equal(c.start, got.ids.length); // contiguous, from the first token
      got.ids.push(...c.fields.token_ids);
      got.surprisal.push(...c.fields.surprisal);
      got.context.push(...c.fields.context_length);
      got.chunks++;
    }
    if (msg.type === MSG_DONE) got.done = true;
    if (msg.type === MSG_SETTINGS) got.reused = msg.settings.reused_tokens;
  }
  return got;
}

const BASE = "the cat sat on the mat and looked at the dog, who did not look back at all";
const EDITS = [
  ["append a word", BASE, BASE + " today"],
  ["delete the last word", BASE, BASE.slice(0, -4)],
  ["edit in the middle", BASE, BASE.replace("looked", "glared")],
  ["delete in the middle", BASE, BASE.replace(" and looked", "")],
  ["edit across a window boundary", BASE, BASE.slice(0, 14) + "XYZ" + BASE.slice(17)],
  ["edit in the first token", BASE, "T" + BASE.slice(1)],
  ["undo an edit", BASE.replace("sat", "ran"), BASE],
  ["the same text", BASE, BASE],
];

for (const settings of [{ max_length: 24, stride: 10 }, { max_length: 64 }, { max_length: 24, stride: 10, add_eos: true, prefix: "none" }]) {
  test(`an edit run from the cache equals a run from scratch: ${JSON.stringify(settings)}`, async () => {
    for (const [name, before, after] of EDITS) {
      const memory = {};
      await runOf(cached(), before, settings, memory);
      const log = [];
      const inc = await runOf(cached(log), after, settings, memory);
      const full = await runOf(cached(), after, settings, {});
      assert.ok(inc.done && full.done, name);
      assert.deepEqual(inc.ids, full.ids, name);
      assert.deepEqual(inc.surprisal, full.surprisal, name);
      assert.deepEqual(inc.context, full.context, name);
      if (name === "the same text") assert.deepEqual(log, [], name); // nothing to run
    }
  });
}

test("an edit costs the tokens after it: an append runs the new tokens, not the window", async () => {
  const memory = {};
  await runOf(cached(), BASE, { max_length: 128 }, memory);
  const log = [];
  const appended = await runOf(cached(log), BASE + " ok", { max_length: 128 }, memory);
  // the three new tokens' rows, read over the cache of the text before them
  assert.equal(log.reduce((a, c) => a + c.n, 0), 3);
  assert.equal(appended.reused, BASE.length); // what the editor's note counts as kept
  assert.equal(log[0].start, BASE.length);
  const mid = [];
  const at = BASE.indexOf("dog");
  await runOf(cached(mid), BASE.replace("dog", "cow"), { max_length: 128 }, memory);
  assert.equal(mid[0].start, at); // from the row before the first changed token
  assert.equal(mid.reduce((a, c) => a + c.n, 0), BASE.length - at);
});

test("an edit in the last window of a long text leaves the earlier windows alone", async () => {
  const long = BASE.repeat(4); // ~300 tokens, windows of 64 every 32
  const memory = {};
  await runOf(cached(), long, { max_length: 64 }, memory);
  const log = [];
  const after = long.slice(0, -3) + "XYZ";
  const inc = await runOf(cached(log), after, { max_length: 64 }, memory);
  const full = await runOf(cached(), after, { max_length: 64 }, {});
  assert.deepEqual(inc.surprisal, full.surprisal);
  assert.ok(log.length >= 1 && log.every((c) => c.start >= 60 - 4), JSON.stringify(log)); // the last window's end only
  assert.ok(log.reduce((a, c) => a + c.n, 0) <= 5);
});

test("a window runs in pieces; a run stopped between two pieces is picked up by the next", async () => {
  const text = "y".repeat(100);
  const log = [];
  const memory = {};
  const stopped = await runOf(cached(log), text, { max_length: 128 }, memory, 1);
  assert.ok(!stopped.done && stopped.ids.length === PIECE_TOKENS);
  assert.equal(log.length, 1); // stopped after its first piece
  const more = [];
  const next = await runOf(cached(more), text + "z", { max_length: 128 }, memory);
  const full = await runOf(cached(), text + "z", { max_length: 128 }, {});
  assert.deepEqual(next.surprisal, full.surprisal);
  assert.equal(more[0].start, PIECE_TOKENS); // from the stopped run's cache
  assert.ok(more.every((c) => c.n <= PIECE_TOKENS) && more.length === Math.ceil((101 - PIECE_TOKENS) / PIECE_TOKENS));
});

test("the sentence level: the reset carries pysbd-like sentence spans, each token its sentence", async () => {
  const text = "Dr. Smith came. He left!";
  const msgs = await collect(standIn(), text, { max_length: 8, stride: 4, top_k: 1, add_eos: true });
  const [reset, buffers] = msgs.find(([m]) => m.type === MSG_RESET);
  assert.deepEqual(reset.levels, { word: 5, sentence: 2 });
  assert.equal(reset.level_notes, undefined); // no "sentences need the kernel" note any more
  assert.deepEqual([...new Int32Array(buffers[2])], [0, 16]);
  assert.deepEqual([...new Int32Array(buffers[3])], [15, 24]);
  const sentence = msgs.filter(([m]) => m.type === MSG_CHUNK).flatMap(([m, b]) => [...decodeChunk(m, b).fields.sentence]);
  // core/levels' rule: the space between the sentences goes with the next one; EOS with none
  const want = [...text].map((_, i) => (i < 15 ? 0 : 1));
  assert.deepEqual(sentence, [...want, -1]);
});
