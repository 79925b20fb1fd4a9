"""The one line a first-time model preparation draws on stderr (``load_model``'s
``progress=`` callback): a bar redrawn in place, ended when the preparation ends."""

from __future__ import annotations

from typing import Any, TextIO


class LoadBar:
    """``progress(note, fraction)`` as ``note [#####.....]  50%`` on one line of ``err``."""

    def __init__(self, err: TextIO, width: int = 30) -> None:
        self._err = err
        self._width = width
        self._open = False

    def __call__(self, note: str, fraction: float) -> None:
        frac = min(max(fraction, 0.0), 1.0)
        filled = int(round(frac * self._width))
        bar = "#" * filled + "." * (self._width - filled)
        self._err.write(f"\r{note} [{bar}] {frac * 100:3.0f}%")
        self._open = frac < 1.0
        if not self._open:
            self._err.write("\n")
        self._err.flush()

    def close(self) -> None:
        """End a line a failed preparation left open, so an error starts on its own line."""
        if self._open:
            self._err.write("\n")
            self._open = False


def load_with_bar(args: Any, err: TextIO) -> Any:
    """``load_model`` for a subcommand's ``--model``/``--device``/``--dtype``: a first-time
    preparation draws one line on ``err``, a cached model nothing."""
    from ..scoring.models import load_model

    bar = LoadBar(err)
    try:
        return load_model(args.model, device=args.device, dtype=args.dtype, progress=bar)
    finally:
        bar.close()
