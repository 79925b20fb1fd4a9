"""delta_ll: R's fold layout, a brute-force check of the held-out likelihoods, the rows it
drops and why, the paired comparison, and each bad input's rule."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from ppl_widget import DeltaLL, ReadingTimeError, delta_ll
from ppl_widget.core.reading.fold_layout import FoldError, lay_folds, r_cut_codes
from ppl_widget.core.reading.spillover import ReadingTimeWarning


def reading(n_texts: int = 6, words: int = 40, seed: int = 0, effect: float = 8.0) -> pd.DataFrame:
    """Synthetic texts: RT = 200 + 10 len - 5 freq + effect * surp + spillover + noise."""
    rng = np.random.default_rng(seed)
    n = n_texts * words
    frame = pd.DataFrame({"text": np.repeat(np.arange(1, n_texts + 1), words),
                          "len": rng.integers(1, 12, n).astype(float),
                          "freq": rng.normal(4, 1.2, n), "surp": rng.gamma(2, 3, n),
                          "noise": rng.normal(0, 1, n)})
    rt = 200 + 10 * frame["len"] - 5 * frame["freq"] + effect * frame["surp"] \
        + 4 * frame.groupby("text")["surp"].shift(1).fillna(0) + rng.normal(0, 25, n)
    frame["rt"] = rt
    frame.index = [f"w{i}" for i in range(n)]  # labels, not positions
    return frame


def brute_force(frame, rt, target, baseline, by, fold):
    """Per-fold lstsq + dnorm on pandas-lagged columns: the same numbers, another path."""
    lagged = frame.copy()
    cols = baseline + target
    for k in (1, 2):
        for c in cols:
            lagged[f"p{k}{c}"] = lagged.groupby(by)[c].shift(k)
    lagged = lagged.dropna(subset=[rt] + cols + [f"p{k}{c}" for k in (1, 2) for c in cols])

    def ll(names):
        x = np.column_stack([np.ones(len(lagged))] + [lagged[n].to_numpy() for n in names])
        y = lagged[rt].to_numpy()
        out = np.empty(len(y))
        for k in np.unique(fold):
            test = fold == k
            coef = np.linalg.lstsq(x[~test], y[~test], rcond=None)[0]
            res = y[~test] - x[~test] @ coef
            sd = math.sqrt(res @ res / (len(res) - x.shape[1]))
            mu = x[test] @ coef
            out[test] = -0.5 * np.log(2 * np.pi * sd * sd) - (y[test] - mu) ** 2 / (2 * sd * sd)
        return out

    base = baseline + [f"p{k}{c}" for k in (1, 2) for c in baseline]
    full = cols + [f"p{k}{c}" for k in (1, 2) for c in cols]
    return lagged.index, ll(base), ll(full)


def test_r_cut_puts_a_value_on_a_break_in_the_lower_bin():
    # R: cut(1:10, breaks = 3, labels = FALSE); cut(1:21, breaks = 10, labels = FALSE)
    assert r_cut_codes(np.arange(1, 11), 3).tolist() == [1, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert r_cut_codes(np.arange(1, 22), 10).tolist() == \
        [1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10]
    sizes = np.bincount(lay_folds(2083, 10, "contiguous"))[1:]
    assert sizes.sum() == 2083 and sizes.max() - sizes.min() <= 1


def test_fold_layouts():
    groups = np.repeat([7, 3, 9, 1], 5)
    by_group = lay_folds(20, 10, "group", groups=groups)
    assert by_group.max() == 4  # capped at the number of groups
    assert all(len(set(by_group[groups == g])) == 1 for g in (7, 3, 9, 1))
    assert by_group[0] == 1  # numbered in order of appearance
    a, b = lay_folds(50, 5, "random", seed=1), lay_folds(50, 5, "random", seed=1)
    assert (a == b).all() and not (a == lay_folds(50, 5, "random", seed=2)).all()
    assert sorted(np.bincount(a)[1:]) == [10] * 5
    with pytest.raises(FoldError, match="needs by="):
        lay_folds(20, 5, "group")
    with pytest.raises(FoldError, match="at least 2"):
        lay_folds(20, 1, "contiguous")
    with pytest.raises(FoldError, match="cannot fill"):
        lay_folds(3, 10, "contiguous")


@pytest.mark.parametrize("fold_by", ["contiguous", "group", "random"])
def test_matches_brute_force(fold_by):
    frame = reading()
    result = delta_ll(frame, "rt", ["surp"], ["len", "freq"], by="text", fold_by=fold_by,
                      seed=3)
    index, base, full = brute_force(frame, "rt", ["surp"], ["len", "freq"], "text",
                                    result.per_word["fold"].to_numpy())
    assert result.per_word.index.equals(index)
    np.testing.assert_allclose(result.per_word["ll_baseline"], base, rtol=0, atol=1e-9)
    np.testing.assert_allclose(result.per_word["ll_target"], full, rtol=0, atol=1e-9)
    assert result.n == 6 * 38 and len(result.dropped) == 12
    assert result.mean == pytest.approx(np.mean(full - base), abs=1e-12)
    assert result.se == pytest.approx(np.std(full - base, ddof=1) / math.sqrt(len(base)))
    assert result.mean > 0.05  # surprisal carries a real effect here
    low, high = result.ci()
    assert (low, high) == pytest.approx((result.mean - 1.96 * result.se,
                                         result.mean + 1.96 * result.se))
    assert result.ci(0.9)[1] - result.mean == pytest.approx(1.6448536 * result.se)
    np.testing.assert_allclose(result.per_word["rt_residual"] + result.per_word["rt_predicted"],
                               frame.loc[index, "rt"])


def test_dropped_rows_say_why():
    frame = reading(n_texts=3, words=20)
    frame.loc["w5", "rt"] = np.nan
    frame.loc["w30", "freq"] = np.nan
    result = delta_ll(frame, "rt", "surp", ["len", "freq"], by="text", folds=5)
    reasons = result.dropped["reason"]
    assert reasons["w5"] == "missing reading time"
    assert reasons["w30"] == "missing value in freq"
    assert reasons["w31"] == "missing value in prev1_freq"
    assert reasons["w32"] == "missing value in prev2_freq"
    assert reasons["w0"] == reasons["w21"] == "fewer than 2 predecessor(s) in its group"
    assert len(reasons) == 6 + 4 and result.settings["n_dropped"] == 10
    assert not set(reasons.index) & set(result.per_word.index)
    # spillover 0: only the missing values go
    assert len(delta_ll(frame, "rt", "surp", ["len", "freq"], spillover=0, folds=5).dropped) == 2


def test_paired_comparison():
    frame = reading()
    real = delta_ll(frame, "rt", ["surp"], ["len", "freq"], by="text")
    noise = delta_ll(frame, "rt", ["noise"], ["len", "freq"], by="text")
    diff = real.compare(noise)
    np.testing.assert_allclose(diff.per_word, real.per_word["delta_ll"] -
                               noise.per_word["delta_ll"])
    assert diff.mean == pytest.approx(real.mean - noise.mean)
    assert diff.n == real.n and diff.p_value < 1e-6
    assert real.compare(real).mean == 0 and math.isnan(real.compare(real).p_value)
    other_rows = delta_ll(frame.drop(index="w100"), "rt", ["noise"], ["len", "freq"],
                          by="text")
    with pytest.raises(ReadingTimeError, match="same rows"):
        real.compare(other_rows)
    assert isinstance(real, DeltaLL) and "DeltaLL(mean=" in repr(real)


def test_bad_input_names_the_rule():
    frame = reading()
    with pytest.raises(ReadingTimeError, match=r"baseline names column\(s\) \['length'\]"):
        delta_ll(frame, "rt", ["surp"], ["length"], by="text")
    with pytest.raises(ReadingTimeError, match="rt names column"):
        delta_ll(frame, "gaze", ["surp"], ["len"], by="text")
    text_rt = frame.assign(rt=frame["rt"].astype(object))
    text_rt.loc["w7", "rt"] = "fast"
    with pytest.raises(ReadingTimeError, match=r"must be numeric; row 'w7' holds 'fast'"):
        delta_ll(text_rt, "rt", ["surp"], ["len"], by="text")
    with pytest.raises(ReadingTimeError, match="'len' is constant"):
        delta_ll(frame.assign(len=3.0), "rt", ["surp"], ["len", "freq"], by="text")
    with pytest.raises(ReadingTimeError, match="'twice' is collinear"):
        delta_ll(frame.assign(twice=2 * frame["surp"] + 1), "rt", ["surp", "twice"],
                 ["len", "freq"], by="text")
    with pytest.raises(ReadingTimeError, match="more training rows than coefficients"):
        delta_ll(frame.iloc[:14], "rt", ["surp", "noise"], ["len", "freq"], folds=2)
    with pytest.raises(ReadingTimeError, match="in both baseline and target"):
        delta_ll(frame, "rt", ["surp"], ["surp"], by="text")


def test_a_group_too_short_for_the_spillover_is_warned_of_and_dropped():
    frame = reading()
    frame.loc[["w0", "w1"], "text"] = 99  # a two-word text
    with pytest.warns(ReadingTimeWarning, match=r"group\(s\) \[99\].*at most 2 row"):
        result = delta_ll(frame, "rt", ["surp"], ["len", "freq"], by="text")
    assert {"w0", "w1"} <= set(result.dropped.index)


def test_a_predictor_constant_in_one_training_part_warns():
    frame = reading()
    frame["only_text_1"] = (frame["text"] == 1) * frame["freq"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = delta_ll(frame, "rt", ["surp"], ["len", "only_text_1"], by="text",
                          fold_by="group")
    assert any("rank" in str(w.message) and w.category is ReadingTimeWarning for w in caught)
    assert np.isfinite(result.per_word["delta_ll"]).all()
