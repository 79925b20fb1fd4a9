"""The scoring options every subcommand shares: the same names, the same checks, done
before a model is loaded (seconds to minutes) with score()'s messages."""

from __future__ import annotations

import argparse

from ..core.validation import check_top_k
from ..core.windows import check_window_settings


def count(text: str) -> int:
    """An argparse type: a whole number (range checks are score()'s, with its messages)."""
    try:
        return int(text.strip(), 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None


def check_counts(args: argparse.Namespace) -> None:
    """The window and top-k rules, checked before a model is loaded (seconds to minutes)."""
    check_top_k(args.top_k)
    check_window_settings(args.max_length, args.stride,  # None: the model's default
                          prefix_every_window=getattr(args, "prefix_every_window", False))


def add_score_options(p: argparse.ArgumentParser, *,
                      no_prefix_help: str = "leave the first token unscored instead of "
                      "scoring it after BOS",
                      device_help: str = "auto, cpu, cuda, cuda:1, mps",
                      top_k: bool = True) -> None:
    """The scoring settings every subcommand shares, with the same names and checks
    (``top_k=False``: a subcommand that keeps no alternatives has no --top-k)."""
    p.add_argument("--model", default=None,
                   help="model id, local directory or .gguf file (default: embedded SmolLM2)")
    p.add_argument("--max-length", type=count, default=None, help="window length in tokens")
    p.add_argument("--stride", type=count, default=None, help="new targets per window")
    p.add_argument("--no-prefix", action="store_true", help=no_prefix_help)
    p.add_argument("--add-eos", action="store_true", help="also score an end-of-text token")
    if top_k:
        p.add_argument("--top-k", type=count, default=5, help="alternatives kept per token")
    p.add_argument("--device", default="auto", help=device_help)
    p.add_argument("--dtype", default="auto", help="auto, float32, bfloat16, float16")
