"""``ppl-widget score FILE``: score a text file, print the metrics table."""

from __future__ import annotations

import argparse
import math
import sys
from typing import TextIO

from .core.metrics import METRIC_KEYS


def _progress_bar(done: int, total: int, rate: float, eta: float, width: int = 30) -> str:
    frac = done / total if total else 1.0
    filled = int(round(frac * width))
    rate_s = f"{rate:,.0f} tok/s" if math.isfinite(rate) else "-- tok/s"
    eta_s = f"{eta:,.0f}s left" if math.isfinite(eta) else ""
    bar = "#" * filled + "." * (width - filled)
    return f"\r[{bar}] {done:,}/{total:,} tokens  {rate_s}  {eta_s}"


def format_metrics(metrics: dict, conventions: str = "") -> str:
    """The metrics as an aligned two-column table."""
    labels = {
        "total_nll": "total NLL (nats)", "total_bits": "total (bits)",
        "n_tokens": "tokens scored", "n_words": "words", "n_chars": "characters",
        "n_bytes": "bytes (UTF-8)", "token_ppl": "perplexity / token",
        "word_ppl": "perplexity / word", "char_ppl": "perplexity / character",
        "byte_ppl": "perplexity / byte", "bits_per_token": "bits / token",
        "bits_per_char": "bits / character", "bits_per_byte": "bits / byte",
    }
    lines = []
    for key in METRIC_KEYS:
        value = metrics[key]
        shown = f"{value:,}" if isinstance(value, int) else f"{value:,.6g}"
        lines.append(f"{labels[key]:<24}{shown:>16}")
    if metrics.get("partial"):
        lines.append("PARTIAL: scoring stopped before the end of the text")
    if conventions:
        lines.append(conventions)
    return "\n".join(lines)


def _read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8", newline="") as f:  # keep CRLF as written
        return f.read()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ppl-widget", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("score", help="score a text file and print perplexity metrics")
    p.add_argument("file", help="UTF-8 text file, or - for standard input")
    p.add_argument("--model", default=None,
                   help="model id, local directory or .gguf file (default: embedded SmolLM2)")
    p.add_argument("--max-length", type=int, default=None, help="window length in tokens")
    p.add_argument("--stride", type=int, default=None, help="new targets per window")
    p.add_argument("--no-prefix", action="store_true",
                   help="leave the first token unscored instead of scoring it after BOS")
    p.add_argument("--add-eos", action="store_true", help="also score an end-of-text token")
    p.add_argument("--top-k", type=int, default=5, help="alternatives kept per token")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, mps")
    p.add_argument("--dtype", default="auto", help="auto, float32, bfloat16, float16")
    p.add_argument("--json", metavar="OUT", help="write the full per-token result here")
    return parser


def run_score(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .scoring.models import load_model
    from .scoring.scorer import ScoringError, stream

    text = _read_text(args.file)
    err.write("loading model...\n")
    lm = load_model(args.model, device=args.device, dtype=args.dtype)
    last = None
    try:
        for last in stream(text, lm, max_length=args.max_length, stride=args.stride,
                           prefix=None if args.no_prefix else "bos", add_eos=args.add_eos,
                           top_k=args.top_k):
            err.write(_progress_bar(last.done, last.total, last.tokens_per_s, last.eta_s))
            err.flush()
    except ScoringError as exc:
        err.write(f"\nerror: {exc}\n")
        result = exc.partial_result
        code = 1
    else:
        err.write("\n")
        result = last.result
        code = 0
    if result is not None:
        out.write(format_metrics(result.metrics(), result.conventions()) + "\n")
        if args.json:
            result.to_json(args.json)
            err.write(f"per-token result written to {args.json}\n")
    return code


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run_score(args, sys.stdout, sys.stderr)
    except (ValueError, TypeError, OSError, RuntimeError) as exc:
        sys.stderr.write(f"ppl-widget: error: {exc}\n")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
