// Static host of ppl-widget: runs the widget's own front-end bundle in a page
// with no kernel (an exported HTML file, a notebook's text/html fallback).
//
// The page (ppl_widget/views/export.py) holds, inside one container element:
//   <script type="application/json" class="pplw-esm">  the bundle's source, a JSON string
//   <script type="application/json" class="pplw-state"> {state, buffers: [{path, data}]}
//   <script>  this file, built as a classic script (IIFE)
// `state` is the widget's synced traits; `buffers` are its binary values
// (base64), put back at `path` as bytes, as a widget manager would.
// This script builds a stand-in for the anywidget model (get/set/on/off/send/
// save_changes) from them and calls the bundle's render().  Nothing here
// parses markup: every value reaches the DOM through the view's own
// textContent-only code.

/** Base64 -> Uint8Array over a fresh (aligned) ArrayBuffer. */
export function fromBase64(b64) {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** Put each decoded buffer back into `state` at its path (list of keys). */
export function restoreBuffers(state, buffers) {
  for (const { path, data } of buffers || []) {
    if (!Array.isArray(path) || path.length === 0) throw new Error("buffer without a path");
    let obj = state;
    for (const key of path.slice(0, -1)) {
      if (obj == null || typeof obj !== "object") throw new Error(`bad buffer path ${path.join(".")}`);
      obj = obj[key];
    }
    obj[path[path.length - 1]] = new DataView(fromBase64(data).buffer);
  }
  return state;
}

/**
 * The model interface anywidget hands to render(), backed by a plain object.
 * set() notifies `change:<key>` listeners as a live model does; send() and
 * save_changes() have no kernel to reach, so they do nothing.
 */
export class StaticModel {
  constructor(state) {
    this.state = { ...state };
    this.handlers = new Map();
    this.sent = []; // messages a live widget would have sent (kept for tests)
  }

  get(key) {
    return this.state[key];
  }

  set(key, value) {
    const old = this.state[key];
    this.state[key] = value;
    if (old !== value) this._emit(`change:${key}`, value);
  }

  on(name, fn) {
    for (const n of String(name).split(/\s+/)) {
      if (!this.handlers.has(n)) this.handlers.set(n, new Set());
      this.handlers.get(n).add(fn);
    }
  }

  off(name, fn) {
    if (name == null) {
      this.handlers.clear();
      return;
    }
    for (const n of String(name).split(/\s+/)) {
      if (fn == null) this.handlers.delete(n);
      else if (this.handlers.has(n)) this.handlers.get(n).delete(fn);
    }
  }

  send(content) {
    this.sent.push(content);
  }

  save_changes() {}

  _emit(name, value) {
    for (const fn of [...(this.handlers.get(name) || [])]) fn(this, value);
  }
}

const modules = new Map(); // bundle source -> Promise of its module (one per page)

function importBundle(source) {
  if (!modules.has(source)) {
    const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
    modules.set(
      source,
      import(/* webpackIgnore: true */ url).finally(() => URL.revokeObjectURL(url)),
    );
  }
  return modules.get(source);
}

function fail(box, err) {
  console.error("[ppl-widget] static page", err);
  const note = document.createElement("div");
  note.className = "pplw-static-error";
  note.textContent = `ppl-widget: the page could not be drawn (${err && err.message ? err.message : err})`;
  box.appendChild(note);
}

/** Draw the widget inside `box` from its embedded bundle and state. */
export async function mount(box) {
  const esmEl = box.querySelector(":scope > script.pplw-esm");
  const stateEl = box.querySelector(":scope > script.pplw-state");
  const el = box.querySelector(":scope > .pplw-mount");
  if (!esmEl || !stateEl || !el) throw new Error("the page is missing a part (bundle, state or mount)");
  const payload = JSON.parse(stateEl.textContent);
  const state = restoreBuffers(payload.state, payload.buffers);
  const mod = await importBundle(JSON.parse(esmEl.textContent));
  const widget = mod.default;
  const model = new StaticModel(state);
  widget.render({ model, el });
  box.classList.add("pplw-static-ready");
  return model;
}

const me = typeof document !== "undefined" ? document.currentScript : null;
if (me && me.parentElement) {
  const box = me.parentElement;
  mount(box)
    .then((model) => {
      box.pplwModel = model; // for tests and the curious
    })
    .catch((err) => fail(box, err));
}
