"""A masked LM's result (settings ``objective="pll"``, core/metrics.py) is named as what it
holds wherever a view names a number: pseudo-perplexity and pseudo-surprisal in metrics(),
repr, to_frame, conventions, the CLI's table, the charts, the export and the comparison
table, with the PLL metric shown; a causal result keeps every word and key it had.
Results are built by hand (no model): these views read only the settings and the arrays."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from ppl_widget.core.comparison import Comparison
from ppl_widget.core.metrics import objective_labels
from ppl_widget.core.result import ScoreResult

TEXT = "The cat sat on the mat."
WORDS = [(0, 3), (3, 7), (7, 11), (11, 14), (14, 18), (18, 22), (22, 23)]  # " cat", "."...


def make(settings: dict, *, top_k: int = 2) -> ScoreResult:
    n = len(WORDS)
    rng = np.random.default_rng(0)
    units = np.array([[1, e - s, e - s] for s, e in WORDS])
    units[-1, 0] = 0  # "." starts no word
    return ScoreResult(
        text=TEXT, token_ids=np.arange(n) + 5, offsets=np.array(WORDS),
        surprisal=rng.gamma(2.0, 1.0, n), entropy=rng.gamma(2.0, 1.0, n),
        rank=rng.integers(1, 9, n), context_length=np.full(n, n + 1),
        topk_ids=np.tile(np.arange(top_k) + 5, (n, 1)), topk_probs=np.full((n, top_k), 0.2),
        units=units, is_eos=np.zeros(n, bool),
        vocab={i + 5: TEXT[s:e] for i, (s, e) in enumerate(WORDS)},
        settings={"model": "tiny", "max_length": 16, "stride": 8, "top_k": top_k, **settings})


PLL = {"objective": "pll", "pll_metric": "within_word_l2r"}


@pytest.fixture
def pll() -> ScoreResult:
    return make(PLL)


@pytest.fixture
def causal() -> ScoreResult:
    return make({"prefix": "bos"})


def test_metrics_keep_their_keys_and_name_the_objective(pll, causal):
    m, c = pll.metrics(), causal.metrics()
    assert m["objective"] == "pll" and m["pll_metric"] == "within_word_l2r"
    assert m["perplexity_label"] == "pseudo-perplexity"
    assert set(m) - set(c) == {"objective", "pll_metric", "perplexity_label"}
    assert not {"objective", "pll_metric", "perplexity_label"} & set(c)  # causal unchanged
    for key in c:  # the same numbers under the same keys
        assert m[key] == c[key] or (m[key] != m[key] and c[key] != c[key])
    # the metrics carry what the label rule reads: a consumer of metrics() alone can name them
    assert objective_labels(m)["perplexity"] == "pseudo-perplexity"
    assert pll.metrics(upto=3)["objective"] == "pll"
    assert pll.metrics(span=(4, 10))["pll_metric"] == "within_word_l2r"


def test_repr_and_conventions_say_pseudo(pll, causal):
    assert "pseudo-perplexity (PLL, within_word_l2r)" in repr(pll)
    assert "pseudo" not in repr(causal)
    conv = pll.conventions()
    assert "pseudo-log-likelihood (PLL, within-word l2r (Kauf & Ivanova 2023))" in conv
    assert "special tokens read, not scored" in conv and "unscored" not in conv
    assert "pseudo" not in causal.conventions()
    original = make({"objective": "pll", "pll_metric": "original"})
    assert "original (Salazar et al. 2020)" in original.conventions()


@pytest.mark.parametrize("level", ["token", "word", "sentence"])
def test_to_frame_names_the_measure_over_its_columns(pll, causal, level):
    f, g = pll.to_frame(level), causal.to_frame(level)
    assert list(f.columns) == list(g.columns)  # code that reads "surprisal" keeps working
    assert f.attrs["objective"] == "pll" and f.attrs["measure"] == "pseudo-surprisal"
    assert f.attrs["pll_metric"] == "within_word_l2r"
    assert f.columns.name == "pseudo-surprisal (PLL, within-word l2r (Kauf & Ivanova 2023))"
    assert "pseudo-surprisal" in repr(f) and "pseudo-surprisal" in f._repr_html_()
    assert g.attrs["objective"] == "causal" and g.attrs["measure"] == "surprisal"
    assert g.columns.name is None and "pll_metric" not in g.attrs
    np.testing.assert_array_equal(f["surprisal"], g["surprisal"])


def test_saved_and_loaded_result_keeps_its_labels(pll, tmp_path):
    back = ScoreResult.from_dict(json.loads(pll.to_json()))
    assert back.metrics()["objective"] == "pll" and "pseudo" in repr(back)
    assert json.loads(pll.to_json())["metrics"]["perplexity_label"] == "pseudo-perplexity"


def test_cli_table_says_pseudo_perplexity(pll, causal):
    from ppl_widget.cli.score import format_metrics

    out = format_metrics(pll.metrics(), pll.conventions())
    assert out.splitlines()[0] == "Pseudo-perplexity (PLL, within-word l2r (Kauf & Ivanova 2023))"
    assert "pseudo-PPL / word" in out and "pseudo-NLL (nats)" in out
    assert not re.search(r"^perplexity /", out, re.M)
    plain = format_metrics(causal.metrics())
    assert "perplexity / word" in plain and "pseudo" not in plain


def test_charts_title_pseudo_surprisal_and_pseudo_perplexity(pll, causal):
    pytest.importorskip("altair")
    from ppl_widget.views.charts import charts

    for kind in charts.KINDS:
        spec = json.dumps(charts.for_result(pll, kind).to_dict())
        plain = json.dumps(charts.for_result(causal, kind).to_dict())
        assert "pseudo-" in spec and "within-word l2r" in spec, kind
        assert "pseudo" not in plain, kind
    spec = json.dumps(charts.surprisal(pll).to_dict())
    assert "Pseudo-surprisal by position" in spec and "pseudo-surprisal (bits)" in spec
    assert "Running pseudo-perplexity" in json.dumps(charts.running_perplexity(pll).to_dict())


def _state(page: str) -> dict:
    m = re.search(r'<script type="application/json" class="pplw-state">(.*?)</script>', page,
                  re.S)
    return json.loads(m.group(1))["state"]


def _summary(page: str) -> str:
    return re.search(r'<div class="pplw-static-summary">(.*?)</div>', page).group(1)


def test_export_names_pseudo_perplexity_and_the_metric(pll, causal):
    page = pll.to_html()
    title = re.search(r"<title>(.*?)</title>", page).group(1)
    assert "pseudo-perplexity (PLL, within-word l2r" in title
    assert "pseudo-perplexity (PLL, within-word l2r" in _summary(page)
    state = _state(page)
    # the settings the front end names them by (js/src/objective.js, the same rule)
    assert state["settings"]["objective"] == "pll"
    assert state["settings"]["pll_metric"] == "within_word_l2r"
    assert state["result_data"]["metrics"]["objective"] == "pll"
    plain = causal.to_html()
    assert "pseudo" not in re.search(r"<title>(.*?)</title>", plain).group(1)
    assert "perplexity per token" in _summary(plain) and "pseudo" not in _summary(plain)


def test_a_comparison_of_a_masked_and_a_causal_model_marks_the_pseudo_row(pll, causal):
    cmp = Comparison(TEXT, [pll, causal], ["bert", "gpt"])
    table = cmp.table()
    assert list(table["measure"]) == ["pseudo-perplexity", "perplexity"]
    assert "pseudo-perplexity" in table.attrs["note"] and "pseudo-perplexity" in repr(table)
    words = cmp.words()
    assert words.attrs["measures"] == {"bert": "pseudo-surprisal", "gpt": "surprisal"}
    # per word the two line up (the same words, each model's sums)
    assert len(words) == 6 and np.isfinite(words["diff"]).all()
    same = Comparison(TEXT, [causal, make({})], ["a", "b"]).table()
    assert "measure" not in same.columns and "pseudo" not in same.attrs["note"]


def test_the_comparison_view_row_carries_the_objective(pll, causal):
    from ppl_widget.views.compare_data import table_row

    row = table_row(pll, label="bert", model="tiny", status="done", vocab_size=30)
    assert row["objective"] == "pll" and row["pll_metric"] == "within_word_l2r"
    assert "pseudo-log-likelihood" in row["conventions"]
    plain = table_row(causal, label="gpt", model="tiny", status="done", vocab_size=30)
    assert "objective" not in plain


def test_every_pll_metric_the_scorer_takes_has_a_name():
    from ppl_widget.core.metrics import PLL_METRIC_NAMES
    from ppl_widget.scoring.kinds.masked.masked_model import check_pll_metric

    assert len(PLL_METRIC_NAMES) == 2
    for metric in PLL_METRIC_NAMES:
        assert check_pll_metric(metric) == metric
