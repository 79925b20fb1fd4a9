"""What an explanation attributes: the target, its context, and the context's units.

Pure numpy.  The rules (docs/explain.md):

- The *target* is one scored token, or a word (every scored token the levels rule,
  ``core.levels.assign_tokens``, gives the word); a word's surprisal is its tokens' sum.
- The *context* of a target token is what the scorer's window plan gives it
  (``core/windows.py`` is the one window rule): the positions from its window's start up
  to the token.  The prefix token (BOS) a window reads is the *head*: read, never a
  unit.  A multi-token target's own earlier tokens are read and never removed.
- A target whose tokens sit in two windows is scored per window (a *group*): each group
  reads its own window, as ``score()`` did, so the target's surprisal is the scorer's.
- A *unit* is a run of context positions: a token, a word (the tokens the levels rule
  gives that word) or a span the caller names; deleting it removes its token ids from
  every group's context (no re-tokenisation; positions close up).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..levels import assign_tokens
from ..windows import Window

UNIT_KINDS = ("word", "token")


class ExplainError(ValueError):
    """A target, unit or method that breaks a rule of explanations (docs/explain.md);
    ``explanation``: what was computed before the error, when anything was."""

    def __init__(self, message: str, explanation: Any = None):
        super().__init__(message)
        self.explanation = explanation


@dataclass(frozen=True)
class TargetGroup:
    """The target tokens one window scores, and what that window reads before them.

    The model reads ``head + context + own + targets`` (positions of the input sequence)
    and the last ``len(targets)`` positions are scored, each after all before it."""

    head: np.ndarray  # the prefix token, when the window reads it: never a unit
    context: np.ndarray  # positions units are taken from (contiguous, ascending)
    own: np.ndarray  # the target's earlier tokens this window reads: never removed
    targets: np.ndarray  # positions scored here

    def positions(self, keep: np.ndarray | None = None) -> np.ndarray:
        """The positions read, with only ``keep`` (a mask over ``context``) of the context."""
        ctx = self.context if keep is None else self.context[keep]
        return np.concatenate([self.head, ctx, self.own, self.targets])

    def without(self, positions: np.ndarray) -> np.ndarray:
        """The positions read with ``positions`` deleted from the context."""
        return self.positions(~np.isin(self.context, positions))

    def last(self, k: int) -> np.ndarray:
        """The positions read with only the last ``k`` context positions."""
        keep = np.zeros(len(self.context), bool)
        if k > 0:
            keep[-k:] = True
        return self.positions(keep)


@dataclass(frozen=True)
class Unit:
    """A unit of the context: its positions and the characters it covers."""

    positions: np.ndarray
    start: int
    end: int
    text: str
    #: where ``start``/``end`` point: "text", "context" (a string context as read) or
    #: "message i" (a chat's message i, in its content)
    part: str = "text"


@dataclass
class ExplainPlan:
    """A target, the groups that score it and the units of its context, in text order."""

    text: str
    sequence: np.ndarray  # the input sequence's token ids
    groups: list[TargetGroup]
    units: list[Unit]
    unit_kind: str  # "word", "token" or "span"
    target: dict[str, Any]  # kind, index, start, end, text, tokens (result indices)
    #: what the model read before the text (a string as read, or a chat), or None
    context: Any = None
    #: units nearest the target first (the order occlusion computes them in)
    order: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def __post_init__(self) -> None:
        last = np.array([u.positions.max() for u in self.units], np.int64)
        self.order = np.argsort(-last, kind="stable")

    @property
    def context_positions(self) -> int:
        """Context tokens of the target (its first group's: the longest)."""
        return len(self.groups[0].context)


def scored_positions(windows: Sequence[Window]) -> np.ndarray:
    """Input positions of the scored tokens, in the result's order."""
    if not windows:
        return np.zeros(0, np.int64)
    return np.sort(np.concatenate([np.arange(w.target_start, w.target_end)
                                   for w in windows]))


def target_positions(text: str, scored: np.ndarray, offsets: np.ndarray,
                     is_eos: np.ndarray, word_spans: np.ndarray, *, token: Any,
                     word: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """The target's positions and description, from ``token=`` or ``word=``.

    ``scored``: the position of each scored token (result order); ``offsets``/``is_eos``:
    their character spans and EOS flags; ``word_spans``: the scorer's words."""
    if (token is None) == (word is None):
        raise ExplainError("name the target with token= (an index into the scored tokens) "
                           "or word= (an index into the words), exactly one of them")
    if token is not None:
        i = _index("token", token, len(scored), "scored tokens")
        s, e = (int(v) for v in offsets[i])
        return scored[i:i + 1], {"kind": "token", "index": i, "start": s, "end": e,
                                 "text": text[s:e], "tokens": [i]}
    j = _index("word", word, len(word_spans), "words")
    owner = assign_tokens(text, offsets, word_spans, is_eos)
    mine = np.flatnonzero(owner == j)
    s, e = (int(v) for v in word_spans[j])
    if len(mine) == 0:
        raise ExplainError(f"word {j} ({text[s:e]!r}) has no scored token: its only token "
                           "is read without being scored (the first token of a text scored "
                           "with prefix=None has no context)")
    if len(offsets) and s < int(offsets[0, 0]):  # the word begins in the unscored token
        raise ExplainError(f"word {j} ({text[s:e]!r}) starts in the unscored first token: "
                           "it has no context (the first token of a text scored with "
                           "prefix=None is read, never scored)")
    return scored[mine], {"kind": "word", "index": j, "start": s, "end": e,
                          "text": text[s:e], "tokens": mine.tolist()}


def _index(name: str, value: Any, n: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ExplainError(f"{name}= must be an integer index into the {what}, got {value!r}")
    i = int(value)
    if not -n <= i < n:
        raise ExplainError(f"{name}={i} is out of range: the text has {n} {what}, so "
                           f"{name}= must satisfy {-n} <= {name} < {n}")
    return i + n if i < 0 else i


def plan_groups(positions: np.ndarray, windows: Sequence[Window],
                n_head: int) -> list[TargetGroup]:
    """One group per window that scores target tokens (``n_head``: prefix positions at
    the sequence's start, 0 or 1)."""
    first = int(positions[0])
    groups: list[TargetGroup] = []
    for w in windows:
        mine = positions[(positions >= w.target_start) & (positions < w.target_end)]
        if len(mine) == 0:
            continue
        start = w.input_start
        head = np.zeros(0, np.int64)
        if w.prefixed or (start < n_head):  # the window reads the prefix token first
            head = np.arange(n_head, dtype=np.int64)
            start = max(start + 1 if w.prefixed else start, n_head)
        read = np.arange(start, int(mine[0]), dtype=np.int64)
        groups.append(TargetGroup(head, read[read < first], read[read >= first],
                                  mine.astype(np.int64)))
    if len(groups[0].context) == 0:
        raise ExplainError(
            "the target has no context to attribute: it is the text's first token, read "
            "after the prefix token alone (the prefix is never a unit), or the window "
            "gives it nothing before its own tokens")
    return groups


def plan_units(text: str, groups: list[TargetGroup], position_offsets: np.ndarray,
               unit: Any, word_spans: np.ndarray, first: int = 0) -> tuple[list[Unit], str]:
    """The context's units in the text, in text order (``position_offsets``: the character
    span of every input position; -1 for the prefix token and EOS; ``first``: the text's
    first position, after a context read before it)."""
    lo = max(first, min(int(g.context[0]) for g in groups if len(g.context)))
    hi = max(int(g.context[-1]) for g in groups if len(g.context)) + 1
    pos = np.arange(lo, max(lo, hi), dtype=np.int64)
    spans = position_offsets[pos]
    if isinstance(unit, str):
        if unit not in UNIT_KINDS:
            raise ExplainError(f"unit must be 'word', 'token' or a list of (start, end) "
                               f"character spans; got {unit!r}")
        kind = unit
    else:
        kind = "span"
    unit_spans = None if kind == "token" else (
        word_spans if kind == "word" else _check_spans(unit, len(text)))
    units = units_of(text, pos, spans, kind, unit_spans)
    if kind == "span":
        _check_named(unit_spans, units)
    return units, kind


def units_of(text: str, pos: np.ndarray, spans: np.ndarray, kind: str,
             unit_spans: np.ndarray | None, part: str = "text") -> list[Unit]:
    """The units of positions ``pos`` (ascending) whose character spans in ``text`` are
    ``spans``: one per token, or the tokens the levels rule gives each of ``unit_spans``
    (words; named spans: a token outside every one is no unit)."""
    if kind == "token":
        return [Unit(pos[i:i + 1], int(spans[i, 0]), int(spans[i, 1]),
                     text[spans[i, 0]:spans[i, 1]], part) for i in range(len(pos))]
    owner = assign_tokens(text, spans, unit_spans)
    if kind == "span":  # named spans do not tile the text: a token must lie in its span
        k = np.maximum(owner, 0)
        owner[(owner >= 0) & ((spans[:, 1] <= unit_spans[k, 0])
                              | (spans[:, 0] >= unit_spans[k, 1]))] = -1
    units: list[Unit] = []
    i = 0
    while i < len(pos):
        j = i + 1
        if owner[i] >= 0:
            while j < len(pos) and owner[j] == owner[i]:
                j += 1
        if owner[i] >= 0:
            ws, we = (int(v) for v in unit_spans[owner[i]])
            s, e = max(ws, int(spans[i, 0])), min(we, int(spans[j - 1, 1]))
        elif kind == "span":
            i = j  # a token outside every named span: not a unit
            continue
        else:
            s, e = int(spans[i, 0]), int(spans[i, 1])
        units.append(Unit(pos[i:j], s, e, text[s:e], part))
        i = j
    return units


def _check_spans(unit: Any, n_chars: int) -> np.ndarray:
    try:
        spans = np.asarray(unit, dtype=np.int64).reshape(-1, 2)
    except (TypeError, ValueError):
        raise ExplainError("unit must be 'word', 'token' or a list of (start, end) character "
                           f"spans; got {unit!r}") from None
    if len(spans) == 0:
        raise ExplainError("unit= names no span: give at least one (start, end)")
    order = np.argsort(spans[:, 0], kind="stable")
    spans = spans[order]
    if (spans[:, 0] < 0).any() or (spans[:, 1] > n_chars).any() or (
            spans[:, 1] <= spans[:, 0]).any():
        raise ExplainError(f"every unit span must satisfy 0 <= start < end <= len(text) = "
                           f"{n_chars} (the prefix token has no characters: it is never a "
                           f"unit); got {spans.tolist()}")
    if (spans[1:, 0] < spans[:-1, 1]).any():
        raise ExplainError(f"unit spans must not overlap (a token is deleted with one unit); "
                           f"got {spans.tolist()}")
    return spans


def _check_named(spans: np.ndarray, units: list[Unit]) -> None:
    covered = {(u.start, u.end) for u in units}
    starts = {u.start for u in units}
    for s, e in spans.tolist():
        if not any(s <= us < e for us in starts) and (s, e) not in covered:
            raise ExplainError(
                f"unit span ({s}, {e}) holds no token of the target's context: a unit is "
                "taken from the context the window gives the target; the prefix token "
                "is never a unit and the target's own tokens are never removed")
