"""The two-sided window plan of a masked model alone (core/two_sided_windows.py): every
target once, each window inside the text and no longer than asked, each target's
context on both sides at least the plan's promise, chunks centred; the masked copies."""

from __future__ import annotations

import itertools

import pytest

from ppl_widget.core.two_sided_windows import (
    check_pll_metric,
    masked_copies,
    plan_two_sided,
    word_ends,
)


def _check(n: int, length: int, stride: int, first: int = 0) -> None:
    windows = plan_two_sided(n, length, stride, first_target=first)
    targets = [t for w in windows for t in range(w.target_start, w.target_end)]
    assert targets == list(range(first, n)), "every target exactly once, in order"
    left = (length - stride) // 2
    right = length - stride - left
    for w in windows:
        assert 0 <= w.input_start <= w.target_start < w.target_end <= w.input_end <= n
        assert w.n_inputs == min(length, n), "every window reads as much as it may"
        for t in range(w.target_start, w.target_end):
            # at least `left` before and `right` after, where the text has them
            assert t - w.input_start >= min(left, t)
            assert w.input_end - 1 - t >= min(right, n - 1 - t)
    for w in windows[1:-1]:  # a middle chunk: `stride` targets, centred in its window
        assert w.n_targets == stride
        assert w.target_start - w.input_start == left
        assert w.input_end - w.target_end == right


@pytest.mark.parametrize("n,length,stride", [
    (n, length, stride) for n, length in itertools.product((0, 1, 2, 5, 17, 64, 100), (1, 4, 9, 16))
    for stride in sorted({1, 2, length // 2 or 1, length}) if stride <= length])
def test_every_target_once_with_its_promised_context(n: int, length: int, stride: int) -> None:
    _check(n, length, stride)


@pytest.mark.parametrize("first", [1, 5, 30, 99])
def test_read_only_positions_before_the_first_target(first: int) -> None:
    _check(100, 16, 4, first)


def test_a_short_text_is_one_window() -> None:
    assert [(w.input_start, w.input_end, w.target_start, w.target_end)
            for w in plan_two_sided(7, 10, 5)] == [(0, 7, 0, 7)]


def test_stride_one_centres_every_target() -> None:
    windows = plan_two_sided(40, 9, 1)
    middle = windows[1:-1]
    assert len(middle) == 40 - 5 - 5
    assert all(w.n_targets == 1 and w.target_start - w.input_start == 4
               and w.input_end - w.target_end == 4 for w in middle)


def test_stride_equal_to_the_length_gives_disjoint_windows() -> None:
    windows = plan_two_sided(25, 10, 10)
    assert [(w.input_start, w.input_end, w.target_start, w.target_end) for w in windows] == \
        [(0, 10, 0, 10), (10, 20, 10, 20), (15, 25, 20, 25)]


def test_bad_settings_name_the_rule() -> None:
    with pytest.raises(ValueError, match="stride must satisfy 1 <= stride <= text_length"):
        plan_two_sided(10, 4, 5)
    with pytest.raises(ValueError, match="at least one text position"):
        plan_two_sided(10, 0, 1)
    with pytest.raises(ValueError, match="pll_metric must be one of"):
        check_pll_metric("within-word")
    assert check_pll_metric(None) == "within_word_l2r"


def test_word_ends_and_masked_copies() -> None:
    #          0  1  2  3     4  5  6
    words = [0, 1, 1, 1, None, 2, 2]
    ends = word_ends(words)
    assert ends == [1, 4, 4, 4, 5, 7, 7]
    (w,) = plan_two_sided(7, 7, 7)
    l2r = [(c.target_start, c.mask_end) for c in masked_copies([w], "within_word_l2r", ends)]
    assert l2r == [(0, 1), (1, 4), (2, 4), (3, 4), (4, 5), (5, 7), (6, 7)]
    orig = [(c.target_start, c.mask_end) for c in masked_copies([w], "original")]
    assert orig == [(t, t + 1) for t in range(7)]
    # a word cut by the window's right edge is masked only as far as the window reads
    cut = plan_two_sided(7, 6, 1)
    copies = list(masked_copies(cut, "within_word_l2r", ends))
    assert all(c.mask_end <= c.input_end for c in copies)
    assert [c.context_lengths()[0] for c in masked_copies([w], "within_word_l2r", ends)] == \
        [6, 4, 5, 6, 6, 5, 6]
