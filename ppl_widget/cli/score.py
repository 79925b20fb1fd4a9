"""``ppl-widget score FILE``: score a text file, print the metrics table."""

from __future__ import annotations

import argparse
import codecs
import json
import math
import sys
from typing import TextIO

from ..core.metrics import METRIC_KEYS, objective_labels
from ..core.validation import check_text
from .load_bar import load_with_bar
from .options import (
    add_pll_metric_option,
    add_protocol_option,
    add_score_options,
    check_counts,
    protocol_lines,
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("score", help="score a text file and print perplexity metrics")
    p.add_argument("file", help="text file (UTF-8 unless --encoding), or - for standard input")
    p.add_argument("--encoding", default="utf-8",
                   help="the file's text encoding (default utf-8; e.g. latin-1, cp1252)")
    add_score_options(p)
    given = p.add_mutually_exclusive_group()
    given.add_argument("--context", metavar="FILE",
                       help="a text file the model reads first; only FILE's text is scored")
    given.add_argument("--chat", metavar="FILE.json",
                       help='a JSON list of {"role", "content"} messages, rendered with the '
                       "model's chat template; FILE is the assistant's reply")
    p.add_argument("--prefix-every-window", action="store_true",
                   help="every window reads the BOS token first, then max-length - 1 tokens")
    add_protocol_option(p)
    add_pll_metric_option(p)
    p.add_argument("--json", metavar="OUT", help="write the full per-token result here")


def _progress_bar(done: int, total: int, rate: float, eta: float, width: int = 30) -> str:
    frac = done / total if total else 1.0
    filled = int(round(frac * width))
    rate_s = f"{rate:,.0f} tok/s" if math.isfinite(rate) else "-- tok/s"
    eta_s = f"{eta:,.0f}s left" if math.isfinite(eta) else ""
    bar = "#" * filled + "." * (width - filled)
    return f"\r[{bar}] {done:,}/{total:,} tokens  {rate_s}  {eta_s}"


#: A run expected to last longer than this says so, once, when its first batch is scored.
LONG_RUN_S = 30.0


def long_run_note(total: int, eta_s: float, max_length: int | None) -> str | None:
    """What a long run will take, said once it is known (after the first batch); None for a
    run that ends soon."""
    if not (math.isfinite(eta_s) and eta_s > LONG_RUN_S):
        return None
    took = f"{eta_s / 60:,.0f} min" if eta_s >= 90 else f"{eta_s:,.0f} s"
    faster = (" (--max-length 256 is faster)" if max_length is None or max_length > 256
              else "")
    return (f"ppl-widget: {total:,} tokens to score, about {took} at this speed{faster}; "
            "Ctrl-C stops and prints the metrics of what was scored\n")


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
    named = objective_labels(metrics)  # a PLL result's metrics say so (core/metrics.py)
    if named["pseudo"]:
        labels.update(total_nll="pseudo-NLL (nats)", **{
            f"{u}_ppl": f"pseudo-PPL / {w}" for u, w in
            (("token", "token"), ("word", "word"), ("char", "character"), ("byte", "byte"))})
    lines = [f"{named['title']} ({named['metric']})"] if named["pseudo"] else []
    for key in METRIC_KEYS:
        value = metrics[key]
        shown = f"{value:,}" if isinstance(value, int) else f"{value:,.6g}"
        lines.append(f"{labels[key]:<24}{shown:>16}")
    if metrics.get("partial"):
        lines.append("PARTIAL: scoring stopped before the end of the text")
    if conventions:
        lines.append(conventions)
    return "\n".join(lines)


def _read_text(path: str, encoding: str = "utf-8") -> str:
    """The file's text, CRLF kept as written; a byte the encoding cannot decode is
    named by offset in a one-line ValueError."""
    if path == "-":
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # a text-only stdin (tests, some IDEs): already decoded
            return sys.stdin.read()
        data, name = stream.read(), "standard input"
    else:
        with open(path, "rb") as f:
            data, name = f.read(), path
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ValueError(f"unknown encoding {encoding!r} (--encoding); try utf-8, latin-1, "
                         "cp1252, utf-16") from None
    codec = "utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding  # drop a BOM
    try:
        return data.decode(codec)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ValueError(
            f"{name} is not valid {encoding}: byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start} (line {line}) cannot be decoded; if the file is in another encoding "
            "pass it, e.g. --encoding latin-1 (or cp1252, utf-16)"
        ) from None


def read_context(args: argparse.Namespace) -> str | list | None:
    """The ``--context`` file's text, or the ``--chat`` file's messages (checked)."""
    from ..scoring.runner.context import check_context

    if args.context is not None:
        return check_context(_read_text(args.context, args.encoding))
    if args.chat is None:
        return None
    try:
        chat = json.loads(_read_text(args.chat))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{args.chat} is not JSON ({exc}); --chat takes a list of "
                         '{"role": ..., "content": ...} messages') from None
    return check_context(chat)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    check_counts(args)  # before torch is imported: a bad setting is told at once
    from ..scoring.runner.scorer import ScoringError, stream

    text = _read_text(args.file, args.encoding)
    check_text(text, args.add_eos, name="standard input" if args.file == "-" else args.file,
               eos_option="--add-eos", blank_ok=False)  # before the model loads
    context = read_context(args)
    lm = load_with_bar(args, err)
    last = None
    try:
        for last in stream(text, lm, max_length=args.max_length, stride=args.stride,
                           prefix=None if args.no_prefix else "bos", add_eos=args.add_eos,
                           top_k=args.top_k, context=context,
                           prefix_every_window=args.prefix_every_window,
                           protocol=args.protocol, pll_metric=args.pll_metric):
            note = long_run_note(last.total, last.eta_s, args.max_length) \
                if last.start == 0 else None  # the first batch: the speed is known now
            if note:
                err.write(note)
            err.write(_progress_bar(last.done, last.total, last.tokens_per_s, last.eta_s))
            err.flush()
    except ScoringError as exc:
        err.write(f"\nerror: {exc}\n")
        result = exc.partial_result
        code = 1
    except KeyboardInterrupt:  # Ctrl-C: what was scored is still printed (and saved)
        err.write("\ninterrupted: the metrics below cover the tokens scored so far\n")
        result = last.result if last is not None else None
        code = 130
    else:
        err.write("\n")
        result = last.result
        code = 0
    if result is not None:
        out.write(format_metrics(result.metrics(), result.conventions()) + "\n")
        extra = protocol_lines(result)
        if extra:
            out.write(extra + "\n")
        if args.json:
            result.to_json(args.json)
            err.write(f"per-token result written to {args.json}\n")
    return code
