// The live page's Web Worker: loads the manifest's models (models/index.js picks the module
// by kind) and scores texts off the page's thread, posting the widget's own messages
// (run.js) piece by piece.  A newer text (or a cancel) stops a run between two pieces; the
// next run keeps what the edit left valid of the last one (run.js, reuse.js).
// A model loads when it is first asked for ("load", or a run with it), except the kinds
// that load at once (the n-gram: a small file): the page's reader picks what is fetched.
//
// Page -> worker:  {type: "init", baseUrl, manifest}
//                  {type: "load", name}
//                  {type: "score", runId, text, model: name, settings}
//                  {type: "cancel"}
// Worker -> page:  {type: "progress", name, loaded, total}  bytes of its files so far
//                  {type: "model", name, ok, error, info}    once per model, when loaded
//                    (info.timing: {fetch_ms, ready_ms} from the load's start)
//                  {msg, buffers}: a run's settings ({type: "settings"}: "Scored with"),
//                  then the widget's reset / chunk / done / error / settings_error messages,
//                  (buffers transferred)

import { checkModel } from "./model_api.js";
import { fetchWithProgress } from "./fetch_progress.js";
import { moduleFor } from "./models/index.js";
import { loadsOnDemand } from "./models/on_demand.js";
import { scoreText } from "./run.js";

const loaded = new Map(); // name -> Promise<Model>
let latest = 0; // the run the page wants; older ones stop
const memories = new Map(); // name -> {last}: a model's previous run, for the next edit
let running = Promise.resolve(); // the run in progress: one session.run at a time
const tick = () => new Promise((resolve) => setTimeout(resolve, 0)); // let messages in

const entries = new Map(); // name -> manifest entry
let folder = null; // the page's folder URL
const PROGRESS_MS = 100; // at most this often a progress message per model

/** The fetch a model's loader gets: files of the page's folder only, each body streamed
 * with its bytes counted (`onProgress(url, loaded, total)`). */
function fetchIn(baseUrl, onProgress) {
  return (file) => {
    const url = new URL(file, baseUrl).href;
    if (!url.startsWith(baseUrl)) throw new Error(`${url} is outside the page's folder (${baseUrl})`);
    if (!onProgress) return fetch(url);
    onProgress(url, 0, null); // asked for: its size is not known before its headers come
    return fetchWithProgress(url, (loaded, total) => onProgress(url, loaded, total));
  };
}

/** A model's files in flight: one progress message for all of them, now and then. */
function progressOf(name, timing) {
  const files = new Map(); // url -> [loaded, total]
  let last = 0;
  return (url, loaded, total) => {
    files.set(url, [loaded, total]);
    let sum = 0, all = 0, known = true;
    for (const [l, t] of files.values()) {
      sum += l;
      if (t == null) known = false;
      else all += t;
    }
    const done = known && sum === all;
    if (done) timing.fetched = performance.now();
    const now = performance.now();
    if (!done && now - last < PROGRESS_MS) return;
    last = now;
    self.postMessage({ type: "progress", name, loaded: sum, total: known ? all : null });
  };
}

function load(entry, baseUrl) {
  const timing = { start: performance.now(), fetched: null };
  const p = (async () => {
    const mod = moduleFor(entry.kind);
    const fetchFn = fetchIn(baseUrl, progressOf(entry.name, timing));
    return checkModel(await mod.load(entry, baseUrl, fetchFn), `model "${entry.name}"`);
  })();
  loaded.set(entry.name, p);
  p.then(
    (m) => {
      const ready = performance.now();
      const fetchMs = (timing.fetched ?? ready) - timing.start;
      const info = { maxLength: m.maxLength, vocabSize: m.vocabSize, timing: { fetch_ms: fetchMs, ready_ms: ready - timing.start } };
      self.postMessage({ type: "model", name: entry.name, ok: true, info });
    },
    (err) => self.postMessage({ type: "model", name: entry.name, ok: false, error: String((err && err.message) || err) }),
  );
  return p;
}

/** The model named, loading it if nobody asked for it yet. */
function modelNamed(name) {
  if (loaded.has(name)) return loaded.get(name);
  if (!entries.has(name)) return Promise.reject(new Error(`no model named "${name}" in this page`));
  return load(entries.get(name), folder);
}

const post = (msg, buffers = []) => self.postMessage({ msg, buffers }, buffers);

async function score({ runId, text, model: name, settings }) {
  latest = runId;
  const stale = () => latest !== runId;
  let model;
  try {
    model = await modelNamed(name);
  } catch (err) {
    if (!stale()) post({ type: "error", run_id: runId, message: `model "${name}" could not be loaded: ${(err && err.message) || err}` });
    return;
  }
  if (stale()) return;
  // the stale run stops after its piece in flight: then this one reads what it left
  const before = running;
  let finished;
  running = new Promise((resolve) => (finished = resolve));
  await before;
  try {
    if (stale()) return;
    if (!memories.has(name)) memories.set(name, {});
    for await (const [msg, buffers] of scoreText(model, text, settings, runId, stale, memories.get(name))) {
      if (stale()) return;
      post(msg, buffers);
      await tick();
    }
  } catch (err) {
    if (stale()) return;
    const message = String((err && err.message) || err);
    post(err && err.field ? { type: "settings_error", run_id: runId, field: err.field, message } : { type: "error", run_id: runId, message });
  } finally {
    finished();
  }
}

self.onmessage = (ev) => {
  const m = ev.data || {};
  if (m.type === "init") {
    folder = m.baseUrl;
    for (const entry of m.manifest.models) entries.set(entry.name, entry);
    // the small kinds at once; the others when chosen (no request for their files before)
    for (const entry of m.manifest.models) if (!loadsOnDemand(entry.kind) || entry.name === m.first) load(entry, folder);
  } else if (m.type === "load") modelNamed(m.name).catch(() => {}); // its "model" message says why
  else if (m.type === "score") score(m);
  else if (m.type === "cancel") latest = -1;
};
