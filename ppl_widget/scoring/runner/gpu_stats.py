"""The per-token statistics on a CUDA GPU: fp32 logits straight out of the LM head,
then one pass over each row for log Z, surprisal, entropy and rank (a Triton kernel),
and ``torch.topk`` for the top-k.

Why: the plain torch pass (softmax, max, gather, entropy sum, rank count, top-k) reads
and writes the ``rows x vocabulary`` fp32 logits about ten times; for a 128k vocabulary
that is ~5 MB of memory traffic per token, comparable to the transformer body's own time
on an H100.  The kernel reads each row once (online log-sum-exp), so the statistics cost
one read plus ``topk``'s.

Exactness: the head's matrix product accumulates in fp32 and returns fp32
(``torch.mm(..., out_dtype=torch.float32)``), so logits are not rounded to the model's
bf16 first; entropy is accumulated as ``log s + sum e^(x-m) (m-x) / s`` (two
non-negative terms, no cancellation), as the CPU path does.
"""

from __future__ import annotations

import functools
from typing import Any

try:  # Triton ships with CUDA builds of torch; CPU-only installs never reach this path
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - exercised only where triton is absent
    triton = None
    tl = None

#: Vocabulary columns a kernel instance reads per step.
BLOCK_V = 4096


#: Largest top-k found inside the kernel; larger ones use ``torch.topk``.
MAX_FUSED_TOP_K = 16

if triton is not None:

    @triton.jit
    def _row_stats_kernel(logits_ptr, stride_row, targets_ptr, out_ptr, rank_ptr, topv_ptr,
                          topi_ptr, w_ptr, mass_ptr, n_vocab, K, BLOCK: tl.constexpr,
                          KP: tl.constexpr, HAS_W: tl.constexpr):
        """One program per row, one read of it: online log-sum-exp, entropy, rank,
        (KP > 0) the top K logits and their ids, and (HAS_W) the probability mass
        ``sum p w`` of a weight vector over the vocabulary."""
        row = tl.program_id(0).to(tl.int64)
        base = logits_ptr + row * stride_row
        target = tl.load(targets_ptr + row)
        x_t = tl.load(base + target).to(tl.float32)
        # m: running max; s = sum e^(x-m); t = sum e^(x-m) (m - x) >= 0; cnt: x > x_t
        m = tl.full((), -3.0e38, tl.float32)
        s = tl.zeros((), tl.float32)
        t = tl.zeros((), tl.float32)
        cnt = tl.zeros((), tl.int32)
        u = tl.zeros((), tl.float32)  # sum e^(x-m) w
        lane = tl.arange(0, BLOCK)
        if KP > 0:
            slot = tl.arange(0, KP)
            top_v = tl.full((KP,), float("-inf"), tl.float32)
            top_i = tl.zeros((KP,), tl.int64)
        for start in range(0, n_vocab, BLOCK):
            offs = start + lane
            valid = offs < n_vocab
            x = tl.load(base + offs, mask=valid, other=float("-inf")).to(tl.float32)
            block_max = tl.max(x, axis=0)
            m_new = tl.maximum(m, block_max)
            alpha = tl.exp(m - m_new)
            e = tl.exp(x - m_new)
            d = tl.where(e > 0, e * (m_new - x), 0.0)
            # rescale the old sums to the new max: t(m') = a (t(m) + (m' - m) s(m))
            t = alpha * (t + (m_new - m) * s) + tl.sum(d, axis=0)
            s = alpha * s + tl.sum(e, axis=0)
            if HAS_W:
                w = tl.load(w_ptr + offs, mask=valid, other=0.0)
                u = alpha * u + tl.sum(e * w, axis=0)
            cnt += tl.sum((x > x_t).to(tl.int32), axis=0)
            m = m_new
            if KP > 0:
                # the block's largest values, one at a time, each replacing the smallest
                # kept value it beats (first index wins a tie, as in a stable sort)
                xb = x
                for _ in tl.static_range(KP):
                    v = tl.max(xb, axis=0)
                    i = tl.argmax(xb, axis=0)
                    low = tl.min(top_v, axis=0)
                    j = tl.argmin(top_v, axis=0)
                    take = slot == tl.where(v > low, j, -1)  # -1: no slot
                    top_v = tl.where(take, v, top_v)
                    top_i = tl.where(take, (start + i).to(tl.int64), top_i)
                    xb = tl.where(lane == i, float("-inf"), xb)
        log_s = tl.log(s)
        tl.store(out_ptr + row * 3 + 0, m + log_s)  # log Z
        tl.store(out_ptr + row * 3 + 1, m + log_s - x_t)  # surprisal
        tl.store(out_ptr + row * 3 + 2, log_s + t / s)  # entropy
        tl.store(rank_ptr + row, cnt.to(tl.int64) + 1)
        if HAS_W:
            tl.store(mass_ptr + row, u / s)
        if KP > 0:
            # write the kept values in descending order (ties: smaller id first)
            for k in tl.static_range(KP):
                v = tl.max(top_v, axis=0)
                best = tl.where(top_v == v, top_i, n_vocab)
                idx = tl.min(best, axis=0)
                pick = (top_v == v) & (top_i == idx)
                if k < K:
                    tl.store(topv_ptr + row * K + k, v)
                    tl.store(topi_ptr + row * K + k, idx)
                top_v = tl.where(pick, float("-inf"), top_v)
                top_i = tl.where(pick, n_vocab, top_i)


