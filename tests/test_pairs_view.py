"""show_pairs and pairs_accuracy_chart: what the front end is sent, the static page,
the chart's numbers."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from ppl_widget import pairs_accuracy_chart, score_pairs, show_pairs
from ppl_widget.views.pairs_view import pairs_state

FRAME = pd.DataFrame({
    "good": ["The dog sleeps.", "These dogs <b>sleep</b>.", "The fox jumps."],
    "bad": ["The dog sleep.", "This dogs <b>sleep</b>.", "The foxes jumps."],
    "phenomenon": ["agreement", "determiner", "agreement"],
})


@pytest.fixture(scope="module")
def scored(tiny_gpt2):
    return score_pairs(FRAME, tiny_gpt2)


def test_rows_sent_to_the_front_end(scored, tiny_gpt2):
    rows = pairs_state(scored, tiny_gpt2, label="phenomenon")
    assert [r["label"] for r in rows] == list(FRAME["phenomenon"])
    for row, (_, src) in zip(rows, scored.iterrows(), strict=True):
        assert row["delta"] == pytest.approx(src["delta"]) and row["correct"] == src["correct"]
        for side in ("good", "bad"):
            pieces = row[side]["pieces"]
            assert "".join(p for p, _ in pieces) == src[side]  # text as given, whole
            total = sum(v for _, v in pieces if v is not None)
            assert total == pytest.approx(src[f"{side}_nll"], rel=1e-6, abs=1e-4)
    # the first difference: "These"/"This" at character 2, in the first token's piece
    first = rows[1]["good"]
    start = sum(len(p) for p, _ in first["pieces"][:first["first"]])
    assert start <= 2 < start + len(first["pieces"][first["first"]][0])
    fox = rows[2]["bad"]  # "fox" / "foxes": differs at character 7
    start = sum(len(p) for p, _ in fox["pieces"][:fox["first"]])
    assert start <= 7 < start + len(fox["pieces"][fox["first"]][0])


def test_show_pairs_scores_raw_pairs_and_limits_what_is_sent(tiny_gpt2):
    w = show_pairs(FRAME, tiny_gpt2, limit=2, sort="delta_desc")
    assert w.n_total == 3 and len(w.pairs) == 2 and w.sort == "delta_desc"
    assert w.pairs[0]["label"] == "agreement"
    with pytest.raises(ValueError, match="label: no column 'nope'"):
        show_pairs(FRAME, tiny_gpt2, label="nope")


def test_static_page_keeps_markup_as_text(scored, tiny_gpt2, tmp_path):
    page = show_pairs(scored, tiny_gpt2).to_html(tmp_path / "pairs.html")
    assert "<b>sleep</b>" not in page  # only inside the JSON state, escaped
    assert "minimal pairs" in page


def test_accuracy_chart_per_group(scored):
    chart = pairs_accuracy_chart(scored, "phenomenon")
    spec = chart.to_dict()
    values = next(v for k, v in spec["datasets"].items())
    by_group = {r["phenomenon"]: r for r in values}
    agreement = scored[scored["phenomenon"] == "agreement"]
    assert by_group["agreement"]["n_pairs"] == 2
    assert math.isclose(by_group["agreement"]["accuracy"], agreement["correct"].mean())
    assert math.isclose(by_group["agreement"]["accuracy_mean"],
                        agreement["correct_mean"].mean())
    with pytest.raises(ValueError, match="no column"):
        pairs_accuracy_chart(scored, "nope")


def test_the_unit_trait_is_surprisal_unit_as_in_every_view_unit_still_works(scored,
                                                                             tiny_gpt2):
    from ppl_widget.views.compare_widget import ComparisonWidget
    from ppl_widget.views.pairs_view import PairsWidget
    from ppl_widget.views.widget_traits import PerplexityTraits

    w = show_pairs(scored, tiny_gpt2, surprisal_unit="nats")
    assert w.surprisal_unit == "nats" and "surprisal_unit" in w.keys
    assert "unit" not in w.keys  # one name on the wire, the one the other views use
    for other in (PerplexityTraits, ComparisonWidget):
        assert "surprisal_unit" in other.class_trait_names()
    assert w._page_state()["surprisal_unit"] == "nats"  # the static page too
    # the old name: a warning that names the new one, and the same effect
    with pytest.warns(DeprecationWarning, match="surprisal_unit"):
        old = show_pairs(scored, tiny_gpt2, unit="nats")
    assert old.surprisal_unit == "nats"
    with pytest.warns(DeprecationWarning, match="surprisal_unit"):
        assert old.unit == "nats"
    with pytest.warns(DeprecationWarning, match="surprisal_unit"):
        old.unit = "bits"
    assert old.surprisal_unit == "bits"
    with pytest.warns(DeprecationWarning, match="surprisal_unit"):
        assert PairsWidget(pairs=[], unit="nats").surprisal_unit == "nats"


def test_show_pairs_reuses_the_tokens_score_pairs_scored(scored, tiny_gpt2, monkeypatch):
    """score_pairs keeps each sentence's scored tokens: show_pairs on its frame, with the
    same model and options, colours from them (no forward pass) and sends what scoring
    again sends; another option or another model scores again."""
    import copy
    import pickle

    from ppl_widget.scoring.runner.packed import PackedNLL

    again = pairs_state(_without_kept(scored), tiny_gpt2,
                        label="phenomenon")
    calls = []
    real = PackedNLL.token_nlls
    monkeypatch.setattr(PackedNLL, "token_nlls",
                        lambda self, *a: calls.append(1) or real(self, *a))
    subset = scored[scored["phenomenon"] == "agreement"].round(3)  # attrs follow the rows
    assert pairs_state(scored, tiny_gpt2, label="phenomenon") == again and not calls
    assert len(pairs_state(subset, tiny_gpt2)) == 2 and not calls
    assert show_pairs(scored, tiny_gpt2).pairs == again and not calls
    pairs_state(scored, tiny_gpt2, max_length=8)  # another window: scored again
    assert len(calls) == 1
    pairs_state(scored, copy.copy(tiny_gpt2))  # another model object: scored again
    assert len(calls) == 2
    # the kept tokens travel with the frame through a copy and a pickle
    kept = scored.attrs["token_pieces"]
    assert copy.deepcopy(scored).attrs["token_pieces"] is kept
    unpickled = pickle.loads(pickle.dumps(scored))
    assert unpickled.attrs["token_pieces"].options == kept.options
    # a pickled copy holds no model: its tokens are scored again, never matched by an id
    assert pairs_state(unpickled, tiny_gpt2, label="phenomenon") == again
    assert len(calls) == 3


def _without_kept(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    frame.attrs = {k: v for k, v in frame.attrs.items() if k != "token_pieces"}
    return frame
