"""Perplexity arithmetic.  Pure Python/numpy: no torch.

Perplexity is ``exp(total NLL / number of units)``.  The total NLL (nats) is
a property of the model and the text; only the denominator depends on the
segmentation, which is why models with different tokenizers are comparable
per word, character or byte, never per token.  What the numbers are called (perplexity,
or a masked LM's pseudo-perplexity) is ruled at the end: ``objective_labels``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

LN2 = math.log(2.0)

#: Keys of every metrics dict, in display order.
METRIC_KEYS = (
    "total_nll",
    "total_bits",
    "n_tokens",
    "n_words",
    "n_chars",
    "n_bytes",
    "token_ppl",
    "word_ppl",
    "char_ppl",
    "byte_ppl",
    "bits_per_token",
    "bits_per_char",
    "bits_per_byte",
)


def perplexity(total_nll: float, n_units: int) -> float:
    """``exp(total_nll / n_units)``; NaN when there are no units."""
    if n_units <= 0:
        return math.nan
    try:
        return math.exp(total_nll / n_units)
    except OverflowError:  # over ~709.8 nats per unit (one long "word" of many tokens)
        return math.inf


def bits_per_unit(total_nll: float, n_units: int) -> float:
    if n_units <= 0:
        return math.nan
    return total_nll / LN2 / n_units


def summarize(total_nll: float, n_tokens: int, n_words: int, n_chars: int, n_bytes: int) -> dict:
    """All metrics from a total NLL in nats and the unit counts."""
    total_nll = float(total_nll)
    return {
        "total_nll": total_nll,
        "total_bits": total_nll / LN2,
        "n_tokens": int(n_tokens),
        "n_words": int(n_words),
        "n_chars": int(n_chars),
        "n_bytes": int(n_bytes),
        "token_ppl": perplexity(total_nll, n_tokens),
        "word_ppl": perplexity(total_nll, n_words),
        "char_ppl": perplexity(total_nll, n_chars),
        "byte_ppl": perplexity(total_nll, n_bytes),
        "bits_per_token": bits_per_unit(total_nll, n_tokens),
        "bits_per_char": bits_per_unit(total_nll, n_chars),
        "bits_per_byte": bits_per_unit(total_nll, n_bytes),
    }


def convert_perplexity(ppl: float, n_from: int, n_to: int) -> float:
    """Re-express a perplexity reported over ``n_from`` units over ``n_to`` units.

    Both describe the same total NLL, ``n_from * log(ppl)``; e.g. a token-level
    perplexity over 1200 tokens becomes a word-level one over 1000 words.
    """
    if ppl <= 0 or not math.isfinite(ppl):
        raise ValueError(f"perplexity must be a positive finite number, got {ppl}")
    if n_from <= 0 or n_to <= 0:
        raise ValueError(f"unit counts must be positive, got n_from={n_from}, n_to={n_to}")
    return math.exp(math.log(ppl) * n_from / n_to)


def unigram_normalized_perplexity(surprisal: np.ndarray, unigram_logprob: np.ndarray) -> float:
    """PPLu: ``exp(mean(surprisal + log p_unigram(token)))``.

    Dividing each token's conditional probability by its unigram probability
    removes what a model gets for free from token frequency, so PPLu compares
    models across vocabularies (Roh et al., 2020).  ``unigram_logprob`` holds
    the natural-log unigram probability of each scored token, aligned with
    ``surprisal`` (nats).
    """
    s = np.asarray(surprisal, dtype=np.float64)
    u = np.asarray(unigram_logprob, dtype=np.float64)
    if s.shape != u.shape:
        raise ValueError(f"surprisal and unigram_logprob must align, got {s.shape} vs {u.shape}")
    if s.size == 0:
        return math.nan
    if not np.all(np.isfinite(u)):
        raise ValueError("every scored token needs a finite unigram log-probability (p > 0)")
    return math.exp(float(np.mean(s + u)))


# ---- what the numbers are called -----------------------------------------------------
# The one rule from a result's settings to the words every view names its numbers with.
# A result scored by pseudo-log-likelihood (a masked LM: every token masked and read from
# both sides; ``settings["objective"] == "pll"``) holds pseudo-surprisals, and its
# perplexities are pseudo-perplexities (Salazar et al., ACL 2020): so say its repr and
# metrics, its tables, the CLI, charts, the widget and the export (the front end's copy,
# ``js/src/objective.js``, runs the cases of tests/cases/objective.json). Any other
# settings (no ``objective``, or another value) are an ordinary causal result.

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
