// Side panel: metrics, selection metrics, settings and re-score controls.

import { contextCount } from "./context.js";
import { h, setText } from "./dom.js";
import { fmtExact, fmtInt, fmtMetric } from "./format.js";
import { objectiveLabels } from "./objective.js";

const PPL_UNITS = [
  ["token_ppl", "token"],
  ["word_ppl", "word"],
  ["char_ppl", "char"],
  ["byte_ppl", "byte"],
];

function section(title, extra) {
  const badge = h("span", { class: "pplw-badge", attrs: { hidden: true } });
  const titleEl = h("span", { class: "pplw-sec-title", text: title });
  const head = h("div", { class: "pplw-sec-head" }, titleEl, extra || null, badge);
  const body = h("div", { class: "pplw-sec-body" });
  const el = h("section", { class: "pplw-sec" }, head, body);
  return { el, head, body, badge, titleEl };
}

function setValue(el, x, fmt = fmtMetric) {
  setText(el, fmt(x));
  el.title = fmtExact(x);
}

/** 2x2 grid of perplexities; returns {el, set(metrics)}. */
function pplGrid(compact) {
  const cells = {};
  const el = h("div", { class: compact ? "pplw-ppl pplw-ppl-compact" : "pplw-ppl" });
  const cis = {};
  for (const [key, label] of PPL_UNITS) {
    const v = h("span", { class: "pplw-ppl-v", text: "—" });
    const ci = h("span", { class: "pplw-ppl-ci", attrs: { hidden: true } });
    cells[key] = v;
    cis[key] = ci;
    el.appendChild(h("div", { class: "pplw-ppl-cell" }, h("span", { class: "pplw-ppl-k", text: `per ${label}` }), v, ci));
  }
  return {
    el,
    set(m) {
      for (const [key] of PPL_UNITS) {
        setValue(cells[key], m ? m[key] : NaN);
        // bootstrap interval (metrics(ci=...)): [lo, hi] under the value
        const pair = m && Array.isArray(m[`${key}_ci`]) ? m[`${key}_ci`] : null;
        cis[key].hidden = !pair;
        if (pair) {
          const level = m.ci_level != null ? `${Math.round(m.ci_level * 100)}% ` : "";
          setText(cis[key], `${level}CI ${fmtMetric(pair[0])}–${fmtMetric(pair[1])}`);
          cis[key].title = `${level}bootstrap interval over ${m.ci_blocks ?? "?"} blocks: ${fmtExact(pair[0])} to ${fmtExact(pair[1])}`;
        }
      }
    },
  };
}

/** Key/value rows; returns {el, set(key, text, title)}. */
function kvList(rows) {
  const vals = {};
  const labels = {};
  const el = h("div", { class: "pplw-kv" });
  for (const [key, label] of rows) {
    const v = h("span", { class: "pplw-kv-v", text: "—" });
    vals[key] = v;
    labels[key] = h("span", { class: "pplw-kv-k", text: label });
    el.appendChild(labels[key]);
    el.appendChild(v);
  }
  return {
    el,
    set(key, text, title) {
      setText(vals[key], text);
      vals[key].title = title == null ? "" : String(title);
    },
    label(key, text) {
      setText(labels[key], text);
    },
    show(key, on) {
      labels[key].hidden = !on;
      vals[key].hidden = !on;
    },
  };
}

export class MetricsPanel {
  constructor() {
    const s = section("Perplexity");
    this.el = s.el;
    this.badge = s.badge;
    this.title = s.titleEl;
    this.labels = objectiveLabels(null);
    this.grid = pplGrid(false);
    this.kv = kvList([
      ["bpt", "bits / token"],
      ["bpc", "bits / char"],
      ["bpb", "bits / byte"],
      ["nll", "total NLL"],
      ["pplu", "PPLu"],
      ["uni", "unigram PPL"],
    ]);
    this.counts = h("div", { class: "pplw-counts" });
    this.given = h("div", { class: "pplw-given", attrs: { hidden: true } });
    s.body.append(this.given, this.grid.el, this.kv.el, this.counts);
  }

  /** Name the numbers as the result's objective does (core/metrics.py's rule): a
   * masked LM's are pseudo-perplexities, its total a pseudo-NLL (−PLL). */
  setObjective(settings) {
    const labels = objectiveLabels(settings);
    this.labels = labels;
    setText(this.title, labels.title);
    this.title.title = labels.pseudo ? `pseudo-log-likelihood (${labels.metric}): every token masked and read from both sides` : "";
    this.kv.label("nll", `total ${labels.nll}`);
  }

