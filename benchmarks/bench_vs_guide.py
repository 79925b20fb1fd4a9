"""ppl_widget.score against the strided loop of the transformers perplexity guide.

Same model object, same text, same max_length and stride, measured in one run,
alternating the two so machine noise hits both.  Prints tokens/s of each and
the ratio, and the total NLL each reports (the guide's loop under-counts one
token per window; see docs/definitions.md).

    python benchmarks/bench_vs_guide.py [--tokens 4096] [--max-length 512] [--stride 256]
"""

from __future__ import annotations

import argparse
import inspect
import pathlib
import platform
import statistics
import sys
import time

import torch

from ppl_widget import load_model, score

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from flops import executed_flops, flop_model, window_flops  # noqa: E402


def benchmark_text(tokenizer, n_tokens: int) -> str:
    """Real English prose available offline: standard-library docstrings."""
    import collections
    import csv
    import json
    import logging
    import pathlib
    import random
    import re
    import statistics as st
    import threading
    import unittest

    parts: list[str] = []
    for mod in (collections, csv, json, logging, pathlib, random, re, st, threading, unittest):
        for _, obj in inspect.getmembers(mod):
            doc = inspect.getdoc(obj)
            if doc and len(doc) > 200:
                parts.append(doc)
    text = "\n\n".join(dict.fromkeys(parts))
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) < n_tokens:
        raise SystemExit(f"only {len(ids)} tokens of text available, asked for {n_tokens}")
    return tokenizer.decode(ids[:n_tokens])


def guide_loop(model, input_ids_all, max_length: int, stride: int, device) -> tuple[float, int]:
    """The strided loop from the transformers docs (perplexity.md), as published
    (``encodings.input_ids`` there is ``input_ids_all`` here)."""
    seq_len = input_ids_all.size(1)
    nll_sum = 0.0
    n_tokens = 0
    prev_end_loc = 0
    for begin_loc in range(0, seq_len, stride):
        end_loc = min(begin_loc + max_length, seq_len)
        trg_len = end_loc - prev_end_loc  # may be different from stride on last loop
        input_ids = input_ids_all[:, begin_loc:end_loc].to(device)
        target_ids = input_ids.clone()
        target_ids[:, :-trg_len] = -100

        with torch.no_grad():
            outputs = model(input_ids, labels=target_ids)
            neg_log_likelihood = outputs.loss

        num_valid_tokens = (target_ids != -100).sum().item()
        batch_size = target_ids.size(0)
        num_loss_tokens = num_valid_tokens - batch_size
        nll_sum += neg_log_likelihood * num_loss_tokens
        n_tokens += num_loss_tokens

        prev_end_loc = end_loc
        if end_loc == seq_len:
            break
    return float(nll_sum), n_tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--stride", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--model", default=None, help="default: the embedded SmolLM2-135M")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--bf16", action="store_true",
                        help="also time score() with a bfloat16 copy of the model: speed "
                             "and per-token difference (benchmarks/bench_bf16.py: both CPU "
                             "products)")
    args = parser.parse_args()

    lm = load_model(args.model, device=args.device)
    text = benchmark_text(lm.tokenizer, args.tokens)
    encodings = lm.tokenizer(text, return_tensors="pt", add_special_tokens=False)
    n = encodings.input_ids.size(1)
    print(f"model {lm.name} on {lm.device} ({lm.dtype}); {n} tokens; "
          f"max_length {args.max_length}, stride {args.stride}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, {platform.processor() or platform.machine()}")

    def sync() -> None:
        if lm.device.type == "cuda":
            torch.cuda.synchronize()

    # warm-up both paths (first-call allocations, kernel selection)
    warm = encodings.input_ids[:, : args.max_length * 2]
    guide_loop(lm.model, warm, args.max_length, args.stride, lm.device)
    score(lm.tokenizer.decode(warm[0]), lm, max_length=args.max_length, stride=args.stride)

    guide_times, ours_times = [], []
    guide_nll = ours_result = None
    for _ in range(args.repeats):
        sync()
        t = time.perf_counter()
        guide_nll, guide_count = guide_loop(lm.model, encodings.input_ids, args.max_length,
                                            args.stride, lm.device)
        sync()
        guide_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        ours_result = score(text, lm, max_length=args.max_length, stride=args.stride)
        sync()
        ours_times.append(time.perf_counter() - t)

    g, o = statistics.median(guide_times), statistics.median(ours_times)
    m = ours_result.metrics()
    print(f"{'':24}{'guide loop':>14}{'ppl_widget':>14}")
    print(f"{'seconds (median)':24}{g:>14.2f}{o:>14.2f}")
    print(f"{'tokens/s':24}{n / g:>14.1f}{n / o:>14.1f}")
    print(f"{'tokens scored':24}{guide_count:>14}{m['n_tokens']:>14}")
    print(f"{'total NLL (nats)':24}{guide_nll:>14.2f}{m['total_nll']:>14.2f}")
    print(f"speed ratio (ppl_widget / guide): {g / o:.2f}x "
          "(ppl_widget also computes entropy, rank and top-5 for every token)")
    # Both run the same body over the same windows; only the LM head differs (all window
    # positions in the guide, the targets in ppl_widget).  The ratio of executed FLOPs is
    # the most any exact computation with this window layout can gain on a compute-bound
    # device, such as a CPU.
    fm = flop_model(lm.model)
    flops = executed_flops(fm, n + 1, args.max_length, args.stride)
    ours = flops["score"]
    from ppl_widget.scoring.runner.forward import BatchedForward

    if getattr(BatchedForward(lm, 5), "bow_mask", None) is not None:
        # the begin-of-word probability after the last token: one more input position in
        # the last window when the context has room, else one more forward of a window
        if args.max_length + 1 <= (lm.context_length or args.max_length):
            ours += window_flops(fm, 1, 1)
        else:
            ours += window_flops(fm, min(args.max_length, n + 1), 1)
    ceiling = flops["guide"] / ours
    print(f"FLOP-ratio ceiling (guide FLOPs {flops['guide'] / 1e12:.2f} T / ppl_widget "
          f"{ours / 1e12:.2f} T): {ceiling:.2f}x; measured {g / o:.2f}x "
          f"({100 * (g / o) / ceiling:.0f}% of the ceiling)")
    if args.bf16:
        bf16_row(args, lm, text, ours_result, sync)


def bf16_row(args: argparse.Namespace, lm, text: str, ref, sync) -> None:
    """score() on a bfloat16 copy beside the float32 one, alternating; per-token |diff|."""
    import copy

    import numpy as np

    lm16 = load_model((copy.deepcopy(lm.model), lm.tokenizer), device=lm.device,
                      dtype="bfloat16")
    window = dict(max_length=args.max_length, stride=args.stride)
    score(text[:2000], lm16, **window)  # warm-up
    t32, t16 = [], []
    for _ in range(args.repeats):
        for lm_, times in ((lm, t32), (lm16, t16)):
            sync()
            t = time.perf_counter()
            res = score(text, lm_, **window)
            sync()
            times.append(time.perf_counter() - t)
    diff = np.abs(res.surprisal - ref.surprisal)
    a, b = statistics.median(t32), statistics.median(t16)
    products = lm16.bf16_products or "the device's own"  # on a CPU: measured faster here
    print(f"bfloat16 score ({products} products): {b:.2f} s "
          f"against float32 {a:.2f} s, {a / b:.2f}x; per-token surprisal |bf16 - fp32| "
          f"mean {diff.mean():.4f}, max {diff.max():.3f} nats")


if __name__ == "__main__":
    main()
