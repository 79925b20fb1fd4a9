"""Memory at scale: a long text scored on CPU with the default model (issue 11, item 7).

Measures, for ``--chars`` characters of English-like text (default 1,000,000 ~ 1 MB):

* the process RSS after loading the model (the model's own memory), and the peak RSS
  while scoring, sampled every 5 ms by a thread: ``peak - baseline`` is what scoring
  costs beyond the model;
* ``tracemalloc``'s peak of Python/numpy allocations while scoring (torch's CPU
  allocator is not traced; RSS covers it);
* RSS at each progress item against the tokens done so far: the growth per token is
  fitted (least squares over the second half of the run) and compared with the bytes
  the per-token arrays hold (``ScoreResult`` arrays / tokens) and with what keeping
  every window's full-vocabulary logits would cost (tokens x vocabulary x 4 bytes);
* optionally (``--widget``) the same run through ``PerplexityWidget`` with no front
  end: the size of its synced trait state and the bytes of all messages it sends
  (what a notebook holds and a browser receives).

It is a benchmark script, not a test: on a 2-core CPU SmolLM2-135M scores about 190
tokens/s with 1024-token windows, so 1 MB (~250k tokens) takes ~20-25 minutes.  Use
``--chars`` for a shorter run; the per-token growth it reports scales linearly.

    python benchmarks/bench_memory.py --chars 100000 --max-length 256 --widget
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import threading
import time
import tracemalloc

import numpy as np
import psutil

MiB = 1 << 20


def make_text(n_chars: int, seed: int = 0) -> str:
    """English-like text: frequent words by their frequency, sentences, paragraphs."""
    from wordfreq import top_n_list, word_frequency

    words = top_n_list("en", 5000)
    weights = [word_frequency(w, "en") for w in words]
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < n_chars:
        sent = rng.choices(words, weights, k=rng.randint(6, 24))
        s = " ".join(sent).capitalize() + rng.choice([".", ".", ".", "?", "!"])
        s += "\n\n" if rng.random() < 0.15 else " "
        out.append(s)
        size += len(s)
    return "".join(out)[:n_chars]


class RssSampler:
    """Peak resident memory of this process, sampled on a thread."""

    def __init__(self, every_s: float = 0.005):
        self.proc = psutil.Process()
        self.every_s = every_s
        self.peak = self.proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(self.every_s)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)


def result_bytes(res) -> int:
    arrays = ("token_ids", "offsets", "surprisal", "entropy", "rank", "topk_ids",
              "topk_probs", "units", "is_eos")
    return sum(getattr(res, a).nbytes for a in arrays if getattr(res, a, None) is not None)


def run_score(text: str, lm, args) -> dict:
    from ppl_widget import stream

    proc = psutil.Process()
    gc.collect()
    base = proc.memory_info().rss
    curve: list[tuple[int, int]] = []
    tracemalloc.start()
    t0 = time.perf_counter()
    with RssSampler() as sampler:
        last = None
        for last in stream(text, lm, max_length=args.max_length, stride=args.stride,
                           top_k=args.top_k):
            curve.append((last.done, proc.memory_info().rss))
            if args.verbose:
                print(f"\r{last.done:,}/{last.total:,} tokens  {last.tokens_per_s:,.0f} tok/s  "
                      f"RSS {proc.memory_info().rss / MiB:,.0f} MiB", end="", file=sys.stderr)
        res = last.result
    elapsed = time.perf_counter() - t0
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    if args.verbose:
        print(file=sys.stderr)
    done = np.array([c[0] for c in curve], dtype=np.float64)
    rss = np.array([c[1] for c in curve], dtype=np.float64)
    half = done >= done[-1] / 2
    slope = float(np.polyfit(done[half], rss[half], 1)[0]) if half.sum() >= 3 else float("nan")
    vocab = lm.model.get_output_embeddings().weight.shape[0]
    n = len(res)
    window_logits = res.settings["max_length"] * vocab * 4
    return {
        "chars": len(text), "bytes_utf8": len(text.encode()), "tokens": n,
        "max_length": res.settings["max_length"], "stride": res.settings["stride"],
        "top_k": res.settings["top_k"], "n_windows": res.settings["n_windows"],
        "vocab": vocab, "seconds": round(elapsed, 1), "tokens_per_s": round(n / elapsed, 1),
        "rss_model_mib": round(base / MiB, 1),
        "rss_peak_scoring_mib": round(sampler.peak / MiB, 1),
        "rss_beyond_model_mib": round((sampler.peak - base) / MiB, 1),
        "tracemalloc_peak_mib": round(traced_peak / MiB, 1),
        "result_arrays_mib": round(result_bytes(res) / MiB, 1),
        "result_bytes_per_token": round(result_bytes(res) / max(n, 1), 1),
        "rss_growth_bytes_per_token": round(slope, 1),
        "one_window_logits_mib": round(window_logits / MiB, 1),
        "all_logits_if_kept_gib": round(n * vocab * 4 / (1 << 30), 1),
        "metrics": {k: v for k, v in res.metrics().items() if k in ("token_ppl", "word_ppl")},
    }


def run_widget(text: str, lm, args) -> dict:
    """The widget with no front end: synced state and message bytes."""
    from ppl_widget import PerplexityWidget

    sent: list[tuple[dict, list]] = []
    orig = PerplexityWidget.send

    def capture(self, content, buffers=None):
        sent.append((content, buffers or []))

    PerplexityWidget.send = capture
    try:
        t0 = time.perf_counter()
        w = PerplexityWidget(text, lm, max_length=args.max_length, stride=args.stride,
                             top_k=args.top_k)
        w.wait()
        elapsed = time.perf_counter() - t0
    finally:
        PerplexityWidget.send = orig
    # what a saved notebook holds: the manager state, binary values base64-encoded
    saved = len(json.dumps(w.get_manager_state(widgets=[w])).encode())
    msg_json = sum(len(json.dumps(c, default=str)) for c, _ in sent)
    msg_buf = sum(len(b) for _, bs in sent for b in bs)
    n = len(w.result)
    return {"tokens": n, "seconds": round(elapsed, 1), "saved_state_kib": round(saved / 1024),
            "saved_state_bytes_per_token": round(saved / max(n, 1), 1),
            "messages": len(sent), "message_json_kib": round(msg_json / 1024),
            "message_buffers_mib": round(msg_buf / MiB, 2),
            "bytes_per_token_sent": round((msg_json + msg_buf) / max(n, 1), 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--chars", type=int, default=1_000_000, help="text length in characters")
    p.add_argument("--max-length", type=int, default=None, help="window (default: model's, "
                   "capped at 1024 on CPU)")
    p.add_argument("--stride", type=int, default=None)
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--threads", type=int, default=None, help="torch threads")
    p.add_argument("--widget", action="store_true", help="also run the widget (no front end)")
    p.add_argument("--json", help="write the numbers here")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args()

    import torch

    from ppl_widget import load_model

    if args.threads:
        torch.set_num_threads(args.threads)
    text = make_text(args.chars)
    lm = load_model(None, device="cpu")
    out = {"model": lm.name, "torch_threads": torch.get_num_threads(),
           "cpus": os.cpu_count(), "score": run_score(text, lm, args)}
    if args.widget:
        out["widget"] = run_widget(text, lm, args)
    print(json.dumps(out, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
