"""score_corpus through a vLLM server beside the local torch run, same machine, same
model (the default SmolLM2-135M in float32), same corpus and window: tokens per second of
each, their ratio (vLLM / torch: above 1, the server is faster), and the largest
difference between their surprisals.

The server: ``--url`` (one already running, serving the default model's converted copy),
else one started here from the vllm environment (scripts/setup_vllm.sh;
``ppl_widget.scoring.kinds.vllm.vllm_launch``), which costs minutes on a CPU.  The two runs take
turns (``--repeats`` each), so a shared machine's slow spells fall on both; the best run
of each counts.

    python benchmarks/bench_vllm.py [--docs 32] [--doc-tokens 600] [--max-length 512]
    python benchmarks/bench_vllm.py --smoke --url http://127.0.0.1:PORT/v1
"""

from __future__ import annotations

import argparse
import inspect
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np


def corpus(n_docs: int, doc_tokens: int, tokenizer) -> dict[str, str]:
    """Standard-library docstrings, whitespace folded, cut into documents of about
    ``doc_tokens`` tokens (cycled when there are too few)."""
    import collections
    import json
    import logging
    import threading
    import unittest

    parts = []
    for mod in (collections, json, logging, threading, unittest, argparse, inspect):
        for _, obj in inspect.getmembers(mod):
            doc = inspect.getdoc(obj)
            if doc and len(doc) > 200:
                parts.append(" ".join(doc.split()))
    text = " ".join(dict.fromkeys(parts))
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    spans = enc["offset_mapping"]
    docs, start = {}, 0
    for i in range(n_docs):
        first = (i * doc_tokens) % max(1, len(spans) - doc_tokens)
        last = first + doc_tokens - 1
        start, end = spans[first][0], spans[min(last, len(spans) - 1)][1]
        docs[f"doc{i:03d}"] = text[start:end]
    return docs


def run(docs: dict[str, str], lm, folder: Path, name: str, max_length: int) -> tuple[float, dict]:
    from ppl_widget import score_corpus

    out = folder / f"{name}.parquet"
    if out.exists():
        out.unlink()
    res = score_corpus(docs, out, lm, max_length=max_length, top_k=5, progress=False)
    row = res.throughput.iloc[0]
    return float(row["tokens_per_s"]), {d: res[d].surprisal for d in docs}


def main(argv: list[str] | None = None, local=None) -> int:
    """``local``: the default model already loaded in float32 on the CPU (a test's), else
    loaded here."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="a running vLLM server serving the default model")
    ap.add_argument("--docs", type=int, default=32)
    ap.add_argument("--doc-tokens", type=int, default=600)
    ap.add_argument("--max-length", type=int, default=512)
    ap.add_argument("--in-flight", type=int, default=8, help="requests at once")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--smoke", action="store_true", help="a few short documents, one turn")
    args = ap.parse_args(argv)
    if args.smoke:
        args.docs, args.doc_tokens, args.max_length, args.repeats = 2, 64, 32, 1

    from ppl_widget import load_model
    from ppl_widget.scoring.kinds.vllm.vllm_model import load_vllm

    warnings.filterwarnings("ignore", message="entropy and b\\(i\\) are NaN")
    if local is None:
        local = load_model(None, device="cpu", dtype="float32")
    docs = corpus(args.docs, args.doc_tokens, local.tokenizer)
    server = None
    if args.url is None:
        from ppl_widget.scoring.kinds.gguf.gguf import default_gguf_path
        from ppl_widget.scoring.kinds.model_cache import converted_dir
        from ppl_widget.scoring.kinds.vllm.vllm_launch import VllmServer

        server = VllmServer(converted_dir(default_gguf_path()),
                            max_model_len=max(2048, args.max_length + 2)).start()
        print(f"vLLM server started in {server.start_s:.0f} s at {server.url}")
        args.url = server.url
    try:
        served = load_vllm(args.url, max_in_flight=args.in_flight)
        best = {"torch": 0.0, "vLLM": 0.0}
        results = {}
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(args.repeats):  # turns: a slow spell falls on both
                for name, lm in (("torch", local), ("vLLM", served)):
                    tps, results[name] = run(docs, lm, Path(tmp), name, args.max_length)
                    best[name] = max(best[name], tps)
        diff = max(float(np.max(np.abs(results["vLLM"][d] - results["torch"][d])))
                   for d in docs)
        n_tokens = sum(len(v) for v in results["torch"].values())
        print(f"{args.docs} documents, {n_tokens} tokens, windows of {args.max_length}, "
              f"{args.in_flight} requests in flight, best of {args.repeats}")
        print(f"{'run':<28}{'tokens/s':>10}")
        print(f"{'local torch (float32)':<28}{best['torch']:>10,.0f}")
        print(f"{'vLLM server (float32)':<28}{best['vLLM']:>10,.0f}")
        print(f"ratio vLLM / torch: {best['vLLM'] / best['torch']:.2f}x  "
              f"(max |surprisal diff| {diff:.1e} nats)")
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