  /** "given a context of N tokens" when the text was scored as a continuation. */
  setContext(settings) {
    const count = contextCount(settings);
    this.given.hidden = count == null;
    setText(this.given, count == null ? "" : `given a context of ${count.label}`);
  }

  /**
   * metrics: dict with the ScoreResult.metrics() keys (null = NaN).
   * state: "empty" | "live" | "final" | "partial".
   */
  update(m, state, unit = "bits") {
    this.grid.set(m);
    const v = (k) => (m && m[k] != null ? m[k] : NaN);
    const f = unit === "nats" ? Math.LN2 : 1; // bits per unit -> the chosen unit
    for (const [key, name] of [["bpt", "token"], ["bpc", "char"], ["bpb", "byte"]]) {
      const x = v(`bits_per_${name}`) * f;
      this.kv.label(key, `${unit} / ${name}`);
      this.kv.set(key, fmtMetric(x), fmtExact(x));
    }
    const total = unit === "nats" ? v("total_nll") : v("total_bits");
    this.kv.set("nll", `${fmtMetric(total)} ${unit}`, `${fmtExact(total)} ${unit}`);
    const hasU = m && m.pplu != null;
    this.kv.show("pplu", hasU);
    this.kv.show("uni", hasU);
    if (hasU) {
      this.kv.label("pplu", m.unigram_source === "in-sample" ? "PPLu (in-sample)" : "PPLu");
      this.kv.set("pplu", fmtMetric(v("pplu")), `${fmtExact(v("pplu"))} (unigram: ${m.unigram_source ?? "?"})`);
      this.kv.set("uni", fmtMetric(v("unigram_ppl")), fmtExact(v("unigram_ppl")));
    }
    const counts = [
      [v("n_tokens"), "tokens"],
      [v("n_words"), "words"],
      [v("n_chars"), "chars"],
      [v("n_bytes"), "bytes"],
    ];
    this.counts.replaceChildren(
      ...counts.map(([n, label]) => h("span", { class: "pplw-count" }, h("b", { text: fmtInt(n), title: fmtExact(n) }), label)),
    );
    const badges = {
      live: ["live · partial", "pplw-badge pplw-badge-live", "Computed in the browser from the tokens scored so far"],
      partial: ["partial", "pplw-badge pplw-badge-warn", "The run did not score the whole text"],
      final: ["final", "pplw-badge pplw-badge-ok", "The whole text scored: the run's final numbers"],
    };
    const b = badges[state];
    this.badge.hidden = !b;
    if (b) {
      setText(this.badge, b[0]);
      this.badge.className = b[1];
      this.badge.title = b[2];
    }
  }
}

export class SelectionPanel {
  constructor() {
    const s = section("Selection");
    this.el = s.el;
    this.meta = h("div", { class: "pplw-sel-meta" });
    this.grid = pplGrid(true);
    this.kv = kvList([
      ["bpc", "bits / char"],
      ["nll", "NLL"],
    ]);
    this.labels = objectiveLabels(null);
    s.body.append(this.meta, this.grid.el, this.kv.el);
    this.el.classList.add("pplw-sel");
    this.el.hidden = true;
  }

  /** Name the selection's numbers as the result's objective does (pseudo- for PLL). */
  setObjective(settings) {
    this.labels = objectiveLabels(settings);
    this.kv.label("nll", this.labels.nll);
  }

  /** sel: null or {i0, i1, a, b, metrics}. */
  update(sel) {
    if (!sel || sel.i1 <= sel.i0) {
      this.el.hidden = true;
      return;
    }
    this.el.hidden = false;
    const n = sel.i1 - sel.i0;
    setText(
      this.meta,
      `${fmtInt(n)} token${n === 1 ? "" : "s"} (#${fmtInt(sel.i0 + 1)}–${fmtInt(sel.i1)}) · ${fmtInt(sel.metrics.n_chars)} chars · ${fmtInt(sel.metrics.n_words)} words`,
    );
    this.grid.set(sel.metrics);
    this.kv.set("bpc", fmtMetric(sel.metrics.bits_per_char), fmtExact(sel.metrics.bits_per_char));
    this.kv.set("nll", `${fmtMetric(sel.metrics.total_bits)} bits`, fmtExact(sel.metrics.total_bits));
  }
}

