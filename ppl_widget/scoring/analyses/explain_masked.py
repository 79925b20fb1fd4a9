"""Occlusion for a masked language model: delete a unit of the target's context, score
the target's pseudo-log-likelihood again.

A masked model's target token is read in its masked copy (``core/two_sided_windows.py``): its
window, with the token (and under ``within_word_l2r`` the later tokens of its word)
masked, the model's special tokens around it.  Its context is the rest of that window, on
*both* sides.  Deleting a unit removes its tokens from every copy that reads them (no
re-tokenisation; positions close up, as the causal rule does), and the copy is scored by
the kind's own forward: the base equals ``score()``'s pseudo-surprisal, and each delta is
the target's pseudo-surprisal with the unit deleted minus the base (positive: the unit
made the target more predictable).  The target's own tokens and the tokens masked with it
are never units.  Gradient x input and the context curve (a causal notion: the last ``k``
tokens before the target) are not defined here: each says so (``check_causal_only``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...core.explain.target import (
    ExplainError,
    ExplainPlan,
    TargetGroup,
    plan_units,
    target_positions,
)
from ...core.text_units import DEFAULT_WORD_PATTERN, word_spans
from ...core.validation import check_text
from ..kinds.model_kind import PlansOwnWindows

#: ``score()``'s settings a masked explanation honours (``top_k``, ``batch_size`` and the
#: causal options at their defaults are accepted, so a result's settings pass back)
MASKED_SETTINGS = ("max_length", "stride", "words", "pll_metric", "top_k", "batch_size",
                   "prefix", "add_eos", "prefix_every_window", "protocol")
#: Masked copies per model call.
COPIES_PER_CALL = 64


def plans_own_windows(lm: Any) -> bool:
    """A kind that lays out its own windows (a masked LM): explained here."""
    return isinstance(lm, PlansOwnWindows)


#: Why each causal-only analysis is not defined for a masked model.
CAUSAL_ONLY = {
    "method='gradient'": "gradient x input differentiates the causal forward of the "
                         "target's window; a masked model's target is read in its own "
                         "masked copy, which this method does not differentiate",
    "context_curve()": "the curve gives the target only the last k tokens before it; a "
                       "masked model reads its target from both sides",
}


def has_context_curve(lm: Any) -> bool:
    """Whether ``context_curve`` is defined for ``lm`` (a causal model's only)."""
    return not plans_own_windows(lm)


def check_causal_only(lm: Any, what: str) -> None:
    """``what`` (a key of ``CAUSAL_ONLY``) is defined for a causal model only: a masked
    model's clear error, naming the rule and what to use instead."""
    if plans_own_windows(lm):
        raise ExplainError(
            f"{what} is for causal models ({CAUSAL_ONLY[what]}); for a masked language "
            "model use explain(method='occlusion'): each unit deleted, the target's "
            "pseudo-log-likelihood scored again (docs/masked.md)")


@dataclass
class MaskedTargets:
    """Each target token's masked copy (positions of the text's token sequence)."""

    sequence: np.ndarray
    #: one per target token, in text order: the kind's copies (``TwoSidedWindow``)
    copies: list[Any]


def masked_setup(text: str, lm: Any, *, token: Any, word: Any, unit: Any,
                 score_settings: dict[str, Any]) -> tuple[ExplainPlan, dict[str, Any], int,
                                                          MaskedTargets]:
    """The plan of a masked model's explanation: the target as ``score()`` scores it, its
    two-sided context's units, the settings reported, the window length and the copies."""
    from ..runner.prepare import prepare
    from ..runner.scorer import resolve_window

    unknown = sorted(set(score_settings) - set(MASKED_SETTINGS) - {"context"})
    if unknown:
        raise TypeError(f"unexpected setting(s) {', '.join(map(repr, unknown))}: an "
                        f"explanation takes score()'s settings {', '.join(MASKED_SETTINGS)}")
    given = dict(score_settings)
    kind = lm.check_run(pll_metric=given.get("pll_metric"),
                        protocol=given.get("protocol", "exact"),
                        add_eos=bool(given.get("add_eos", False)),
                        context=given.get("context"),
                        prefix_every_window=bool(given.get("prefix_every_window", False)))
    check_text(text, False)
    max_length, stride = resolve_window(lm, given.get("max_length"), given.get("stride"))
    words = given.get("words")
    prep = prepare(text, lm, prefix=None, words=words, two_sided=True)
    settings = {"model": lm.name, "max_length": max_length, "stride": stride,
                "words": str(words) if words is not None else DEFAULT_WORD_PATTERN,
                "protocol": "exact", **kind}
    copies = list(lm.plan_windows(prep, max_length, stride, settings))
    scored = np.array([c.target_start for c in copies], np.int64)
    spans = word_spans(text, words)
    positions, target = target_positions(text, scored, prep.target_offsets,
                                         prep.target_is_eos, spans, token=token, word=word)
    mine = [copies[int(i)] for i in target["tokens"]]
    groups = [_group(c, positions) for c in mine]
    if not any(len(g.context) for g in groups):
        raise ExplainError("the target has no context to attribute: its window reads "
                           "nothing besides the target and the tokens masked with it")
    offsets = np.asarray(prep.target_offsets, np.int64).reshape(-1, 2)
    units, unit_kind = plan_units(text, groups, offsets, unit, spans)
    never = np.unique(np.concatenate([np.arange(c.target_start, c.mask_end) for c in mine]
                                     + [positions]))
    units = [u for u in units if not np.isin(u.positions, never).any()]
    if not units:
        raise ExplainError("the target's context holds no unit of that kind outside the "
                           "target and the tokens masked with it")
    plan = ExplainPlan(text=text, sequence=np.asarray(prep.sequence, np.int64),
                       groups=groups, units=units, unit_kind=unit_kind, target=target)
    middle = float(np.mean(positions))  # nearest the target first, on either side
    plan.order = np.argsort([np.abs(u.positions - middle).min() for u in units],
                            kind="stable")
    settings.update(unit=unit_kind)
    return plan, settings, max_length, MaskedTargets(plan.sequence, mine)


def _group(copy: Any, target: np.ndarray) -> TargetGroup:
    """A copy as the explain plan's group: its context is what the copy reads besides the
    target's tokens and the tokens masked with it (both sides, in text order)."""
    read = np.arange(copy.input_start, copy.input_end, dtype=np.int64)
    masked = np.arange(copy.target_start, copy.mask_end, dtype=np.int64)
    own = read[np.isin(read, target) & ~np.isin(read, masked)]
    context = read[~np.isin(read, target) & ~np.isin(read, masked)]
    return TargetGroup(np.zeros(0, np.int64), context, own, masked[:1])


class MaskedOcclusion:
    """``occlusion.OcclusionMethod`` for a masked model: each target copy scored with the
    unit's tokens deleted, through the kind's own forward."""

    def __init__(self, lm: Any, plan: ExplainPlan, targets: MaskedTargets,
                 batch_units: int | None = None):
        self.lm, self.plan, self.targets = lm, plan, targets
        self.forward = lm.make_forward(0, 0)
        self.copy_base = self._score([self._edited(c, None) for c in targets.copies])
        self.batch_units = batch_units or max(1, COPIES_PER_CALL // len(targets.copies))

    def base(self) -> float:
        return float(self.copy_base.sum())

    def batches(self, order: np.ndarray) -> Iterator[list[int]]:
        for k in range(0, len(order), self.batch_units):
            yield [int(u) for u in order[k:k + self.batch_units]]

    def without(self, units: list[int]) -> np.ndarray:
        edits, owner = [], []
        totals = np.zeros(len(units))
        for row, u in enumerate(units):
            gone = self.plan.units[u].positions
            for k, c in enumerate(self.targets.copies):
                if np.isin(gone, np.arange(c.input_start, c.input_end)).any():
                    edits.append(self._edited(c, gone))
                    owner.append(row)
                else:  # this copy does not read the unit: its surprisal stays
                    totals[row] += self.copy_base[k]
        if edits:
            np.add.at(totals, np.asarray(owner), self._score(edits))
        return totals

    def _edited(self, copy: Any, gone: np.ndarray | None
                ) -> tuple[np.ndarray, int, int]:
        """(token ids read, target index, end of the masked span) with ``gone`` deleted."""
        read = np.arange(copy.input_start, copy.input_end, dtype=np.int64)
        if gone is not None:
            read = read[~np.isin(read, gone)]
        t = int(np.searchsorted(read, copy.target_start))
        return self.targets.sequence[read], t, t + copy.mask_end - copy.target_start

    def _score(self, edits: list[tuple[np.ndarray, int, int]]) -> np.ndarray:
        """Pseudo-surprisal (nats) of each edited copy; copies of one length share a call
        (the kind stacks its copies into one tensor)."""
        import torch

        out = np.zeros(len(edits))
        like = self.targets.copies[0]  # the kind's copy type, moved onto each edit
        by_length: dict[int, list[int]] = defaultdict(list)
        for i, (ids, _, _) in enumerate(edits):
            by_length[len(ids)].append(i)
        for members in by_length.values():
            for k in range(0, len(members), COPIES_PER_CALL):
                chunk = members[k:k + COPIES_PER_CALL]
                parts, copies, off = [], [], 0
                for i in chunk:
                    ids, t, stop = edits[i]
                    parts.append(ids)
                    copies.append(replace(like, input_start=off, input_end=off + len(ids),
                                          target_start=off + t, target_end=off + t + 1,
                                          mask_end=off + stop))
                    off += len(ids)
                sequence = torch.from_numpy(np.concatenate(parts)).to(self.lm.device)
                with torch.inference_mode():
                    stats = self.forward.score_batch(sequence, copies)
                out[chunk] = np.asarray(stats["surprisal"], np.float64)
        return out
