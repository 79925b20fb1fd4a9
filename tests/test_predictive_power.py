"""predictive_power: a reading table and models in, ΔLL per model and measure out; the
same numbers as score_words + delta_ll by hand; the per-word frame; its warnings and
errors (columns checked before any model is loaded)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from ppl_widget import NGramModel, ReadingTimeError, delta_ll, predictive_power, score_words
from ppl_widget.core.reading.spillover import ReadingTimeWarning
from ppl_widget.core.reading.word_frequency import letters_length, zipf_frequencies
from ppl_widget.scoring.analyses.predictive_power import TIDY_COLUMNS, _check_every_word_scored

pytest.importorskip("wordfreq")

SENTENCES = ["the cat sat on the mat and the dog sat on the log",
             "a bird sang in the tree while the cat slept on the warm mat",
             "the old man read the paper and the young girl read a book",
             "rain fell on the roof as the family ate dinner in the kitchen",
             "the children played in the park until the sun went down",
             "a small boat sailed across the lake in the early morning"]
PER_WORD_COLUMNS = ["model", "rt", "text", "row", "word", "rt_value", "surprisal_bits",
                    "frequency", "length", "rt_predicted", "rt_residual", "ll_baseline",
                    "ll_target", "delta_ll", "fold", "dropped"]


@pytest.fixture(scope="module")
def bigram():
    return NGramModel(2, "kneser-ney").fit(SENTENCES)


@pytest.fixture(scope="module")
def table(bigram):
    """Each text's words (punctuation on the last), with reading times that follow the
    bigram's surprisal: ΔLL must come out clearly positive for it."""
    rows = [(t, j, w + ("." if j == len(s.split()) - 1 else ""))
            for t, s in enumerate(SENTENCES, start=1) for j, w in enumerate(s.split())]
    frame = pd.DataFrame(rows, columns=["text", "position", "word"])
    bits = score_words(frame, bigram, by="text")["surprisal_bits"].to_numpy()
    rng = np.random.default_rng(0)
    frame["gaze"] = 180 + 25 * bits + rng.normal(0, 10, len(frame))
    frame["total"] = 250 + 30 * bits + rng.normal(0, 30, len(frame))
    frame.index = frame.index + 100  # labels that are not positions
    return frame


def test_same_numbers_as_score_words_and_delta_ll_by_hand(table, bigram):
    out = predictive_power(table, bigram, rt=["gaze", "total"], by="text", folds=3)
    assert out.columns.tolist() == TIDY_COLUMNS
    assert out["model"].tolist() == [bigram.name] * 2 and out["rt"].tolist() == ["gaze", "total"]
    bits = score_words(table, bigram, by="text")["surprisal_bits"]
    words = table["word"]
    zipf = zipf_frequencies(words, "en", purpose="test")
    by_hand = table.assign(surprisal_bits=bits, length=[letters_length(w) for w in words],
                           frequency=words.map(zipf))
    for measure, row in zip(["gaze", "total"], out.itertuples(), strict=True):
        want = delta_ll(by_hand, measure, ["surprisal_bits"], ["length", "frequency"],
                        by="text", folds=3, fold_by="group")
        assert row.delta_ll == pytest.approx(want.mean, abs=1e-12)
        assert row.se == pytest.approx(want.se) and row.n == want.n
        assert (row.ci_low, row.ci_high) == pytest.approx(want.ci())
        used = bits.loc[want.per_word.index]
        assert row.mean_surprisal_bits == pytest.approx(used.mean())
        assert row.word_perplexity == pytest.approx(2 ** used.mean())
        assert row.delta_ll > 0.2 and row.ci_low > 0  # the RTs follow this model
    assert letters_length("mat.") == 3


