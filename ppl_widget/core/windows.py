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

A context (``first_target > 1``): its positions are read, never targets.  The first
chunk holds the targets the model's first ``max_length`` positions can predict (they
see all the context before them), or, when the context alone is longer, ``stride``
targets ending ``stride - 1`` after the first, so that first target sees
``max_length - stride + 1`` positions, as every later chunk's first does.

``prefix_every_window``: a window that does not start at position 0 reads the prefix
token (position 0) in place of its first position, so every window's first input is
the prefix token followed by up to ``max_length - 1`` text positions (llama.cpp's
perplexity layout).  Targets and context lengths are unchanged: the prefix token
counts as one position of context.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    #: the model reads position 0 (the prefix token) in place of ``input_start``
    prefixed: bool = False

    @property
    def n_inputs(self) -> int:
        return self.input_end - self.input_start

    @property
    def n_targets(self) -> int:
        return self.target_end - self.target_start

    def context_lengths(self) -> range:
        """Positions of context each target was predicted from."""
        return range(self.target_start - self.input_start, self.target_end - self.input_start)


def default_stride(max_length: int) -> int:
    """``score()``'s stride when none is given: half the window (at least 1)."""
    return max(1, max_length // 2)


def check_window_settings(max_length: Any, stride: Any, *, context_length: int | None = None,
                          prefix_every_window: bool = False
                          ) -> tuple[int | None, int | None]:
    """The one window rule, for every entry point (``score()``, the CLI, the widget, the
    magics), with ``score()``'s messages: ``(max_length, stride)`` as ints, or a
    ValueError naming the rule they break.

    None stands for the model's default (``max_length``: the model's context length;
    ``stride``: half the window) and stays None; what can be checked without it is.
    ``context_length``: the model's, when known (``max_length`` must fit in it).
    ``prefix_every_window``: every window reads the prefix token and at least one text
    token, so ``max_length`` must be at least 2.
    """
    if not isinstance(prefix_every_window, bool):
        raise ValueError(f"prefix_every_window must be True or False, got {prefix_every_window!r}")
    if max_length is not None:
        max_length = as_count("max_length", max_length)
    if stride is not None:
        stride = as_count("stride", stride)
    if max_length is not None and max_length < 1:
        raise ValueError(f"max_length must be at least 1, got {max_length}")
    if prefix_every_window and max_length is not None and max_length < 2:
        raise ValueError(f"max_length must be at least 2 with prefix_every_window=True (the "
                         f"prefix token and one text token), got {max_length}")
    if stride is not None and stride < 1:
        raise ValueError(f"stride must be at least 1 (1 <= stride <= max_length), got {stride}")
    if max_length is not None and stride is not None and stride > max_length:
        raise ValueError(
            f"stride must not exceed max_length (1 <= stride <= max_length), "
            f"got stride={stride} > max_length={max_length}: tokens would be skipped"
        )
    if max_length is not None and context_length is not None and max_length > context_length:
        raise ValueError(f"max_length must not exceed the model's context length "
                         f"({context_length}), got {max_length}")
    return max_length, stride


def check_window_params(max_length: Any, stride: Any = None, *,
                        context_length: int | None = None,
                        prefix_every_window: bool = False) -> tuple[int, int]:
    """``(max_length, stride)`` as ints by ``check_window_settings``'s rule, with
    ``max_length`` required and ``stride`` None meaning ``default_stride``."""
    max_length = as_count("max_length", max_length)
    max_length, stride = check_window_settings(max_length, stride,
                                               context_length=context_length,
                                               prefix_every_window=prefix_every_window)
    return max_length, default_stride(max_length) if stride is None else stride


def plan_windows(n_positions: int, max_length: int, stride: int, *, first_target: int = 1,
                 prefix_every_window: bool = False) -> list[Window]:
    """Windows scoring positions ``first_target .. n_positions - 1`` of a sequence once
    each (positions before ``first_target``: the prefix token and a context, read only)."""
    max_length, stride = check_window_params(max_length, stride,
                                             prefix_every_window=prefix_every_window)
    n_positions = as_count("n_positions", n_positions)
    first_target = as_count("first_target", first_target)
    if n_positions < 0:
        raise ValueError(f"n_positions must be non-negative, got {n_positions}")
    if first_target < 1:
        raise ValueError(f"first_target must be at least 1 (position 0 has no context), "
                         f"got {first_target}")
    last = n_positions - 1
    windows: list[Window] = []
    if last < first_target:
        return windows
    first = first_target
    # last target position of the current chunk (see the module's docstring)
    end = min(max_length if first <= max_length else first + stride - 1, last)
    while True:
        start = max(0, end - max_length)
        windows.append(Window(start, end, first, end + 1, prefix_every_window and start > 0))
        if end == last:
            return windows
        first = end + 1
        end = min(end + stride, last)


def plan_windows_of_start(n_known: int, max_length: int, stride: int, *,
                          first_target: int = 1,
                          prefix_every_window: bool = False) -> list[Window]:
    """The windows that ``plan_windows`` gives every sequence whose first ``n_known``
    positions are these: those of the known start whose targets end before its last
    position (the last window of a start is cut short, and the whole text's is not)."""
    return [w for w in plan_windows(n_known, max_length, stride, first_target=first_target,
                                    prefix_every_window=prefix_every_window)
            if w.target_end < n_known]
