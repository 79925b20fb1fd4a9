// Side panel: metrics, selection metrics, settings and re-score controls.

import { h, setText } from "./dom.js";
import { fmtExact, fmtInt, fmtMetric } from "./format.js";

const PPL_UNITS = [
  ["token_ppl", "token"],
  ["word_ppl", "word"],
  ["char_ppl", "char"],
  ["byte_ppl", "byte"],
];

function section(title, extra) {
  const badge = h("span", { class: "pplw-badge", attrs: { hidden: true } });
  const head = h("div", { class: "pplw-sec-head" }, h("span", { class: "pplw-sec-title", text: title }), extra || null, badge);
  const body = h("div", { class: "pplw-sec-body" });
  const el = h("section", { class: "pplw-sec" }, head, body);
  return { el, head, body, badge };
}

function setValue(el, x, fmt = fmtMetric) {
  setText(el, fmt(x));
  el.title = fmtExact(x);
}

/** 2x2 grid of perplexities; returns {el, set(metrics)}. */
function pplGrid(compact) {
  const cells = {};
  const el = h("div", { class: compact ? "pplw-ppl pplw-ppl-compact" : "pplw-ppl" });
  for (const [key, label] of PPL_UNITS) {
    const v = h("span", { class: "pplw-ppl-v", text: "—" });
    cells[key] = v;
    el.appendChild(h("div", { class: "pplw-ppl-cell" }, h("span", { class: "pplw-ppl-k", text: `per ${label}` }), v));
  }
  return {
    el,
    set(m) {
      for (const [key] of PPL_UNITS) setValue(cells[key], m ? m[key] : NaN);
    },
  };
}

/** Key/value rows; returns {el, set(key, text, title)}. */
function kvList(rows) {
  const vals = {};
  const el = h("div", { class: "pplw-kv" });
  for (const [key, label] of rows) {
    const v = h("span", { class: "pplw-kv-v", text: "—" });
    vals[key] = v;
    el.appendChild(h("span", { class: "pplw-kv-k", text: label }));
    el.appendChild(v);
  }
  return {
    el,
    set(key, text, title) {
      setText(vals[key], text);
      vals[key].title = title == null ? "" : String(title);
    },
  };
}

export class MetricsPanel {
  constructor() {
    const s = section("Perplexity");
    this.el = s.el;
    this.badge = s.badge;
    this.grid = pplGrid(false);
    this.kv = kvList([
      ["bpt", "bits / token"],
      ["bpc", "bits / char"],
      ["bpb", "bits / byte"],
      ["nll", "total NLL"],
    ]);
    this.counts = h("div", { class: "pplw-counts" });
    s.body.append(this.grid.el, this.kv.el, this.counts);
  }

  /**
   * metrics: dict with the ScoreResult.metrics() keys (null = NaN).
   * state: "empty" | "live" | "final" | "partial".
   */
  update(m, state) {
    this.grid.set(m);
    const v = (k) => (m && m[k] != null ? m[k] : NaN);
    this.kv.set("bpt", fmtMetric(v("bits_per_token")), fmtExact(v("bits_per_token")));
    this.kv.set("bpc", fmtMetric(v("bits_per_char")), fmtExact(v("bits_per_char")));
    this.kv.set("bpb", fmtMetric(v("bits_per_byte")), fmtExact(v("bits_per_byte")));
    this.kv.set(
      "nll",
      `${fmtMetric(v("total_nll"))} nats · ${fmtMetric(v("total_bits"))} bits`,
      `${fmtExact(v("total_nll"))} nats, ${fmtExact(v("total_bits"))} bits`,
    );
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
      final: ["final", "pplw-badge pplw-badge-ok", "Final numbers from the kernel"],
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
    s.body.append(this.meta, this.grid.el, this.kv.el);
    this.el.classList.add("pplw-sel");
    this.el.hidden = true;
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
  if (st.max_length != null || st.stride != null) {
    out.push(["window", `max_length ${st.max_length ?? "—"} · stride ${st.stride ?? "—"}`]);
  }
  if ("prefix" in st) add("prefix", st.prefix == null ? "none" : st.prefix);
  if ("add_eos" in st || "eos_scored" in st) {
    out.push(["EOS", st.eos_scored ? "scored" : st.add_eos ? "added, not scored" : "not added"]);
  }
  if (st.n_unscored != null) add("unscored", `${st.n_unscored} token${st.n_unscored === 1 ? "" : "s"} at start`);
  add("top-k", st.top_k);
  const dev = [st.device, st.dtype].filter((x) => x != null && x !== "").join(" · ");
  add("device", dev);
  return out;
}

export class SettingsPanel {
  /** onApply({max_length, stride, prefix}) is called with validated values. */
  constructor(onApply) {
    const s = section("Scored with");
    this.el = s.el;
    this.list = h("div", { class: "pplw-kv pplw-settings" });
    this.maxLen = h("input", { class: "pplw-input", attrs: { type: "number", min: 2, step: 1, "aria-label": "max_length" } });
    this.stride = h("input", { class: "pplw-input", attrs: { type: "number", min: 1, step: 1, "aria-label": "stride" } });
    this.prefix = h(
      "select",
      { class: "pplw-input", attrs: { "aria-label": "prefix" } },
      h("option", { text: "bos", attrs: { value: "bos" } }),
      h("option", { text: "none", attrs: { value: "none" } }),
    );
    this.apply = h("button", { class: "pplw-btn pplw-btn-primary", text: "Re-score", attrs: { type: "submit" } });
    this.msg = h("div", { class: "pplw-form-msg", attrs: { "aria-live": "polite" } });
    const field = (label, input) => h("label", { class: "pplw-field" }, h("span", { text: label }), input);
    this.form = h(
      "form",
      { class: "pplw-form" },
      field("max_length", this.maxLen),
      field("stride", this.stride),
      field("prefix", this.prefix),
      this.apply,
    );
    this.form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const v = this.read();
      if (v.error) {
        setText(this.msg, v.error);
        this.msg.className = "pplw-form-msg pplw-bad";
        return;
      }
      setText(this.msg, "");
      onApply(v);
    });
    s.body.append(this.list, this.form, this.msg);
  }

  read() {
    const ml = Number(this.maxLen.value);
    const st = Number(this.stride.value);
    if (!Number.isInteger(ml) || ml < 2) return { error: "max_length must be an integer ≥ 2" };
    if (!Number.isInteger(st) || st < 1) return { error: "stride must be an integer ≥ 1" };
    if (st > ml) return { error: "stride cannot exceed max_length" };
    return { max_length: ml, stride: st, prefix: this.prefix.value };
  }

  /** Show the trait values in the inputs (unless the user is editing them). */
  setControls({ max_length, stride, prefix }) {
    const active = this.el.ownerDocument.activeElement;
    if (max_length != null && active !== this.maxLen) this.maxLen.value = String(max_length);
    if (stride != null && active !== this.stride) this.stride.value = String(stride);
    if (prefix != null && active !== this.prefix) this.prefix.value = prefix === "bos" ? "bos" : "none";
  }

  setSettings(settings) {
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