@functools.cache
def fused_available(device_index: int = 0) -> bool:
    """Triton and a CUDA device that runs it (checked once per device)."""
    if triton is None:
        return False
    import torch

    if not torch.cuda.is_available():
        return False
    try:  # a 2 x 3 check against the definitions, on the device itself
        dev = torch.device("cuda", device_index)
        x = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, -1.0]], device=dev)
        tgt = torch.tensor([1, 2], device=dev)
        res = row_stats(x, tgt)
        stats, rank = res["stats"], res["rank"]
        ref = torch.log_softmax(x, -1)
        ok = torch.allclose(stats[:, 1], -ref.gather(1, tgt[:, None])[:, 0], atol=1e-5)
        return bool(ok and rank.tolist() == [2, 3])
    except Exception:  # no compiler, unsupported GPU: the torch path serves
        return False


def row_stats(logits: Any, targets: Any, top_k: int = 0, weights: Any = None) -> dict[str, Any]:
    """For fp32 ``logits`` (rows x vocabulary, unit stride along the vocabulary):
    ``stats`` (rows, 3) fp32 of log Z, surprisal, entropy; ``rank`` (rows,) int64; for
    ``0 < top_k <= MAX_FUSED_TOP_K``, ``top_logit`` and ``top_ids`` (rows, k); for an
    fp32 ``weights`` vector over the vocabulary, ``mass`` = sum of p * weights."""
    import torch

    rows, n_vocab = logits.shape
    dev = logits.device
    k = top_k if 0 < top_k <= MAX_FUSED_TOP_K else 0
    res = {"stats": torch.empty((rows, 3), dtype=torch.float32, device=dev),
           "rank": torch.empty(rows, dtype=torch.int64, device=dev),
           "top_logit": torch.empty((rows, k), dtype=torch.float32, device=dev),
           "top_ids": torch.empty((rows, k), dtype=torch.int64, device=dev),
           "mass": torch.empty(rows if weights is not None else 0, dtype=torch.float32,
                               device=dev)}
    if rows:
        kp = 1 << (k - 1).bit_length() if k else 0
        w = weights if weights is not None else res["mass"]  # unread without HAS_W
        _row_stats_kernel[(rows,)](logits, logits.stride(0), targets, res["stats"],
                                   res["rank"], res["top_logit"], res["top_ids"], w,
                                   res["mass"], n_vocab, k, BLOCK=BLOCK_V, KP=kp,
                                   HAS_W=weights is not None, num_warps=8)
    if not k:
        del res["top_logit"], res["top_ids"]
    if weights is None:
        del res["mass"]
    return res


def slab_stats(logits: Any, targets: Any, top_k: int, weights: Any = None) -> dict[str, Any]:
    """The statistics of one slab of fp32 logits, all still on the device; with
    ``weights`` (the begin-of-word mask) also ``bow_prob``, the mass it carries."""
    import torch

    fused = row_stats(logits, targets, top_k, weights)
    stats = fused["stats"]
    out = {"surprisal": stats[:, 1], "entropy": stats[:, 2], "rank": fused["rank"]}
    if weights is not None:
        out["bow_prob"] = fused["mass"]
    if top_k:
        if "top_ids" in fused:
            top_logit, top_idx = fused["top_logit"], fused["top_ids"]
        else:
            top_logit, top_idx = logits.topk(top_k, dim=-1)
        out["topk_ids"] = top_idx
        out["topk_probs"] = torch.exp(top_logit - stats[:, :1])
    return out


def head_fp32(head: Any) -> Any:
    """A function ``rows -> fp32 logits`` for a bias-free bf16/fp16 linear head: the
    matrix product accumulates and returns fp32 (no rounding of logits to bf16).
    ``None`` where that product is not available (older torch, other heads)."""
    import torch

    weight = getattr(head, "weight", None)
    if (weight is None or getattr(head, "bias", None) is not None
            or weight.dtype not in (torch.bfloat16, torch.float16) or not weight.is_cuda):
        return None
    try:
        probe = torch.ones((2, weight.shape[1]), dtype=weight.dtype, device=weight.device)
        torch.mm(probe, weight[:3].t(), out_dtype=torch.float32)
    except (TypeError, RuntimeError, NotImplementedError):
        return None

    # a vocabulary that is not a multiple of 64 (GPT-2's 50257) makes the product's
    # output rows misaligned, and cuBLAS falls back to a kernel ~4x slower: pad the
    # weight with zero rows once, and hand out a view of the real columns
    n_vocab = weight.shape[0]
    pad = (-n_vocab) % 64
    padded = torch.cat([weight, weight.new_zeros((pad, weight.shape[1]))]) if pad else weight

    def run(rows: Any) -> Any:
        return torch.mm(rows, padded.t(), out_dtype=torch.float32)[:, :n_vocab]

    return run
