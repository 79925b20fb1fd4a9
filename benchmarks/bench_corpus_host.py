"""A corpus run's host work beside the GPU, on a simulated device.

``score_corpus`` scores a chunk of documents at a time (``flush_docs``, 64): tokenize it,
score its windows in batches, write its Parquet part.  On a GPU the next chunk is now
tokenized and the last one written in threads while this one scores
(``scoring/corpus/pipeline.py``); before, all three ran in turn and the GPU waited for the
other two.  Without a GPU this is measured with the device simulated: each batch "runs"
by sleeping for a time proportional to its padded positions (196 ms for 32 x 1,024, the
H100's Llama-1B batch, docs/performance.md), after 15 ms of Python holding the GIL for
its launch, and gives arrays of the right shapes.  Tokenizing, writing (Arrow, zstd,
fsync, rename) and the final consolidation are the real ones.  The documents are the
standard library's source cut at lines into pieces of about ``--doc-tokens`` tokens,
tokenized with ``bench_gpu.py``'s 32,000-merge byte-level BPE.

Printed: seconds in all, the device's busy seconds, and the time above them, for the two
ways (median of ``--repeats``, alternating).

    python benchmarks/bench_corpus_host.py            # 300,000 tokens in ~300-token documents
    python benchmarks/bench_corpus_host.py --smoke    # 20,000 tokens, seconds (CI)
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import statistics
import sys
import tempfile
import time
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_gpu import build_model, cut_to_tokens, stdlib_text, train_tokenizer  # noqa: E402

from ppl_widget import load_model, score_corpus  # noqa: E402
from ppl_widget.scoring.corpus import run as corpus  # noqa: E402


def documents(text: str, chars: int) -> dict[str, str]:
    """``text`` cut after newlines into pieces of about ``chars`` characters."""
    docs, start = {}, 0
    while start < len(text):
        end = text.find("\n", start + chars)
        end = len(text) if end == -1 else end + 1
        docs[f"doc{len(docs):05d}"] = text[start:end]
        start = end
    return docs


class SimulatedBatches:
    """Stands in for ``corpus.batch.run_batch``: sleeps as a GPU would compute."""

    def __init__(self, seconds_per_position: float, launch_s: float):
        self.per_position, self.launch_s = seconds_per_position, launch_s
        self.busy_s = 0.0

    def __call__(self, fwd: Any, items: list, sequences: list, device: Any,
                 width: int | None = None) -> list[dict]:
        until = time.perf_counter() + self.launch_s
        while time.perf_counter() < until:  # Python launching kernels holds the GIL
            pass
        seconds = self.per_position * len(items) * max(it.length for it in items)
        time.sleep(seconds)  # waiting for the device releases the GIL, as .cpu() does
        self.busy_s += seconds
        k, out = fwd.top_k, []
        for it in items:
            n = it.n_rows
            arrays = {"surprisal": np.ones(n), "entropy": np.ones(n),
                      "rank": np.ones(n, np.int64), "topk_ids": np.zeros((n, k), np.int64),
                      "topk_probs": np.zeros((n, k))}
            if fwd.bow_mask is not None:
                arrays["bow_prob"] = np.full(n, 0.5)
            out.append(arrays)
        return out


def timed_run(docs: dict, lm: Any, device: SimulatedBatches, beside: bool, out: str,
              **opts: Any) -> dict[str, float]:
    real_run, real_depth = corpus.run_batch, corpus.pipeline_depth
    corpus.run_batch = device
    corpus.pipeline_depth = lambda *_: 2 if beside else 1
    try:
        busy0 = device.busy_s
        t0 = time.perf_counter()
        result = score_corpus(docs, out, lm, progress=False, **opts)
        total = time.perf_counter() - t0
    finally:
        corpus.run_batch, corpus.pipeline_depth = real_run, real_depth
    assert len(result) == len(docs)
    busy = device.busy_s - busy0
    return {"total": total, "busy": busy, "over": total - busy,
            "tokens": result.metrics()["n_tokens"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="20,000 tokens, one repeat")
    parser.add_argument("--tokens", type=int, default=None, help="default 300000")
    parser.add_argument("--doc-tokens", type=int, default=300)
    parser.add_argument("--max-length", type=int, default=1024)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--flush-docs", type=int, default=None, help="default 64 (smoke 8)")
    parser.add_argument("--batch-ms", type=float, default=196.0,
                        help="device time of batch-size x max-length positions")
    parser.add_argument("--launch-ms", type=float, default=15.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n_tokens = args.tokens or (20_000 if args.smoke else 300_000)
    repeats = 1 if args.smoke else args.repeats
    args.flush_docs = args.flush_docs or (8 if args.smoke else 64)

    raw = stdlib_text(int(n_tokens * 4.5) + 10_000)
    tokenizer = train_tokenizer(raw, 2_000 if args.smoke else 32_000)
    text = cut_to_tokens(raw, tokenizer, n_tokens)
    docs = documents(text, int(len(text) / n_tokens * args.doc_tokens))
    model = build_model("gpt2-large", True, tokenizer, torch.device("cpu")).float()
    lm = load_model((model, tokenizer))  # only its tokenizer and head shape are used
    batch_ms = args.batch_ms / 20 if args.smoke else args.batch_ms
    device = SimulatedBatches(batch_ms / 1000 / (args.batch_size * args.max_length),
                              args.launch_ms / 1000)
    opts = dict(max_length=args.max_length, stride=args.max_length // 2,
                batch_size=args.batch_size, flush_docs=args.flush_docs)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; {len(docs):,} documents, {n_tokens:,} tokens; "
          f"max_length {args.max_length}, batches of {args.batch_size} x {args.max_length} "
          f"positions, {args.flush_docs} documents a part; simulated device {batch_ms:g} ms a "
          f"full batch + {args.launch_ms:g} ms launch; median of {repeats}", flush=True)
    print("| host work | total | device busy | above device time | tokens/s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        runs: dict[bool, list] = {False: [], True: []}
        for r in range(repeats + 1):  # the first round warms up
            for beside in (False, True):
                got = timed_run(docs, lm, device, beside, f"{tmp}/c{r}{int(beside)}.parquet",
                                **opts)
                if r:
                    runs[beside].append(got)
        med = {b: {k: statistics.median(x[k] for x in rs) for k in rs[0]}
               for b, rs in runs.items()}
        for beside, label in ((False, "in turn (before)"), (True, "beside the device (now)")):
            m = med[beside]
            print(f"| {label} | {m['total']:.3f} s | {m['busy']:.3f} s | {m['over']:.3f} s | "
                  f"{m['tokens'] / m['total']:,.0f} |", flush=True)
        print(f"beside the device: {med[False]['total'] / med[True]['total']:.3f}x "
              f"({med[False]['over'] - med[True]['over']:.3f} s less above device time)")


if __name__ == "__main__":
    main()
