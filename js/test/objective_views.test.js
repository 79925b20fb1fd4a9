// A masked LM's result (settings.objective "pll") is named as what it is wherever a view
// names a number: the panel's title and total, the settings list with the PLL metric, the
// tooltip (pseudo-surprisal, the masked position's predictions, context on both sides),
// the colour picker and the legend. A causal result keeps its words.
import assert from "node:assert/strict";
import test from "node:test";

import { installFakeDocument } from "./fake_dom.js";

installFakeDocument();

const { MetricsPanel, SelectionPanel, SettingsPanel, describeSettings } = await import("../src/panel.js");
const { Tooltip, tokenDetails, unitDetails } = await import("../src/tooltip.js");
const { Toolbar } = await import("../src/toolbar.js");
const { legendFor } = await import("../src/colors.js");
const { objectiveLabels } = await import("../src/objective.js");
const { TokenStore } = await import("../src/store.js");
const { UnitStats } = await import("../src/levels.js");

const texts = (el) => (el.children || []).flatMap((c) => [c.textContent, ...texts(c)]).filter(Boolean);
const PLL = { model: "tiny-bert", max_length: 32, stride: 16, objective: "pll", pll_metric: "within_word_l2r" };
const CAUSAL = { model: "gpt2", max_length: 32, stride: 16 };

test("the metrics panel: Pseudo-perplexity and a pseudo-NLL for a PLL result, back for a causal one", () => {
  const panel = new MetricsPanel();
  panel.setObjective(PLL);
  assert.equal(panel.title.textContent, "Pseudo-perplexity");
  assert.ok(texts(panel.el).includes("total pseudo-NLL (−PLL)"), texts(panel.el).join(" | "));
  assert.match(panel.title.title, /within-word l2r/);
  panel.setObjective(CAUSAL);
  assert.equal(panel.title.textContent, "Perplexity");
  assert.ok(texts(panel.el).includes("total NLL"));
  const sel = new SelectionPanel();
  sel.setObjective(PLL);
  assert.ok(texts(sel.el).includes("pseudo-NLL (−PLL)"));
});

test("the settings list names the objective and the PLL metric; a causal one has neither", () => {
  const rows = Object.fromEntries(describeSettings(PLL));
  assert.equal(rows["PLL metric"], "PLL, within-word l2r (Kauf & Ivanova 2023)");
  assert.match(rows.objective, /pseudo-log-likelihood/);
  const original = Object.fromEntries(describeSettings({ ...PLL, pll_metric: "original" }));
  assert.equal(original["PLL metric"], "PLL, original (Salazar et al. 2020)");
  const causal = Object.fromEntries(describeSettings(CAUSAL));
  assert.ok(!("PLL metric" in causal) && !("objective" in causal));
  // no BOS, EOS or unscored first token: the special tokens frame every window
  const masked = Object.fromEntries(describeSettings({ ...PLL, prefix: null, add_eos: false, n_unscored: 0 }));
  assert.equal(masked["special tokens"], "around every window: read, never scored");
  assert.ok(!("prefix" in masked) && !("EOS" in masked) && !("unscored" in masked), JSON.stringify(masked));
  const plain = Object.fromEntries(describeSettings({ ...CAUSAL, prefix: null, add_eos: false, n_unscored: 1 }));
  assert.equal(plain.prefix, "none");
  assert.equal(plain.unscored, "1 token at start");
});

test("the settings panel hides the BOS controls for a masked LM, shows them for a causal one", () => {
  const panel = new SettingsPanel(() => {});
  panel.setSettings(PLL);
  for (const name of ["prefix", "prefix_every_window"]) assert.equal(panel.fields[name].hidden, true, name);
  assert.equal(panel.fields.max_length.hidden, false);
  panel.setSettings(CAUSAL);
  for (const name of ["prefix", "prefix_every_window", "max_length"]) assert.equal(panel.fields[name].hidden, false, name);
});

function store() {
  const st = new TokenStore();
  st.reset(1, 2, 2);
  const f = {
    token_ids: Int32Array.from([10, 11]),
    start16: Int32Array.from([0, 4]),
    end16: Int32Array.from([3, 8]),
    surprisal: Float32Array.from([Math.LN2, 2 * Math.LN2]),
    entropy: Float32Array.from([Math.LN2, Math.LN2]),
    rank: Int32Array.from([1, 3]),
    context_length: Int32Array.from([5, 5]),
    units: Int32Array.from([1, 3, 3, 1, 5, 5]),
    topk_ids: Int32Array.from([10, 12, 12, 13]),
    topk_probs: Float32Array.from([0.5, 0.25, 0.5, 0.1]),
  };
  st.applyChunk(1, { start: 0, count: 2, topK: 2, fields: f }, { 10: "the", 11: " cat", 12: "a", 13: "dog" });
  return st;
}

