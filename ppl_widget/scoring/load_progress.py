"""The progress of a first-time model preparation, told through one callback
``progress(note, fraction)`` that the command line draws as a bar and the widget as its
status.  The conversion's steps give no finer signal than where each one starts, so a
small ticker moves the fraction inside a step by the time it usually takes."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from types import TracebackType

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
