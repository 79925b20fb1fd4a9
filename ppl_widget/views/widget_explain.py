"""``WidgetExplainer``: a ``PerplexityWidget``'s explanations ("why is this token
surprising?"), computed one at a time in their own background thread (a ``LiveRun``), so
the kernel stays free and scoring is never held up.

A click in the view (the ``explain`` message) or ``w.explain(...)`` starts one; the units
stream to the view nearest the target first (``explain_part``), then the context curve is
computed and the whole explanation is put in the synced trait ``explanation`` (the saved
notebook and the exported page show it).  Another request, ``explain_cancel`` or
``explain_clear`` stops the one computing within one batch.  The wire format is
``protocol.py``'s.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from ..core.text_units import TextUnits
from . import protocol as P
from .live_run import LiveRun


class WidgetExplainer:
    """The explanation thread of one widget, and what it last computed."""

    def __init__(self, widget: Any) -> None:
        self._widget = widget
        self._live = LiveRun("explain", self._end)
        self._requests: dict[int, Any] = {}  # run id -> the view's request number
        # run id -> (perf_counter, wall clock) at the request
        self._started: dict[int, tuple[float, float]] = {}
        self.explanation: Any = None  # the latest Explanation computed (or shown)
        self.curve: Any = None  # its context curve (a DataFrame), when computed

    # ---- requests ------------------------------------------------------------
    def start(self, *, token: int | None = None, word: int | None = None,
              method: str = "occlusion", request: Any = None) -> int:
        """Explain a target of the result shown, in the background; the run's id."""
        if method not in P.EXPLAIN_METHODS:
            raise ValueError(f"method must be one of {', '.join(P.EXPLAIN_METHODS)}; got "
                             f"{method!r}")
        if (token is None) == (word is None):
            raise ValueError("explain a token= or a word=, exactly one of them")
        started = time.perf_counter(), time.time()

        def work(run_id: int, cancel: threading.Event) -> str | None:
            self._requests[run_id], self._started[run_id] = request, started
            return self._compute(run_id, cancel, token=token, word=word, method=method)

        return self._live.start(work)

    def cancel(self) -> None:
        """Stop the explanation computing; what it computed stays shown."""
        self._live.cancel()

    def clear(self) -> None:
        """Stop it and show none (the text or the scoring changed, or the view closed it)."""
        self._live.supersede()  # its late parts and its end are dropped
        self.explanation = self.curve = None
        if self._widget.explanation is not None:
            self._widget.explanation = None

    def wait(self, timeout: float | None = None) -> Any:
        """Block until the explanation computing ends; return it (its error re-raised)."""
        self._live.wait(timeout)
        return self.explanation

    def show(self, explanation: Any, curve: Any = None) -> None:
        """Show an explanation computed elsewhere (``ppl_widget.explain``) of this text."""
        if getattr(explanation, "text", None) != self._widget.text:
            raise ValueError("show_explanation() shows an explanation of the widget's own "
                             "text; this one explains another text")
        self._live.supersede()
        self.explanation, self.curve = explanation, curve
        self._widget.explanation = P.explanation_data(explanation, curve=curve,
                                                      explain_id=self._live.run_id)

    def on_message(self, content: dict) -> bool:
        """A front-end message; True when it was an explanation's."""
        kind = content.get("type")
        if kind == P.MSG_EXPLAIN:
            method = content.get("method") or "occlusion"
            request = content.get("request")
            try:
                self.start(token=_index(content.get("token")), word=_index(content.get("word")),
                           method=method, request=request)
            except ValueError as exc:  # a bad message: said in the view, nothing stops
                self._send(P.explain_error_message(self._live.run_id, request, str(exc)))
        elif kind == P.MSG_EXPLAIN_CANCEL:
            self.cancel()
        elif kind == P.MSG_EXPLAIN_CLEAR:
            self.clear()
        else:
            return False
        return True

    # ---- the thread ----------------------------------------------------------
    def _compute(self, run_id: int, cancel: threading.Event, *, token: int | None,
                 word: int | None, method: str) -> str | None:
        from ..scoring.analyses.explain import context_curve, iter_explain
        from ..scoring.analyses.explain_masked import has_context_curve

        w = self._widget
        w.wait(raise_error=False)  # a click during scoring explains the finished result
        result = w.result
        if result is None or result.partial:
            raise ValueError("nothing to explain: the text is not scored in full (score it "
                             "again, then click a token)")
        units = TextUnits.of(result.text)
        settings = w._explain_settings()
        unit = "token" if token is not None else "word"
        sent: np.ndarray | None = None
        last = None
        for step in iter_explain(result.text, w._lm, token=token, word=word,
                                 unit=unit, method=method, cancel=cancel, **settings):
            if not self._live.is_current(run_id):
                return None
            expl = step.explanation
            first = sent is None
            if first:
                sent = np.zeros(len(expl.units), bool)
                self._send_run(run_id, P.explain_start_message(
                    run_id, self._requests.get(run_id), expl, units))
            new = np.isfinite(expl.delta_nats) & ~sent
            if first or new.any():
                sent |= new
                self._send_run(run_id, P.explain_part_message(
                    run_id, expl, np.flatnonzero(new), units=units if first else None,
                    elapsed_s=time.perf_counter() - self._started[run_id][0],
                    requested_at=self._started[run_id][1]))
            last = expl
        if last is None or not self._live.is_current(run_id):
            return None
        cancelled = cancel.is_set() or bool(last.cancelled) or bool(last.partial)
        # a masked LM has no context curve (its context is both sides): none is shown
        curve = None if cancelled or not has_context_curve(w._lm) else context_curve(
            result.text, w._lm, token=token, word=word, **settings)
        if not self._live.is_current(run_id):
            return None
        self.explanation, self.curve = last, curve
        w.explanation = P.explanation_data(last, curve=curve, explain_id=run_id,
                                           status="cancelled" if cancelled else "done")
        return "cancelled" if cancelled else "done"

    def _end(self, run_id: int, status: str, error: BaseException | None) -> None:
        if error is not None:
            message = f"{type(error).__name__}: {error}"
            self._send_run(run_id, P.explain_error_message(
                run_id, self._requests.get(run_id), message))
            return
        self._send_run(run_id, P.explain_done_message(run_id, status))

    def _send_run(self, run_id: int, content: dict) -> None:
        if self._live.is_current(run_id):
            self._send(content)

    def _send(self, content: dict) -> None:
        self._widget.send(content, None)


def _index(value: Any) -> int | None:
    """A token or word index from the front end (None: not given)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"a token or word index is a whole number, got {value!r}")
    return value
