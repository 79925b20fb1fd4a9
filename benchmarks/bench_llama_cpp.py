"""score(protocol="llama.cpp") against llama.cpp's own llama-perplexity, same weights.

The default model's F32 GGUF against our float32 load of it (the same weights), its BF16
GGUF against our bfloat16 load; the same text (its tokens checked against
llama-tokenize's), the same chunks (``--chunks`` of ``-c`` tokens) and threads.  Prints
seconds side by side (llama.cpp's from its first chunk to its final estimate, model
load and tokenization left out; ours: score() from text to result, tokenization
included), the ratio (llama.cpp seconds / ours: above 1, ours is faster) of the best
runs and of the median runs, and both final PPLs.  The two tools take turns
(``--repeats`` each; llama.cpp with ``-b ctx`` and its default ``-b 2048`` each turn, its
faster run counted), so a shared machine's slow spells fall on both.

    python benchmarks/bench_llama_cpp.py [--chunks 15] [--ctx 256] [--threads 2]
    python benchmarks/bench_llama_cpp.py --smoke   # no llama.cpp: a tiny random model
"""

from __future__ import annotations

import argparse
import ast
import inspect
import math
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

#: llama.cpp's binaries (built from the llama-cpp-python sdist, docs/protocols.md) and the
#: folder of the default model's F32/BF16 GGUF copies (llama-quantize): --bin, --models
LLAMA = pathlib.Path(os.environ.get("LLAMA_CPP_BIN", "/work/llama/llama_cpp_python-0.3.36/"
                                                     "vendor/llama.cpp/build/bin"))
MODELS = pathlib.Path(os.environ.get("LLAMA_CPP_MODELS", "/work/llama/models"))
GGUF = {"float32": "smollm2-f32.gguf", "bfloat16": "smollm2-bf16.gguf"}


def prose(min_tokens: int, tokenizer) -> str:
    """Standard-library docstrings without digits (transformers' and llama.cpp's
    tokenizers of the default model part ways on whitespace runs before digits), cut to
    between ``min_tokens`` and ``min_tokens`` + 100 tokens."""
    import collections
    import csv
    import json
    import logging
    import threading
    import unittest

    parts: list[str] = []
    for mod in (collections, csv, json, logging, threading, unittest, argparse, inspect):
        for _, obj in inspect.getmembers(mod):
            doc = inspect.getdoc(obj)
            if doc and len(doc) > 200 and not re.search(r"\d", doc):
                parts.append(" ".join(doc.split()))  # no whitespace runs at all
    text = "\n\n".join(dict.fromkeys(parts))
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) < min_tokens:
        raise SystemExit(f"only {len(ids)} tokens of prose, asked for {min_tokens}")
    return tokenizer.decode(ids[:min_tokens + 100])


def llama_perplexity(gguf: pathlib.Path, path: str, ctx: int, chunks: int,
                     threads: int, batch: int) -> tuple[float, float, list[str]]:
    """(seconds from the first chunk to the final estimate, final PPL, the command).
    ``batch``: its ``-b``; 2048 (its default) reads 2048 // ctx chunks per batch."""
    cmd = [str(LLAMA / "llama-perplexity"), "-m", str(gguf), "-f", path, "-c", str(ctx),
           "-b", str(batch), "-t", str(threads), "--chunks", str(chunks)]
    log = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr

    def stamp(pattern: str) -> float:  # llama.cpp's log time stamps: m.ss.mmm.uuu
        # the stamp right before the message: off a terminal, "Final estimate" follows the
        # ETA line's unfinished text on the same line, so a line's first stamp is not its own
        m, s, ms, us = (int(x) for x in
                        re.search(r"(\d+)\.(\d+)\.(\d+)\.(\d+) \w " + pattern, log).groups())
        return 60 * m + s + ms / 1e3 + us / 1e6

    seconds = stamp("Final estimate") - stamp("perplexity: calculating perplexity over")
    ppl = float(re.search(r"Final estimate: PPL = ([\d.]+)", log)[1])
    return seconds, ppl, cmd


def llama_tokens(gguf: pathlib.Path, path: str) -> list[int]:
    out = subprocess.run([str(LLAMA / "llama-tokenize"), "-m", str(gguf), "-f", path, "--ids",
                          "--log-disable"], capture_output=True, text=True, check=True).stdout
    return ast.literal_eval(out.strip().splitlines()[-1])


def ours(text: str, lm, ctx: int, repeats: int,
         warm_up: bool = True) -> tuple[float, float, int]:
    """(best seconds of ``repeats`` score() calls, final PPL, tokens scored); ``warm_up``:
    a few short chunks first (once per model is enough)."""
    from ppl_widget import score

    if warm_up:
        try:
            score(text[:1500], lm, max_length=64, protocol="llama.cpp")
        except ValueError:  # a text too short for two chunks of 64: none
            pass
    best, result = math.inf, None
    for _ in range(repeats):
        t = time.perf_counter()
        result = score(text, lm, max_length=ctx, protocol="llama.cpp")
        best = min(best, time.perf_counter() - t)
    return best, result.protocol_report()["final_ppl"], len(result)


