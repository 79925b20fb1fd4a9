"""The paired tests of two ΔLL results: the sign-flip permutation test checked against
brute-force enumeration written another way (and scipy's ``permutation_test`` where scipy
is installed), the normal approximation kept as the default, and ``link_shape``: the
linear-versus-non-linear comparison in one call."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from ppl_widget import LinkShape, ReadingTimeError, delta_ll, link_shape
from ppl_widget.core.reading.link_shape import smooth_term
from ppl_widget.core.reading.permutation import sign_flip_test


def brute_force_p(diff: np.ndarray) -> float:
    """Every sign vector in pure Python; two-sided: twice the smaller tail share."""
    observed = sum(diff) / len(diff)
    tol = 1e-12 * max(1.0, abs(observed))
    means = [sum(s * d for s, d in zip(signs, diff, strict=True)) / len(diff)
             for signs in itertools.product((1, -1), repeat=len(diff))]
    less = sum(m <= observed + tol for m in means) / len(means)
    greater = sum(m >= observed - tol for m in means) / len(means)
    return min(1.0, 2 * min(less, greater))


@pytest.mark.parametrize("seed, n_words", [(0, 4), (1, 7), (2, 10), (3, 12)])
def test_exact_test_equals_enumeration(seed, n_words):
    diff = np.random.default_rng(seed).normal(0.4, 1.0, n_words)
    got = sign_flip_test(diff, n=10_000)
    assert got.exact and got.resamples == 2 ** n_words
    assert got.p_value == pytest.approx(brute_force_p(diff), abs=1e-12)


def test_ties_count_as_extreme():
    # integer differences: many sign vectors give exactly the observed mean
    diff = np.array([1.0, 1.0, 1.0, 1.0, -1.0])
    assert sign_flip_test(diff, n=64).p_value == pytest.approx(brute_force_p(diff))
    assert sign_flip_test(np.zeros(6), n=64).p_value == 1.0


def test_random_test_approximates_the_exact_one():
    diff = np.random.default_rng(5).normal(0.35, 1.0, 15)
    exact = brute_force_p(diff)
    draws = sign_flip_test(diff, n=4000, seed=1)
    assert not draws.exact and draws.resamples == 4000
    # binomial sd of a share estimated from 4000 draws, times 2 (two tails), 5 sd
    assert abs(draws.p_value - exact) < 5 * 2 * math.sqrt(exact / 2 * (1 - exact / 2) / 4000)
    again = sign_flip_test(diff, n=4000, seed=1)
    assert again.p_value == draws.p_value  # the seed reproduces it
    # never zero: the observed arrangement counts among the resamples
    assert sign_flip_test(np.full(200, 1.0), n=100, seed=0).p_value == pytest.approx(2 / 101)


def test_agrees_with_scipy_permutation_test():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(7)
    for n_words in (6, 11):
        diff = rng.normal(0.3, 1.0, n_words)
        x = diff + rng.normal(size=n_words)
        ref = stats.permutation_test((x, x - diff), lambda a, b, axis: np.mean(a - b, axis=axis),
                                     permutation_type="samples", vectorized=True,
                                     n_resamples=10**6)
        assert sign_flip_test(diff, n=10**6).p_value == pytest.approx(ref.pvalue, abs=1e-12)
    diff = rng.normal(0.1, 1.0, 400)
    x = diff + 1
    ref = stats.permutation_test((x, x - diff), lambda a, b, axis: np.mean(a - b, axis=axis),
                                 permutation_type="samples", vectorized=True,
                                 n_resamples=20_000, random_state=0)
    assert sign_flip_test(diff, n=20_000, seed=0).p_value == pytest.approx(ref.pvalue, abs=0.02)


def frame(n_texts: int = 5, words: int = 60, seed: int = 0, curve: float = 0.0) -> pd.DataFrame:
    """RT = 200 + 10 len - 5 freq + 6 surp + curve * surp**2 + noise."""
    rng = np.random.default_rng(seed)
    n = n_texts * words
    out = pd.DataFrame({"text": np.repeat(np.arange(n_texts), words),
                        "len": rng.integers(1, 12, n).astype(float),
                        "freq": rng.normal(4, 1.2, n), "surp": rng.gamma(2, 3, n)})
    out["surp2"] = out["surp"] ** 2
    out["rt"] = (200 + 10 * out["len"] - 5 * out["freq"] + 6 * out["surp"]
                 + curve * out["surp2"] + rng.normal(0, 25, n))
    return out


def test_compare_keeps_the_normal_test_as_default_and_says_which_ran():
    data = frame()
    a = delta_ll(data, "rt", ["surp"], ["len", "freq"], by="text", spillover=1)
    b = delta_ll(data, "rt", ["surp", "surp2"], ["len", "freq"], by="text", spillover=1)
    normal = b.compare(a)
    assert normal.test == "normal" and normal.permutation is None
    z = normal.mean / normal.se
    assert normal.p_value == pytest.approx(math.erfc(abs(z) / math.sqrt(2)))
    perm = b.compare(a, test="permutation", n=2000, seed=3)
    assert perm.test == "permutation" and perm.permutation.resamples == 2000
    assert perm.p_value == sign_flip_test(perm.per_word.to_numpy(), 2000, 3).p_value
    assert perm.p_value_normal == normal.p_value and perm.mean == normal.mean
    assert "2,000 random sign flips, seed 3" in repr(perm)
    assert "normal approximation" in repr(normal)


@pytest.mark.parametrize("kwargs, message", [
    ({"test": "t"}, r"test must be one of \['normal', 'permutation'\], not 't'"),
    ({"test": "permutation", "n": 0}, r"n \(the permutation test's resamples\) must be a "
                                      "positive integer, not 0"),
    ({"test": "permutation", "n": 2.5}, "must be a positive integer, not 2.5"),
])
def test_compare_bad_arguments_name_the_rule(kwargs, message):
    data = frame()
    a = delta_ll(data, "rt", ["surp"], ["len"], spillover=0)
    with pytest.raises(ReadingTimeError, match=message):
        a.compare(a, **kwargs)
    with pytest.raises(ReadingTimeError, match="compare needs another DeltaLL"):
        a.compare(a.per_word)


def test_a_difference_of_nan_words_cannot_be_permuted():
    with pytest.raises(ReadingTimeError, match="finite differences; 1 are NaN"):
        sign_flip_test(np.array([0.1, np.nan, 0.3]))


def test_link_shape_is_the_two_delta_lls_and_their_paired_test():
    data = frame(curve=0.4)
    got = link_shape(data, "rt", "surp", ["len", "freq"], nonlinear=["surp", "surp2"],
                     by="text", n=500, seed=2)
    assert isinstance(got, LinkShape)
    lin = delta_ll(data, "rt", ["surp"], ["len", "freq"], by="text", spillover=0)
    non = delta_ll(data, "rt", ["surp", "surp2"], ["len", "freq"], by="text", spillover=0)
    assert got.linear.mean == lin.mean and got.nonlinear.mean == non.mean
    diff = non.per_word["delta_ll"] - lin.per_word["delta_ll"]
    assert got.difference.mean == pytest.approx(diff.mean(), rel=1e-12)
    assert got.p_value == sign_flip_test(diff.to_numpy(), 500, 2).p_value
    assert got.p_value < 0.01  # the quadratic curve is there to be found
    row = got.row()
    assert row["test"] == "permutation" and row["n"] == lin.n
    assert row["difference"] == pytest.approx(row["dll_nonlinear"] - row["dll_linear"])
    flat = link_shape(frame(curve=0.0), "rt", "surp", ["len", "freq"],
                      nonlinear=["surp", "surp2"], test="normal")
    assert flat.difference.test == "normal"
    assert flat.difference.mean < 0 < got.difference.mean  # no curve: the square only costs


def test_link_shape_spells_the_papers_smooth():
    assert smooth_term("surp") == "s(surp, bs='cr', k=6)"
    assert smooth_term("prev_surp", 5) == "s(prev_surp, bs='cr', k=5)"


@pytest.mark.parametrize("kwargs, message", [
    ({"k": 2}, r"k \(the smooth's basis size\) must be an integer of at least 3"),
    ({"test": "exact"}, r"test must be one of \['normal', 'permutation'\]"),
    ({"nonlinear": ["surp"]}, "the linear and the non-linear target are the same terms"),
    ({"surprisal": []}, "surprisal must be a column name or a non-empty list"),
    ({"surprisal": "surprise", "nonlinear": ["surprise", "surp2"]},
     r"target names column\(s\) \['surprise'\]"),
])
def test_link_shape_bad_input_names_the_rule(kwargs, message):
    args = {"surprisal": "surp", "nonlinear": ["surp", "surp2"], **kwargs}
    with pytest.raises(ReadingTimeError, match=message):
        link_shape(frame(), "rt", baseline=["len"], **args)


def test_link_shape_fits_the_papers_smooth_by_default():
    data = frame(n_texts=4, words=60, curve=0.4)
    base = ["te(freq, len, bs='cr')"]
    got = link_shape(data, "rt", "surp", base, folds=3, n=300, seed=0)
    smooth = delta_ll(data, "rt", [smooth_term("surp")], base, spillover=0, folds=3)
    line = delta_ll(data, "rt", ["surp"], base, spillover=0, folds=3)
    assert got.nonlinear.settings["target"] == ["s(surp, bs='cr', k=6)"]
    assert got.nonlinear.mean == pytest.approx(smooth.mean, abs=1e-12)
    assert got.linear.mean == pytest.approx(line.mean, abs=1e-12)
    assert got.nonlinear.edf is not None and "s(surp)" in set(got.nonlinear.edf["term"])
    assert got.difference.mean > 0  # the curve is there: the smooth predicts better
