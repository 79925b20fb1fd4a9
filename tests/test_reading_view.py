"""show_reading: what the front end is sent (numbers in nats and ms, null for missing,
one group per text, the chosen model and RT measure), its errors, and the static page
keeping words as text."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ppl_widget import ReadingWidget, show_reading

LN2 = math.log(2)


def _per_word() -> pd.DataFrame:
    """A long per-word frame as predictive_power gives it: two models, two RT measures."""
    words = ["The", "<img src=x onerror=alert(1)>", "man", "nan", "boat."]
    rows = []
    for model in ("lm", "bigram"):
        for rt in ("gaze_rt", "total_rt"):
            for k, w in enumerate(words):
                rows.append({"model": model, "rt": rt, "text": 1 + (k >= 3), "row": k,
                             "word": w, "rt_value": 200.0 + 10 * k + (rt == "total_rt"),
                             "surprisal_bits": 1.0 + k + (model == "bigram"),
                             "frequency": 5.0, "length": len(w),
                             "rt_predicted": np.nan if k == 0 else 205.0,
                             "rt_residual": np.nan if k == 0 else -5.0 + 10 * k})
    frame = pd.DataFrame(rows)
    frame.attrs["by"] = ["text"]
    return frame


def test_payload_of_one_model_and_measure():
    w = show_reading(_per_word(), model="bigram", rt="total_rt")
    d = w.data
    assert d["word"] == ["The", "<img src=x onerror=alert(1)>", "man", "nan", "boat."]
    assert w.groups == ["1", "2"] and d["group"] == [0, 0, 0, 1, 1]
    assert d["rt"] == [201.0, 211.0, 221.0, 231.0, 241.0]  # total_rt's rows only
    assert d["surprisal"] == pytest.approx([(2 + k) * LN2 for k in range(5)])  # bits -> nats
    assert d["predicted"][0] is None and d["residual"][0] is None  # NaN -> null
    assert d["residual"][1:] == [5.0, 15.0, 25.0, 35.0]
    assert w.rt_name == "total_rt" and w.frequency_name == "frequency"
    assert w.surprisal_unit == "bits" and w.color_by == "surprisal" and w.n_total == 5


def test_defaults_pick_the_first_model_and_measure_and_residual_from_prediction():
    frame = _per_word().drop(columns=["rt_residual"])
    w = show_reading(frame, color_by="residual", surprisal_unit="nats")
    assert w.rt_name == "gaze_rt" and w.data["rt"][0] == 200.0
    assert w.data["surprisal"][0] == pytest.approx(LN2)  # the first model: lm
    assert w.data["residual"] == [None, 5.0, 15.0, 25.0, 35.0]  # rt - predicted
    assert w.color_by == "residual" and w.surprisal_unit == "nats"


def test_a_plain_frame_with_its_own_columns():
    frame = pd.DataFrame({"w": ["a", "b", "c"], "ms": [300, 250, np.nan],
                          "surprisal": [1.0, 2.0, np.inf]})
    w = show_reading(frame, columns={"word": "w", "rt": "ms"})
    assert w.groups == ["1"] and w.data["group"] == [0, 0, 0]
    assert w.data["surprisal"] == [1.0, 2.0, "Infinity"]  # score_words' nats, kept
    assert w.data["rt"][2] is None and w.data["predicted"] == [None] * 3
    assert w.rt_name == "ms"
    plain = frame.rename(columns={"w": "word", "ms": "rt_value"})
    assert show_reading(plain).rt_name == "reading time"  # not the column's code name


def test_errors_name_the_rule():
    frame = _per_word()
    with pytest.raises(ValueError, match=r"model='gpt9': not in the frame"):
        show_reading(frame, model="gpt9")
    with pytest.raises(ValueError, match="color_by must be one of"):
        show_reading(frame, color_by="rainbow")
    with pytest.raises(ValueError, match=r"no column\(s\) \['nope'\]"):
        show_reading(frame, by="nope")
    with pytest.raises(ValueError, match="unknown field"):
        show_reading(frame, columns={"colour": "x"})
    with pytest.raises(ValueError, match="say whether column 'surp' is in 'bits' or 'nats'"):
        show_reading(frame.rename(columns={"surprisal_bits": "surp"}),
                     columns={"surprisal": "surp"})
    with pytest.raises(ValueError, match="has no 'model' column"):
        show_reading(frame[frame["model"] == "lm"].drop(columns=["model"]), model="lm")
    with pytest.raises(TypeError, match="DataFrame"):
        show_reading([1, 2, 3])


def test_limit_and_note():
    w = show_reading(_per_word(), limit=2, note="ΔLL 0.01 nats/word")
    assert len(w.data["word"]) == 2 and w.n_total == 5 and w.note == "ΔLL 0.01 nats/word"


def test_static_page_keeps_markup_as_text(tmp_path):
    w = show_reading(_per_word())
    assert isinstance(w, ReadingWidget)
    page = w.to_html(tmp_path / "reading.html")
    assert "<img src=x" not in page  # only inside the JSON state, escaped
    assert "\\u003cimg src=x onerror=alert(1)\\u003e" in page
    assert "reading view: 5 words, 2 texts" in page
    bundle = w._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "pplw-static" in data["text/html"]  # notebook fallback for nbconvert


def test_predictive_powers_per_word_frame_is_shown_per_text_with_its_delta_ll():
    """show_reading(per_word) on predictive_power's own per-word frame: one block per text
    (the ``by`` column travels on the frame's attrs), each word's ΔLL sent for the text's
    mean, the tooltip's frequency named Zipf, the note naming the rows the ΔLL used."""
    pytest.importorskip("wordfreq")
    from ppl_widget import NGramModel, predictive_power

    texts = ["the cat sat on the mat and the dog sat on the log",
             "a bird sang in the tree while the cat slept on the warm mat",
             "the old man read the paper and the young girl read a book",
             "rain fell on the roof as the family ate dinner in the kitchen"]
    rows = [(t, w) for t, s in enumerate(texts, start=11) for w in s.split()]
    table = pd.DataFrame(rows, columns=["story", "word"])
    table["gaze"] = 200 + 8 * table["word"].str.len() \
        + np.random.default_rng(0).normal(0, 10, len(table))
    bigram = NGramModel(2, "kneser-ney").fit(texts)
    out = predictive_power(table, {"bi": bigram}, rt="gaze", by="story", folds=4)
    per_word = out.attrs["per_word"]
    assert per_word.attrs["by"] == ["story"] and per_word.attrs["frequency_scale"] == "Zipf"
    w = show_reading(per_word)
    assert w.groups == ["11", "12", "13", "14"]
    assert w.data["group"] == [g - 11 for g in table["story"]]
    assert w.frequency_name == "Zipf frequency"
    dll = per_word["delta_ll"]
    assert w.data["delta_ll"] == [None if math.isnan(v) else v for v in dll]
    n, dropped = int(dll.notna().sum()), int(dll.isna().sum())
    assert n == out.loc[0, "n"] and dropped == 2 * len(texts)  # two words before each
    assert f"over the {n:,} words in the regression ({dropped:,} left out" in w.note
    assert f"ΔLL {out.loc[0, 'delta_ll']:.4f} nats/word" in w.note
    assert show_reading(per_word, frequency_name="log freq").frequency_name == "log freq"
    plain = per_word.copy()
    plain.attrs = {}  # a frame without predictive_power's attrs: the column's own name
    assert show_reading(plain).frequency_name == "frequency" and show_reading(plain).note == ""
