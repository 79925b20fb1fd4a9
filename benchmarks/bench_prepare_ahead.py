"""Tokenizing a long text while the GPU scores its start, on a simulated device.

On a GPU, ``score`` tokenizes the first batches' worth of a long text, puts those
batches in flight, and tokenizes the rest in a thread meanwhile (``prepare_ahead``);
before, the whole text was tokenized first (``prepare``: 0.39-0.64 s of 300,000 tokens
on the H100 machine, while the GPU idled).  This measures that host side without a GPU:
the model is a simulated device, a thread that "computes" each batch by sleeping for a
set time (the H100 Llama-1B figure by default: 196 ms a batch of 32 windows of 1,024
positions, from docs/performance.md), after a set time of Python work on the calling
thread for launching it (15 ms, holding the GIL as kernel launches do).  Arrays of the
right shapes come back.  The text and tokenizer are ``bench_gpu.py``'s (the standard
library's source, a 32,000-merge byte-level BPE).

Printed per stride, median of ``--repeats`` (the two ways alternate): seconds to the
first chunk and in all, with the text prepared first and prepared ahead, and how far
each is above the device's own busy time (the part a faster host cannot remove).

    python benchmarks/bench_prepare_ahead.py            # 300,000 tokens, strides 512 and 1024
    python benchmarks/bench_prepare_ahead.py --smoke    # 40,000 tokens, seconds (CI)
"""

from __future__ import annotations

import argparse
import math
import os
import pathlib
import platform
import queue
import statistics
import sys
import threading
import time
from typing import Any

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_gpu import cut_to_tokens, stdlib_text, train_tokenizer  # noqa: E402

from ppl_widget import stream  # noqa: E402
from ppl_widget.scoring.kinds.model_kind import PendingStats  # noqa: E402
from ppl_widget.scoring.runner import scorer  # noqa: E402


class SimulatedDevice:
    """One queue worked through in order, like a CUDA stream: each job sleeps.  At most
    ``max_queued`` jobs wait: a launch beyond that blocks until the device takes one, as
    CUDA's launch queue (about a thousand kernels) does when a batch has hundreds of
    kernels (0: no limit)."""

    def __init__(self, max_queued: int = 0) -> None:
        self.jobs: queue.Queue = queue.Queue()
        self.busy_s = 0.0
        self.room = threading.Semaphore(max_queued) if max_queued else None
        threading.Thread(target=self._work, daemon=True).start()

    def _work(self) -> None:
        while True:
            seconds, done = self.jobs.get()
            if self.room is not None:
                self.room.release()  # taken from the queue: a launch may go on
            time.sleep(seconds)
            self.busy_s += seconds
            done.set()

    def enqueue(self, seconds: float) -> threading.Event:
        if self.room is not None:
            self.room.acquire()
        done = threading.Event()
        self.jobs.put((seconds, done))
        return done


class SimulatedForward:
    """The scorer's forward, two batches in flight, on a ``SimulatedDevice``."""

    supports_async = True
    pipeline_depth = 2

    def __init__(self, device: SimulatedDevice, top_k: int, batch_s: float, launch_s: float,
                 batch_windows: int):
        self.device, self.top_k = device, top_k
        self.batch_s, self.launch_s, self.batch_windows = batch_s, launch_s, batch_windows

    def submit(self, sequence: Any, batch: list) -> PendingStats:
        until = time.perf_counter() + self.launch_s
        while time.perf_counter() < until:  # Python launching kernels holds the GIL
            pass
        done = self.device.enqueue(self.batch_s * len(batch) / self.batch_windows)
        n = sum(w.n_targets for w in batch)
        contexts = np.concatenate([np.arange(w.target_start - w.input_start,
                                             w.target_end - w.input_start) for w in batch])

        def finish() -> dict[str, np.ndarray]:
            done.wait()
            return {"surprisal": np.ones(n), "entropy": np.ones(n),
                    "rank": np.ones(n, np.int64), "context_length": contexts,
                    "topk_ids": np.zeros((n, self.top_k), np.int64),
                    "topk_probs": np.zeros((n, self.top_k))}

        return PendingStats(finish, done.is_set)

    def score_batch(self, sequence: Any, batch: list) -> dict[str, np.ndarray]:
        return self.submit(sequence, batch)()

    def bow_after_last(self, sequence: Any, max_length: int) -> float:
        return math.nan


