"""GPU benchmark: ppl_widget against the transformers guide loop and lm-evaluation-harness.

Side by side in one run, on the same model object and the same text:
  (a) guide    the strided loop of the transformers perplexity guide (one window a call);
  (b) lm-eval  lm-evaluation-harness's ``HFLM.loglikelihood_rolling`` with ``pretrained=``
               the loaded model (stride == max_length only: its windows are disjoint);
               where lm_eval is not installed, a faithful batched reimplementation of it,
               labelled "lm-eval*";
  (c) score    ``ppl_widget.score``;
  (d) stream   ``PerplexityWidget`` scoring in its background thread and sending every
               chunk message (binary buffers, vocab) to a comm with no front end.

Models are built from configs with random weights (speed does not depend on the weights),
in bfloat16 with SDPA attention: GPT-2-large's shape (774M) and Llama-3.2-1B's (1.24B,
128,256-token vocabulary, tied embeddings), and on request (``--models ...,llama-8b``)
Llama-3.1-8B's (gpu_models.py).  Beside each run's seconds: when ``stream()``'s and the
widget's first chunk came, and the largest gap between chunks (the pace a reader sees).
The text is the Python standard library's own source files, concatenated in sorted path
order and cut to ``--tokens`` tokens of a byte-level BPE tokenizer trained here on that
same text (no download).

Printed per model and stride: seconds, tokens/s, speed against the guide and lm-eval,
achieved TFLOP/s (the FLOPs each method executes: 2 x non-embedding parameters x input
positions, plus 2 x d x vocabulary per position through the LM head, plus causal attention
2 x n^2 x d per layer) and its fraction of the bf16 matrix-product peak measured here
(8192^3 torch.matmul), peak GPU memory, and the per-token surprisal difference between the
bf16 model and an fp32 copy of it (max and mean, nats).

    python benchmarks/bench_gpu.py                 # the full run (needs a CUDA GPU)
    python benchmarks/bench_gpu.py --smoke         # tiny shapes on CPU, seconds (CI)
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import math
import pathlib
import platform
import statistics
import sys
import sysconfig
import time
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_vs_guide import guide_loop  # noqa: E402
from flops import executed_flops, flop_model  # noqa: E402
from gpu_methods import (  # noqa: E402
    compiled_lm,
    lm_eval_native,
    lm_eval_reimplementation,
    stream_pace,
    widget_run,
)
from gpu_models import build_model, matmul_peak, sync  # noqa: E402

from ppl_widget import load_model, score  # noqa: E402
from ppl_widget.core.windows import plan_windows  # noqa: E402


# ---- text and tokenizer -------------------------------------------------------------
def stdlib_text(n_chars: int) -> str:
    """The standard library's .py files, sorted by path, concatenated."""
    root = pathlib.Path(sysconfig.get_paths()["stdlib"])
    parts, size = [], 0
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts:
            continue
        try:
            src = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        parts.append(src)
        size += len(src)
        if size >= n_chars:
            break
    return "\n".join(parts)


