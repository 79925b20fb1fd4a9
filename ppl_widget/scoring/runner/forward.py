"""The batched forward pass: a batch of windows through the model, only target
positions through the LM head, and each target's statistics (surprisal, entropy, rank,
top-k, b(i)) computed on the device from bounded slabs of fp32 logits."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ...core.windows import Window
from ..kinds.model_kind import PendingStats
from .vocab import bow_mask

#: Most fp32 logits (rows x vocabulary) alive at once: 64 Mi floats = 256 MiB.
MAX_LOGIT_ELEMENTS = 1 << 26
#: The same on a GPU: 512 MiB, fewer and larger head products.
MAX_LOGIT_ELEMENTS_CUDA = 1 << 27
#: Vocabulary rows per product of the LM head on a CPU: rows x 49k in one product ran at
#: ~50-65 GFLOP/s on 2 AVX2 cores, in blocks of 1-2k rows at ~80-100 (benchmarks/
#: bench_llama_cpp.py; the head is ~10% of a run that scores half its positions)
CPU_HEAD_BLOCK = 2048

# Config attributes of models whose logits are transformed after the LM head
# (soft-capping, scaling); those are scored through the model's own forward.
_POST_HEAD_ATTRS = ("final_logit_softcapping", "logit_scale", "logits_scaling",
                    "output_multiplier_scale")


class BatchedForward:
    """Model calls that pass only target positions through the LM head.

    ``submit`` enqueues a batch's device work and returns a function that waits for it;
    ``score_batch`` does both.  On a CUDA GPU the head returns fp32 logits directly and
    one Triton pass per row gives the statistics (``gpu_stats``); elsewhere one fused
    torch softmax pass does.
    """

    #: a ``model_kind.ScoringForward``: batches are enqueued on the device (``submit``)
    supports_async = True
    pipeline_depth: int | None = None  # 2 on a CUDA device (``run.pipeline_depth``)

    def __init__(self, lm: Any, top_k: int):  # a LoadedModel (models.py builds this)
        self.lm = lm
        self.top_k = top_k
        model = lm.model
        self.head = model.get_output_embeddings()
        self.base = body_of(model)
        # lm.compile()'s body, for batches of full windows (``full_width`` positions)
        self.compiled = lm.compiled_body if self.base is not None else None
        self.full_width: int | None = None
        self.vocab_size = self.head.weight.shape[0]
        self.cuda = getattr(lm.device, "type", None) == "cuda"
        self.bow_mask = bow_mask(lm, self.vocab_size)  # for b(i), the begin-of-word prob
        # max_length of the run: a text that fits one window gets b after its last token
        # from the same forward (one more input position), see ``submit``
        self.end_row_limit: int | None = None
        self.max_logits = MAX_LOGIT_ELEMENTS_CUDA if self.cuda else MAX_LOGIT_ELEMENTS
        self.fused = False
        self.head_fp32 = None
        if self.cuda:
            from . import gpu_stats

            self.fused = gpu_stats.fused_available(lm.device.index or 0)
            self.head_fp32 = gpu_stats.head_fp32(self.head) if self.base is not None else None
        elif self.base is not None:
            self.head_fp32 = blocked_head(self.head)

    def row_logits(self, select: Callable[[Any], Any], keep: int | None = None,
                   **inputs: Any) -> Iterator[tuple[int, Any]]:
        """fp32 logits of the rows ``select`` picks from the model's last states (rows x
        hidden through the head, or the model's own logits where logits are transformed
        after the head), a bounded slab at a time, each with its first row number.
        ``keep``: the own-forward path computes only the last ``keep`` positions' logits.
        The one place that chooses between body + head and the model's own forward."""
        rows_per_slab = max(1, self.max_logits // self.vocab_size)
        if self.base is not None:
            rows = select(self._body_for(inputs)(**inputs, use_cache=False).last_hidden_state)
            head = self.head_fp32 or (lambda r: self.head(r).float())
        else:
            extra = {"logits_to_keep": keep} if keep else {}
            rows = select(self.lm.model(**inputs, use_cache=False, **extra).logits)
            head = lambda r: r.float()  # noqa: E731
        for i in range(0, rows.shape[0], rows_per_slab):
            yield i, head(rows[i:i + rows_per_slab])

    def _body_for(self, inputs: dict[str, Any]) -> Any:
        """The compiled body for a batch of two or more full windows and nothing but their
        ids (the batch size is left dynamic: one compile; a single row would compile
        again), else the eager one."""
        ids = inputs["input_ids"]
        if (self.compiled is None or len(inputs) != 1 or ids.shape[0] < 2
                or ids.shape[1] != self.full_width):
            return self.base
        import torch

        torch._dynamo.mark_dynamic(ids, 0)
        return self.compiled

    def target_logits(self, inputs: Any, n_targets: list[int]) -> Iterator[Any]:
        """Yield fp32 logits for the last ``n_targets[b]`` rows of each window ``b``."""
        for _, logits in self.row_logits(lambda s: _last_rows(s, n_targets),
                                         keep=max(n_targets), input_ids=inputs):
            yield logits

    def slab_stats(self, logits: Any, tgt: Any) -> dict[str, Any]:
        """Statistics of one slab of fp32 logits (modified in place), on its device."""
        if self.fused:
            from . import gpu_stats

            # the begin-of-word mass is one more sum in the same single read of each row
            return gpu_stats.slab_stats(logits, tgt, self.top_k, weights=self.bow_mask)
        probs, log_z = shifted_softmax(logits)
        return self.softmax_stats(logits, probs, log_z, tgt)

    def softmax_stats(self, logits: Any, probs: Any, log_z: Any, tgt: Any) -> dict[str, Any]:
        """``slab_stats`` from the slab's ``shifted_softmax`` (logits shifted, their softmax
        and log Z), which a divergence run also needs for its KL
        (scoring/analyses/divergence.py)."""
        import torch

        out: dict[str, Any] = {}
        tgt_logit = logits.gather(1, tgt[:, None])[:, 0]
        out["surprisal"] = log_z - tgt_logit
        # entropy = log Z - E_p[logit] = log Z + E_p[|logit|]
        out["entropy"] = log_z - torch.einsum("rv,rv->r", probs, logits)
        # float sum of the comparison is ~40% faster than summing bools
        greater = (logits > tgt_logit[:, None]).to(torch.float32).sum(dim=-1)
        out["rank"] = greater.to(torch.int64) + 1
        if self.bow_mask is not None:  # one matrix-vector product per slab
            out["bow_prob"] = probs @ self.bow_mask
        if self.top_k:
            top_p, top_idx = probs.topk(self.top_k, dim=-1)
            out["topk_ids"] = top_idx
            out["topk_probs"] = top_p
        return out

    def submit(self, sequence: Any, batch: list[Window]) -> PendingStats:
        """Enqueue one batch; the returned function waits for it and gives its arrays.

        On a GPU nothing here waits for the device: results are copied to pinned host
        memory asynchronously, so the host can finish the previous batch meanwhile."""
        if len(batch) > 1 and self.end_row_wanted(sequence, batch[-1]):
            # b after the last token comes from the last window's own forward, whatever
            # the batch size: the last window alone, one more row after the text's end
            return _joined(self._submit(sequence, batch[:-1]), self._submit(sequence, batch[-1:]))
        return self._submit(sequence, batch)

    def _submit(self, sequence: Any, batch: list[Window]) -> PendingStats:
        import torch

        inputs, targets, n_targets, end_row = self.batch_layout(sequence, batch)
        parts: dict[str, list] = {}
        row = 0
        for logits in self.target_logits(inputs, n_targets):
            n = logits.shape[0]
            if end_row and row + n > len(targets):  # the extra last row: only b from it
                parts["bow_end"] = [torch.softmax(logits[-1:], dim=-1) @ self.bow_mask]
                logits, n = logits[:-1], n - 1
            for key, value in (self.slab_stats(logits, targets[row:row + n]) if n else {}).items():
                parts.setdefault(key, []).append(value)
            row += n
            del logits
        device_arrays = {k: torch.cat(v) if len(v) > 1 else v[0] for k, v in parts.items()}
        copied = _copy_to_host(device_arrays, self.cuda)
        n = len(targets)
        top_k = self.top_k
        contexts = np.concatenate([np.arange(w.target_start - w.input_start,
                                             w.target_end - w.input_start) for w in batch])

        def finish() -> dict[str, np.ndarray]:
            return with_host_columns({k: v.numpy() for k, v in copied().items()}, n, top_k,
                                     contexts)

        return PendingStats(finish, copied.ready)

    def score_batch(self, sequence: Any, batch: list[Window]) -> dict[str, np.ndarray]:
        return self.submit(sequence, batch)()

    def batch_layout(self, sequence: Any, batch: list[Window]) -> tuple[Any, Any, list[int],
                                                                         bool]:
        """What a batch's forward reads and predicts: (inputs, target ids, targets per
        window, ``end_row``: one more row after the last token, for b there)."""
        import torch

        inputs = torch.stack([window_inputs(sequence, w) for w in batch])
        targets = torch.cat([sequence[w.target_start:w.target_end] for w in batch])
        n_targets = [w.n_targets for w in batch]
        # b after the last token: in the last window, feed the last token too (causal
        # attention: the targets' rows are unchanged) and keep one more row, when the
        # model's context has room for one more position; else one more forward later
        last = batch[-1]
        end_row = len(batch) == 1 and self.end_row_wanted(sequence, last)
        if end_row:
            inputs = window_inputs(sequence, last, len(sequence))[None]
            n_targets = [n_targets[0] + 1]
        return inputs, targets, n_targets, end_row

    def end_row_wanted(self, sequence: Any, last: Window) -> bool:
        """Whether b after the text's last token comes from ``last``'s forward (one more
        input position, when the model's context has room for it): ``last`` ends the
        text and the model knows word starts."""
        return (self.bow_mask is not None and last.target_end == len(sequence)
                and last.n_inputs + 1 <= (self.end_row_limit or 0))

    def bow_after_last(self, sequence: Any, max_length: int, prefixed: bool = False) -> float:
        """b at the position after the last token: one more row, from the last
        ``max_length`` positions (so the last word's end is paid for); ``prefixed``:
        the prefix token in place of the first of them, as every window reads it."""
        import torch

        if self.bow_mask is None or len(sequence) == 0:
            return math.nan
        start = max(0, len(sequence) - max_length)
        inputs = window_inputs(sequence, Window(start, len(sequence), len(sequence),
                                                len(sequence) + 1, prefixed and start > 0))[None]
        with torch.inference_mode():
            logits = next(iter(self.target_logits(inputs, [1])))
            probs = torch.softmax(logits.float(), dim=-1)
            return float((probs @ self.bow_mask)[0])


def joined_arrays(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Two consecutive batches' arrays end to end; b after the last token (``bow_end``)
    is the second's."""
    out = {k: np.concatenate([a[k], b[k]]) for k in a if k != "bow_end"}
    if "bow_end" in b:
        out["bow_end"] = b["bow_end"]
    return out


def _joined(first: PendingStats, second: PendingStats) -> PendingStats:
    """Two batches in flight as one (``joined_arrays``)."""
    return PendingStats(lambda: joined_arrays(first(), second()),
                        lambda: first.ready() and second.ready())


def body_of(model: Any) -> Any:
    """The sub-module that gives the last hidden states, for only the target rows to go
    through the head; None where the logits are transformed after the head (soft-capping,
    scaling), which are scored through the model's own forward."""
    base = getattr(model, "base_model", None)
    cfg = model.config
    post_head = any(getattr(cfg, a, None) not in (None, 1, 1.0) for a in _POST_HEAD_ATTRS)
    return None if (base is None or base is model or post_head) else base


def compile_body(lm: Any) -> Any:
    """``lm.compiled_body``, compiled on the first call (``LoadedModel.compile``)."""
    if lm.compiled_body is None:
        body = body_of(lm.model)
        if body is None:
            raise ValueError(
                "compile() compiles a transformers model's body; this model changes its "
                "logits after the head, so it is scored through its own forward, uncompiled")
        import torch

        lm.compiled_body = torch.compile(body)
    return lm.compiled_body


def blocked_head(head: Any) -> Callable[[Any], Any] | None:
    """fp32 logits of a plain linear head (no bias) on a CPU, a block of vocabulary rows
    per product (``CPU_HEAD_BLOCK``); float32 products where the head has them
    (``fp32_products.py``: bf16 on a CPU where they measured faster), so its logits are not
    rounded to bf16.  None for any other head, which is called as a module (a quantized
    subclass, a head with hooks, one on another device)."""
    import torch

    weight = getattr(head, "weight", None)
    upcast = getattr(head, "fp32_products", False)
    if (not (type(head) is torch.nn.Linear or upcast) or head.bias is not None
            or head._forward_hooks or head._forward_pre_hooks
            or weight.device.type != "cpu" or weight.shape[0] <= CPU_HEAD_BLOCK):
        return None

    def logits(rows: Any) -> Any:
        out = torch.empty(rows.shape[0], weight.shape[0], dtype=torch.float32)
        rows = rows.float() if upcast else rows
        for i in range(0, weight.shape[0], CPU_HEAD_BLOCK):
            block = weight[i:i + CPU_HEAD_BLOCK]
            # the copy into the fp32 slab casts a bf16/fp16 product
            out[:, i:i + CPU_HEAD_BLOCK] = torch.nn.functional.linear(
                rows, block.float() if upcast else block)
        return out

    return logits


def window_inputs(sequence: Any, w: Window, end: int | None = None) -> Any:
    """What the model reads for window ``w`` (up to position ``end``, default its
    ``input_end``): a prefixed window reads position 0, the prefix token, first."""
    import torch

    inputs = sequence[w.input_start:w.input_end if end is None else end]
    if w.prefixed:
        inputs = torch.cat([sequence[:1], inputs[1:]])
    return inputs


def _last_rows(states: Any, n_targets: list[int]) -> Any:
    """The last ``n_targets[b]`` positions of each row ``b``, stacked."""
    import torch

    k = n_targets[0]
    if all(n == k for n in n_targets):  # the usual batch: one strided view, no concatenation
        return states[:, states.shape[1] - k:].reshape(-1, states.shape[-1])
    return torch.cat([states[b, states.shape[1] - n:] for b, n in enumerate(n_targets)])


def shifted_softmax(logits: Any) -> tuple[Any, Any]:
    """Softmax and log Z of fp32 ``logits``, shifted in place so each row's max is 0: then
    log Z = -log(max prob), and an entropy from them adds two non-negative terms, with no
    cancellation in fp32.  One fused softmax pass serves every statistic (~2x faster on
    CPU than log_softmax followed by exp).  The one NLL formula of the CPU path: packed
    texts (``packed.target_nll``) use it too, so their totals equal ``score()``'s."""
    import torch

    logits -= logits.amax(dim=-1, keepdim=True)
    probs = torch.softmax(logits, dim=-1)
    return probs, -probs.amax(dim=-1).log()


def with_host_columns(arrays: dict[str, np.ndarray], n: int, top_k: int,
                      contexts: np.ndarray) -> dict[str, np.ndarray]:
    """A batch's ``n`` targets' host arrays with the columns no device computes: empty
    top-k columns when ``top_k`` is 0, and each target's context length."""
    if not top_k:
        arrays["topk_ids"] = np.zeros((n, 0), np.int64)
        arrays["topk_probs"] = np.zeros((n, 0), np.float64)
    arrays["context_length"] = contexts
    return arrays


def _copy_to_host(tensors: dict[str, Any], cuda: bool) -> PendingStats:
    """Start copying device tensors to the host; the ``PendingStats`` waits for them.
    On CUDA: pinned buffers, non-blocking copies and one event (one wait per batch)."""
    import torch

    if not cuda:
        host = {k: v.cpu() for k, v in tensors.items()}
        return PendingStats(lambda: host)
    host = {k: torch.empty(v.shape, dtype=v.dtype, pin_memory=True) for k, v in tensors.items()}
    for k, v in tensors.items():
        host[k].copy_(v, non_blocking=True)
    done = torch.cuda.Event()
    if tensors:  # on the stream of the tensors' device, which need not be the current one
        done.record(torch.cuda.current_stream(next(iter(tensors.values())).device))

    def wait() -> dict[str, Any]:
        done.synchronize()
        return host

    return PendingStats(wait, done.query)



def is_oom(exc: BaseException) -> bool:
    import torch

    oom = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
    return isinstance(exc, oom) or "out of memory" in str(exc).lower()

