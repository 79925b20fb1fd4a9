"""The window planner: golden layouts, exact coverage, lm-evaluation-harness parity."""

from __future__ import annotations

import pytest

from ppl_widget.core.windows import Window, plan_windows, plan_windows_of_start


def lm_eval_rolling_windows(token_list, prefix_token, max_seq_len, context_len=1):
    """lm-evaluation-harness's get_rolling_token_windows (lm_eval/utils.py), verbatim logic."""
    assert 1 <= context_len <= max_seq_len
    if not token_list:
        return
    pred_len = max_seq_len - context_len + 1
    predicted = 0
    first_seq_len = min(max_seq_len, len(token_list))
    yield ([prefix_token] + token_list[: first_seq_len - 1], token_list[:first_seq_len])
    predicted += first_seq_len
    while predicted < len(token_list):
        window_pred_len = min(len(token_list) - predicted, pred_len)
        window_end = predicted + window_pred_len
        yield (token_list[window_end - max_seq_len - 1 : window_end - 1],
               token_list[window_end - window_pred_len : window_end])
        predicted += window_pred_len


def test_golden_layout_stride_half():
    # 11 positions (prefix + 10 tokens), max_length 4, stride 2
    assert plan_windows(11, 4, 2) == [
        Window(0, 4, 1, 5),
        Window(2, 6, 5, 7),
        Window(4, 8, 7, 9),
        Window(6, 10, 9, 11),
    ]


def test_golden_layout_short_last_chunk():
    assert plan_windows(8, 4, 3) == [Window(0, 4, 1, 5), Window(3, 7, 5, 8)]


def test_text_shorter_than_window():
    assert plan_windows(3, 8, 4) == [Window(0, 2, 1, 3)]


@pytest.mark.parametrize("n", [0, 1])
def test_nothing_to_score(n):
    assert plan_windows(n, 4, 2) == []


@pytest.mark.parametrize("n", [2, 3, 7, 16, 17, 100])
@pytest.mark.parametrize("max_length,stride", [(1, 1), (4, 1), (4, 2), (4, 4), (7, 3), (16, 5)])
def test_every_target_once_with_guaranteed_context(n, max_length, stride):
    windows = plan_windows(n, max_length, stride)
    targets = [p for w in windows for p in range(w.target_start, w.target_end)]
    assert targets == list(range(1, n))
    for w in windows:
        assert w.target_end == w.input_end + 1  # targets are the last predictions
        assert w.n_inputs == min(max_length, n - 1)  # no wasted input position
        for p, ctx in zip(range(w.target_start, w.target_end), w.context_lengths(), strict=True):
            assert ctx == p - w.input_start
            assert ctx >= min(p, max_length - stride + 1)
    assert all(w.n_targets <= stride for w in windows[1:])


@pytest.mark.parametrize("n_tokens", [1, 2, 5, 9, 10, 11, 33])
@pytest.mark.parametrize("max_length", [1, 3, 5, 10])
def test_stride_equal_max_length_is_lm_eval_rolling(n_tokens, max_length):
    tokens = list(range(100, 100 + n_tokens))
    seq = [7] + tokens  # prefix token + text tokens
    ours = [(seq[w.input_start:w.input_end], seq[w.target_start:w.target_end])
            for w in plan_windows(len(seq), max_length, max_length)]
    theirs = list(lm_eval_rolling_windows(tokens, 7, max_length))
    assert ours == theirs


@pytest.mark.parametrize("max_length,stride,rule", [
    (4, 0, "at least 1"), (4, -2, "at least 1"), (4, 5, "must not exceed max_length"),
    (0, 1, "max_length must be at least 1"), (4.0, 2, "integer"), (4, True, "integer"),
])
def test_bad_parameters_name_the_rule(max_length, stride, rule):
    with pytest.raises(ValueError, match=rule):
        plan_windows(10, max_length, stride)


@pytest.mark.parametrize("max_length,stride", [(1, 1), (4, 4), (8, 3), (16, 8), (5, 1)])
def test_windows_of_a_start_are_those_of_every_longer_sequence(max_length, stride):
    for n_known in range(0, 60):
        start = plan_windows_of_start(n_known, max_length, stride)
        for n in range(n_known, 70):
            assert plan_windows(n, max_length, stride)[:len(start)] == start, (n_known, n)
        # and nothing that could still be planned is left out
        whole = plan_windows(n_known + 100, max_length, stride)
        assert all(w.target_end >= n_known for w in whole[len(start):])
