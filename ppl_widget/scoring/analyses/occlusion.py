"""Occlusion: the target's surprisal with each context unit deleted, minus its surprisal
with the whole context (``delta_nats``; positive: the unit made the target more
predictable).  Units are computed nearest the target first, a batch at a time, so a
caller can show them as they come.

Two ways to the same numbers: ``ForwardOcclusion`` rescores each edited context with the
model kind's own forward (any kind: transformers, GGUF, n-gram, vLLM);
``occlusion_cache.CachedOcclusion`` (a transformers model) reuses the key/value cache of
the positions before each deletion and recomputes only from the deletion on.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import numpy as np

from ...core.explain.target import ExplainPlan, Unit
from .edited_sequences import SequenceScorer


class OcclusionMethod(Protocol):
    """What the occlusion loop needs of a way to compute it."""

    def base(self) -> float:
        """The target's surprisal (nats) given its whole context."""
        ...

    def batches(self, order: np.ndarray) -> Iterator[list[int]]:
        """The units (indices), in ``order``, a batch at a time."""
        ...

    def without(self, units: list[int]) -> np.ndarray:
        """The target's surprisal with each of ``units`` deleted."""
        ...


def group_sequence(plan: ExplainPlan, group_index: int, unit: Unit | None) -> np.ndarray:
    """The token ids a group reads with ``unit`` deleted (None: the whole context)."""
    g = plan.groups[group_index]
    positions = g.positions() if unit is None else g.without(unit.positions)
    return plan.sequence[positions]


def touches(plan: ExplainPlan, group_index: int, unit: Unit) -> bool:
    """The unit has tokens in the group's context (else deleting it changes nothing)."""
    return bool(np.isin(unit.positions, plan.groups[group_index].context).any())


class ForwardOcclusion:
    """Each edited context rescored in full by the model kind's own forward."""

    def __init__(self, lm: Any, plan: ExplainPlan, max_length: int,
                 batch_units: int | None = None):
        self.plan = plan
        self.scorer = SequenceScorer(lm, max_length)
        n = len(plan.groups)
        seqs = [group_sequence(plan, i, None) for i in range(n)]
        self.group_base = self.scorer.nlls(seqs, [len(g.targets) for g in plan.groups])
        length = max(len(s) for s in seqs)
        self.batch_units = batch_units or max(1, self.scorer.windows_per_call(length) // n)

    def base(self) -> float:
        return float(self.group_base.sum())

    def batches(self, order: np.ndarray) -> Iterator[list[int]]:
        for k in range(0, len(order), self.batch_units):
            yield [int(u) for u in order[k:k + self.batch_units]]

    def without(self, units: list[int]) -> np.ndarray:
        plan = self.plan
        seqs, n_scored, owner = [], [], []
        totals = np.zeros(len(units))
        for row, u in enumerate(units):
            for gi, g in enumerate(plan.groups):
                if touches(plan, gi, plan.units[u]):
                    seqs.append(group_sequence(plan, gi, plan.units[u]))
                    n_scored.append(len(g.targets))
                    owner.append(row)
                else:  # this window does not read the unit: its tokens' surprisal stays
                    totals[row] += self.group_base[gi]
        if seqs:
            np.add.at(totals, np.asarray(owner), self.scorer.nlls(seqs, n_scored))
        return totals


def occlusion_steps(method: OcclusionMethod, plan: ExplainPlan,
                    base: float) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(unit indices, delta_nats)`` per batch, nearest the target first."""
    for units in method.batches(plan.order):
        yield np.asarray(units, np.int64), method.without(units) - base
