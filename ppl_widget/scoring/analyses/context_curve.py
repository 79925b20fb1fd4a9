"""The context curve: the target's surprisal given only the last ``k`` tokens of its
context, for ``k`` in ``lengths`` (default 0, 1, 2, 4, ... and the full context); ``k``
= 0 is the target after the prefix token alone.  Each point is the model kind's own
forward on the shortened context (``edited_sequences.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.explain.target import ExplainError, ExplainPlan
from .edited_sequences import SequenceScorer


def default_lengths(full: int, *, zero: bool = True) -> list[int]:
    """0 (when the target can be read with no context), 1, 2, 4, ... below ``full``,
    and ``full``."""
    out = [0] if zero else []
    k = 1
    while k < full:
        out.append(k)
        k *= 2
    out.append(full)
    return sorted(set(out))


def check_lengths(lengths: Any, full: int, zero: bool) -> list[int]:
    """``lengths`` as sorted distinct ints between 0 (1 without a prefix) and ``full``."""
    try:
        values = [int(v) for v in lengths]
    except (TypeError, ValueError):
        raise ExplainError(f"lengths must be a list of context lengths (integers), got "
                           f"{lengths!r}") from None
    if any(isinstance(v, bool) or not isinstance(v, int | np.integer) for v in lengths):
        raise ExplainError(f"lengths must be integers, got {list(lengths)!r}")
    low = 0 if zero else 1
    bad = [v for v in values if not low <= v <= full]
    if bad or not values:
        rule = ("0 (the prefix alone)" if zero else
                "1 (no prefix token: the target needs a token before it)")
        raise ExplainError(f"every context length must lie between {rule} and the full "
                           f"context, {full} tokens; got {values}")
    return sorted(set(values))


def curve_points(lm: Any, plan: ExplainPlan, max_length: int,
                 lengths: Any = None) -> tuple[list[int], np.ndarray]:
    """``(lengths, surprisal in nats)`` of the target given its last ``k`` context
    tokens."""
    full = plan.context_positions
    zero = len(plan.groups[0].head) > 0  # else the first target needs a token before it
    ks = default_lengths(full, zero=zero) if lengths is None else check_lengths(
        lengths, full, zero)
    seqs, n_scored, owner = [], [], []
    for row, k in enumerate(ks):
        for g in plan.groups:
            seqs.append(plan.sequence[g.last(min(k, len(g.context)))])
            n_scored.append(len(g.targets))
            owner.append(row)
    totals = np.zeros(len(ks))
    np.add.at(totals, np.asarray(owner), SequenceScorer(lm, max_length).nlls(seqs, n_scored))
    return ks, totals
