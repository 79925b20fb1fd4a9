"""``LiveRun``: a widget's work in a background thread, one run at a time.

Both widgets score this way (``PerplexityWidget``, ``ComparisonWidget``): the kernel
stays free while the view fills.  A new run supersedes the one in progress: that one
is cancelled and waited for first, and every run has an id, so a late message of an
old run is recognised (``is_current``) and dropped.  However a run ends (done,
cancelled, failed), the widget hears it once, through ``end``; an error is also kept
(``exception``), logged, and re-raised by ``wait()``.
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from collections.abc import Callable

log = logging.getLogger(__name__)
#: every LiveRun with a thread started: stopped at the interpreter's exit (below)
_RUNS: weakref.WeakSet[LiveRun] = weakref.WeakSet()
#: how long the exit waits for a run to stop (it stops after the forward pass in progress)
EXIT_WAIT_S = 60.0

#: ``work(run_id, cancel)``: the run's body, in the thread; it stops soon after ``cancel``
#: and returns how it ended, "done" or "cancelled" (None: superseded, nothing to tell).
Work = Callable[[int, threading.Event], "str | None"]
#: ``end(run_id, status, error)``: the current run ended: "done", "cancelled", or "error"
#: with the exception.
End = Callable[[int, str, "BaseException | None"], None]


class LiveRun:
    """The thread, cancel flag, run id and error of a widget's runs."""

    def __init__(self, name: str, end: End) -> None:
        self.name = name  # the thread is ppl-widget-<name>; the log says "<name> failed"
        self._end = end
        self.run_id = 0  # of the latest run started (0: none yet)
        self.exception: BaseException | None = None  # the latest run's failure
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, work: Work) -> int:
        """Run ``work`` in a new thread, after cancelling and waiting for the run in
        progress; return the new run's id."""
        self.cancel()
        self.wait(raise_error=False)
        self.run_id += 1
        self._cancel = threading.Event()
        self.exception = None
        self._thread = threading.Thread(target=self._main,
                                        args=(work, self.run_id, self._cancel),
                                        name=f"ppl-widget-{self.name}", daemon=True)
        self._thread.start()
        _RUNS.add(self)
        return self.run_id

    def is_current(self, run_id: int) -> bool:
        """No newer run has started since ``run_id``."""
        return run_id == self.run_id

    def cancel(self) -> None:
        """Ask the run in progress to stop (it keeps what it did)."""
        self._cancel.set()

    def supersede(self) -> None:
        """Cancel the run in progress and drop whatever it would still tell (``end`` is not
        called for it), starting none."""
        self._cancel.set()
        self.run_id += 1

    def wait(self, timeout: float | None = None, *, raise_error: bool = True) -> None:
        """Block until the run ends; re-raise its error unless ``raise_error=False``.
        From inside the run's own thread it returns at once."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        if raise_error and self.exception is not None:
            raise self.exception

    def _main(self, work: Work, run_id: int, cancel: threading.Event) -> None:
        try:
            status = work(run_id, cancel)
        except Exception as exc:  # kept, logged, shown; wait() re-raises it
            log.error("ppl-widget: %s failed: %s", self.name, exc, exc_info=exc)
            if self.is_current(run_id):
                self.exception = exc
                self._end(run_id, "error", exc)
            return
        if status is not None and self.is_current(run_id):
            self._end(run_id, status, None)


@atexit.register
def _stop_runs_at_exit() -> None:
    """A script that exits while a widget scores: the run is cancelled and waited for.
    A daemon thread still inside torch when the interpreter finalizes aborts the process
    ("terminate called without an active exception", exit status 134)."""
    runs = list(_RUNS)
    for run in runs:
        run.supersede()  # nothing more is told to a widget that is going away
    for run in runs:
        run.wait(EXIT_WAIT_S, raise_error=False)