class SimulatedModel:
    """What ``stream`` needs of a model kind that brings its own forward."""

    dtype = "bfloat16"
    context_length = None

    def __init__(self, tokenizer: Any, max_queued: int = 0, **forward: Any):
        import torch

        self.tokenizer, self.forward = tokenizer, forward
        self.name, self.device = "simulated-device", torch.device("cpu")
        self.device_state = SimulatedDevice(max_queued)

    def default_max_length(self) -> int:
        return 1024

    @property
    def vocab_size(self) -> int:
        return len(self.tokenizer)

    def make_forward(self, top_k: int, max_length: int) -> SimulatedForward:
        return SimulatedForward(self.device_state, top_k, **self.forward)


def timed_run(text: str, lm: SimulatedModel, ahead: bool, **window: Any) -> dict[str, float]:
    real = scorer.prepare_ahead
    taken = []  # what prepare_ahead gave (None: declined, or not asked)
    scorer.prepare_ahead = lambda *a, **k: taken.append(real(*a, **k) if ahead else None) \
        or taken[-1]
    try:
        busy0 = lm.device_state.busy_s
        t0 = time.perf_counter()
        first = None
        for item in stream(text, lm, **window):
            first = first or time.perf_counter() - t0
            last = item
        assert last.finished and len(last.result) == last.total  # built as score() does
        total = time.perf_counter() - t0
    finally:
        scorer.prepare_ahead = real
    busy = lm.device_state.busy_s - busy0
    return {"first": first, "total": total, "over": total - busy, "busy": busy,
            "ahead": float(bool(taken and taken[0]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="40,000 tokens, one repeat")
    parser.add_argument("--tokens", type=int, default=None, help="default 300000")
    parser.add_argument("--max-length", type=int, default=1024)
    parser.add_argument("--strides", default="512,1024")
    parser.add_argument("--batch-size", type=int, default=None, help="default 32 (smoke 4)")
    parser.add_argument("--batch-ms", type=float, default=196.0,
                        help="device time of a full batch (H100, Llama-1B shape: 196)")
    parser.add_argument("--launch-ms", type=float, default=15.0,
                        help="Python time to launch a batch, GIL held")
    parser.add_argument("--launch-queue", type=int, default=1,
                        help="batches the device queues before a launch blocks (0: no limit)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n_tokens = args.tokens or (40_000 if args.smoke else 300_000)
    args.batch_size = args.batch_size or (4 if args.smoke else 32)
    repeats = 1 if args.smoke else args.repeats
    batch_ms = args.batch_ms / 20 if args.smoke else args.batch_ms

    raw = stdlib_text(int(n_tokens * 4.5) + 10_000)
    tokenizer = train_tokenizer(raw, 2_000 if args.smoke else 32_000)
    text = cut_to_tokens(raw, tokenizer, n_tokens)
    lm = SimulatedModel(tokenizer, max_queued=args.launch_queue, batch_s=batch_ms / 1000,
                        launch_s=args.launch_ms / 1000, batch_windows=args.batch_size)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; {len(text):,} characters, {n_tokens:,} tokens; "
          f"max_length {args.max_length}, batches of {args.batch_size} windows, simulated "
          f"device {batch_ms:g} ms a batch + {args.launch_ms:g} ms launch, a launch waits "
          f"while {args.launch_queue or 'unlimited'} batch(es) queue; median of "
          f"{repeats}", flush=True)
    print("| stride | text prepared | first chunk | total | above device time |")
    print("| ---: | --- | ---: | ---: | ---: |")  # "ahead" only where prepare_ahead took it
    for stride in (int(s) for s in args.strides.split(",")):
        window = dict(max_length=args.max_length, stride=stride, batch_size=args.batch_size)
        for ahead in (False, True):  # warm-up: the tokenizer's threads, first allocations
            timed_run(text[:len(text) // 4], lm, ahead, **window)
        runs: dict[bool, list] = {False: [], True: []}
        for _ in range(repeats):
            for ahead in (False, True):
                runs[ahead].append(timed_run(text, lm, ahead, **window))
        med = {a: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
               for a, rs in runs.items()}
        for ahead in (False, True):
            m = med[ahead]
            label = "ahead" if m["ahead"] else "first"
            print(f"| {stride} | {label} | {m['first']:.3f} s | {m['total']:.3f} s | "
                  f"{m['over']:.3f} s |", flush=True)
        print(f"stride {stride}: {med[True]['busy']:.2f} s of device time; ahead saves "
              f"{med[False]['total'] - med[True]['total']:.3f} s "
              f"({med[False]['total'] / med[True]['total']:.3f}x)", flush=True)


if __name__ == "__main__":
    main()
