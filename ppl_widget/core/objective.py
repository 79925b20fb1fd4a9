"""What a result's numbers are called: the one rule from its settings to label words.

A result scored by pseudo-log-likelihood (a masked LM: every token masked and read from
both sides; ``settings["objective"] == "pll"``) holds pseudo-surprisals, and its
perplexities are pseudo-perplexities (Salazar et al., ACL 2020). Every view names them so:
the result's repr and metrics, its tables, the CLI, charts, the widget and the export
(the front end's copy, ``js/src/objective.js``, runs the cases of tests/cases/objective.json).
Any other settings (no ``objective``, or another value) are an ordinary causal result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: ``settings["objective"]`` of a result scored by pseudo-log-likelihood.
PLL = "pll"

#: The PLL metrics and how they are named: the token masked alone (Salazar et al. 2020),
#: or with the later tokens of its word masked too (Kauf & Ivanova 2023).
PLL_METRIC_NAMES: dict[str, str] = {
    "within_word_l2r": "within-word l2r (Kauf & Ivanova 2023)",
    "original": "original (Salazar et al. 2020)",
}


def is_pll(settings: Mapping[str, Any] | None) -> bool:
    """Whether settings are those of a pseudo-log-likelihood result."""
    return isinstance(settings, Mapping) and settings.get("objective") == PLL


def objective_labels(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """The words every view uses for a result with these settings (JSON-ready).

    ``surprisal``/``perplexity``/``nll``: the measure's names; ``title``: the panel's;
    ``context``: the tooltip's name for what a prediction read; ``top_k``: what the k
    alternatives are (``{k}``: their number); ``pll_metric`` and ``metric``: the PLL
    metric's setting and its name (None and "" for a causal result)."""
    if not is_pll(settings):
        return {"objective": "causal", "pseudo": False, "surprisal": "surprisal",
                "perplexity": "perplexity", "title": "Perplexity", "nll": "NLL",
                "context": "context", "top_k": "model's top {k}", "pll_metric": None,
                "metric": ""}
    raw = settings.get("pll_metric")  # type: ignore[union-attr]
    metric = None if raw is None else str(raw)
    named = "PLL" if metric is None else f"PLL, {PLL_METRIC_NAMES.get(metric, metric)}"
    return {"objective": PLL, "pseudo": True, "surprisal": "pseudo-surprisal",
            "perplexity": "pseudo-perplexity", "title": "Pseudo-perplexity",
            "nll": "pseudo-NLL (−PLL)", "context": "context (both sides)",
            "top_k": "top {k} predicted at the masked position", "pll_metric": metric,
            "metric": named}


def objective_metrics(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """What ``ScoreResult.metrics()`` adds to its numbers for a PLL result (nothing for a
    causal one, whose keys stay as they were): the objective, its metric and the label
    its perplexities carry."""
    if not is_pll(settings):
        return {}
    labels = objective_labels(settings)
    return {"objective": PLL, "pll_metric": labels["pll_metric"],
            "perplexity_label": labels["perplexity"]}


def pseudo_note(settings: Mapping[str, Any] | None) -> str:
    """One line naming the measure for a PLL result ("" for a causal one): for repr,
    conventions, the CLI and captions."""
    if not is_pll(settings):
        return ""
    return (f"pseudo-log-likelihood ({objective_labels(settings)['metric']}): every token "
            "masked and read from both sides; values are pseudo-surprisals")
