"""Window planning with a context (targets start after it) and with the prefix token in
every window: each target once, the context read and never scored, golden layouts."""

from __future__ import annotations

import pytest

from ppl_widget.core.windows import Window, check_window_settings, plan_windows


def test_golden_short_context_is_read_whole():
    # prefix + 3 context tokens (positions 0-3), continuation at 4..9; max_length 6, stride 2
    assert plan_windows(10, 6, 2, first_target=4) == [
        Window(0, 6, 4, 7), Window(2, 8, 7, 9), Window(3, 9, 9, 10)]


def test_golden_context_longer_than_the_window():
    # 20 context positions, continuation 20..25; max_length 8, stride 3
    assert plan_windows(26, 8, 3, first_target=20) == [
        Window(14, 22, 20, 23), Window(17, 25, 23, 26)]


@pytest.mark.parametrize("n", [1, 2, 5, 17, 40])
@pytest.mark.parametrize("first", [1, 2, 3, 7, 12, 30])
@pytest.mark.parametrize("max_length,stride", [(1, 1), (4, 1), (4, 2), (4, 4), (7, 3), (9, 9)])
def test_every_continuation_target_once_with_the_most_context(n, first, max_length, stride):
    windows = plan_windows(n, max_length, stride, first_target=first)
    targets = [p for w in windows for p in range(w.target_start, w.target_end)]
    assert targets == list(range(first, n))  # the context (positions < first): never a target
    for k, w in enumerate(windows):
        assert w.target_end == w.input_end + 1 and 0 <= w.input_start
        assert w.n_inputs <= max_length and not w.prefixed
        for p, ctx in zip(range(w.target_start, w.target_end), w.context_lengths(), strict=True):
            assert ctx == p - w.input_start
            # all the context there is, up to the guarantee of every strided chunk
            assert ctx >= min(p, max_length - stride + 1)
            if k == 0 and first <= max_length:
                assert ctx == p  # a short context is read whole by the first chunk
    if windows and first > max_length:
        assert windows[0].n_targets == min(stride, n - first)


@pytest.mark.parametrize("n", [2, 3, 9, 30])
@pytest.mark.parametrize("first", [1, 4, 11])
@pytest.mark.parametrize("max_length,stride", [(2, 1), (2, 2), (4, 2), (4, 4), (7, 3)])
def test_prefix_in_every_window(n, first, max_length, stride):
    plain = plan_windows(n, max_length, stride, first_target=first)
    windows = plan_windows(n, max_length, stride, first_target=first, prefix_every_window=True)
    assert [(w.input_start, w.input_end, w.target_start, w.target_end) for w in windows] == \
        [(w.input_start, w.input_end, w.target_start, w.target_end) for w in plain]
    for w in windows:
        assert w.prefixed == (w.input_start > 0)
        # what the model reads: position 0, then up to max_length - 1 text positions
        read = [0, *range(w.input_start + 1, w.input_end)] if w.prefixed else \
            list(range(w.input_start, w.input_end))
        assert read[0] == 0 and len(read) <= max_length


def test_prefix_every_window_needs_room_for_a_text_token():
    with pytest.raises(ValueError, match="max_length must be at least 2 with "
                                         "prefix_every_window=True"):
        plan_windows(10, 1, 1, prefix_every_window=True)
    with pytest.raises(ValueError, match="prefix_every_window must be True or False"):
        check_window_settings(8, 4, prefix_every_window="yes")


def test_first_target_must_follow_position_zero():
    with pytest.raises(ValueError, match="first_target must be at least 1"):
        plan_windows(10, 4, 2, first_target=0)
