// Token tooltip: what the model thought of one token.

import { bosInWindow, tokenCount } from "./context.js";
import { h } from "./dom.js";
import { displayToken, fmtFixed, fmtInt, fmtProb, whitespaceKey } from "./format.js";
import { inUnit } from "./levels.js";
import { LN2 } from "./metrics.js";
import { fmtDelta } from "./units.js";

// A sentence's tooltip lists at most this many tokens (then "… n more").
export const UNIT_TOKENS_SHOWN = 24;

/**
 * What the tooltip shows for unit u of a UnitStats (pure): its text, surprisal
 * (sum, nats), the BOW-corrected value when given, per-word mean for sentences,
 * and its tokens with their surprisals.
 */
export function unitDetails(store, stats, u, text, corrected = null) {
  const sp = stats.spans;
  const first = stats.first[u];
  const last = stats.last[u];
  const tokens = [];
  for (let i = first; i >= 0 && i <= last && tokens.length < UNIT_TOKENS_SHOWN; i++) {
    if (stats.unitOf(i) !== u) continue;
    const s16 = store.start16[i];
    const e16 = store.end16[i];
    tokens.push({ index: i, text: e16 > s16 ? text.slice(s16, e16) : (store.tokenText(store.token_ids[i]) ?? ""), nats: store.surprisal[i] });
  }
  const c = corrected && u < corrected.length ? corrected[u] : NaN;
  return {
    unit: u,
    level: stats.level,
    nUnits: stats.n,
    text: text.slice(sp.start16[u], sp.end16[u]),
    nats: stats.nats[u],
    correctedNats: c,
    words: stats.words[u],
    nTokens: stats.tokens[u],
    gainNats: stats.gain[u],
    tokens,
    more: stats.tokens[u] - tokens.length,
  };
}

/** "2.50 bits" / "1.733 nats". */
export function fmtSurprisal(nats, unit) {
  return unit === "nats" ? `${fmtFixed(nats, 3)} nats` : `${fmtFixed(inUnit(nats, "bits"), 2)} bits`;
}

/**
 * Everything the tooltip shows for token i (pure).
 * `text` is the widget text (offsets index it).
 */
export function tokenDetails(store, i, text, settings = null) {
  const s16 = store.start16[i];
  const e16 = store.end16[i];
  const id = store.token_ids[i];
  const nats = store.surprisal[i];
  const zeroWidth = !(e16 > s16);
  const eos = store.isAddedEos(i, text.length);
  const vocabText = store.tokenText(id);
  const slice = zeroWidth ? "" : text.slice(s16, e16);
  const alts = store.alternatives(i).map(({ id: aid, prob }) => ({
    id: aid,
    text: store.tokenText(aid),
    prob,
    isTarget: aid === id,
  }));
  return {
    index: i,
    total: store.totalTokens > store.length ? store.totalTokens : store.length,
    id,
    text: zeroWidth ? (vocabText ?? "") : slice,
    zeroWidth,
    eos,
    surprisalNats: nats,
    surprisalBits: nats / LN2,
    prob: Math.exp(-nats),
    rank: store.rank[i],
    entropyBits: store.entropy[i] / LN2,
    context: store.context_length[i],
    contextBos: bosInWindow(settings, i, store.context_length[i]), // the header's rule
    gainNats: store.context_gain ? store.context_gain[i] : NaN,
    alts,
    targetInAlts: alts.some((a) => a.isTarget),
    div: divergenceDetails(store, i, id),
  };
}

/** A divergence view's second model at token i (pure): KL, Δp, top agreement, and the
 * other model's surprisal, entropy, rank and top-k; null in other views. */
export function divergenceDetails(store, i, id) {
  const dv = store.divergence;
  if (!dv) return null;
  const f = dv.fields;
  const otherNats = f.other_surprisal[i];
  const otherAlts = store.alternatives(i, f.other_topk_ids, f.other_topk_probs).map(({ id: aid, prob }) => ({
    id: aid,
    text: store.tokenText(aid),
    prob,
    isTarget: aid === id,
  }));
  return {
    labels: dv.labels,
    klNats: f.kl[i],
    deltaP: Math.exp(-otherNats) - Math.exp(-store.surprisal[i]),
    sameTop: f.same_top[i] === 1,
    otherNats,
    otherEntropyNats: f.other_entropy[i],
    otherRank: f.other_rank[i],
    otherAlts,
    targetInOtherAlts: otherAlts.some((a) => a.isTarget),
  };
}