def train_tokenizer(text: str, vocab_size: int) -> Any:
    """A byte-level BPE (GPT-2 style) trained on ``text``; BOS = EOS = <|endoftext|>."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(text.split("\n\n"), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>",
                                   eos_token="<|endoftext|>")


def cut_to_tokens(text: str, tokenizer: Any, n_tokens: int) -> str:
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    if len(enc["input_ids"]) < n_tokens:
        raise SystemExit(f"only {len(enc['input_ids'])} tokens of text, asked for {n_tokens}")
    return text[:enc["offset_mapping"][n_tokens][0]]


# ---- one model ---------------------------------------------------------------------------
def bench_model(kind: str, args: argparse.Namespace, text: str, tokenizer: Any,
                device: torch.device, peak: float) -> dict:
    model = build_model(kind, args.smoke, tokenizer, device)
    lm = load_model((model, tokenizer))
    fm = flop_model(model)
    n_tokens = len(tokenizer(text, add_special_tokens=False)["input_ids"])
    print(f"\n== {kind}: {fm['total'] / 1e6:.0f}M parameters ({fm['body'] / 1e6:.0f}M "
          f"non-embedding), vocabulary {model.get_output_embeddings().weight.shape[0]}, "
          f"{lm.dtype}, attention {model.config._attn_implementation}; {n_tokens} tokens",
          flush=True)
    from ppl_widget.scoring.runner.forward import BatchedForward
    from ppl_widget.scoring.runner.prepare import prepare_ahead
    from ppl_widget.scoring.runner.run import pipeline_depth
    from ppl_widget.scoring.runner.scorer import auto_batch_size

    fwd = BatchedForward(lm, 5)
    batch = auto_batch_size(lm, args.max_length)
    # on a GPU, score tokenizes all but the text's start while the first batches run
    ahead = (prepare_ahead(text, lm, batch * args.max_length + args.max_length)
             if pipeline_depth(lm, fwd) > 1 else None)
    if ahead is not None:
        ahead.result()
    print(f"   ppl_widget path: fused Triton statistics {fwd.fused}, fp32-output head product "
          f"{fwd.head_fp32 is not None}, auto batch {batch} windows, text tokenized while "
          f"the GPU scores {ahead is not None}", flush=True)
    L = args.max_length
    warm = cut_to_tokens(text, tokenizer, min(n_tokens - 1, 3 * L))
    out: dict[str, Any] = {"model": kind, "params": fm["total"], "n_tokens": n_tokens,
                           "prepared_ahead": ahead is not None, "runs": {}}
    native = lm_eval_native(model, tokenizer, args.lm_eval_batch, L, device)
    lm_eval_name = "lm-eval" if native else "lm-eval*"
    lm_eval_run = native or lm_eval_reimplementation(model, tokenizer, args.lm_eval_batch, L)
    enc = tokenizer(text, return_tensors="pt", add_special_tokens=False).input_ids

    # --smoke: "aot_eager", no C++ compile (this path checked in seconds); inductor otherwise
    backend = "aot_eager" if args.smoke else "inductor"
    compiled = compiled_lm(model, tokenizer, warm, L, backend) if args.compiled else None
    for stride in args.strides:
        flops = executed_flops(fm, n_tokens + 1, L, stride)
        flops["compiled"] = flops["score"]
        rows: dict[str, dict] = {}

        def timed(name: str, fn: Any, repeats: int = 1, rows: dict = rows,
                  flops: dict = flops) -> Any:
            times, value = [], None
            for _ in range(repeats):
                if device.type == "cuda":
                    torch.cuda.empty_cache()
                    torch.cuda.reset_peak_memory_stats()
                sync(device)
                t = time.perf_counter()
                value = fn()
                sync(device)
                times.append(time.perf_counter() - t)
            s = statistics.median(times)
            rows[name] = {"seconds": s, "tokens_per_s": n_tokens / s,
                          "tflops": flops[name] / s / 1e12,
                          "peak_mem_gib": (torch.cuda.max_memory_allocated() / 2**30
                                           if device.type == "cuda" else math.nan)}
            print(f"   {name:9} {s:8.2f} s", flush=True)
            return value

        # warm-ups: kernels chosen, Triton compiled, allocator grown
        guide_loop(model, enc[:, :3 * L], L, stride, device)
        score(warm, lm, max_length=L, stride=stride)
        widget_run(warm, lm, L, stride)
        print(f" max_length {L}, stride {stride}", flush=True)
        guide_nll, guide_count = timed(
            "guide", lambda s=stride: guide_loop(model, enc, L, s, device))
        lm_eval_nll = None
        if stride == L:
            lm_eval_run(warm)
            lm_eval_nll = timed(lm_eval_name, lambda: lm_eval_run(text))
        res = timed("score", lambda s=stride: score(text, lm, max_length=L, stride=s),
                    repeats=args.repeats)
        wres, sent = timed("stream", lambda s=stride: widget_run(text, lm, L, s),
                           repeats=args.repeats)
        if compiled is not None:
            bs = max(2, res.settings["batch_size"])  # one-window batches run eagerly (CPU)
            cres = timed("compiled", lambda s=stride, bs=bs: score(
                text, compiled, max_length=L, stride=s, batch_size=bs), repeats=args.repeats)
            print(f"   compiled vs eager: max per-token |d| "
                  f"{float(np.abs(cres.surprisal - res.surprisal).max()):.4f} nats")
        m = res.metrics()
        same = bool(np.array_equal(res.surprisal, wres.surprisal)
                    and np.array_equal(res.topk_ids, wres.topk_ids))
        if not same:
            raise SystemExit("stream and score gave different per-token results")
        checks = {"score_total_nll": m["total_nll"], "score_tokens": m["n_tokens"],
                  "guide_total_nll": guide_nll, "guide_tokens": guide_count,
                  "lm_eval_total_nll": lm_eval_nll, "stream_equals_score": same,
                  "stream_messages": sent["messages"], "stream_bytes": sent["bytes"],
                  "stream_first_chunk_s": sent["first_chunk_s"],
                  "widget_largest_gap_s": sent["largest_gap_s"],
                  "stream_pace": stream_pace(text, lm, L, stride),
                  "batch_size": res.settings.get("batch_size")}
        # per-token NLL agrees across methods (bf16 noise differs between their orders)
        per_tok = m["total_nll"] / m["n_tokens"]
        if abs(guide_nll / guide_count - per_tok) > 0.02 * per_tok:
            raise SystemExit(f"guide and score disagree: {guide_nll / guide_count} vs {per_tok}")
        if lm_eval_nll is not None and abs(lm_eval_nll - m["total_nll"]) > 0.01 * m["total_nll"]:
            raise SystemExit(f"lm-eval and score disagree: {lm_eval_nll} vs {m['total_nll']}")
        out["runs"][str(stride)] = {"rows": rows, "checks": checks,
                                    "flops": flops}
        print_table(kind, L, stride, rows, peak, checks, lm_eval_name)

    out["bf16_vs_fp32"] = precision_check(model, tokenizer, lm, text, args, device)
    return out


def precision_check(model: Any, tokenizer: Any, lm: Any, text: str, args: argparse.Namespace,
                    device: torch.device) -> dict:
    """Per-token surprisal, bf16 model against an fp32 copy of the same weights."""
    part = cut_to_tokens(text, tokenizer, args.fp32_tokens)
    L = args.max_length
    r16 = score(part, lm, max_length=L, stride=L // 2)
    lm32 = load_model((copy.deepcopy(model).float(), tokenizer))
    r32 = score(part, lm32, max_length=L, stride=L // 2)
    d = np.abs(r16.surprisal - r32.surprisal)
    e = np.abs(r16.entropy - r32.entropy)
    out = {"tokens": len(d), "max_nats": float(d.max()), "mean_nats": float(d.mean()),
           "entropy_max_nats": float(e.max()), "entropy_mean_nats": float(e.mean()),
           "rank1_agreement": float(np.mean((r16.rank == 1) == (r32.rank == 1))),
           "token_ppl_bf16": r16.metrics()["token_ppl"],
           "token_ppl_fp32": r32.metrics()["token_ppl"]}
    print(f" bf16 vs fp32 (same weights, {len(d)} tokens): per-token |d surprisal| max "
          f"{out['max_nats']:.4f} nats, mean {out['mean_nats']:.5f} nats; |d entropy| max "
          f"{out['entropy_max_nats']:.4f}; token ppl {out['token_ppl_bf16']:.3f} vs "
          f"{out['token_ppl_fp32']:.3f}", flush=True)
    del lm32
    return out


def print_table(kind: str, L: int, stride: int, rows: dict, peak: float, checks: dict,
                lm_eval_name: str) -> None:
    guide = rows["guide"]["seconds"]
    lme = rows.get(lm_eval_name, {}).get("seconds")
    print(f"\n{kind}, max_length {L}, stride {stride} (batch {checks['batch_size']} windows)")
    print(f"| method    | seconds | tokens/s  | vs guide | vs {lm_eval_name:8} | TFLOP/s | "
          f"% bf16 peak | peak GiB |")
    print("| ---       | ---:    | ---:      | ---:     | ---:        | ---:    | ---:        "
          "| ---:     |")
    for name, r in rows.items():
        vs_lme = f"{lme / r['seconds']:.2f}x" if lme else "n/a"
        print(f"| {name:9} | {r['seconds']:7.2f} | {r['tokens_per_s']:9.0f} | "
              f"{guide / r['seconds']:7.2f}x | {vs_lme:>11} | {r['tflops']:7.1f} | "
              f"{100 * r['tflops'] / peak:10.1f}% | {r['peak_mem_gib']:8.2f} |")
    s, st = rows["score"]["seconds"], rows["stream"]["seconds"]
    print(f"stream / score time: {st / s:.3f} ({checks['stream_messages']} messages, "
          f"{checks['stream_bytes'] / 2**20:.1f} MiB of buffers, first chunk after "
          f"{checks['stream_first_chunk_s']:.2f} s, largest gap "
          f"{checks['widget_largest_gap_s']:.2f} s); stream(): first chunk after "
          f"{checks['stream_pace']['first_chunk_s']:.2f} s of "
          f"{checks['stream_pace']['total_s']:.2f} s, largest gap "
          f"{checks['stream_pace']['largest_gap_s']:.2f} s; total NLL score "
          f"{checks['score_total_nll']:.1f}"
          f" over {checks['score_tokens']} tokens, guide {checks['guide_total_nll']:.1f} over "
          f"{checks['guide_tokens']}" + (f", {lm_eval_name} {checks['lm_eval_total_nll']:.1f}"
                                          if checks["lm_eval_total_nll"] is not None else ""),
          flush=True)


def profile_model(kind: str, args: argparse.Namespace, text: str, tokenizer: Any,
                  device: torch.device) -> None:
    """Where the time goes: host preparation, each GPU stage on one batch, and the
    kernels of one ``score`` call (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile

    from ppl_widget.scoring.runner.forward import BatchedForward
    from ppl_widget.scoring.runner.prepare import prepare
    from ppl_widget.scoring.runner.scorer import auto_batch_size

    model = build_model(kind, args.smoke, tokenizer, device)
    lm = load_model((model, tokenizer))
    L = args.max_length
    part = cut_to_tokens(text, tokenizer, min(65536, args.tokens))
    score(part, lm, max_length=L, stride=L // 2)
    t = time.perf_counter()
    prepare(text, lm)
    print(f"\n== {kind}: prepare (tokenize with offsets, units) of {args.tokens} tokens: "
          f"{time.perf_counter() - t:.3f} s")
    fwd = BatchedForward(lm, 5)
    bs = auto_batch_size(lm, L)
    inputs = torch.randint(0, 1000, (bs, L), device=device)
    rows = bs * L // 2
    targets = torch.randint(0, 1000, (rows,), device=device)

    def cuda_ms(fn: Any, n: int = 5) -> float:
        fn()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(n):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / n

    with torch.inference_mode():
        hidden = fwd.base(input_ids=inputs, use_cache=False).last_hidden_state
        h_rows = hidden[:, L // 2:].reshape(-1, hidden.shape[-1])
        slab = max(1, fwd.max_logits // fwd.vocab_size)
        logits = fwd.head_fp32(h_rows[:slab])
        stages = {
            "body forward": cuda_ms(lambda: fwd.base(input_ids=inputs, use_cache=False)),
            "head fp32-out (all slabs)": cuda_ms(
                lambda: [fwd.head_fp32(h_rows[i:i + slab]) for i in range(0, rows, slab)]),
            "head bf16 (all slabs)": cuda_ms(
                lambda: [fwd.head(h_rows[i:i + slab]) for i in range(0, rows, slab)]),
            "row stats (all slabs)": cuda_ms(lambda: [
                __import__("ppl_widget.scoring.runner.gpu_stats", fromlist=["x"]).row_stats(
                    logits, targets[:slab]) for _ in range(0, rows, slab)]),
            "topk 5 (all slabs)": cuda_ms(lambda: [logits.topk(5, dim=-1)
                                                   for _ in range(0, rows, slab)]),
            "submit+finish (whole batch)": cuda_ms(
                lambda: fwd.submit(torch.randint(0, 1000, (bs * L + 1,), device=device),
                                   plan_windows(bs * L + 1, L, L // 2)[1:bs + 1])(), n=3),
        }
    print(f"   one batch: {bs} windows x {L}, {rows} targets (stride {L // 2}); slab {slab} rows")
    for name, ms in stages.items():
        print(f"   {name:30} {ms:8.2f} ms")
    if args.try_compile:  # does torch.compile of the body pay for its compile time?
        t = time.perf_counter()
        body = torch.compile(fwd.base, dynamic=False)
        with torch.inference_mode():
            body(input_ids=inputs, use_cache=False)
            torch.cuda.synchronize()
            compile_s = time.perf_counter() - t
            ms = cuda_ms(lambda: body(input_ids=inputs, use_cache=False))
        print(f"   body forward, torch.compile: {ms:8.2f} ms after {compile_s:.1f} s compiling")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t = time.perf_counter()
        score(part, lm, max_length=L, stride=L // 2)
        torch.cuda.synchronize()
        wall = time.perf_counter() - t
    table = prof.key_averages().table(sort_by="self_device_time_total", row_limit=18,
                                      max_name_column_width=60)
    print(f"   score of {len(part)} characters: {wall:.3f} s wall")
    print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny shapes on CPU, seconds")
    parser.add_argument("--tokens", type=int, default=None, help="default 300000 (smoke 500)")
    parser.add_argument("--models", default="gpt2-large,llama-1b",
                        help="comma-separated: gpt2-large, llama-1b, llama-8b (bf16, ~16 GB)")
    parser.add_argument("--max-length", type=int, default=None, help="default 1024 (smoke 64)")
    parser.add_argument("--strides", default=None, help="default max_length/2,max_length")
    parser.add_argument("--repeats", type=int, default=2, help="timed runs of score and stream")
    parser.add_argument("--lm-eval-batch", type=int, default=32)
    parser.add_argument("--fp32-tokens", type=int, default=None, help="default 32768 (smoke 300)")
    parser.add_argument("--json", default=None, help="write all figures here")
    parser.add_argument("--profile", action="store_true",
                        help="instead: where the time goes (needs CUDA)")
    parser.add_argument("--try-compile", action="store_true", help="with --profile")
    parser.add_argument("--compiled", action="store_true",
                        help="also score with lm.compile() (timed after its compile); with "
                        "--smoke torch.compile's aot_eager backend, no C++ compiler (the real "
                        "inductor compile is tests/test_corpus_compile.py's)")
    args = parser.parse_args()
    args.tokens = args.tokens or (500 if args.smoke else 300_000)
    args.max_length = args.max_length or (64 if args.smoke else 1024)
    args.fp32_tokens = args.fp32_tokens or (300 if args.smoke else 32768)
    args.strides = [int(s) for s in args.strides.split(",")] if args.strides else \
        [args.max_length // 2, args.max_length]
    if args.smoke:
        args.repeats = 1
    device = torch.device("cpu" if args.smoke or not torch.cuda.is_available() else "cuda")
    if device.type == "cpu" and not args.smoke:
        print("no CUDA device: the figures below are CPU figures, not the GPU benchmark")

    t = time.perf_counter()
    raw = stdlib_text(int(args.tokens * 4.5) + 10_000)
    bpe_vocab = 500 if args.smoke else 32000
    tokenizer = train_tokenizer(raw, bpe_vocab)
    text = cut_to_tokens(raw, tokenizer, args.tokens)
    peak = matmul_peak(device, args.smoke)
    name = torch.cuda.get_device_name() if device.type == "cuda" else platform.processor()
    import transformers

    print(f"device {name or device}; torch {torch.__version__}, transformers "
          f"{transformers.__version__}; {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} "
          f"UTC\ntext: Python {platform.python_version()} standard library sources, "
          f"{len(text)} characters, {args.tokens} tokens of a byte-level BPE (vocabulary "
          f"{bpe_vocab}, trained on it); measured bf16 matmul peak {peak:.1f} TFLOP/s; set-up "
          f"{time.perf_counter() - t:.1f} s", flush=True)
    if args.profile:
        for kind in args.models.split(","):
            profile_model(kind, args, text, tokenizer, device)
        return
    results = {"device": name, "torch": torch.__version__, "peak_tflops": peak,
               "date": datetime.datetime.now(datetime.UTC).isoformat(), "models": []}
    for kind in args.models.split(","):
        results["models"].append(bench_model(kind, args, text, tokenizer, device, peak))
    summary(results, args)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1, default=float))


#: issue 24's targets: score's share of the bf16 peak at stride max_length/2
PEAK_TARGETS = {"llama-8b": 65, "llama-1b": 55, "gpt2-large": 45}


def summary(results: dict, args: argparse.Namespace) -> None:
    L = args.max_length
    print("\nTargets (H100): score >= 65% / 55% / 45% of bf16 peak (8B / 1B / GPT-2-large) at "
          "stride L/2; >= 1.5x lm-eval at stride L; stream within 3% of score")
    for m in results["models"]:
        line = [f"target {PEAK_TARGETS.get(m['model'], '-')}%"]
        full = m["runs"].get(str(L))
        if full:
            r = full["rows"]
            lme = r.get("lm-eval") or r.get("lm-eval*")
            line.append(f"vs lm-eval {lme['seconds'] / r['score']['seconds']:.2f}x")
        for stride, run in m["runs"].items():
            r = run["rows"]
            pct = {k: 100 * r[k]["tflops"] / results["peak_tflops"] for k in ("score", "compiled")
                   if k in r}
            line.append(f"s{stride}: " + ", ".join(f"{k} {v:.1f}% of peak" for k, v in pct.items())
                        + f", stream/score {r['stream']['seconds'] / r['score']['seconds']:.3f}")
        p = m["bf16_vs_fp32"]
        line.append(f"bf16-fp32 max {p['max_nats']:.4f} mean {p['mean_nats']:.5f} nats")
        print(f"  {m['model']}: " + "; ".join(line))


if __name__ == "__main__":
    main()
