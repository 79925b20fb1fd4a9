"""bfloat16 on this CPU: score() in bfloat16 beside float32, with the matrix products
load_model chose here (``scoring/kinds/hf/bf16_products.py``: torch's own bf16 products or float32
ones from the bf16 weights, whichever measured faster) and with the other ones forced.

Prints the choice (the CPU key, measured or cached, each path's GFLOP/s on the timed
product), then a table: seconds (best and median of ``--repeats`` turns, the three loads
taking turns so a shared machine's slow spells fall on all), the speed against float32
(float32 seconds / these: above 1, faster) and the per-token surprisal difference from
float32.  The rule it checks: the chosen path is the faster one here, so bfloat16 is
never much slower than float32's products allow.

    python benchmarks/bench_bf16.py [--tokens 2048] [--repeats 5] [--threads N]
    python benchmarks/bench_bf16.py --smoke   # a tiny random Llama, 2 turns (CI)
"""

from __future__ import annotations

import argparse
import copy
import os
import pathlib
import platform
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_vs_guide import benchmark_text  # noqa: E402
from tiny_llama import tiny_llama  # noqa: E402


def bf16_copy(lm, path: str | None):
    """``lm`` loaded again in bfloat16 on the CPU: the products load_model chooses
    (``path`` None) or ``path`` forced through the override."""
    from ppl_widget import load_model
    from ppl_widget.scoring.kinds.hf.bf16_products import ENV

    before = os.environ.pop(ENV, None)
    try:
        if path is not None:
            os.environ[ENV] = path
        return load_model((copy.deepcopy(lm.model), lm.tokenizer), device="cpu",
                          dtype="bfloat16")
    finally:
        os.environ.pop(ENV, None)
        if before is not None:
            os.environ[ENV] = before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--stride", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="default: torch's")
    parser.add_argument("--smoke", action="store_true",
                        help="a tiny random Llama, a short text, 2 turns: runs in seconds")
    args = parser.parse_args()

    import numpy as np
    import torch

    from ppl_widget import load_model, score
    from ppl_widget.scoring.kinds.hf.bf16_products import (
        CACHE_FILE,
        POSITIONS,
        choose_bf16_products,
        cpu_key,
        typical_weight,
    )
    from ppl_widget.scoring.kinds.model_cache import cache_root

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.smoke:
        args.max_length, args.stride, args.repeats = 64, 32, 2
        text = " ".join(__doc__.split())  # the tiny tokenizer is trained on what it scores
        lm32 = tiny_llama([text], max_positions=args.max_length + 1)
    else:
        lm32 = load_model(None, device="cpu", dtype="float32")
        text = benchmark_text(lm32.tokenizer, args.tokens)

    weight = typical_weight(lm32.model)
    key = cpu_key(torch.get_num_threads(), tuple(weight.shape))
    cache = cache_root() / CACHE_FILE
    cached = cache.is_file() and key in cache.read_text(encoding="utf-8")
    chosen = bf16_copy(lm32, None)
    choice = choose_bf16_products(chosen.model)  # what that load used, from the cache now
    other = bf16_copy(lm32, "native" if chosen.bf16_products == "float32" else "float32")
    print(f"# {lm32.name}, {platform.processor() or platform.machine()}, torch "
          f"{torch.__version__}, {torch.get_num_threads()} threads")
    print(f"choice key: {key}")
    flop = 2 * POSITIONS * weight.shape[0] * weight.shape[1]
    rates = ", ".join(f"{name} {flop / s / 1e9:.1f} GFLOP/s"
                      for name, s in choice.seconds.items())
    how = f"read from {cache}" if cached else "measured at this first load"
    print(f"chosen: {chosen.bf16_products} products ({how}; the timed product: {rates})")

    runs = {"float32": lm32, "bfloat16 chosen": chosen, "bfloat16 other": other}
    window = dict(max_length=args.max_length, stride=args.stride)
    for lm in runs.values():
        score(text[:500], lm, **window)  # warm-up: first calls allocate, pick kernels
    times: dict[str, list[float]] = {name: [] for name in runs}
    results = {}
    for _ in range(args.repeats):
        for name, lm in runs.items():
            t = time.perf_counter()
            results[name] = score(text, lm, **window)
            times[name].append(time.perf_counter() - t)

    ref = results["float32"]
    t32 = statistics.median(times["float32"])
    print(f"\n{ref.metrics()['n_tokens']} tokens, max_length {args.max_length}, stride "
          f"{args.stride}, {args.repeats} turns")
    print("| load            | products | best s | median s | speed vs float32 | "
          "max |d surprisal| | mean |d surprisal| |")
    print("|-----------------|----------|--------|----------|------------------|"
          "-------------------|--------------------|")
    for name, lm in runs.items():
        d = np.abs(results[name].surprisal - ref.surprisal)
        print(f"| {name:15} | {lm.bf16_products or '-':8} | {min(times[name]):6.2f} | "
              f"{statistics.median(times[name]):8.2f} | "
              f"{t32 / statistics.median(times[name]):15.2f}x | {d.max():17.4f} | "
              f"{d.mean():18.5f} |")
    fast = statistics.median(times["bfloat16 chosen"])
    slow = statistics.median(times["bfloat16 other"])
    print(f"bfloat16 with the chosen ({chosen.bf16_products}) products: {t32 / fast:.2f}x "
          f"float32's speed; with the other ({other.bf16_products}): {t32 / slow:.2f}x")


if __name__ == "__main__":
    main()
