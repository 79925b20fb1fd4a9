"""Plan strided sliding windows so that every token is scored exactly once.

Pure Python: no torch, so the layout can be tested (and reasoned about) alone.

Positions index the model's input sequence ``S`` (prefix token, if any,
followed by the text's tokens and an optional EOS).  Position 0 is never a
target: it is either the prefix token or the first text token, which then
has no context to be predicted from.  Targets are positions ``1 .. n - 1``.

Targets come in chunks: the first chunk holds up to ``max_length`` targets,
every later one ``stride`` (the last may hold fewer).  A chunk whose last
target is at position ``e`` reads the ``max_length`` positions that precede
it, ``S[e - max_length : e]``, so no input position is wasted and a chunk's
first target sees ``max_length - stride + 1`` positions of context.  With
``stride == max_length`` this is exactly lm-evaluation-harness's rolling
log-likelihood windows (``get_rolling_token_windows`` with
``context_len=1``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .validation import as_count


@dataclass(frozen=True)
class Window:
    """One model call: input positions ``[input_start, input_end)`` of ``S``
    predict target positions ``[target_start, target_end)``.

    The targets are the last ``n_targets`` positions the input predicts, so
    ``target_end == input_end + 1``.
    """

    input_start: int
    input_end: int
    target_start: int
    target_end: int

    @property
    def n_inputs(self) -> int:
        return self.input_end - self.input_start

    @property
    def n_targets(self) -> int:
        return self.target_end - self.target_start

    def context_lengths(self) -> range:
        """Positions of context each target was predicted from."""
        return range(self.target_start - self.input_start, self.target_end - self.input_start)


def check_window_params(max_length: int, stride: int) -> tuple[int, int]:
    """``(max_length, stride)`` as ints (any integral type is taken), or a
    ValueError naming the rule they break."""
    max_length, stride = as_count("max_length", max_length), as_count("stride", stride)
    if max_length < 1:
        raise ValueError(f"max_length must be at least 1, got {max_length}")
    if stride < 1:
        raise ValueError(f"stride must be at least 1 (1 <= stride <= max_length), got {stride}")
    if stride > max_length:
        raise ValueError(
            f"stride must not exceed max_length (1 <= stride <= max_length), "
            f"got stride={stride} > max_length={max_length}: tokens would be skipped"
        )
    return max_length, stride


def plan_windows(n_positions: int, max_length: int, stride: int) -> list[Window]:
    """Windows scoring positions ``1 .. n_positions - 1`` of a sequence once each."""
    max_length, stride = check_window_params(max_length, stride)
    n_positions = as_count("n_positions", n_positions)
    if n_positions < 0:
        raise ValueError(f"n_positions must be non-negative, got {n_positions}")
    last = n_positions - 1
    windows: list[Window] = []
    if last < 1:
        return windows
    end = min(max_length, last)  # last target position of the current chunk
    first = 1
    while True:
        start = max(0, end - max_length)
        windows.append(Window(start, end, first, end + 1))
        if end == last:
            return windows
        first = end + 1
        end = min(end + stride, last)


def plan_windows_of_start(n_known: int, max_length: int, stride: int) -> list[Window]:
    """The windows that ``plan_windows`` gives every sequence whose first ``n_known``
    positions are these: those of the known start whose targets end before its last
    position (the last window of a start is cut short, and the whole text's is not)."""
    return [w for w in plan_windows(n_known, max_length, stride) if w.target_end < n_known]