/** Describe the settings dict the result was scored with: [[label, value]]. */
export function describeSettings(st) {
  if (!st || typeof st !== "object") return [];
  const out = [];
  const add = (k, v) => {
    if (v !== undefined && v !== null && v !== "") out.push([k, String(v)]);
  };
  add("model", st.model);
  const labels = objectiveLabels(st);
  if (labels.pseudo) {
    // a masked LM's pseudo-log-likelihood: the objective and its metric, named
    add("objective", "pseudo-log-likelihood (every token masked, read from both sides)");
    add("PLL metric", labels.metric);
  }
  add("compared with", st.compared_with); // a divergence view's other model
  // a model that reads no window (an n-gram model: its last n-1 symbols) has no window,
  // device or dtype worth a line
  const windowed = st.windowless !== true;
  if (windowed && (st.max_length != null || st.stride != null)) {
    // a name and its number never part on a narrow panel ("stride" above "128"): the
    // line wraps only between the two settings
    out.push(["window", `max_length${NBSP}${st.max_length ?? "—"} · stride${NBSP}${st.stride ?? "—"}`]);
  }
  // a masked LM has no BOS, EOS or unscored first token: its special tokens frame each window
  if (labels.pseudo) add("special tokens", "around every window: read, never scored");
  else if ("prefix" in st) add("prefix", st.prefix == null ? "none" : st.prefix);
  if (st.prefix_every_window) add("BOS", "in every window");
  if (st.context != null) add("context", `${contextCount(st)?.label ?? "? tokens"}, read, not scored`);
  if (!labels.pseudo && ("add_eos" in st || "eos_scored" in st)) {
    out.push(["EOS", st.eos_scored ? "scored" : st.add_eos ? "added, not scored" : "not added"]);
  }
  const protocol = st.protocol && st.protocol !== "exact" ? st.protocol : null;
  if (protocol) add("protocol", protocol);
  if (st.n_unscored != null && !(labels.pseudo && st.n_unscored === 0)) {
    const n = `${st.n_unscored} token${st.n_unscored === 1 ? "" : "s"}`;
    add("unscored", protocol ? `${n} not scored by the protocol` : `${n} at start`);
  }
  if (st.guide_reported_ppl != null) {
    add("guide prints", `${fmtMetric(st.guide_reported_ppl)} (miscounted: one token short per window)`);
  }
  add("top-k", st.top_k);
  add("unigram", st.unigram);
  if (st.ci != null) add("intervals", `${Math.round(st.ci * 100)}% bootstrap`);
  // bf16 on a CPU: which matrix products ran (measured faster there, bf16_products.py)
  const dtype = st.dtype && st.bf16_products ? `${st.dtype} (${st.bf16_products} products)` : st.dtype;
  if (windowed) add("device", [st.device, dtype].filter((x) => x != null && x !== "").join(" · "));
  return out;
}

let panelCounter = 0;
const NBSP = "\u00a0";
/** The settings controls that set the window: hidden for a model that reads none. */
export const WINDOW_CONTROLS = ["max_length", "stride", "prefix_every_window"];
/** The controls of the BOS token: hidden for a masked LM (its special tokens are its own). */
export const PREFIX_CONTROLS = ["prefix", "prefix_every_window"];

/** A control's text -> a number when it is one, null when empty, else the text itself. */
export function parseControl(raw) {
  const s = String(raw ?? "").trim();
  if (s === "") return null;
  const n = Number(s);
  return Number.isFinite(n) ? n : s;
}

