from __future__ import annotations

import math

import numpy as np
import pytest

from ppl_widget import convert_perplexity, unigram_normalized_perplexity
from ppl_widget.core.metrics import summarize


def test_summarize_by_hand():
    m = summarize(10.0, 5, 4, 20, 25)
    assert m["token_ppl"] == pytest.approx(math.exp(2.0))
    assert m["word_ppl"] == pytest.approx(math.exp(2.5))
    assert m["char_ppl"] == pytest.approx(math.exp(0.5))
    assert m["byte_ppl"] == pytest.approx(math.exp(0.4))
    assert m["bits_per_char"] == pytest.approx(10.0 / math.log(2) / 20)
    assert m["total_bits"] == pytest.approx(10.0 / math.log(2))


def test_no_units_gives_nan_not_error():
    m = summarize(0.0, 0, 0, 0, 0)
    assert math.isnan(m["token_ppl"]) and math.isnan(m["bits_per_byte"])


def test_convert_perplexity_round_trips_through_total_nll():
    nll, tokens, words = 123.4, 50, 40
    token_ppl = math.exp(nll / tokens)
    assert convert_perplexity(token_ppl, tokens, words) == pytest.approx(math.exp(nll / words))
    assert convert_perplexity(convert_perplexity(7.0, 3, 11), 11, 3) == pytest.approx(7.0)
    with pytest.raises(ValueError, match="positive"):
        convert_perplexity(0.0, 1, 2)
    with pytest.raises(ValueError, match="unit counts"):
        convert_perplexity(2.0, 0, 2)


def test_unigram_normalized_perplexity():
    s = np.array([2.0, 1.0])
    u = np.log([0.5, 0.25])
    expected = math.exp(((2.0 + math.log(0.5)) + (1.0 + math.log(0.25))) / 2)
    assert unigram_normalized_perplexity(s, u) == pytest.approx(expected)
    with pytest.raises(ValueError, match="align"):
        unigram_normalized_perplexity(s, u[:1])
