"""The scoring options every subcommand shares: the same names, the same checks, done
before a model is loaded (seconds to minutes) with score()'s messages."""

from __future__ import annotations

import argparse
from typing import Any

from ..core.metrics import PLL_METRIC_NAMES
from ..core.protocols import PROTOCOLS, check_protocol
from ..core.validation import check_top_k
from ..core.windows import check_window_settings


def count(text: str) -> int:
    """An argparse type: a whole number (range checks are score()'s, with its messages)."""
    try:
        return int(text.strip(), 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None


def check_counts(args: argparse.Namespace) -> None:
    """The window, protocol and top-k rules, checked before a model is loaded (seconds
    to minutes)."""
    check_top_k(args.top_k)
    every = getattr(args, "prefix_every_window", False)
    check_window_settings(args.max_length, args.stride,  # None: the model's default
                          prefix_every_window=every)
    check_protocol(getattr(args, "protocol", "exact"), args.max_length, args.stride,
                   prefix_every_window=every, add_eos=getattr(args, "add_eos", False),
                   context=getattr(args, "context", None) or getattr(args, "chat", None))


def add_protocol_option(p: argparse.ArgumentParser) -> None:
    """``--protocol``: whose window layout to score with (core/protocols.py)."""
    p.add_argument("--protocol", default="exact", choices=list(PROTOCOLS),
                   help="window layout: exact (default: every token once, most context), "
                   "llama.cpp (llama-perplexity's chunks), lm-eval (rolling windows), "
                   "hf-guide (the transformers guide's loop); see docs/protocols.md")


def add_pll_metric_option(p: argparse.ArgumentParser) -> None:
    """``--pll-metric``: a masked LM's pseudo-log-likelihood (docs/masked.md)."""
    p.add_argument("--pll-metric", default=None, choices=list(PLL_METRIC_NAMES),
                   help="a masked LM's pseudo-log-likelihood: within_word_l2r (default: "
                   "the later tokens of the word masked too, Kauf & Ivanova 2023) or "
                   "original (the token masked alone, Salazar et al. 2020); not for causal "
                   "models")


def protocol_lines(result: Any) -> str:
    """What the protocol's tool reports, for the CLI's output (empty for exact)."""
    report = result.protocol_report()
    if report["protocol"] == "exact":
        return ""
    lines = [f"protocol {report['protocol']}: {report['n_tokens']:,} tokens scored, "
             f"{report['n_unscored_tokens']:,} not scored by the protocol"]
    if "final_ppl" in report:
        lines.append(f"llama-perplexity's final PPL       {report['final_ppl']:.4f}")
    if "guide_reported_ppl" in report:
        lines.append(f"the guide's printed perplexity    {report['guide_reported_ppl']:.6g} "
                     f"(over {report['guide_reported_n_tokens']:,} tokens: one short per "
                     "window after the first)")
        lines.append(f"perplexity of the same tokens     {report['token_ppl']:.6g} "
                     f"(over {report['n_tokens']:,} tokens, counted right)")
    return "\n".join(lines)


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
