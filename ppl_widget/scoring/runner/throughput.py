"""How fast a run went against what the hardware can do: the FLOPs a forward pass
executes (transformer body over every input position, the LM head over the rows it is
applied to, causal attention) and the device's measured matrix-product peak.

Used by the corpus runner's per-rank report and by the benchmarks, so that "% of peak"
means one thing everywhere.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

#: Measured peaks, by (device, dtype): measured once per process.
_PEAKS: dict[tuple[str, str], float] = {}


def flop_model(model: Any) -> dict[str, float]:
    """The shape numbers the FLOP count needs, read off a transformers model."""
    cfg = model.config
    emb = model.get_input_embeddings().weight
    head = model.get_output_embeddings().weight
    skip = {id(emb), id(head)}
    pos = getattr(getattr(model, "transformer", None), "wpe", None)
    if pos is not None:  # GPT-2's learned positions are a lookup, not a product
        skip.add(id(pos.weight))
    body = sum(p.numel() for p in model.parameters() if id(p) not in skip)
    total = sum(p.numel() for p in model.parameters())
    layers = getattr(cfg, "num_hidden_layers", None) or cfg.n_layer
    heads = getattr(cfg, "num_attention_heads", None) or cfg.n_head
    hidden = getattr(cfg, "hidden_size", None) or cfg.n_embd
    d_attn = heads * (getattr(cfg, "head_dim", None) or hidden // heads)
    return {"body": body, "total": total, "head_per_pos": 2 * head.shape[0] * head.shape[1],
            "layers": layers, "d_attn": d_attn}


def window_flops(fm: dict, n_inputs: int, n_head_rows: int) -> float:
    """One forward over ``n_inputs`` positions, ``n_head_rows`` of them through the head."""
    attention = 2 * n_inputs * n_inputs * fm["d_attn"] * fm["layers"]  # causal: half of 4n^2d
    return 2 * fm["body"] * n_inputs + attention + fm["head_per_pos"] * n_head_rows


def matmul_peak(device: Any, dtype: Any, n: int | None = None) -> float:
    """The device's measured matrix-product rate in ``dtype``, TFLOP/s: the median of
    timed n x n products after warm-ups (n: 8192 on a GPU, 1024 on a CPU, where a larger
    one would take seconds).  Measured once per process for each device and dtype."""
    import torch

    device = torch.device(device)
    key = (str(device), str(dtype))
    if n is None and key in _PEAKS:
        return _PEAKS[key]
    cuda = device.type in ("cuda", "mps")  # a GPU: a large product, clocks warmed up
    size = n or (8192 if cuda else 1024)
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    times = []
    for i in range(30 if cuda else 6):  # warm-ups first: GPU clocks ramp up
        _sync(device)
        t = time.perf_counter()
        a @ b
        _sync(device)
        if i >= (10 if cuda else 1):
            times.append(time.perf_counter() - t)
    peak = 2 * size**3 / statistics.median(times) / 1e12
    if n is None:
        _PEAKS[key] = peak
    return peak


def _sync(device: Any) -> None:
    """Wait for the device's queue, so a timing covers the work (GPUs run asynchronously)."""
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()
