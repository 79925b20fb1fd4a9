"""The command line ``ppl-widget`` (also ``python -m ppl_widget``): ``main`` and its parser.
One subcommand a file (``score.py``, ``corpus.py``, ``cache.py``, ``words.py``,
``pairs.py``, ``reading.py``); shared options: ``options.py``.
"""

from __future__ import annotations

import argparse
import gc
import sys

from ..core.extras import MissingExtraError
from . import cache, corpus, pairs, reading, score, words
from .options import add_score_options, check_counts  # noqa: F401  (importable from here)
from .score import format_metrics  # noqa: F401  (importable from here)
from .score import run as run_score  # noqa: F401  (importable from here)

#: ``ppl-widget --help``'s description
DESCRIPTION = ("Surprisal and perplexity of texts under a causal language model (the embedded "
               "default model unless --model names another). Start with: ppl-widget score "
               "FILE")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ppl-widget", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    score.add_parser(sub)
    corpus.add_parser(sub)
    cache.add_parser(sub)
    words.add_parser(sub)
    pairs.add_parser(sub)
    reading.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run = {"score": score.run, "score-corpus": corpus.run, "cache": cache.run,
           "words": words.run, "pairs": pairs.run, "reading": reading.run}[args.command]
    try:
        return run(args, sys.stdout, sys.stderr)
    except (ValueError, TypeError, OSError, RuntimeError, MissingExtraError) as exc:
        sys.stderr.write(f"ppl-widget: error: {_message(exc)}\n")
        return 2


def console() -> int:
    """The ``ppl-widget`` command and ``python -m ppl_widget``: ``main()``, then the process
    ends without collecting its heap.  With torch and a model loaded, the interpreter's
    collections at exit took 2-3 s of CPU after the output was written; exit handlers
    still run, and what reference counting frees is freed."""
    try:
        return main()
    finally:
        gc.freeze()


def _message(exc: Exception) -> str:
    """What the error says, a file the command could not open named plainly (not
    ``[Errno 2] No such file or directory: 'x'``)."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        if isinstance(exc, FileNotFoundError):
            return f"no such file: {exc.filename}"
        if isinstance(exc, IsADirectoryError):
            return f"{exc.filename} is a folder, not a file"
        return f"cannot open {exc.filename}: {exc.strerror}"
    return str(exc)
