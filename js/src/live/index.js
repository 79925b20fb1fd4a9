// The live page: the widget's own view (PplView: store, renderer, panel, tooltips,
// selection, bits/nats) in a page with no kernel, fed by a Web Worker that scores what
// the reader types (worker.js).  The page (ppl_widget/views/live_page.py) is a folder:
// index.html, this bundle, live_worker.js, widget.css, manifest.json and the models'
// files.  Every value reaches the DOM as text (the view's own textContent-only code).

import { h, setText } from "../dom.js";
import { PplView } from "../view.js";
import { StaticModel } from "../static.js";
import { MSG_CANCEL, MSG_CHUNK, MSG_DONE, MSG_ERROR, MSG_SETTINGS_ERROR, STATUS_CANCELLED, STATUS_DONE, STATUS_ERROR, STATUS_SCORING } from "../protocol.js";
import { MSG_SETTINGS } from "./run.js";
import { fittedWait, progressText, sizeText } from "./loading.js";
import { loadsOnDemand } from "./models/on_demand.js";
import { reloadForIsolation, reloadWouldIsolate, takeSavedState } from "./isolation.js";

/** The anywidget model a PplView reads, backed by the page; its custom messages come from
 * the worker, and a change the view saves (text, window settings) starts a new run. */
export class LiveModel extends StaticModel {
  constructor(state, onSave, onSend = () => {}) {
    super(state);
    this.onSave = onSave;
    this.onSend = onSend;
  }

  save_changes() {
    this.onSave();
  }

  /** What the view would send the kernel (the Cancel button's cancel message). */
  send(content) {
    super.send(content);
    this.onSend(content);
  }

  /** A kernel-shaped message for the view (StreamHandler.onMessage). */
  deliver(msg, buffers) {
    for (const fn of [...(this.handlers.get("msg:custom") || [])]) fn(msg, buffers);
  }
}

const PARAM_MODEL = "model";
/** The message a page that frames this one gets when the model in use changes ({type,
 * model}): a course page's caption names it (examples/course_site/build.py reads it). */
export const MSG_MODEL_IN_USE = "ppl-widget-live-model";
/** What survives the one reload for isolation, beside the model: the text and the view's own
 * choices (the window settings are the model's, as on any change of model). */
const KEPT = ["text", "level", "surprisal_unit", "color_mode", "show_boundaries", "bow_correction"];
const EDIT_NOTE = "Edit the text: your browser scores it again as you type (nothing leaves this page).";