export class SettingsPanel {
  /** onApply({max_length, stride, prefix}) is called with validated values. */
  constructor(onApply) {
    const s = section("Scored with");
    this.el = s.el;
    this.list = h("div", { class: "pplw-kv pplw-settings" });
    // text inputs: what was typed reaches the kernel as typed, and the kernel's rules
    // (score()'s, one source) answer with their message beside the control
    this.maxLen = h("input", { class: "pplw-input", attrs: { type: "text", inputmode: "numeric", "aria-label": "max_length" } });
    this.stride = h("input", { class: "pplw-input", attrs: { type: "text", inputmode: "numeric", "aria-label": "stride" } });
    this.prefix = h(
      "select",
      { class: "pplw-input", attrs: { "aria-label": "prefix" } },
      h("option", { text: "bos", attrs: { value: "bos" } }),
      h("option", { text: "none", attrs: { value: "none" } }),
    );
    this.apply = h("button", { class: "pplw-btn pplw-btn-primary", text: "Re-score", attrs: { type: "submit" } });
    this.msg = h("div", { class: "pplw-form-msg", attrs: { "aria-live": "polite" } });
    this.every = h("input", { attrs: { type: "checkbox", "aria-label": "prefix_every_window" } });
    this.inputs = { max_length: this.maxLen, stride: this.stride, prefix: this.prefix, prefix_every_window: this.every };
    this.fieldMsgs = {};
    this.invalid = new Set(); // controls holding a rejected value (kept as typed)
    this.fields = Object.fromEntries(
      Object.entries(this.inputs).map(([name, input]) => {
        const msg = h("span", { class: "pplw-field-msg", attrs: { id: `pplw-fm-${name}-${++panelCounter}`, "aria-live": "polite", hidden: true } });
        this.fieldMsgs[name] = msg;
        input.setAttribute("aria-describedby", msg.id);
        input.addEventListener("input", () => this.clearError(name));
        if (input === this.every) {
          // a checkbox reads its label beside it, in words, on a row of its own
          const label = h("label", { class: "pplw-check", attrs: { title: "prefix_every_window: the BOS token starts every window, not only the first" } }, input, h("span", { text: "BOS in every window" }));
          return [name, h("div", { class: "pplw-field pplw-field-check" }, label, msg)];
        }
        return [name, h("label", { class: "pplw-field" }, h("span", { text: name }), input, msg)];
      }),
    );
    this.form = h("form", { class: "pplw-form" }, ...Object.values(this.fields), this.apply);
    this.form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      for (const name of Object.keys(this.inputs)) this.clearError(name);
      setText(this.msg, "");
      onApply(this.read());
    });
    s.body.append(this.list, this.form, this.msg);
  }

  /** The controls' values as typed: numbers where they parse, else the raw text (the
   * kernel names what is wrong with it); an empty field is null (the model's default). */
  read() {
    return {
      max_length: parseControl(this.maxLen.value),
      stride: parseControl(this.stride.value),
      prefix: this.prefix.value,
      prefix_every_window: this.every.checked,
    };
  }

  /** The kernel rejected `field`: its message beside the control, the value left as typed. */
  showError(field, message) {
    const input = this.inputs[field];
    const msg = this.fieldMsgs[field];
    if (!input || !msg) {
      setText(this.msg, message);
      this.msg.className = "pplw-form-msg pplw-bad";
      return;
    }
    this.invalid.add(field);
    input.setAttribute("aria-invalid", "true");
    this.fields[field].classList.add("pplw-field-bad");
    setText(msg, message);
    msg.hidden = false;
    setText(this.msg, "");
  }

  clearError(field) {
    this.invalid.delete(field);
    this.inputs[field].removeAttribute("aria-invalid");
    this.fields[field].classList.remove("pplw-field-bad");
    setText(this.fieldMsgs[field], "");
    this.fieldMsgs[field].hidden = true;
  }

  /** Show the trait values in the inputs (unless the user is editing them, or they hold a
   * rejected value the user should see next to its message). */
  setControls({ max_length, stride, prefix, prefix_every_window }) {
    const active = this.el.ownerDocument.activeElement;
    const keep = (name) => active === this.inputs[name] || this.invalid.has(name);
    if (!keep("max_length")) this.maxLen.value = max_length == null ? "" : String(max_length);
    if (!keep("stride")) this.stride.value = stride == null ? "" : String(stride);
    if (prefix != null && !keep("prefix")) this.prefix.value = prefix === "bos" ? "bos" : "none";
    if (!keep("prefix_every_window")) this.every.checked = prefix_every_window === true;
  }

  setSettings(settings) {
    // a model with no window (an n-gram model) has no window to set
    const windowless = !!settings && settings.windowless === true;
    // a masked LM reads its own special tokens around every window: no BOS to choose
    const pseudo = objectiveLabels(settings).pseudo;
    for (const name of Object.keys(this.fields)) {
      this.fields[name].hidden = (windowless && WINDOW_CONTROLS.includes(name)) || (pseudo && PREFIX_CONTROLS.includes(name));
    }
    const rows = describeSettings(settings);
    if (!rows.length) {
      this.list.replaceChildren(h("span", { class: "pplw-kv-k", text: "no settings reported yet" }));
      return;
    }
    this.list.replaceChildren(
      ...rows.flatMap(([k, v]) => [h("span", { class: "pplw-kv-k", text: k }), h("span", { class: "pplw-kv-v", text: v, title: v })]),
    );
  }
}
