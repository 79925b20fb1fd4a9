"""The one line a first-time model preparation draws on stderr (``load_model``'s
``progress=`` callback, ``scoring/load_progress.LoadBar``) for a subcommand's model."""

from __future__ import annotations

from typing import Any, TextIO

from ..scoring.kinds.load_progress import LoadBar

__all__ = ["LoadBar", "load_with_bar"]


def load_with_bar(args: Any, err: TextIO) -> Any:
    """``load_model`` for a subcommand's ``--model``/``--device``/``--dtype``: a first-time
    preparation draws one line on ``err``, a cached model nothing."""
    from ..scoring.kinds.models import load_model

    bar = LoadBar(err)
    try:
        return load_model(args.model, device=args.device, dtype=args.dtype, progress=bar)
    finally:
        bar.close()
