"""Write the shared cases (token_ranges.json, metrics.json, objective.json,
attribution_colours.json (the explanation's helped / hurt colours), and the live page's
windows.json, text_units.json, ngram.json, log.json: live_cases.py; reuse.json:
reuse_cases.py; sentences.json: sentence_cases.py) that the Python
(tests/test_shared_cases.py) and the front end (js/test/shared_cases.test.js) both run.

The expected outputs are computed here by the Python rules (core/tokens.tokens_in_span,
ScoreResult.metrics, core/metrics.summarize); numbers go through core/jsonable's rule
(NaN is null, infinities are "Infinity"/"-Infinity").  Run after changing a rule:
``PYTHONPATH=$PWD python3 tests/cases/generate.py``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from ppl_widget.core.jsonable import json_safe
from ppl_widget.core.metrics import objective_labels, summarize
from ppl_widget.core.result import ScoreResult
from ppl_widget.core.tokens import tokens_in_span
from ppl_widget.views import attribution_colours

try:  # run as a script (python3 tests/cases/generate.py) or imported by the tests
    from live_cases import log_cases, ngram_cases, text_unit_cases, window_cases
    from reuse_cases import reuse_cases
    from sentence_cases import sentence_cases
except ImportError:  # pragma: no cover
    from .live_cases import log_cases, ngram_cases, text_unit_cases, window_cases
    from .reuse_cases import reuse_cases
    from .sentence_cases import sentence_cases

HERE = Path(__file__).parent

# (name, text length, token offsets in text order); zero-width tokens: the tail of a
# character split over tokens (at its start), an EOS at the end of the text.
TOKENIZATIONS: list[tuple[str, int, list[list[int]]]] = [
    ("plain", 6, [[0, 2], [2, 4], [4, 6]]),
    ("gap between tokens (an unscored space)", 7, [[0, 2], [3, 5], [5, 7]]),
    ("zero-width in the middle", 6, [[0, 3], [3, 3], [3, 6]]),
    ("two zero-width in a row", 6, [[0, 3], [3, 3], [3, 3], [3, 6]]),
    ("zero-width first", 4, [[0, 0], [0, 2], [2, 4]]),
    ("zero-width first, then more", 4, [[0, 0], [0, 0], [0, 4]]),
    ("scored EOS at the end", 5, [[0, 2], [2, 5], [5, 5]]),
    ("split character then EOS", 5, [[0, 5], [5, 5], [5, 5]]),
    ("text not scored from its start (prefix unscored)", 6, [[2, 4], [4, 6]]),
    ("empty text, EOS only", 0, [[0, 0]]),
    ("empty text, nothing scored", 0, []),
    ("one token", 3, [[0, 3]]),
]


def token_range_cases() -> list[dict[str, Any]]:
    """Every span [a, b) with 0 <= a <= b <= text length, for each tokenization."""
    cases = []
    for name, length, offsets in TOKENIZATIONS:
        off = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
        for a in range(length + 1):
            for b in range(a, length + 1):
                cases.append({"name": name, "text_length": length, "offsets": offsets,
                              "span": [a, b], "expected": list(tokens_in_span(off, a, b, length))})
    return cases


def result_of(surprisal: list[float], units: list[list[int]], is_eos: list[bool]) -> ScoreResult:
    """A ScoreResult with these per-token values (the rest zeros): the metrics read no more."""
    n = len(surprisal)
    length = max(1, sum(u[1] for u in units))
    return ScoreResult(
        text="x" * length, token_ids=np.arange(n), offsets=np.zeros((n, 2), np.int64),
        surprisal=np.asarray(surprisal, np.float64), entropy=np.zeros(n), rank=np.ones(n, np.int64),
        context_length=np.ones(n, np.int64), topk_ids=np.zeros((n, 0), np.int64),
        topk_probs=np.zeros((n, 0)), units=np.asarray(units, np.int64).reshape(n, 3),
        is_eos=np.asarray(is_eos, bool))


# (name, per-token surprisal in nats, units (words, chars, bytes) per token, is_eos)
TOKEN_RUNS: list[tuple[str, list[float], list[list[int]], list[bool]]] = [
    ("three tokens, two words", [2.0, 0.5, 3.25], [[1, 3, 3], [0, 2, 2], [1, 4, 5]],
     [False, False, False]),
    ("a scored EOS adds one unit of each", [1.5, 2.5, 0.75], [[1, 2, 2], [1, 3, 4], [1, 1, 1]],
     [False, False, True]),
    ("a token with no units of its own (a split character)", [4.0, 0.25],
     [[1, 1, 3], [0, 0, 0]], [False, False]),
    ("an infinite surprisal (probability 0)", [1.0, math.inf], [[1, 2, 2], [1, 2, 2]],
     [False, False]),
    ("a NaN surprisal", [1.0, math.nan], [[1, 2, 2], [1, 2, 2]], [False, False]),
    ("nothing scored", [], [], []),
]


def metric_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    # from totals and counts (summarize), edges included
    for nll, counts in [(10.0, (4, 2, 9, 11)), (0.0, (3, 1, 3, 3)), (5.0, (0, 0, 0, 0)),
                        (2000.0, (1, 1, 2, 2)), (math.inf, (2, 1, 2, 2)), (math.nan, (2, 1, 2, 2)),
                        (0.0, (0, 0, 0, 0)), (7.5, (5, 0, 20, 20))]:
        cases.append({"kind": "totals", "name": f"nll {nll}, counts {counts}",
                      "total_nll": nll, "counts": list(counts),
                      "expected": summarize(nll, *counts)})
    # from per-token values, over the first k tokens and over all (ScoreResult.metrics)
    for name, surprisal, units, is_eos in TOKEN_RUNS:
        res = result_of(surprisal, units, is_eos)
        for k in range(len(surprisal) + 1):
            m = res.metrics(upto=k)
            cases.append({"kind": "tokens", "name": f"{name}, first {k}", "surprisal": surprisal,
                          "units": units, "is_eos": is_eos, "upto": k,
                          "expected": {key: m[key] for key in KEYS}})
    return cases


KEYS = ("total_nll", "total_bits", "n_tokens", "n_words", "n_chars", "n_bytes", "token_ppl",
        "word_ppl", "char_ppl", "byte_ppl", "bits_per_token", "bits_per_char", "bits_per_byte")


# settings a result may carry, for the label rule (core/metrics.py, js/src/objective.js)
OBJECTIVE_SETTINGS: list[tuple[str, Any]] = [
    ("no settings", None),
    ("empty settings", {}),
    ("a causal result", {"model": "gpt2", "max_length": 1024}),
    ("objective causal", {"objective": "causal"}),
    ("another objective", {"objective": "mlm"}),
    ("objective in capitals (not PLL)", {"objective": "PLL"}),
    ("a pll_metric without the objective", {"pll_metric": "original"}),
    ("PLL, within-word l2r", {"objective": "pll", "pll_metric": "within_word_l2r"}),
    ("PLL, original", {"objective": "pll", "pll_metric": "original", "model": "bert"}),
    ("PLL, no metric given", {"objective": "pll"}),
    ("PLL, metric null", {"objective": "pll", "pll_metric": None}),
    ("PLL, an unknown metric (shown as it is)", {"objective": "pll", "pll_metric": "l2r <b>"}),
    ("PLL, a metric named like an object key", {"objective": "pll", "pll_metric": "toString"}),
]


def objective_cases() -> list[dict[str, Any]]:
    """Settings -> the words every view uses (core/objective.objective_labels)."""
    return [{"name": name, "settings": settings, "expected": objective_labels(settings)}
            for name, settings in OBJECTIVE_SETTINGS]


def write(name: str, cases: list[dict[str, Any]]) -> None:
    # one case a line: a changed rule shows in a diff as the cases it changed
    lines = [json.dumps(c, allow_nan=False, separators=(", ", ": ")) for c in json_safe(cases)]
    (HERE / name).write_text("[\n" + ",\n".join(lines) + "\n]\n", encoding="utf-8")


if __name__ == "__main__":
    write("token_ranges.json", token_range_cases())
    write("metrics.json", metric_cases())
    write("attribution_colours.json", [attribution_colours.rule()])
    write("windows.json", window_cases())
    write("text_units.json", text_unit_cases())
    write("ngram.json", ngram_cases())
    write("log.json", log_cases())
    write("reuse.json", reuse_cases())
    write("sentences.json", sentence_cases())
    write("objective.json", objective_cases())
