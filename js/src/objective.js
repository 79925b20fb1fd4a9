// What a result's numbers are called: a copy of Python's objective_labels (core/metrics.py:
// the rule from its settings to label words), checked on the same cases (tests/cases/objective.json).
// A result scored by pseudo-log-likelihood (a masked LM: settings.objective === "pll")
// holds pseudo-surprisals and pseudo-perplexities; any other settings, causal ones.

export const PLL = "pll";

export const PLL_METRIC_NAMES = Object.freeze({
  within_word_l2r: "within-word l2r (Kauf & Ivanova 2023)",
  original: "original (Salazar et al. 2020)",
});

const CAUSAL = Object.freeze({
  objective: "causal",
  pseudo: false,
  surprisal: "surprisal",
  perplexity: "perplexity",
  title: "Perplexity",
  nll: "NLL",
  context: "context",
  top_k: "model's top {k}",
  pll_metric: null,
  metric: "",
});

/** Whether settings are those of a pseudo-log-likelihood result. */
export function isPll(settings) {
  return !!settings && typeof settings === "object" && !Array.isArray(settings) && settings.objective === PLL;
}

/** The words every view uses for a result with these settings (objective_labels). */
export function objectiveLabels(settings) {
  if (!isPll(settings)) return CAUSAL;
  const raw = settings.pll_metric;
  const metric = raw == null ? null : String(raw);
  const named = metric == null ? "PLL" : `PLL, ${Object.hasOwn(PLL_METRIC_NAMES, metric) ? PLL_METRIC_NAMES[metric] : metric}`;
  return {
    objective: PLL,
    pseudo: true,
    surprisal: "pseudo-surprisal",
    perplexity: "pseudo-perplexity",
    title: "Pseudo-perplexity",
    nll: "pseudo-NLL (−PLL)",
    context: "context (both sides)",
    top_k: "top {k} predicted at the masked position",
    pll_metric: metric,
    metric: named,
  };
}

/** "surprisal" -> "Surprisal". */
export function capitalised(words) {
  return words ? words[0].toUpperCase() + words.slice(1) : words;
}
