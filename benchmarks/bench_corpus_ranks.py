"""A corpus over one process and over two (torchrun), each rank's throughput side by side.

The same documents (the standard library's source cut into pieces of about
``--doc-chars`` characters) go through ``ppl-widget score-corpus`` launched by
``torch.distributed.run --standalone`` with 1 and with 2 processes (gloo on a CPU, where the
two share the machine's cores: one thread each against the single process's all; NCCL on
GPUs, one GPU per rank, needs 2).  Printed: each rank's closing report (tokens/s, TFLOP/s,
% of its device's measured matrix-product peak), the run's scoring time (its slowest rank)
and wall time with the model loads, the speed-up, and a check that both outputs agree.

    python benchmarks/bench_corpus_ranks.py                     # default model, CPU
    python benchmarks/bench_corpus_ranks.py --device cuda --model PATH [--compile yes]
    python benchmarks/bench_corpus_ranks.py --smoke             # tiny random GPT-2 (CI)

``--smoke`` runs its 1-process row without the launcher (the same undistributed path).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_gpu import stdlib_text  # noqa: E402

REPORT = re.compile(r"(?:rank (\d): )?scored ([\d,]+) documents, ([\d,]+) tokens in "
                    r"([\d.]+) s on (\S+) \(([^)]*)\): ([\d,]+) tokens/s"
                    r"(?:, ([\d.e+-]+) TFLOP/s, ([\d.]+)% of)?")


def documents(n_chars: int, doc_chars: int) -> list[str]:
    text = stdlib_text(n_chars)[:n_chars]
    return [text[i:i + doc_chars] for i in range(0, len(text), doc_chars)]


def tiny_model(folder: pathlib.Path) -> str:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
    import conftest

    lm = conftest._tiny("gpt2")
    lm.model.save_pretrained(folder)
    lm.tokenizer.save_pretrained(folder)
    return str(folder)


def launch(n_proc: int, src: str, out: str, args: argparse.Namespace) -> dict:
    # --smoke's 1-process row without the launcher: one process is the undistributed path
    # either way (WORLD_SIZE 1), and the launcher's own torch import is seconds of CPU
    launcher = [] if args.smoke and n_proc == 1 else [
        "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(n_proc)]
    cmd = [sys.executable, *launcher, "-m", "ppl_widget", "score-corpus", src,
           "--out", out, "--device", args.device, "--max-length", str(args.max_length),
           "--stride", str(args.stride), "--compile", args.compile, "--top-k", "0"]
    if args.model:
        cmd += ["--model", args.model]
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"{n_proc} process(es) failed:\n{proc.stderr[-3000:]}")
    ranks = [m.groups() for m in REPORT.finditer(proc.stderr)]
    if len(ranks) != n_proc:
        raise SystemExit(f"expected {n_proc} report lines, got:\n{proc.stderr[-2000:]}")
    return {"wall": wall, "ranks": ranks,
            "lines": [ln for ln in proc.stderr.splitlines() if REPORT.search(ln)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="default: the embedded SmolLM2")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--chars", type=int, default=60_000, help="characters in all")
    parser.add_argument("--doc-chars", type=int, default=1_500)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--stride", type=int, default=256)
    parser.add_argument("--compile", default="auto", choices=("auto", "yes", "no"))
    parser.add_argument("--smoke", action="store_true", help="tiny random GPT-2, seconds; "
                        "the 1-process row without torchrun (the same path)")
    args = parser.parse_args()

    import torch

    from ppl_widget import open_corpus

    procs = [1, 2]
    if args.device.startswith("cuda") and torch.cuda.device_count() < 2:
        print(f"# {torch.cuda.device_count()} GPU here: NCCL needs one GPU per rank, so the "
              "2-process row is skipped (not measured)")
        procs = [1]
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = pathlib.Path(tmp)
        if args.smoke:
            args.model, args.chars, args.doc_chars = tiny_model(tmpdir / "m"), 6_000, 300
            args.max_length, args.stride = 32, 16
        docs = documents(args.chars, args.doc_chars)
        src = tmpdir / "docs.jsonl"
        src.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n"
                               for i, t in enumerate(docs)), encoding="utf-8")
        print(f"# {len(docs)} documents, {args.chars:,} characters, model "
              f"{args.model or 'default'}, {args.device}, {args.max_length}/{args.stride}, "
              f"{os.cpu_count()} cores, torch {torch.__version__}")
        runs = {}
        for n in procs:
            runs[n] = launch(n, str(src), str(tmpdir / f"out{n}.parquet"), args)
            for line in runs[n]["lines"]:
                print(f"  {n} process(es): {line.strip()}")
        print("\n| processes | tokens | scoring s (slowest rank) | tokens/s | wall s (with loads) "
              "| speed-up | % of peak per rank |")
        print("|---:|---:|---:|---:|---:|---:|---|")
        base = None
        for n, r in runs.items():
            tokens = sum(int(g[2].replace(",", "")) for g in r["ranks"])
            secs = max(float(g[3]) for g in r["ranks"])
            rate = tokens / secs
            base = base or rate
            pct = ", ".join(g[8] + "%" if g[8] else "n/a" for g in r["ranks"])
            print(f"| {n} | {tokens:,} | {secs:.2f} | {rate:,.0f} | {r['wall']:.1f} | "
                  f"{rate / base:.2f}x | {pct} |")
        if len(runs) == 2:
            one, two = (open_corpus(tmpdir / f"out{n}.parquet") for n in (1, 2))
            assert list(one) == list(two)
            diff = max(float(np.abs(one[k].surprisal - two[k].surprisal).max()) for k in one)
            print(f"\nmax per-token |1 process - 2 processes|: {diff:.2e} nats")
            assert diff < 1e-4, "the two runs disagree"


if __name__ == "__main__":
    main()
