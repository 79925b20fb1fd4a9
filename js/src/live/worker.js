// The live page's Web Worker: loads the manifest's models (models/index.js picks the module
// by kind) and scores texts off the page's thread, posting the widget's own messages
// (run.js) piece by piece.  A newer text (or a cancel) stops a run between two pieces; the
// next run keeps what the edit left valid of the last one (run.js, reuse.js).
//
// Page -> worker:  {type: "init", baseUrl, manifest}
//                  {type: "score", runId, text, model: name, settings}
//                  {type: "cancel"}
// Worker -> page:  {type: "model", name, ok, error, info}    once per model, when loaded
//                  {msg, buffers}: a run's settings ({type: "settings"}: "Scored with"),
//                  then the widget's reset / chunk / done / error / settings_error messages,
//                  (buffers transferred)

import { checkModel } from "./model_api.js";
import { moduleFor } from "./models/index.js";
import { scoreText } from "./run.js";

const loaded = new Map(); // name -> Promise<Model>
let latest = 0; // the run the page wants; older ones stop
const memories = new Map(); // name -> {last}: a model's previous run, for the next edit
let running = Promise.resolve(); // the run in progress: one session.run at a time
const tick = () => new Promise((resolve) => setTimeout(resolve, 0)); // let messages in

/** The fetch a model's loader gets: files of the page's folder only. */
function fetchIn(baseUrl) {
  return (file) => {
    const url = new URL(file, baseUrl).href;
    if (!url.startsWith(baseUrl)) throw new Error(`${url} is outside the page's folder (${baseUrl})`);
    return fetch(url);
  };
}

function load(entry, baseUrl) {
  const p = (async () => {
    const mod = moduleFor(entry.kind);
    return checkModel(await mod.load(entry, baseUrl, fetchIn(baseUrl)), `model "${entry.name}"`);
  })();
  loaded.set(entry.name, p);
  p.then(
    (m) => self.postMessage({ type: "model", name: entry.name, ok: true, info: { maxLength: m.maxLength, vocabSize: m.vocabSize } }),
    (err) => self.postMessage({ type: "model", name: entry.name, ok: false, error: String((err && err.message) || err) }),
  );
}

const post = (msg, buffers = []) => self.postMessage({ msg, buffers }, buffers);

async function score({ runId, text, model: name, settings }) {
  latest = runId;
  const stale = () => latest !== runId;
  let model;
  try {
    if (!loaded.has(name)) throw new Error(`no model named "${name}" in this page`);
    model = await loaded.get(name);
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
  if (m.type === "init") for (const entry of m.manifest.models) load(entry, m.baseUrl);
  else if (m.type === "score") score(m);
  else if (m.type === "cancel") latest = -1;
};
