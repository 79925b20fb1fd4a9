"""Plan two-sided windows for a masked language model scored by pseudo-log-likelihood.

Pure Python: no torch, so the layout can be tested (and reasoned about) alone.  The
causal rule is ``windows.py``; this is its two-sided sibling.

Positions index the text's tokens ``0 .. n - 1`` (a masked model reads no prefix token:
its special tokens, ``[CLS] ... [SEP]`` or ``<s> ... </s>``, are added around every
window by the model kind and are never targets).  Every position from ``first_target``
on is a target: even the first token has context, on its right.

``text_length`` is the number of text positions a window reads: the model's
``max_length`` less its special tokens.  Targets come in chunks of ``stride``; a chunk's
window reads ``text_length`` positions centred on it, ``left = (text_length - stride) //
2`` before its first target and ``right = text_length - stride - left`` after its last,
shifted to stay inside the text: the first window starts at position 0 (its chunk holds
every target that still sees ``right`` positions after it), the last ends at ``n`` (its
chunk holds the rest).  So every target is scored exactly once, and sees at least
``left`` positions on its left and ``right`` on its right where the text has them:
``text_length - stride`` positions of context in all, as a causal model's target sees
``max_length - stride + 1``.  ``stride = 1`` gives every target a window centred on
it; ``stride = text_length`` gives disjoint windows.  (Unlike a causal model, the cost is
the same for every stride: one masked copy of a window per target.)

A copy of a window is what the model reads to score one target: the window with the
target masked and, under ``within_word_l2r``, the later tokens of the target's word in
the window masked too (Kauf & Ivanova 2023).  ``masked_copies`` lists them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .validation import as_count

#: The pseudo-log-likelihood metrics: the target masked alone (Salazar et al. 2020), or
#: with the later tokens of its word (Kauf & Ivanova 2023, the default).
PLL_METRICS = ("within_word_l2r", "original")
DEFAULT_PLL_METRIC = "within_word_l2r"


@dataclass(frozen=True)
class TwoSidedWindow:
    """Text positions ``[input_start, input_end)`` read (between the model's special
    tokens) to score targets ``[target_start, target_end)``, each in its own masked copy.

    ``mask_end``: for a copy (one target), the end of the span masked with it: the target
    alone (``target_end``) or the rest of its word in the window; None for a window."""

    input_start: int
    input_end: int
    target_start: int
    target_end: int
    mask_end: int | None = None
    #: the run loop's ``Window`` field: a masked model reads no prefix token
    prefixed: bool = False

    @property
    def n_inputs(self) -> int:
        return self.input_end - self.input_start

    @property
    def n_targets(self) -> int:
        return self.target_end - self.target_start

    @property
    def n_masked(self) -> int:
        """Positions masked in the copy (its target and the word's later tokens)."""
        return (self.target_end if self.mask_end is None else self.mask_end) - self.target_start

    def context_lengths(self) -> list[int]:
        """Positions each target reads besides itself and the tokens masked with it (both
        sides; the special tokens not counted)."""
        return [self.n_inputs - self.n_masked] * self.n_targets if self.mask_end is not None \
            else [self.n_inputs - 1] * self.n_targets


def check_pll_metric(pll_metric: object) -> str:
    """``pll_metric`` checked: one of ``PLL_METRICS`` (None: the default)."""
    if pll_metric is None:
        return DEFAULT_PLL_METRIC
    if not isinstance(pll_metric, str) or pll_metric not in PLL_METRICS:
        raise ValueError(f"pll_metric must be one of {', '.join(map(repr, PLL_METRICS))} "
                         f"(pseudo-log-likelihood: the token masked alone, or with the later "
                         f"tokens of its word), got {pll_metric!r}")
    return pll_metric


def plan_two_sided(n_positions: int, text_length: int, stride: int, *,
                   first_target: int = 0) -> list[TwoSidedWindow]:
    """Windows scoring positions ``first_target .. n_positions - 1`` once each, each
    target centred in its window as far as the text allows (see the module's docstring).
    Positions before ``first_target`` are read, never scored."""
    n = as_count("n_positions", n_positions)
    length = as_count("text_length", text_length)
    stride = as_count("stride", stride)
    first = as_count("first_target", first_target)
    if length < 1:
        raise ValueError(f"a window must read at least one text position besides the "
                         f"model's special tokens, got text_length={length}")
    if not 1 <= stride <= length:
        raise ValueError(f"stride must satisfy 1 <= stride <= text_length ({length}), "
                         f"got {stride}")
    if n < 0 or first < 0:
        raise ValueError(f"n_positions and first_target must be non-negative, got "
                         f"{n}, {first}")
    left = (length - stride) // 2
    right = length - stride - left
    windows: list[TwoSidedWindow] = []
    a = first
    while a < n:
        start = max(0, a - left)
        end = start + length
        if end >= n:  # the last window ends at the text's end and scores the rest
            start, end, b = max(0, n - length), n, n
        else:
            b = end - right
        windows.append(TwoSidedWindow(start, end, a, b))
        a = b
    return windows


def word_ends(word_ids: Sequence[int | None]) -> list[int]:
    """For each position, the end of the run of positions with its word id (the
    position after its word's last token); a position without a word id (None) is a
    word of its own."""
    n = len(word_ids)
    ends = [0] * n
    end = n
    for i in range(n - 1, -1, -1):
        if i == n - 1 or word_ids[i] is None or word_ids[i + 1] != word_ids[i]:
            end = i + 1
        ends[i] = end
    return ends


def masked_copies(windows: Sequence[TwoSidedWindow], pll_metric: str,
                  ends: Sequence[int] | None = None) -> Iterator[TwoSidedWindow]:
    """One copy per target of each window, in target order: the window with the target
    masked (``original``) and, under ``within_word_l2r``, the later tokens of its word
    (``ends``: ``word_ends`` of the positions) that the window reads."""
    pll_metric = check_pll_metric(pll_metric)
    if pll_metric == "within_word_l2r" and ends is None:
        raise ValueError("pll_metric='within_word_l2r' needs the word of every token")
    for w in windows:
        for t in range(w.target_start, w.target_end):
            stop = t + 1 if pll_metric == "original" else max(t + 1, min(ends[t], w.input_end))
            yield TwoSidedWindow(w.input_start, w.input_end, t, t + 1, stop)