/** Draw the live page in `box` from the manifest at `base` (the page's folder URL). */
export async function mountLive(box, base = document.baseURI) {
  if (location.protocol === "file:") {
    throw new Error("this page scores in a Web Worker, which browsers do not start from a file: open it through a web server (python -m http.server in its folder)");
  }
  // the worker's module loads while the manifest comes (a first visit's first colours wait
  // for both); the manifest itself is preloaded by index.html
  const worker = new Worker(new URL("live_worker.js", base), { type: "module" });
  let manifest;
  try {
    const res = await fetch(new URL("manifest.json", base));
    if (!res.ok) throw new Error(`manifest.json is missing (HTTP ${res.status})`);
    manifest = await res.json();
  } catch (err) {
    worker.terminate();
    throw err;
  }
  const entries = manifest.models || [];
  if (!entries.length) throw new Error("manifest.json lists no model");
  const saved = takeSavedState(); // what the reader did before the reload for isolation
  const wanted = saved?.model ?? new URLSearchParams(location.search).get(PARAM_MODEL);
  let entry = entries.find((e) => e.name === wanted) || entries[0];
  // a page that opens on a transformer is isolated first (threads), before anything runs
  if (loadsOnDemand(entry.kind) && reloadWouldIsolate() && (await reloadForIsolation({ model: entry.name, ...saved }))) {
    worker.terminate();
    return new Promise(() => {}); // the page is reloading
  }
  // the worker starts on the first model's files while the page draws itself
  worker.postMessage({ type: "init", baseUrl: new URL(".", base).href, manifest, first: entry.name });
  if (saved?.model === entry.name) {
    const url = new URL(location.href);
    url.searchParams.set(PARAM_MODEL, entry.name); // a later reload opens on it too
    history.replaceState(null, "", url);
  }

  // ---- the page's own controls: which model, and what loaded --------------------------
  const picker = h("select", { class: "pplv-model", attrs: { "aria-label": "Model" } });
  for (const e of entries) picker.appendChild(h("option", { text: `${e.name} (${e.kind}, ${sizeText(e.bytes)})`, attrs: { value: e.name } }));
  picker.value = entry.name;
  const notes = h("ul", { class: "pplv-notes", attrs: { "aria-live": "polite" } });
  // the download of the model being loaded, in MB (the worker streams its files)
  const meter = h("progress", { class: "pplv-meter", attrs: { max: 1, "aria-label": "Model download" } });
  const meterText = h("span", { class: "pplv-meter-text" });
  const loading = h("div", { class: "pplv-loading", attrs: { hidden: true, role: "status" } }, meter, " ", meterText);
  const bar = h("div", { class: "pplv-bar" }, h("label", {}, "Model ", picker), notes, loading);
  const mount = h("div", { class: "pplv-mount" });
  box.append(bar, mount);

  const status = new Map(); // model name -> {ok, error}
  const note = (name, text, bad) => {
    const li = h("li", { class: bad ? "pplv-note pplv-bad" : "pplv-note", text: `${name}: ${text}` });
    li.dataset.model = name;
    notes.querySelector(`li[data-model="${CSS.escape(name)}"]`)?.remove();
    notes.appendChild(li);
  };
  const loads = new Map(); // model name -> {asked, progress, ready, fetch_ms, ready_ms} (ms)
  /** The reader picked a model the page has not loaded: the worker fetches it now. */
  const asked = (e) => {
    if (loads.has(e.name)) return;
    loads.set(e.name, { asked: performance.now(), ready: null });
    note(e.name, "loading…", false);
  };
  for (const e of entries) {
    if (loadsOnDemand(e.kind) && e !== entry) note(e.name, `not loaded (${sizeText(e.bytes)}): pick it in the menu to download it`, false);
    else asked(e);
  }
  const showLoading = () => {
    const l = loads.get(entry.name);
    const busy = !!l && l.ready === null && !status.has(entry.name) && loadsOnDemand(entry.kind);
    loading.hidden = !busy;
    if (!busy) return;
    const p = l.progress || { loaded: 0, total: null };
    if (p.total) meter.max = p.total;
    if (p.total) meter.value = Math.min(p.loaded, p.total);
    else meter.removeAttribute("value"); // no length: the bar moves without a measure
    setText(meterText, `${entry.name}: ${progressText(p.loaded, p.total)}`);
  };
  const costs = new Map(); // model name -> the last whole run's ms
  const fitWait = () => {
    if (view) view.editor.send.wait = fittedWait(costs.get(entry.name));
  };

  let view = null; // the PplView, once drawn
  let runId = 0;
  let lastGood = null; // the window settings of the last run that started
  const model = new LiveModel(
    {
      text: manifest.text || "",
      status: "idle",
      error: "",
      settings: {},
      max_length: entry.settings?.max_length ?? null,
      stride: entry.settings?.stride ?? null,
      prefix: entry.settings?.prefix ?? "bos",
      prefix_every_window: entry.settings?.prefix_every_window === true,
      result_data: null,
      editable: true,
      color_mode: "surprisal",
      show_boundaries: false,
      level: "token",
      surprisal_unit: "bits",
      bow_correction: false,
      ...Object.fromEntries(KEPT.filter((k) => saved && k in saved).map((k) => [k, saved[k]])),
    },
    () => schedule(),
    (content) => {
      if (!content || content.type !== MSG_CANCEL || model.get("status") !== STATUS_SCORING) return;
      worker.postMessage({ type: "cancel" }); // the worker stops between windows
      if (typing()) {
        // the text typed since the last run is not scored either: it is the page's text,
        // unscored (the box keeps it, and the next edit scores it)
        view.editor.send.cancel();
        runId += 1;
        model.set("text", view.editor.box.value);
      } else {
        // the view keeps what was scored, as a widget's cancelled run: partial
        model.deliver({ type: MSG_DONE, run_id: runId, partial: true, metrics: null }, []);
        runId += 1; // what is still on its way belongs to no run the page shows
      }
      model.set("status", STATUS_CANCELLED);
    },
  );

  /** The editor holds a text newer than the page's (its pause before the run not over). */
  const typing = () => !!view && view.editor.send.pending;
  /** A run ended: "done" only when the text it scored is still the reader's; while a newer
   * one waits for the editor's pause, the page is still scoring (that text's run comes). */
  const ended = (status) => model.set("status", typing() ? STATUS_SCORING : status);

  let pending = false;
  function schedule() {
    if (pending) return;
    pending = true;
    queueMicrotask(() => {
      pending = false;
      start();
    });
  }

  const timings = []; // per run: {runId, model, start, firstPaint, done, tokens} (ms)
  function start() {
    runId += 1;
    timings.push({ runId, model: entry.name, start: performance.now(), firstPaint: null, done: null, tokens: 0 });
    model.set("error", "");
    model.set("status", STATUS_SCORING);
    const st = entry.settings || {};
    worker.postMessage({
      type: "score",
      runId,
      text: model.get("text") || "",
      model: entry.name,
      settings: {
        max_length: model.get("max_length"),
        stride: model.get("stride"),
        prefix: model.get("prefix"),
        prefix_every_window: model.get("prefix_every_window") === true,
        add_eos: st.add_eos === true,
        top_k: st.top_k,
      },
    });
  }

  worker.onmessage = (ev) => {
    const d = ev.data || {};
    if (d.type === "progress") {
      const l = loads.get(d.name);
      if (l) l.progress = { loaded: d.loaded, total: d.total };
      if (d.name === entry.name) showLoading();
      return;
    }
    if (d.type === "model") {
      status.set(d.name, d);
      const l = loads.get(d.name);
      if (l) Object.assign(l, { ready: performance.now() }, d.info?.timing);
      showLoading();
      note(d.name, d.ok ? `ready (${sizeText(entries.find((e) => e.name === d.name)?.bytes)})` : d.error, !d.ok);
      if (!d.ok) {
        picker.querySelector(`option[value="${CSS.escape(d.name)}"]`)?.setAttribute("disabled", "");
        fallBack(d.name);
      }
      return;
    }
    const { msg, buffers } = d;
    if (!msg || msg.run_id !== runId) return; // a run the page has moved on from
    if (msg.type === MSG_SETTINGS) {
      const s = msg.settings;
      model.set("settings", s);
      lastGood = { max_length: s.max_length, stride: s.stride, prefix: s.prefix === "bos" ? "bos" : "none", prefix_every_window: s.prefix_every_window };
      for (const [key, value] of Object.entries(lastGood)) model.set(key, value);
      return;
    }
    if (msg.type === MSG_SETTINGS_ERROR && lastGood) {
      // refused: the controls keep what was typed (and say why), the traits the last
      // settings that scored, so the next edit scores with them
      for (const [key, value] of Object.entries(lastGood)) model.set(key, value);
    }
    model.deliver(msg, buffers);
    const t = timings[timings.length - 1];
    if (msg.type === MSG_CHUNK) {
      t.tokens += msg.count;
      if (t.firstPaint === null) {
        t.firstPaint = -1; // the view draws in the next frame: time that
        requestAnimationFrame(() => (t.firstPaint = performance.now()));
      }
    }
    if (msg.type === MSG_DONE) {
      t.done = performance.now();
      if (!msg.partial) costs.set(t.model, t.done - t.start);
      fitWait();
    }
    if (msg.type === MSG_DONE || msg.type === MSG_SETTINGS_ERROR) ended(STATUS_DONE);
    else if (msg.type === MSG_ERROR) model.set("status", STATUS_ERROR);
  };
  worker.onerror = (ev) => {
    model.set("error", `the scoring worker failed: ${ev.message || "live_worker.js could not be loaded"}`);
    model.set("status", STATUS_ERROR);
  };

  let reloading = false;
  picker.addEventListener("change", () => {
    const next = entries.find((e) => e.name === picker.value) || entry;
    if (reloading) return;
    if (loadsOnDemand(next.kind) && !loads.has(next.name) && reloadWouldIsolate()) {
      // threads first: one reload (what the reader did is kept), then the download
      reloading = true;
      note(next.name, "reloading the page once, for threads (cross-origin isolation)…", false);
      const state = { model: next.name, ...Object.fromEntries(KEPT.map((k) => [k, model.get(k)])) };
      reloadForIsolation(state).then((gone) => {
        if (gone) return;
        reloading = false; // the worker never came: load it with one thread
        choose(next);
      });
      return;
    }
    choose(next);
  });

  /** Tell a page that frames this one (same origin only) which model is in use. */
  const announce = () => {
    if (window.parent !== window) window.parent.postMessage({ type: MSG_MODEL_IN_USE, model: entry.name }, location.origin);
  };

  function choose(next) {
    entry = next;
    announce();
    const url = new URL(location.href);
    url.searchParams.set(PARAM_MODEL, entry.name);
    history.replaceState(null, "", url);
    model.set("max_length", entry.settings?.max_length ?? null);
    model.set("stride", entry.settings?.stride ?? null);
    model.set("prefix", entry.settings?.prefix ?? "bos");
    model.set("prefix_every_window", entry.settings?.prefix_every_window === true);
    asked(entry); // its run asks the worker for it; the bar shows the download
    showLoading();
    fitWait();
    start();
  }

  // the model shown cannot load: show the first one that can (the n-gram is small)
  function fallBack(failed) {
    if (entry.name !== failed) return;
    // the n-gram first: it loads at once (another transformer would start a download)
    const usable = entries.filter((e) => e.name !== failed && !(status.get(e.name) && !status.get(e.name).ok));
    const other = usable.find((e) => !loadsOnDemand(e.kind)) || usable[0];
    if (!other) return;
    picker.value = other.name;
    picker.dispatchEvent(new Event("change"));
  }

  showLoading();
  view = new PplView(model, mount);
  fitWait();
  // the editor's note speaks of the kernel's re-scoring; here the browser scores it all
  view.editor.setNote = (s) => setText(view.editor.note, s || EDIT_NOTE);
  view.editor.setNote(null);
  // from the first key typed, the page is not done: its text is about to change
  view.editor.box.addEventListener("input", () => typing() && model.set("status", STATUS_SCORING));
  announce();
  start();
  return { model, view, worker, status, timings, loads };
}

const box = typeof document !== "undefined" ? document.getElementById("pplv") : null;
if (box) {
  mountLive(box)
    .then((live) => {
      box.pplwLive = live; // for tests and the curious
      box.classList.add("pplv-ready");
    })
    .catch((err) => {
      console.error("[ppl-widget] live page", err);
      box.appendChild(h("div", { class: "pplv-error", attrs: { role: "alert" }, text: `ppl-widget: the live page could not start (${(err && err.message) || err})` }));
    });
}