/** A KL in the unit shown, to 3 significant digits (per-token KL spans decades). */
export function fmtKl(nats, unit) {
  if (!(nats >= 0)) return "—";
  const v = unit === "nats" ? nats : nats / LN2;
  return `${v === 0 ? "0" : v < 1e-4 ? v.toExponential(2) : String(Number(v.toPrecision(3)))} ${unit === "nats" ? "nats" : "bits"}`;
}

/** Δp as a signed percentage: "+1.25%", "−0.40%". */
export function fmtDeltaP(dp) {
  if (!(dp === dp)) return "—";
  const s = (Math.abs(dp) * 100).toFixed(2);
  return `${dp < 0 ? "−" : "+"}${s}%`;
}

/** The explanation's word on a token (views/explain): the target, or how much deleting its
 * context unit would change the target's surprisal ([] when none is shown). */
export function attributionRow(a, unit, row) {
  if (!a) return [];
  if (a.role === "target") return row("explained", "the target");
  const v = `${fmtDelta(a.nats, unit)} ${unit === "nats" ? "nats" : "bits"} (${a.nats > 0 ? "helped" : a.nats < 0 ? "hurt" : "no effect"})`;
  return row("attribution", v, true);
}

const overlaps = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;

/**
 * Where a tooltip of size {w, h} goes by an anchor box (pure): below it, else above it,
 * its left edge at the anchor's as near as it can be, inside `bounds` across, and never
 * over a box of `avoid` (the explanation panel: its close button, its numbers).  Every box
 * {left, top, right, bottom} is in the same coordinates (the widget root's).  When no place
 * keeps clear, the one that covers least.  Returns {left, top}.
 */
export function placeTip(anchor, size, bounds, avoid = [], gap = 6) {
  const { w, h: ht } = size;
  const below = anchor.bottom + gap;
  const above = anchor.top - gap - ht;
  // below first; above first when below runs past the bounds' bottom and above fits
  const tops = below + ht > bounds.bottom - 2 && above >= bounds.top ? [above, below] : [below, above];
  const lo = bounds.left + 4;
  const hi = Math.max(lo, bounds.right - w - 4);
  const clampX = (x) => Math.max(lo, Math.min(x, hi));
  let best = null;
  for (const top of tops) {
    const band = { top, bottom: top + ht };
    // the anchor's own left edge, and each side of each box in the way
    const lefts = [clampX(anchor.left)];
    for (const r of avoid) {
      if (r.top < band.bottom && band.top < r.bottom) lefts.push(clampX(r.left - w - 4), clampX(r.right + 4));
    }
    lefts.sort((a, b) => Math.abs(a - anchor.left) - Math.abs(b - anchor.left));
    for (const left of lefts) {
      const box = { left, top, right: left + w, bottom: top + ht };
      let covered = 0;
      for (const r of avoid) {
        if (overlaps(box, r)) covered += (Math.min(box.right, r.right) - Math.max(box.left, r.left)) * (Math.min(box.bottom, r.bottom) - Math.max(box.top, r.top));
      }
      if (covered === 0) return { left, top };
      if (!best || covered < best.covered) best = { left, top, covered };
    }
  }
  return { left: best.left, top: best.top };
}

/** The tooltip's last line when the texts it shows (raw) have whitespace made visible:
 * what each mark stands for ([] when none). */
function marksNote(texts) {
  const key = whitespaceKey(texts);
  return key ? [h("div", { class: "pplw-tt-sub pplw-tt-marks", text: key })] : [];
}

export class Tooltip {
  constructor(root) {
    this.root = root;
    this.el = h("div", { class: "pplw-tooltip", attrs: { role: "tooltip", hidden: true } });
    root.appendChild(this.el);
    this.index = -1;
    this.keepClear = () => []; // the elements the tooltip must not cover (the view sets it)
  }

  hide() {
    this.el.hidden = true;
    this.index = -1;
  }

  /** Show details `d` (from tokenDetails or unitDetails) next to the span `anchor`;
   * opts {unit: "bits"|"nats", bow: show the corrected word surprisal, gain}. */
  show(anchor, d, opts = {}) {
    this.index = d.index ?? d.tokens?.[0]?.index ?? -1;
    this.showParts(anchor, d.level ? this._unitContent(d, opts) : this._content(d, opts));
  }