def side_by_side(gguf: pathlib.Path, path: str, text: str, lm, args) -> tuple:
    """Both tools ``args.repeats`` times, taking turns (a shared machine's slow spells
    fall on both), llama.cpp with one chunk per batch (``-b ctx``) and with its default
    ``-b 2048``: (llama.cpp's best seconds, its PPL at ``-b ctx``, score()'s best seconds, its PPL,
    tokens scored, both tools' median seconds, llama.cpp's command of the best run)."""
    llama, mine = [], []
    for turn in range(args.repeats):
        for batch in (args.ctx, 2048):
            llama.append(llama_perplexity(gguf, path, args.ctx, args.chunks, args.threads,
                                          batch))
        mine.append(ours(text, lm, args.ctx, 1, warm_up=turn == 0))
    best = min(llama, key=lambda r: r[0])
    seconds, ppl, n = min(mine)
    medians = (statistics.median(r[0] for r in llama), statistics.median(r[0] for r in mine))
    # the PPL of a run with one chunk per batch, the arithmetic score() does (-b 2048 reads
    # 8 chunks per batch, which moves llama.cpp's own PPL by ~5e-5)
    return best[0], llama[0][1], seconds, ppl, n, medians, best[2]


def smoke() -> None:
    """A tiny random Llama, no llama.cpp: score()'s row beside llama-perplexity's loop
    written out by hand on the same model (its final PPL must agree)."""
    import torch

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from tiny_llama import tiny_llama

    base = "The keeper climbed the stairs each evening to light the lamp. " * 40
    lm = tiny_llama([base], max_positions=64)
    ctx, chunks = 32, 4
    ids = lm.tokenizer(base, add_special_tokens=False)["input_ids"][:ctx * chunks]
    text = lm.tokenizer.decode(ids)
    ids = lm.tokenizer(text, add_special_tokens=False)["input_ids"]
    nll = []
    t = time.perf_counter()
    with torch.no_grad():  # llama-perplexity's loop: chunks, the second half scored
        for start in range(0, len(ids) // ctx * ctx, ctx):
            logits = lm.model(torch.tensor([ids[start:start + ctx]])).logits[0].float()
            logp = torch.log_softmax(logits, -1)
            for j in range(ctx // 2, ctx - 1):
                nll.append(-float(logp[j, ids[start + j + 1]]))
    loop_s = time.perf_counter() - t
    loop_ppl = math.exp(sum(nll) / len(nll))
    seconds, ppl, n = ours(text, lm, ctx, 2)
    table([("float32", loop_s, loop_ppl, seconds, ppl, n)], "loop")
    assert abs(ppl / loop_ppl - 1) < 1e-4, (ppl, loop_ppl)


def table(rows: list[tuple], other: str) -> None:
    """One row per dtype: seconds, ratio and final PPL of ``other`` and of score(); the
    ratio of the medians where the runs have them."""
    print(f"| dtype    | {other + ' s':>13} | score() s | ratio | median ratio | "
          f"{other + ' PPL':>15} | score() PPL | tokens scored |")
    print(f"|----------|{'-' * 15}|-----------|-------|--------------|{'-' * 17}|"
          "-------------|---------------|")
    for dtype, other_s, other_ppl, our_s, our_ppl, n, *medians in rows:
        median = f"{medians[0][0] / medians[0][1]:12.2f}" if medians else " " * 12
        print(f"| {dtype:8} | {other_s:13.2f} | {our_s:9.2f} | {other_s / our_s:5.2f} | "
              f"{median} | {other_ppl:15.4f} | {our_ppl:11.4f} | {n:13} |")
    print(f"ratio: {other}'s seconds / score()'s, best run of each (above 1: score() is "
          "faster); median ratio: of the median runs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=15)
    parser.add_argument("--ctx", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--smoke", action="store_true", help="tiny model, no llama.cpp")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.smoke:
        smoke()
        return
    import torch

    from ppl_widget import load_model

    torch.set_num_threads(args.threads)
    rows = []
    for dtype in args.dtypes.split(","):
        lm = load_model(None, device="cpu", dtype=dtype)
        gguf = MODELS / GGUF[dtype]
        text = prose(args.chunks * args.ctx, lm.tokenizer)
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(text)
        try:
            n = args.chunks * args.ctx  # the chunks scored (the rest of the text is dropped)
            same = llama_tokens(gguf, f.name)[:n] == lm.tokenizer(
                text, add_special_tokens=False)["input_ids"][:n]
            print(f"{dtype}: {gguf.name}; the {n} tokens of the chunks equal "
                  f"llama-tokenize's: {same}")
            *row, cmd = side_by_side(gguf, f.name, text, lm, args)
            print("  fastest llama.cpp run: " + " ".join(cmd))
        finally:
            os.unlink(f.name)
        rows.append((dtype, *row))
    print(f"{args.chunks} chunks of {args.ctx} tokens, {args.threads} threads, torch "
          f"{torch.__version__}; {args.repeats} turns each (llama.cpp: -b {args.ctx} and "
          "-b 2048 each turn)")
    table(rows, "llama.cpp")


if __name__ == "__main__":
    main()