def test_per_word_frame_for_plots(table, bigram):
    unigram = NGramModel(1, "add-k").fit(SENTENCES)
    out = predictive_power(table, {"bi": bigram, "uni": unigram}, rt="gaze", by="text",
                           folds=3)
    assert out["model"].tolist() == ["bi", "uni"]
    assert out.loc[0, "delta_ll"] > out.loc[1, "delta_ll"]  # the RTs were made from the bigram
    per_word = out.attrs["per_word"]
    assert per_word.columns.tolist() == PER_WORD_COLUMNS
    assert len(per_word) == 2 * len(table) and out.attrs["by"] == ["text"]
    bi = per_word[per_word["model"] == "bi"].set_index("row")
    assert bi.index.tolist() == table.index.tolist()
    assert (bi["rt_value"] == table["gaze"]).all()
    first_two = bi.groupby("text").head(2)
    assert first_two["delta_ll"].isna().all() and first_two["fold"].isna().all()
    assert (first_two["dropped"] == "fewer than 2 predecessor(s) in its group").all()
    used = bi[bi["dropped"] == ""]
    assert len(used) == out.loc[0, "n"] and used["delta_ll"].mean() == \
        pytest.approx(out.loc[0, "delta_ll"])
    np.testing.assert_allclose(used["rt_predicted"] + used["rt_residual"], used["rt_value"])
    result = out.attrs["results"][("bi", "gaze")]
    assert result.settings["fold_by"] == "group" and result.settings["folds"] == 3


def test_table_columns_as_baseline_and_bow_correction(table, bigram, tiny_gpt2):
    own = table.assign(len_col=table["word"].str.len(), zipf=1.0 + (table.index % 7))
    out = predictive_power(own, bigram, rt="gaze", by="text", baseline=["len_col", "zipf"],
                           folds=3, fold_by="contiguous")
    assert out.attrs["results"][(bigram.name, "gaze")].settings["baseline"] == \
        ["len_col", "zipf"]
    corrected = predictive_power(table, tiny_gpt2, rt="gaze", by="text", folds=3,
                                 bow_correction=True)  # a transformer: n-grams have no BOW
    bits = score_words(table, tiny_gpt2, by="text", bow_correction=True)
    pw = corrected.attrs["per_word"]
    np.testing.assert_allclose(pw["surprisal_bits"], bits["surprisal_corrected_bits"])


def test_label_mismatch_is_named_in_a_warning(table, bigram):
    meco_like = table.rename(columns={"word": "word.x"})
    meco_like["word.y"] = meco_like["word.x"]
    meco_like.loc[[110, 111], "word.y"] = ["shifted", "words"]
    with pytest.warns(ReadingTimeWarning, match=r"2 row\(s\) where 'word.x'.*\[110, 111\]"):
        predictive_power(meco_like, bigram, rt="gaze", word="word.x", by="text", folds=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no label column given: nothing to warn of
        predictive_power(table, bigram, rt="gaze", by="text", folds=3)


def test_columns_are_checked_before_any_model_loads(table):
    not_a_model = "/nonexistent/model/dir"
    with pytest.raises(ReadingTimeError, match=r"rt names column\(s\) \['gaze_rt'\]"):
        predictive_power(table, not_a_model, by="text")
    with pytest.raises(ReadingTimeError, match=r"by names column\(s\) \['story'\]"):
        predictive_power(table, not_a_model, rt="gaze", by="story")
    with pytest.raises(ReadingTimeError, match=r"baseline names column\(s\) \['freq'\]"):
        predictive_power(table, not_a_model, rt="gaze", by="text", baseline="length+freq")
    bad = table.assign(gaze=table["gaze"].astype(object))
    bad.loc[103, "gaze"] = "slow"
    with pytest.raises(ReadingTimeError, match="must be numeric; row 103 holds 'slow'"):
        predictive_power(bad, not_a_model, rt="gaze", by="text")
    with pytest.raises(ReadingTimeError, match="row labels"):
        predictive_power(pd.concat([table, table]), not_a_model, rt="gaze", by="text")


def test_a_word_without_a_token_is_named():
    reading = pd.DataFrame({"word": ["a", "\u200b", "b"]}, index=[5, 6, 7])
    scored = pd.DataFrame({"n_tokens": [1, 0, 2]})
    with pytest.raises(ReadingTimeError, match=r"got no token.*6: '\\u200b'"):
        _check_every_word_scored(scored, reading, "word")
