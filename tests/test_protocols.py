"""The protocols' window plans (core/protocols.py) against brute-force copies of each
tool's own loop, on small sizes: for every scored position, the positions the model
reads before it (with a BOS read in place of a chunk's first position)."""

from __future__ import annotations

import math

import pytest

from ppl_widget.core.protocols import (
    check_protocol,
    guide_counts,
    guide_report,
    llama_cpp_chunk_ppl,
    plan_hf_guide,
    plan_llama_cpp,
    plan_protocol,
)
from ppl_widget.core.windows import plan_windows

BOS = -1  # what a prefixed window reads in place of its first position


def reads_of(windows) -> dict[int, tuple[int, ...]]:
    """Target position -> the positions the model reads before predicting it."""
    out: dict[int, tuple[int, ...]] = {}
    for w in windows:
        inputs = list(range(w.input_start, w.input_end))
        if w.prefixed:
            inputs[0] = BOS
        for t in range(w.target_start, w.target_end):
            assert t not in out, f"position {t} scored twice"
            out[t] = tuple(inputs[:t - w.input_start])
    return out


def llama_cpp_loop(n_tokens: int, n_ctx: int, add_bos: bool) -> dict[int, tuple[int, ...]]:
    """perplexity.cpp's perplexity(): chunks of n_ctx, BOS first, logits j >= first."""
    tokens = list(range(n_tokens))
    out = {}
    first = n_ctx // 2
    for i in range(len(tokens) // n_ctx):
        start = i * n_ctx
        chunk = tokens[start:start + n_ctx]
        if add_bos:
            chunk[0] = BOS if start > 0 else tokens[0]  # position 0 is the BOS itself
        for j in range(first, n_ctx - 1):  # logits of position j predict tokens[start+j+1]
            out[start + j + 1] = tuple(chunk[:j + 1])
    return out


def guide_loop(seq_len: int, max_length: int, stride: int):
    """The transformers guide's loop: what each label is predicted from, and its count."""
    out, counts, prev_end = {}, [], 0
    for begin in range(0, seq_len, stride):
        end = min(begin + max_length, seq_len)
        trg_len = end - prev_end
        window = list(range(begin, end))
        labels = [p if k >= len(window) - trg_len else None for k, p in enumerate(window)]
        for k in range(1, len(window)):  # the model shifts labels by one
            if labels[k] is not None:
                assert labels[k] not in out
                out[labels[k]] = tuple(window[:k])
        if any(x is not None for x in labels[1:]):  # a window scoring nothing: NaN loss
            counts.append(sum(x is not None for x in labels) - 1)  # num_valid - batch_size
        prev_end = end
        if end == seq_len:
            break
    return out, counts


def rolling_windows(tokens: list[int], max_len: int) -> dict[int, tuple[int, ...]]:
    """lm-eval's get_rolling_token_windows(token_list, prefix, max_len, context_len=1)
    turned into make_disjoint_window pairs; positions: prefix 0, tokens from 1."""
    out = {}
    pred_len = max_len
    predicted = 0
    first_seq_len = min(max_len, len(tokens))
    windows = [([0] + tokens[:first_seq_len - 1], tokens[:first_seq_len])]
    predicted += first_seq_len
    while predicted < len(tokens):
        window_pred_len = min(len(tokens) - predicted, pred_len)
        window_end = predicted + window_pred_len
        windows.append((tokens[window_end - max_len - 1:window_end - 1],
                        tokens[window_end - window_pred_len:window_end]))
        predicted += window_pred_len
    for inp, pred in windows:
        full = inp + pred[-1:]  # input followed by the last prediction
        for k, t in enumerate(pred):
            out[t] = tuple(full[:len(full) - len(pred) + k])
    return out


@pytest.mark.parametrize("n_ctx", [3, 4, 5, 8])
@pytest.mark.parametrize("extra", [0, 1, 3, 7])
@pytest.mark.parametrize("add_bos", [False, True])
def test_llama_cpp_plan_is_llama_perplexity_loop(n_ctx, extra, add_bos):
    n = 2 * n_ctx + extra + (n_ctx if extra > 4 else 0)
    windows = plan_llama_cpp(n, n_ctx, bos=add_bos)
    assert reads_of(windows) == llama_cpp_loop(n, n_ctx, add_bos)
    assert all(w.n_targets == n_ctx - 1 - n_ctx // 2 for w in windows)
    assert len(windows) == n // n_ctx


def test_llama_cpp_refuses_short_texts_by_its_rule():
    with pytest.raises(ValueError, match=r"at least 2 \* max_length = 16 tokens.*got 15"):
        plan_llama_cpp(15, 8, bos=False)
    assert len(plan_llama_cpp(16, 8, bos=False)) == 2


@pytest.mark.parametrize("max_length,stride", [(4, 1), (4, 2), (4, 3), (4, 4), (5, 2),
                                                (8, 3), (2, 1), (1, 1)])
@pytest.mark.parametrize("seq_len", [1, 2, 3, 4, 5, 9, 13, 20])
def test_hf_guide_plan_is_the_guide_loop(max_length, stride, seq_len):
    windows = plan_hf_guide(seq_len, max_length, stride)
    reads, counts = guide_loop(seq_len, max_length, stride)
    assert reads_of(windows) == reads
    if windows:
        assert guide_counts(windows) == counts


@pytest.mark.parametrize("max_length", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("n_tokens", [1, 2, 4, 5, 11, 17])
def test_lm_eval_plan_is_its_rolling_windows(max_length, n_tokens):
    tokens = list(range(1, n_tokens + 1))  # position 0 is the prefix token
    windows = plan_protocol("lm-eval", n_tokens + 1, max_length, max_length)
    assert reads_of(windows) == rolling_windows(tokens, max_length)


def test_exact_is_plan_windows():
    assert plan_protocol("exact", 30, 8, 3) == plan_windows(30, 8, 3)
    assert plan_protocol("exact", 30, 8, 3, prefix_every_window=True) == \
        plan_windows(30, 8, 3, prefix_every_window=True)


def test_guide_report_reproduces_the_miscount():
    windows = plan_hf_guide(9, 4, 2)  # targets 1-3, 4-5, 6-7, 8
    nll = [1.0, 2.0, 3.0, 1.0, 1.0, 2.0, 4.0, 5.0]
    report = guide_report(nll, windows)
    means = [2.0, 1.0, 3.0, 5.0]
    counts = [3, 1, 1, 0]  # one short for every window after the first
    assert guide_counts(windows) == counts
    assert report["guide_reported_ppl"] == pytest.approx(
        math.exp(sum(m * c for m, c in zip(means, counts, strict=True)) / sum(counts)))
    assert report["token_ppl"] == pytest.approx(math.exp(sum(nll) / len(nll)))
    assert report["guide_reported_n_tokens"] == 5 and report["n_tokens"] == 8


def test_llama_cpp_chunk_ppl_is_running():
    nll = [1.0, 3.0, 2.0, 2.0]  # n_ctx 5: two scored per chunk
    assert llama_cpp_chunk_ppl(nll, 5) == pytest.approx([math.exp(2.0), math.exp(2.0)])
    assert llama_cpp_chunk_ppl([1.0, 1.0, 4.0, 4.0], 5)[-1] == pytest.approx(math.exp(2.5))


@pytest.mark.parametrize("protocol,kwargs,rule", [
    ("llama.cpp", {"stride": 4}, "stride must equal max_length"),
    ("lm-eval", {"stride": 4}, "stride must equal max_length"),
    ("llama.cpp", {"max_length": 2, "stride": None}, "at least 3"),
    ("hf-guide", {"add_eos": True}, "add_eos=True is an option of protocol='exact'"),
    ("lm-eval", {"prefix_every_window": True}, "prefix_every_window=True is an option"),
    ("llama.cpp", {"context": "hi"}, "a context is an option"),
    ("llama", {}, "protocol must be one of 'exact', 'llama.cpp', 'lm-eval', 'hf-guide'"),
])
def test_protocol_rules_are_named(protocol, kwargs, rule):
    args = {"max_length": 8, "stride": None, **kwargs}
    with pytest.raises(ValueError, match=rule.replace("(", r"\(").replace(")", r"\)")):
        check_protocol(protocol, args.pop("max_length"), args.pop("stride"), **args)


def test_protocol_rules_accept_their_own_settings():
    assert check_protocol("lm-eval", 8, 8) == (8, 8)
    assert check_protocol("llama.cpp", 8, None) == (8, None)
    assert check_protocol("hf-guide", 8, 3) == (8, 3)
    assert check_protocol("exact", None, None, add_eos=True) == (None, None)