test("the token tooltip: pseudo-surprisal, the predictions at the masked position, context on both sides", () => {
  const text = "the  cat";
  const tip = new Tooltip(document.createElement("div"));
  const d = tokenDetails(store(), 1, text, PLL);
  const pll = texts({ children: tip._tokenContent(d, { unit: "bits", labels: objectiveLabels(PLL) }) });
  assert.equal(d.contextBos, null); // a masked LM reads no BOS: no "no BOS" note
  for (const want of ["pseudo-surprisal", "top 2 predicted at the masked position · actual token not among them", "context (both sides)", "5 tokens"]) {
    assert.ok(pll.includes(want), `${want} in ${pll.join(" | ")}`);
  }
  const causal = texts({ children: tip._tokenContent(d, { unit: "bits", labels: objectiveLabels(CAUSAL) }) });
  assert.ok(causal.includes("surprisal") && causal.includes("model's top 2 · actual token not among them"), causal.join(" | "));
  assert.ok(!causal.some((t) => /pseudo|masked/.test(t)), causal.join(" | "));
});

test("a word's tooltip sums pseudo-surprisal for a PLL result", () => {
  const st = store();
  st.setLevels({ word: { start16: Int32Array.from([0, 5]), end16: Int32Array.from([3, 8]) }, sentence: null });
  const stats = new UnitStats(st, "word").update();
  const d = unitDetails(st, stats, 1, "the  cat");
  const tip = new Tooltip(document.createElement("div"));
  const shown = texts({ children: tip._unitContent(d, { labels: objectiveLabels(PLL) }) });
  assert.ok(shown.includes("pseudo-surprisal (sum)"), shown.join(" | "));
  const causal = texts({ children: tip._unitContent(d, { labels: objectiveLabels(CAUSAL) }) });
  assert.ok(causal.includes("surprisal (sum)"), causal.join(" | "));
});

test("the colour picker and the legend say pseudo-surprisal for a PLL result", () => {
  assert.equal(legendFor("surprisal", "bits", objectiveLabels(PLL)).title, "pseudo-surprisal (bits)");
  assert.equal(legendFor("surprisal", "nats").title, "surprisal (nats)");
  const bar = new Toolbar({ onMode() {}, onBoundaries() {}, onLevel() {}, onUnit() {}, onBow() {} });
  bar.set("surprisal", false, { labels: objectiveLabels(PLL) });
  const option = [...bar.mode.options].find((o) => o.value === "surprisal");
  assert.equal(option.textContent, "Pseudo-surprisal");
  assert.ok(texts(bar.legend).includes("pseudo-surprisal (bits)"), texts(bar.legend).join(" | "));
  bar.set("surprisal", false, { level: "word", labels: objectiveLabels(PLL) });
  assert.equal(bar.bowLabel.hidden, true); // no BOW correction for a masked LM
  bar.set("surprisal", false, { level: "word", labels: objectiveLabels(CAUSAL) });
  assert.equal(bar.bowLabel.hidden, false);
  assert.equal(option.textContent, "Surprisal");
  assert.ok(texts(bar.legend).includes("surprisal (bits)"));
});

test("the comparison table names a masked LM's row a pseudo-perplexity, with its metric", async () => {
  const { ComparisonTable } = await import("../src/compare/table.js");
  const table = new ComparisonTable();
  const row = { label: "bert", model: "tiny-bert", status: "done", word_ppl: 5, n_words: 3, n_chars: 9, n_bytes: 9 };
  table.update([{ ...row, objective: "pll", pll_metric: "original" }, { ...row, label: "gpt2", model: "tiny-gpt2" }], ["token_ppl"], "note");
  const shown = texts(table.el);
  assert.ok(shown.includes("tiny-bert · pseudo-perplexity (PLL, original (Salazar et al. 2020))"), shown.join(" | "));
  assert.ok(shown.includes("tiny-gpt2"), shown.join(" | "));
});
