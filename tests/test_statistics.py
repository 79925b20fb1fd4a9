"""Bootstrap intervals: a ratio estimator over blocks, deterministic with a seed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppl_widget.core.statistics import (
    block_sums,
    bootstrap_intervals,
    fill_outside,
    token_blocks,
)


def test_ratio_estimator_by_hand():
    # two blocks; each replicate draws 2 blocks with replacement: AA, AB, BA, BB
    nll = np.array([2.0, 6.0])
    counts = np.array([[1, 1, 2, 2], [1, 1, 2, 2]], float)
    out = bootstrap_intervals(nll, counts, ci=0.5, n_boot=4000, seed=1)
    lo, hi = out["token_ppl_ci"]
    # possible ratios: 2 (AA), 4 (AB/BA), 6 (BB); the middle 50% lies in [2, 6], spans 4
    assert math.exp(2) <= lo <= math.exp(4) <= hi <= math.exp(6)
    assert out["bits_per_char_ci"][0] == pytest.approx(math.log(lo) / 2 / math.log(2))


def test_not_a_mean_of_perplexities():
    # 50 long easy blocks and 50 short hard ones: total NLL 550 over 550 tokens
    nll = np.array([1.0] * 50 + [10.0] * 50)
    counts = np.array([[10, 10, 10, 10]] * 50 + [[1, 1, 1, 1]] * 50, float)
    out = bootstrap_intervals(nll, counts, ci=0.9, n_boot=2000, seed=0)
    lo, hi = out["token_ppl_ci"]
    assert lo <= math.e <= hi  # the ratio estimate exp(550 / 550)
    assert hi < 5  # a mean of per-block perplexities would be (e^0.1 + e^10) / 2, about 11000


def test_fill_outside_and_blocks():
    assert fill_outside(np.array([-1, 0, 0, -1, 2, -1])).tolist() == [0, 0, 0, 0, 1, 1]
    assert token_blocks(5, 2).tolist() == [0, 0, 1, 1, 2]
    nll, counts = block_sums(np.array([1.0, 2.0, 3.0]), np.array([[1, 1, 1]] * 3),
                             np.array([0, 0, 1]), 2)
    assert nll.tolist() == [3.0, 3.0] and counts[:, 0].tolist() == [2, 1]


def test_bad_settings_name_the_rule():
    with pytest.raises(ValueError, match="ci must be a confidence level"):
        bootstrap_intervals(np.ones(2), np.ones((2, 4)), ci=95)
    with pytest.raises(ValueError, match="n_boot must be a positive integer"):
        bootstrap_intervals(np.ones(2), np.ones((2, 4)), n_boot=0)


def test_on_a_model_deterministic_contains_point_and_narrows(tiny_gpt2):
    from ppl_widget import score

    sentence = ("The quick brown fox jumps over the lazy dog. Surprisal is minus the log "
                "probability of a token. ")
    short = score(sentence * 2, tiny_gpt2, max_length=32, stride=16)
    long = score(sentence * 12, tiny_gpt2, max_length=32, stride=16)
    a = short.metrics(ci=0.95, n_boot=500, seed=3)
    assert a == short.metrics(ci=0.95, n_boot=500, seed=3)
    assert a["ci_blocks"] == 4  # four sentences
    for key in ("token_ppl", "word_ppl", "char_ppl", "byte_ppl", "bits_per_byte"):
        lo, hi = a[f"{key}_ci"]
        assert lo <= a[key] <= hi, key
    b = long.metrics(ci=0.95, n_boot=500, seed=3)
    width = lambda m: m["word_ppl_ci"][1] - m["word_ppl_ci"][0]  # noqa: E731
    assert width(b) < width(a)
    # one sentence: fixed token blocks instead
    one = score("a b c d e f g h i j k l m n o p q r s t u v w x y z " * 3, tiny_gpt2,
                max_length=32, stride=16)
    m = one.metrics(ci=0.9, n_boot=200)
    assert m["ci_blocks"] >= 2 and m["token_ppl_ci"][0] <= m["token_ppl"]
    with pytest.raises(ValueError, match="blocks must be"):
        one.metrics(ci=0.9, blocks="paragraphs")