  /** Show the given nodes under (or above) anchor. */
  showParts(anchor, parts) {
    this.el.replaceChildren(...parts);
    this.el.hidden = false;
    this._place(anchor);
  }

  _unitContent(d, { unit = "bits", bow = false, gain = false, labels = null } = {}) {
    const name = labels ? labels.surprisal : "surprisal"; // pseudo-surprisal for a PLL result
    const head = h(
      "div",
      { class: "pplw-tt-head" },
      h("span", { class: "pplw-tt-token", text: displayToken(d.text) }),
      h("span", { class: "pplw-tt-meta", text: `${d.level} ${fmtInt(d.unit + 1)} of ${fmtInt(d.nUnits)} · ${fmtInt(d.nTokens)} token${d.nTokens === 1 ? "" : "s"}` }),
    );
    const row = (k, v, strong) =>
      [h("span", { class: "pplw-tt-k", text: k }), h("span", { class: strong ? "pplw-tt-v pplw-strong" : "pplw-tt-v", text: v })];
    const rows = [...row(d.level === "word" ? `${name} (sum)` : name, fmtSurprisal(d.nats, unit), true)];
    if (d.level === "word" && bow) {
      const v = d.correctedNats === d.correctedNats ? fmtSurprisal(d.correctedNats, unit) : "— (when scoring ends, if the model gives b(i))";
      rows.push(...row("BOW-corrected", v, true));
    }
    if (d.level === "sentence") {
      rows.push(...row("per word", d.words > 0 ? fmtSurprisal(d.nats / d.words, unit) : "—"));
      rows.push(...row("words", fmtInt(d.words)));
    }
    if (gain && d.gainNats === d.gainNats) rows.push(...row("context gain", fmtSurprisal(d.gainNats, unit)));
    rows.push(...attributionRow(d.attribution, unit, row));
    const list = h("div", { class: "pplw-tt-units" });
    for (const t of d.tokens) {
      list.appendChild(
        h("div", { class: "pplw-tt-alt" }, h("span", { class: "pplw-tt-alttok", text: displayToken(t.text) }), h("span", { class: "pplw-tt-altp", text: fmtSurprisal(t.nats, unit) })),
      );
    }
    const parts = [head, h("div", { class: "pplw-tt-grid" }, ...rows), h("div", { class: "pplw-tt-sub", text: "its tokens" }), list];
    if (d.more > 0) parts.push(h("div", { class: "pplw-tt-sub", text: `… and ${fmtInt(d.more)} more` }));
    return [...parts, ...marksNote([d.text, ...d.tokens.map((t) => t.text)])];
  }

  _content(d, opts = {}) {
    return d.div ? this._divergenceContent(d, opts) : this._tokenContent(d, opts);
  }

  _head(d) {
    const tokenLabel = d.eos ? "⟨eos⟩" : d.zeroWidth ? `${displayToken(d.text)} (partial character)` : displayToken(d.text);
    return h(
      "div",
      { class: "pplw-tt-head" },
      h("span", { class: "pplw-tt-token", text: tokenLabel }),
      h("span", { class: "pplw-tt-meta", text: `id ${d.id} · token ${fmtInt(d.index + 1)} of ${fmtInt(d.total)}` }),
    );
  }

  /** A list of alternatives with their probability bars; the actual token marked. */
  _alternatives(alts) {
    const list = h("div", { class: "pplw-tt-alts" });
    for (const a of alts) {
      const bar = h("span", { class: "pplw-tt-bar" }, h("span", { class: "pplw-tt-barfill" }));
      // absolute: the bar is the probability itself (a 1% sliver stays visible)
      bar.firstChild.style.width = `${Math.max(1, Math.min(100, 100 * a.prob)).toFixed(1)}%`;
      list.appendChild(
        h(
          "div",
          { class: a.isTarget ? "pplw-tt-alt pplw-target" : "pplw-tt-alt" },
          h("span", { class: "pplw-tt-alttok", text: a.text == null ? `#${a.id}` : displayToken(a.text) }),
          bar,
          h("span", { class: "pplw-tt-altp", text: fmtProb(a.prob) }),
        ),
      );
    }
    return list;
  }

