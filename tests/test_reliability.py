"""Reliability: counts of any integral type, text that cannot be encoded, and
the errors a person gets for bad input (issue 11, items 1 and 4)."""

from __future__ import annotations

import numpy as np
import pytest

from ppl_widget.core.validation import as_count
from ppl_widget.core.windows import check_window_params, plan_windows

torch = pytest.importorskip("torch")


# ---- as_count ------------------------------------------------------------
@pytest.mark.parametrize("value", [7, np.int8(7), np.int64(7), np.uint16(7), np.array(7),
                                   "torch0d"])
def test_integral_types_are_counts(value):
    if value == "torch0d":
        value = torch.tensor(7)
    got = as_count("stride", value)
    assert got == 7 and type(got) is int


@pytest.mark.parametrize("value", [True, False, np.bool_(True), "torch_bool", 7.0, np.float64(7),
                                   "torch_float", "torch_1d", np.array([7]), "7", None, 7 + 0j])
def test_bools_floats_and_arrays_are_refused_with_todays_message(value):
    value = {"torch_bool": torch.tensor(True), "torch_float": torch.tensor(7.0),
             "torch_1d": torch.tensor([7])}.get(value, value) if isinstance(value, str) else value
    with pytest.raises(ValueError, match=r"^stride must be an integer, got "):
        as_count("stride", value)


def test_bounds_and_rule_messages():
    assert as_count("top_k", np.int32(0), minimum=0) == 0
    with pytest.raises(ValueError, match="top_k must be at least 0, got -1"):
        as_count("top_k", -1, minimum=0)
    with pytest.raises(ValueError, match="n must be at most 3, got 4"):
        as_count("n", np.int64(4), maximum=3)
    with pytest.raises(ValueError, match="top_k must be a non-negative integer, got -2"):
        as_count("top_k", np.int16(-2), minimum=0, rule="a non-negative integer")
    with pytest.raises(ValueError, match="top_k must be a non-negative integer, got 1.5"):
        as_count("top_k", 1.5, minimum=0, rule="a non-negative integer")


def test_windows_take_numpy_counts_and_keep_their_rules():
    assert check_window_params(np.int64(64), np.int32(32)) == (64, 32)
    assert all(type(v) is int for v in check_window_params(np.int64(64), torch.tensor(32)))
    assert plan_windows(np.int64(100), np.int64(64), np.int64(32)) == plan_windows(100, 64, 32)
    with pytest.raises(ValueError, match=r"stride must be at least 1 \(1 <= stride"):
        check_window_params(64, np.int64(0))
    with pytest.raises(ValueError, match="stride must not exceed max_length"):
        check_window_params(np.int64(8), np.int64(9))
    with pytest.raises(ValueError, match="max_length must be an integer, got True"):
        check_window_params(True, 1)
    with pytest.raises(ValueError, match="stride must be an integer, got 32.0"):
        check_window_params(64, 32.0)


# ---- score(): every count ------------------------------------------------
TEXT = "The quick brown fox jumps over the lazy dog. Perplexity is exp of the mean NLL."


@pytest.fixture(scope="module")
def reference(tiny_gpt2):
    from ppl_widget import score

    return score(TEXT, tiny_gpt2, max_length=16, stride=8, top_k=3, batch_size=2)


@pytest.mark.parametrize("make", [np.int64, np.int32, np.uint8, torch.tensor, np.array],
                         ids=["int64", "int32", "uint8", "torch", "ndarray0d"])
def test_score_accepts_any_integral_count(tiny_gpt2, reference, make):
    from ppl_widget import score

    res = score(TEXT, tiny_gpt2, max_length=make(16), stride=make(8), top_k=make(3),
                batch_size=make(2))
    # the same windows in the same batches as the reference: bit for bit
    np.testing.assert_array_equal(res.surprisal, reference.surprisal)
    # the settings hold plain ints (they go to JSON and to the widget)
    for key in ("max_length", "stride", "top_k", "batch_size"):
        assert type(res.settings[key]) is int, key
    assert res.settings["stride"] == 8 and res.settings["top_k"] == 3
    res.to_json()  # would fail on a numpy int64


def test_score_stride_default_from_a_numpy_max_length(tiny_gpt2):
    from ppl_widget import score

    res = score(TEXT, tiny_gpt2, max_length=np.int64(16))
    assert res.settings["stride"] == 8


