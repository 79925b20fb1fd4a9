"""Occlusion on a transformers model, recomputing only what a deletion changes.

Deleting a unit leaves every position before it as it was (causal attention), so each
group's context is run once with its key/value cache kept, and an edited context
recomputes only from its deletion on: the cache of the positions before the batch's
earliest deletion is shared by the batch's rows, each row reads its own tokens from
there (with its unit left out; positions close up) and is right-padded (a causal model
never reads a later pad).  Only the target rows go through the LM head.  Units are
batched nearest the target first, so short rows come first and the first units stream
out quickly.  The same numbers as ``occlusion.ForwardOcclusion`` (float noise).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import numpy as np

from ...core.explain.target import ExplainPlan
from ..kinds.models import LoadedModel
from ..runner.forward import MAX_LOGIT_ELEMENTS, body_of
from ..runner.scorer import CPU_BATCH_POSITIONS, MAX_BATCH_POSITIONS
from .occlusion import touches

#: Positions recomputed per batch at most, beyond the shared cache.
CPU_RECOMPUTE_POSITIONS = CPU_BATCH_POSITIONS
#: A batch takes one more unit while the positions it recomputes beyond the rows' own
#: (the shared cache ends at the batch's earliest deletion) stay within this share...
MAX_EXTRA_SHARE = 0.1
#: ... or within this many positions (a call's fixed cost: short rows batch freely).
FREE_EXTRA_POSITIONS = 48


class CachedOcclusion:
    """``occlusion.OcclusionMethod`` for a transformers model whose cache is plain
    full-attention layers (checked on the first forward; else ``applies`` is False)."""

    @staticmethod
    def applies(lm: Any) -> bool:
        return isinstance(lm, LoadedModel) and body_of(lm.model) is not None

    def __init__(self, lm: LoadedModel, plan: ExplainPlan):
        import torch

        self.lm, self.plan = lm, plan
        self.body = body_of(lm.model)
        self.head = lm.model.get_output_embeddings()
        self.cuda = lm.device.type == "cuda"
        self.budget = MAX_BATCH_POSITIONS if self.cuda else CPU_RECOMPUTE_POSITIONS
        self.caches: list[list[tuple[Any, Any]]] = []
        self.group_base = np.zeros(len(plan.groups))
        # transformers 5 names it ``cache``; earlier versions ``past_key_values``
        self.cache_arg = ("cache" if "cache" in inspect.signature(self.body.forward).parameters
                          else "past_key_values")
        with torch.inference_mode():
            for gi, g in enumerate(plan.groups):
                ids = torch.from_numpy(plan.sequence[g.positions()]).to(lm.device)
                out = self.body(input_ids=ids[None, :-1], use_cache=True)
                n = len(g.targets)
                self.group_base[gi] = float(self._nll(out.last_hidden_state[0, -n:],
                                                      ids[-n:]).sum())
                self.caches.append(_layers(getattr(out, self.cache_arg)))

    def base(self) -> float:
        return float(self.group_base.sum())

    # ---- batches -------------------------------------------------------------
    def _cut(self, gi: int, u: int) -> tuple[int, int]:
        """Where unit ``u``'s tokens lie in group ``gi``'s positions: ``[a, b)``."""
        g = self.plan.groups[gi]
        mine = np.flatnonzero(np.isin(g.context, self.plan.units[u].positions))
        return len(g.head) + int(mine[0]), len(g.head) + int(mine[-1]) + 1

    def batches(self, order: np.ndarray) -> Iterator[list[int]]:
        """Units nearest first; a batch grows while its padded rows fit the budget and
        the positions it recomputes beyond each row's own (from its deletion on) stay
        small.  Every unit lies in the first group's context (the longest)."""
        g = self.plan.groups[0]
        length = len(g.positions()) - 1  # inputs the model reads
        batch: list[tuple[int, int, int, int]] = []  # unit, cache end, removed, floor
        for u in (int(v) for v in order):
            a, b = self._cut(0, u)
            row = (u, min(a, length - len(g.targets) - (b - a)), b - a, length - b)
            trial = [*batch, row]
            start = min(r[1] for r in trial)
            width = max(length - start - r[2] for r in trial)
            floor = sum(r[3] for r in trial)  # each row recomputed from its deletion on
            extra = len(trial) * width - floor
            if batch and (len(trial) * width > self.budget
                          or extra > max(FREE_EXTRA_POSITIONS, MAX_EXTRA_SHARE * floor)):
                yield [r[0] for r in batch]
                trial = [row]
            batch = trial
        if batch:
            yield [r[0] for r in batch]

    # ---- one batch -----------------------------------------------------------
    def without(self, units: list[int]) -> np.ndarray:
        import torch

        totals = np.zeros(len(units))
        with torch.inference_mode():
            for gi in range(len(self.plan.groups)):
                rows = [r for r, u in enumerate(units)
                        if touches(self.plan, gi, self.plan.units[u])]
                totals[[r for r in range(len(units)) if r not in rows]] += self.group_base[gi]
                if rows:
                    totals[rows] += self._group_rows(gi, [units[r] for r in rows])
        return totals

    def _group_rows(self, gi: int, units: list[int]) -> np.ndarray:
        """The group's surprisal with each unit deleted, in one forward from the cache."""
        import torch
        from transformers import DynamicCache

        g = self.plan.groups[gi]
        ids = self.plan.sequence[g.positions()]
        n = len(g.targets)
        cuts = [self._cut(gi, u) for u in units]
        # the shared cache ends at the earliest deletion, and before the input that
        # predicts each row's first target (a row deleting the token right before the
        # targets reads that input from the position before the deletion)
        a_min = min(min(a, len(ids) - 1 - n - (b - a)) for a, b in cuts)
        rows = [np.concatenate([ids[a_min:a], ids[b:-1]]) for a, b in cuts]
        width = max(len(r) for r in rows)
        batch = np.zeros((len(rows), width), np.int64)
        for i, r in enumerate(rows):
            batch[i, :len(r)] = r
        cache = None
        if a_min > 0:
            cache = DynamicCache(ddp_cache_data=[
                (k[:, :, :a_min].expand(len(rows), -1, -1, -1),
                 v[:, :, :a_min].expand(len(rows), -1, -1, -1)) for k, v in self.caches[gi]])
        inputs = torch.from_numpy(batch).to(self.lm.device)
        states = self.body(input_ids=inputs, use_cache=cache is not None,
                           **{self.cache_arg: cache}).last_hidden_state
        picks = torch.cat([states[i, len(r) - n:len(r)] for i, r in enumerate(rows)])
        targets = torch.from_numpy(np.tile(ids[-n:], len(rows))).to(self.lm.device)
        nll = self._nll(picks, targets).reshape(len(rows), n).sum(1)
        return nll.double().cpu().numpy()

    def _nll(self, states: Any, targets: Any) -> Any:
        """Surprisal (nats) of ``targets`` from the last states, the head in fp32 slabs."""
        import torch

        vocab = self.head.weight.shape[0]
        step = max(1, MAX_LOGIT_ELEMENTS // vocab)
        out = []
        for i in range(0, states.shape[0], step):
            logits = self.head(states[i:i + step]).float()
            out.append(torch.logsumexp(logits, -1)
                       - logits.gather(1, targets[i:i + step, None])[:, 0])
        return torch.cat(out)


def _layers(cache: Any) -> list[tuple[Any, Any]]:
    """Each layer's (keys, values), checked to be plain full-attention layers."""
    from transformers.cache_utils import DynamicLayer

    layers = getattr(cache, "layers", None)
    if not layers or any(type(layer) is not DynamicLayer for layer in layers):
        raise NotImplementedError(f"a {type(cache).__name__} with sliding or other layers")
    return [(layer.keys, layer.values) for layer in layers]
