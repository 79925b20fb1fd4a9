// Token tooltip: what the model thought of one token.

import { h } from "./dom.js";
import { displayToken, fmtFixed, fmtInt, fmtProb } from "./format.js";
import { LN2 } from "./metrics.js";

/**
 * Everything the tooltip shows for token i (pure).
 * `text` is the widget text (offsets index it).
 */
export function tokenDetails(store, i, text) {
  const s16 = store.start16[i];
  const e16 = store.end16[i];
  const id = store.token_ids[i];
  const nats = store.surprisal[i];
  const zeroWidth = !(e16 > s16);
  const eos = zeroWidth && s16 >= text.length;
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
    alts,
    targetInAlts: alts.some((a) => a.isTarget),
  };
}

export class Tooltip {
  constructor(root) {
    this.root = root;
    this.el = h("div", { class: "pplw-tooltip", attrs: { role: "tooltip", hidden: true } });
    root.appendChild(this.el);
    this.index = -1;
  }

  hide() {
    this.el.hidden = true;
    this.index = -1;
  }

  /** Show details `d` (from tokenDetails) next to the span `anchor`. */
  show(anchor, d) {
    this.index = d.index;
    this.el.replaceChildren(...this._content(d));
    this.el.hidden = false;
    this._place(anchor);
  }

  _content(d) {
    const tokenLabel = d.eos ? "⟨eos⟩" : d.zeroWidth ? `${displayToken(d.text)} (partial character)` : displayToken(d.text);
    const head = h(
      "div",
      { class: "pplw-tt-head" },
      h("code", { class: "pplw-tt-token", text: tokenLabel }),
      h("span", { class: "pplw-tt-meta", text: `id ${d.id} · token ${fmtInt(d.index + 1)} of ${fmtInt(d.total)}` }),
    );
    const row = (k, v, strong) =>
      [h("span", { class: "pplw-tt-k", text: k }), h("span", { class: strong ? "pplw-tt-v pplw-strong" : "pplw-tt-v", text: v })];
    const grid = h(
      "div",
      { class: "pplw-tt-grid" },
      ...row("surprisal", `${fmtFixed(d.surprisalBits, 2)} bits · ${fmtFixed(d.surprisalNats, 3)} nats`, true),
      ...row("probability", fmtProb(d.prob)),
      ...row("rank", d.rank >= 1 ? fmtInt(d.rank) : "—"),
      ...row("entropy", `${fmtFixed(d.entropyBits, 2)} bits`),
      ...row("context", `${fmtInt(d.context)} ${d.context === 1 ? "token" : "tokens"}`),
    );
    const parts = [head, grid];
    if (d.alts.length) {
      const list = h("div", { class: "pplw-tt-alts" });
      for (const a of d.alts) {
        const bar = h("span", { class: "pplw-tt-bar" }, h("span", { class: "pplw-tt-barfill" }));
        // absolute: the bar is the probability itself (a 1% sliver stays visible)
        bar.firstChild.style.width = `${Math.max(1, Math.min(100, 100 * a.prob)).toFixed(1)}%`;
        list.appendChild(
          h(
            "div",
            { class: a.isTarget ? "pplw-tt-alt pplw-target" : "pplw-tt-alt" },
            h("code", { class: "pplw-tt-alttok", text: a.text == null ? `#${a.id}` : displayToken(a.text) }),
            bar,
            h("span", { class: "pplw-tt-altp", text: fmtProb(a.prob) }),
          ),
        );
      }
      parts.push(h("div", { class: "pplw-tt-sub", text: `model's top ${d.alts.length}${d.targetInAlts ? "" : " · actual token not among them"}` }), list);
    }
    return parts;
  }

  _place(anchor) {
    const rootRect = this.root.getBoundingClientRect();
    const rects = anchor.getClientRects();
    const a = rects.length ? rects[0] : anchor.getBoundingClientRect();
    const tip = this.el;
    tip.style.left = "0px";
    tip.style.top = "0px";
    const w = tip.offsetWidth;
    const hgt = tip.offsetHeight;
    const gap = 6;
    let left = a.left - rootRect.left;
    left = Math.max(4, Math.min(left, rootRect.width - w - 4));
    let top = a.bottom - rootRect.top + gap;
    if (top + hgt > rootRect.height - 2 && a.top - rootRect.top - gap - hgt >= 0) {
      top = a.top - rootRect.top - gap - hgt;
    }
    tip.style.left = `${Math.round(left)}px`;
    tip.style.top = `${Math.round(top)}px`;
  }
}