@pytest.mark.parametrize("kwargs, message", [
    ({"stride": True}, "stride must be an integer, got True"),
    ({"stride": np.float64(8.0)}, r"stride must be an integer, got np.float64\(8.0\)"),
    ({"max_length": 16.0}, "max_length must be an integer, got 16.0"),
    ({"top_k": True}, "top_k must be a non-negative integer, got True"),
    ({"top_k": np.int64(-1)}, "top_k must be a non-negative integer, got -1"),
    ({"top_k": 2.0}, "top_k must be a non-negative integer, got 2.0"),
    ({"batch_size": np.int64(0)}, "batch_size must be 'auto' or a positive integer, got 0"),
    ({"batch_size": False}, "batch_size must be 'auto' or a positive integer, got False"),
    ({"batch_size": torch.tensor(2.0)}, "batch_size must be 'auto' or a positive integer"),
])
def test_score_refuses_bools_and_floats(tiny_gpt2, kwargs, message):
    from ppl_widget import score

    with pytest.raises(ValueError, match=message):
        score(TEXT, tiny_gpt2, **{"max_length": 16, **kwargs})


def test_metrics_upto_and_span_take_numpy_counts(reference):
    n = len(reference)
    assert reference.metrics(upto=np.int64(n // 2)) == reference.metrics(upto=n // 2)
    assert reference.metrics(upto=torch.tensor(3)) == reference.metrics(upto=3)
    span = (np.int64(4), np.int64(19))
    assert reference.metrics(span=span) == reference.metrics(span=(4, 19))
    # positions from a numpy search, as a notebook would produce them
    a = int(np.flatnonzero(np.array(list(TEXT)) == "P")[0])
    assert reference.token_range(np.int64(a), np.int64(len(TEXT))) == reference.token_range(
        a, len(TEXT))
    with pytest.raises(ValueError, match="upto must be an integer, got 2.0"):
        reference.metrics(upto=2.0)
    with pytest.raises(ValueError, match="upto must be an integer, got True"):
        reference.metrics(upto=True)
    with pytest.raises(ValueError, match="span start must be an integer, got 1.5"):
        reference.metrics(span=(1.5, 4))
    with pytest.raises(ValueError, match="span must satisfy 0 <= start <= end"):
        reference.metrics(span=(np.int64(5), np.int64(2)))


# ---- text that cannot be encoded ----------------------------------------
@pytest.mark.parametrize("where", [0, 5, 11])
def test_lone_surrogate_is_named_by_position(tiny_lm, where):
    from ppl_widget import score

    text = "hello world!"
    bad = text[:where] + "\udce9" + text[where:]
    with pytest.raises(ValueError, match=rf"lone surrogate U\+DCE9 at character {where} "):
        score(bad, tiny_lm)


def test_surrogateescape_decode_is_named(tiny_gpt2):
    from ppl_widget import score

    text = b"caf\xe9 au lait".decode("utf-8", "surrogateescape")
    with pytest.raises(ValueError, match="at character 3 .*surrogateescape"):
        score(text, tiny_gpt2)
    # a proper pair (an emoji) is not a lone surrogate
    assert len(score("caf\U0001F600", tiny_gpt2)) > 0


def test_stream_raises_before_yielding_anything(tiny_gpt2):
    from ppl_widget import stream

    it = stream("ok \ud800 then", tiny_gpt2)
    with pytest.raises(ValueError, match="at character 3"):
        next(it)


# ---- found by the property tests ------------------------------------------
def test_zero_width_first_token_at_the_end_belongs_to_the_last_span(tiny_llama):
    """'0' on the metaspace model, prefix=None: '▁' is the unscored first token and
    takes the character; the scored <unk> is zero-width at the text's end."""
    from ppl_widget import score

    res = score("0", tiny_llama, max_length=4, stride=4, prefix=None)
    assert len(res) == 1 and res.offsets.tolist() == [[1, 1]]
    assert res.token_range(0, 1) == (0, 1)
    assert res.metrics(span=(0, 1))["n_tokens"] == res.metrics()["n_tokens"] == 1
    assert res.token_range(0, 0) == (0, 0)


def test_perplexity_beyond_the_largest_float_is_inf():
    import math

    from ppl_widget.core.metrics import perplexity, summarize

    assert perplexity(710.0, 1) == math.inf
    assert perplexity(709.0, 1) == pytest.approx(math.exp(709.0))
    m = summarize(2000.0, 3, 1, 2, 2)
    assert m["word_ppl"] == math.inf and m["token_ppl"] == pytest.approx(math.exp(2000 / 3))