  /** A divergence view's token: KL, Δp, both models side by side, both top-k lists. */
  _divergenceContent(d, { unit = "bits" } = {}) {
    const v = d.div;
    const [a, b] = v.labels;
    const row = (k, val, strong) =>
      [h("span", { class: "pplw-tt-k", text: k }), h("span", { class: strong ? "pplw-tt-v pplw-strong" : "pplw-tt-v", text: val })];
    const grid = h(
      "div",
      { class: "pplw-tt-grid" },
      ...row(`KL(${a} ‖ ${b})`, fmtKl(v.klNats, unit), true),
      ...row(`Δp (${b} − ${a})`, fmtDeltaP(v.deltaP)),
      ...row("same top token", v.sameTop ? "yes" : "no"),
      ...row(`surprisal · ${a}`, fmtSurprisal(d.surprisalNats, unit)),
      ...row(`surprisal · ${b}`, fmtSurprisal(v.otherNats, unit)),
      ...row(`entropy · ${a}`, fmtSurprisal(d.entropyBits * LN2, unit)),
      ...row(`entropy · ${b}`, fmtSurprisal(v.otherEntropyNats, unit)),
      ...row(`rank · ${a} / ${b}`, `${d.rank >= 1 ? fmtInt(d.rank) : "—"} / ${v.otherRank >= 1 ? fmtInt(v.otherRank) : "—"}`),
      ...row("context", `${fmtInt(d.context)} ${d.context === 1 ? "token" : "tokens"}`),
    );
    const parts = [this._head(d), grid];
    for (const [label, alts, inside] of [
      [a, d.alts, d.targetInAlts],
      [b, v.otherAlts, v.targetInOtherAlts],
    ]) {
      if (!alts.length) continue;
      parts.push(h("div", { class: "pplw-tt-sub", text: `${label}: top ${alts.length}${inside ? "" : " · actual token not among them"}` }), this._alternatives(alts));
    }
    return [...parts, ...marksNote([d.text, ...d.alts.map((a) => a.text), ...v.otherAlts.map((a) => a.text)])];
  }

  _tokenContent(d, { unit = "bits", labels = null } = {}) {
    // a PLL result (objective.js): pseudo-surprisal, and the top-k are what the model
    // predicted at the masked position
    const name = labels ? labels.surprisal : "surprisal";
    const topK = labels ? labels.top_k : "model's top {k}";
    const row = (k, v, strong) =>
      [h("span", { class: "pplw-tt-k", text: k }), h("span", { class: strong ? "pplw-tt-v pplw-strong" : "pplw-tt-v", text: v })];
    const grid = h(
      "div",
      { class: "pplw-tt-grid" },
      ...row(name, fmtSurprisal(d.surprisalNats, unit), true),
      ...row("probability", fmtProb(d.prob)),
      ...row("rank", d.rank >= 1 ? fmtInt(d.rank) : "—"),
      ...row("entropy", fmtSurprisal(d.entropyBits * LN2, unit)),
      ...row(labels ? labels.context : "context", tokenCount(d.context, d.contextBos ?? null)),
      ...(d.gainNats === d.gainNats && d.gainNats != null ? row("context gain", fmtSurprisal(d.gainNats, unit)) : []),
      ...attributionRow(d.attribution, unit, row),
    );
    const parts = [this._head(d), grid];
    if (d.alts.length) {
      parts.push(h("div", { class: "pplw-tt-sub", text: `${topK.replace("{k}", d.alts.length)}${d.targetInAlts ? "" : " · actual token not among them"}` }), this._alternatives(d.alts));
    }
    return [...parts, ...marksNote([d.text, ...d.alts.map((a) => a.text)])];
  }

  _place(anchor) {
    const rootRect = this.root.getBoundingClientRect();
    const rel = (r) => ({ left: r.left - rootRect.left, right: r.right - rootRect.left, top: r.top - rootRect.top, bottom: r.bottom - rootRect.top });
    const rects = anchor.getClientRects();
    const a = rel(rects.length ? rects[0] : anchor.getBoundingClientRect());
    const tip = this.el;
    tip.style.left = "0px";
    tip.style.top = "0px";
    const avoid = this.keepClear()
      .filter((el) => el && !el.hidden && el.offsetParent !== null)
      .map((el) => rel(el.getBoundingClientRect()));
    const bounds = { left: 0, top: 0, right: rootRect.width, bottom: rootRect.height };
    const { left, top } = placeTip(a, { w: tip.offsetWidth, h: tip.offsetHeight }, bounds, avoid);
    tip.style.left = `${Math.round(left)}px`;
    tip.style.top = `${Math.round(top)}px`;
  }
}
