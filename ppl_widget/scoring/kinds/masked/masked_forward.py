"""The forward of a masked language model: a batch of masked copies through the model,
only each copy's target row through the MLM head, and the target's statistics from its
fp32 logits (the same formulas as a causal model's, ``runner/forward.py``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from ....core.two_sided_windows import TwoSidedWindow
from ..model_kind import PendingStats


class MaskedForward:
    """A ``model_kind.ScoringForward`` for ``MaskedModel``: each item of a batch is one
    masked copy (``core.two_sided_windows.masked_copies``), one row of one model call."""

    supports_async = True  # a GPU: the next batch is enqueued while the host finishes one
    pipeline_depth: int | None = None

    def __init__(self, lm: Any, top_k: int) -> None:
        self.lm = lm
        self.top_k = top_k
        self.cuda = getattr(lm.device, "type", None) == "cuda"
        self.head_ids = list(lm.special_head)
        self.tail_ids = list(lm.special_tail)
        self.mask_id = int(lm.mask_token_id)

    def batch_inputs(self, sequence: Any, batch: list[TwoSidedWindow]) -> tuple[Any, Any, Any]:
        """(input ids of the copies, the row of each copy's target, the target ids)."""
        import torch

        dev = sequence.device
        head = torch.as_tensor(self.head_ids, dtype=sequence.dtype, device=dev)
        tail = torch.as_tensor(self.tail_ids, dtype=sequence.dtype, device=dev)
        rows = []
        for w in batch:
            window = sequence[w.input_start:w.input_end].clone()
            stop = w.target_end if w.mask_end is None else w.mask_end
            window[w.target_start - w.input_start:stop - w.input_start] = self.mask_id
            rows.append(torch.cat([head, window, tail]))
        inputs = torch.stack(rows)
        where = torch.as_tensor([len(self.head_ids) + w.target_start - w.input_start
                                 for w in batch], device=dev)
        targets = torch.cat([sequence[w.target_start:w.target_end] for w in batch])
        return inputs, where, targets

    def target_logits(self, inputs: Any, where: Any) -> Any:
        """fp32 logits of row ``where[b]`` of each copy ``b``: the MLM head reads only
        those rows (``target_rows_only``)."""
        model = self.lm.model
        with target_rows_only(model, where) as picked:
            logits = model(input_ids=inputs).logits
        if picked():
            return logits[0].float()  # (copies, vocab)
        return logits[torch_arange(logits.shape[0], logits.device), where].float()

    def submit(self, sequence: Any, batch: list[TwoSidedWindow]) -> PendingStats:
        from ...runner.forward import _copy_to_host, with_host_columns

        inputs, where, targets = self.batch_inputs(sequence, batch)
        stats = masked_stats(self.target_logits(inputs, where), targets, self.top_k)
        copied = _copy_to_host(stats, self.cuda)
        n, top_k = len(batch), self.top_k
        contexts = np.asarray([c for w in batch for c in w.context_lengths()], np.int64)

        def finish() -> dict[str, np.ndarray]:
            return with_host_columns({k: v.numpy() for k, v in copied().items()}, n, top_k,
                                     contexts)

        return PendingStats(finish, copied.ready)

    def score_batch(self, sequence: Any, batch: list[TwoSidedWindow]) -> dict[str, np.ndarray]:
        return self.submit(sequence, batch)()

    def bow_after_last(self, sequence: Any, max_length: int) -> float:
        return float("nan")  # a masked model predicts no next word


def torch_arange(n: int, device: Any) -> Any:
    import torch

    return torch.arange(n, device=device)


@contextlib.contextmanager
def target_rows_only(model: Any, where: Any) -> Iterator[Any]:
    """While inside, the model's body hands its MLM head only row ``where[b]`` of each
    copy ``b`` (as one sequence of ``len(where)`` rows): the head (a dense layer, a
    norm and the vocabulary projection, per position) runs on one row per copy, not
    every position.  Yields a function that says whether the body's output was cut;
    where the model has no separate body, it is not, and the caller picks the rows."""
    body = getattr(model, "base_model", None)
    cut = [False]
    if body is None or body is model:
        yield lambda: False
        return

    def pick(_module: Any, _args: Any, output: Any) -> Any:
        states = output[0]
        rows = states[torch_arange(states.shape[0], states.device), where][None]
        cut[0] = True
        if isinstance(output, tuple):
            return (rows, *output[1:])
        output.last_hidden_state = rows
        return output

    handle = body.register_forward_hook(pick)
    try:
        yield lambda: cut[0]
    finally:
        handle.remove()


def masked_stats(logits: Any, targets: Any, top_k: int) -> dict[str, Any]:
    """Surprisal (nats), entropy, rank and top-k of each row's distribution at its
    masked target: ``runner.forward``'s one formula (``shifted_softmax``)."""
    import torch

    from ...runner.forward import shifted_softmax

    probs, log_z = shifted_softmax(logits)
    tgt_logit = logits.gather(1, targets[:, None])[:, 0]
    out = {"surprisal": log_z - tgt_logit,
           "entropy": log_z - torch.einsum("rv,rv->r", probs, logits),
           "rank": (logits > tgt_logit[:, None]).to(torch.float32).sum(dim=-1)
           .to(torch.int64) + 1}
    if top_k:
        out["topk_probs"], out["topk_ids"] = probs.topk(top_k, dim=-1)
    return out
