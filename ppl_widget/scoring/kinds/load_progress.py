"""The progress of a first-time model preparation, told through one callback
``progress(note, fraction)`` that the command line draws as a bar (``LoadBar``), the widget
as its status, and a plain ``load_model()`` as one line (``FirstLoadLine``: an output line
in a notebook, else stderr).  The conversion's steps give no finer signal than where each
one starts, so a small ticker moves the fraction inside a step by the time it usually takes."""

from __future__ import annotations

import logging
import math
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, TextIO

#: What the person sees while the GGUF is dequantized and cached (once per machine).
FIRST_LOAD_NOTE = "preparing the model, first time only, ~20 s"

#: ``progress(note, fraction)``: ``fraction`` runs from 0.0 to 1.0, 1.0 sent once at the end.
LoadProgress = Callable[[str, float], None]

log = logging.getLogger(__name__)


class StepProgress:
    """Reports ``fraction`` over steps of known typical length (seconds).  Inside a step
    the fraction approaches the step's end but never reaches it until ``next_step()``;
    1.0 is sent only when the ``with`` block ends without an error."""

    def __init__(self, report: LoadProgress | None, steps: Sequence[float],
                 note: str = FIRST_LOAD_NOTE, interval_s: float = 0.25) -> None:
        self._report = report
        total = float(sum(steps)) or 1.0
        self._bounds = [sum(steps[:i]) / total for i in range(len(steps) + 1)]
        self._typical = list(steps)
        self._note = note
        self._interval = interval_s
        self._step = 0
        self._step_started = time.monotonic()
        self._last_shown = -1
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> StepProgress:
        if self._report is not None:
            self._send(0.0)
            self._ticker = threading.Thread(target=self._tick, name="ppl-widget-load-progress",
                                            daemon=True)
            self._ticker.start()
        return self

    def next_step(self) -> None:
        with self._lock:
            self._step = min(self._step + 1, len(self._typical) - 1)
            self._step_started = time.monotonic()
        self._send(self.fraction())

    def fraction(self) -> float:
        with self._lock:
            lo, hi = self._bounds[self._step], self._bounds[self._step + 1]
            elapsed = time.monotonic() - self._step_started
            typical = self._typical[self._step] or 1.0
        return lo + (hi - lo) * (1.0 - math.exp(-elapsed / typical))  # < hi: never early

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if kind is None:
            self._send(1.0)

    def _tick(self) -> None:
        while not self._stop.wait(self._interval):
            self._send(self.fraction())

    def _send(self, fraction: float) -> None:
        """Each whole percent once; a display that fails costs the display, not the load."""
        shown = math.floor(fraction * 100)
        with self._lock:
            if self._report is None or shown <= self._last_shown:
                return
            self._last_shown = shown
            report = self._report
        try:
            report(self._note, shown / 100)
        except Exception:  # e.g. a closed widget
            log.warning("load progress display failed; the load goes on", exc_info=True)
            self._report = None


def bar_text(note: str, fraction: float, width: int = 30) -> str:
    """``note [#####.....]  50%``: the one line every display of a preparation draws."""
    frac = min(max(fraction, 0.0), 1.0)
    filled = int(round(frac * width))
    return f"{note} [{'#' * filled}{'.' * (width - filled)}] {frac * 100:3.0f}%"


class LoadBar:
    """``progress(note, fraction)`` as one line of ``err``, redrawn in place."""

    def __init__(self, err: TextIO, width: int = 30) -> None:
        self._err = err
        self._width = width
        self._open = False

    def __call__(self, note: str, fraction: float) -> None:
        self._err.write("\r" + bar_text(note, fraction, self._width))
        self._open = fraction < 1.0
        if not self._open:
            self._err.write("\n")
        self._err.flush()

    def close(self) -> None:
        """End a line a failed preparation left open, so an error starts on its own line."""
        if self._open:
            self._err.write("\n")
            self._open = False


def _notebook_shell() -> Any:
    """The IPython kernel's shell when this runs in one (a notebook), else None; IPython is
    looked up, never imported."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell if getattr(shell, "kernel", None) is not None else None


class FirstLoadLine:
    """What ``load_model()`` shows of a first-time preparation when the caller gives no
    ``progress=``: in a notebook one output line updated in place (a display handle),
    elsewhere a ``LoadBar`` on stderr.  Nothing at all until the first report: a load
    from the cache shows nothing."""

    def __init__(self) -> None:
        self._shown: Any = None  # the display handle, or the LoadBar

    def __call__(self, note: str, fraction: float) -> None:
        if self._shown is None:
            if _notebook_shell() is None:
                self._shown = LoadBar(sys.stderr)
            else:
                from IPython.display import display

                self._shown = display({"text/plain": bar_text(note, fraction)}, raw=True,
                                      display_id=True)
                return
        if isinstance(self._shown, LoadBar):
            self._shown(note, fraction)
        else:
            self._shown.update({"text/plain": bar_text(note, fraction)}, raw=True)

    def close(self) -> None:
        if isinstance(self._shown, LoadBar):
            self._shown.close()
