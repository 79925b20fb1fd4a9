"""``ppl-widget cache [--clear]``: what the cache holds (converted models, ONNX exports,
downloaded reading-time data), or empty it."""

from __future__ import annotations

import argparse
from typing import TextIO


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cache", help="list the cache of converted models, ONNX exports and downloaded data "
        "(--clear: remove it)",
        description="The embedded model is dequantized once and kept as an fp32 copy "
        "(about 0.5 GB), and a transformer exported for a live page is kept as ONNX files "
        "(docs/live-transformer.md), and reading-time data read without a local copy is "
        "downloaded once (docs/reading_times.md), all in $PPL_WIDGET_CACHE, else "
        "$XDG_CACHE_HOME/ppl_widget (~/.cache/ppl_widget), keyed by content so every "
        "environment shares them. Lists one line per entry: model (or 'data'), source, "
        "size, path.")
    p.add_argument("--clear", action="store_true",
                   help="remove every entry (the next load prepares the model again, ~20 s; "
                   "the next live page exports again, minutes; data is downloaded again)")


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..scoring.datasets.fetch import cached_data, clear_data
    from ..scoring.kinds.model_cache import cache_entries, cache_root, clear_cache

    root = cache_root()
    if args.clear:
        entries = clear_cache() + clear_data()
    else:
        entries = cache_entries() + cached_data()
    verb = "removed " if args.clear else ""
    for e in entries:
        out.write(f"{verb}{e.model}  {e.source}  {e.size_mb:,.1f} MB  {e.path}\n")
    total = sum(e.size_bytes for e in entries) / 1e6
    noun = "entry" if len(entries) == 1 else "entries"
    if not entries:
        out.write(f"nothing cached in {root}\n")
    elif args.clear:
        out.write(f"removed {len(entries)} {noun}, {total:,.1f} MB in all, from {root}\n")
    else:
        out.write(f"total {total:,.1f} MB in {len(entries)} {noun} in {root}\n")
    return 0
