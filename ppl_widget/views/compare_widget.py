"""``ComparisonWidget``: one text, several models, each word coloured by how much
better one model predicted it than another.

Models are scored one after another in a background thread (``iter_compare``:
one model in memory at a time unless ``keep_models=True``) and stream into the
same view.  The colours are per word, so models with different tokenizers
compare fairly; the table beside them marks per-token perplexity as not
comparable.  The front end is ``js/src/compare/``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import anywidget
import traitlets

from ..core.levels import unit_spans
from ..core.text_units import TextUnits
from ..scoring.analyses.compare import (
    NOT_COMPARABLE_NOTE,
    Comparison,
    ComparisonError,
    check_labels,
    check_models,
    check_unit_counts,
    iter_compare,
)
from ..scoring.runner.context import check_context, move_whitespace
from .assets import bundle_path, bundle_text
from .compare_data import model_state, not_comparable, table_row, words_state
from .export import StaticPageOutput
from .live_run import LiveRun
from .protocol import MSG_CANCEL
from .widget_settings import check_options, check_prefix, check_window

_OWN_TRAITS = ("text", "context", "labels", "words", "models_data", "table", "note",
               "not_comparable", "pair", "surprisal_unit", "status", "error")

#: Seconds between two updates of a model still scoring (more for long texts, whose
#: state is bigger): the view stays live without resending megabytes many times a second.
MIN_UPDATE_S = 0.25
TOKENS_PER_UPDATE_S = 200_000


class ComparisonWidget(StaticPageOutput, anywidget.AnyWidget):
    """Score ``text`` with every model in ``models`` and show the difference per word.

    ``models``: anything ``compare()`` takes.  ``pair``: the two models (index or
    label) whose difference colours the words; with more models the view offers a
    picker.  ``score_options`` go to ``score`` for every model (``max_length``,
    ``stride``, ``prefix``, ``add_eos``, ``top_k``, ``words``, ``context``: read by every
    model first, shown above the text, never scored).  ``.comparison``
    holds the finished models as a ``Comparison``; ``.cancel()`` stops the model
    scoring and skips the rest; ``.wait()`` blocks until the end.
    """

    _esm = bundle_path("compare.js")
    # the single-model view's rules (tooltip, legend, controls) plus the comparison's own
    _css = bundle_text("widget.css") + "\n" + bundle_text("compare.css")

    text = traitlets.Unicode("").tag(sync=True)  # the continuation as scored
    # what every model read first (a string or a chat), shown above the text; None: none
    context = traitlets.Any(None, allow_none=True).tag(sync=True)
    labels = traitlets.List(traitlets.Unicode()).tag(sync=True)
    words = traitlets.Dict().tag(sync=True)  # {"count", "start16", "end16"}
    models_data = traitlets.List(traitlets.Dict()).tag(sync=True)  # one entry per model
    table = traitlets.List(traitlets.Dict()).tag(sync=True)  # rows of finished models
    note = traitlets.Unicode(NOT_COMPARABLE_NOTE).tag(sync=True)
    not_comparable = traitlets.List(traitlets.Unicode()).tag(sync=True)
    pair = traitlets.List(traitlets.Int(), [0, 1], minlen=2, maxlen=2).tag(sync=True)
    surprisal_unit = traitlets.Enum(("bits", "nats"), "bits").tag(sync=True)
    status = traitlets.Unicode("idle").tag(sync=True)  # idle|scoring|done|cancelled|error
    error = traitlets.Unicode("").tag(sync=True)

    def __init__(self, text: str, models: Sequence[Any], *, labels: Sequence[str] | None = None,
                 pair: Sequence[int | str] = (0, 1), keep_models: bool = False,
                 device: Any = "auto", dtype: Any = "auto", autostart: bool = True,
                 **score_options: Any) -> None:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        self._models = check_models(models)
        labels = check_labels(self._models, labels)
        self._options = _checked_options(score_options)
        self._load = {"keep_models": keep_models, "device": device, "dtype": dtype}
        self._source = text  # what the models are given (with the context, as compare() does)
        read, scored = move_whitespace(self._options.get("context"), text)
        self._setup(scored, labels, read)
        self.pair = [self._index(p) for p in pair]
        self.kept: list[Any] = []  # the loaded models, with keep_models=True
        if autostart:
            self.start()

    def _setup(self, text: str, labels: list[str], context: Any = None) -> None:
        super().__init__(text=text, labels=labels, not_comparable=not_comparable(),
                         context=context)
        self._units = TextUnits.of(text)
        self._spans = unit_spans(text, "word", words=getattr(self, "_options", {}).get("words"))
        self.words = words_state(self._units, self._spans)
        self._results: list[Any] = [None] * len(labels)
        self._vocab: list[int | None] = [None] * len(labels)
        self._lock = threading.RLock()
        self._live = LiveRun("comparison", self._end)
        self.on_msg(self._on_front_end_message)
        self.models_data = [{"label": lb, "model": "", "status": "waiting", "count": 0}
                            for lb in labels]

    @classmethod
    def from_comparison(cls, comparison: Comparison, a: int | str = 0,
                        b: int | str = 1) -> ComparisonWidget:
        """The view of a finished ``Comparison`` (nothing is scored again)."""
        self = cls.__new__(cls)
        self._models, self._options = [], {"words": comparison.words_spec}
        self._load = {}
        self._source = comparison.text
        self._setup(comparison.text, list(comparison.labels), comparison.context)
        self.pair = [comparison.index(a), comparison.index(b)]
        self.kept = []
        for k, res in enumerate(comparison.results):
            self._results[k] = res
            self._vocab[k] = comparison.vocab_sizes[k]
            self._publish(k, res, "cancelled" if res.partial else "done",
                          model=comparison.models[k])
        self.status = "done"
        return self

    # ---- public API ------------------------------------------------------
    @property
    def comparison(self) -> Comparison:
        """The models scored to the end so far, as a ``Comparison``."""
        with self._lock:
            done = [k for k, r in enumerate(self._results) if r is not None and not r.partial]
            return Comparison(self.text, [self._results[k] for k in done],
                              [self.labels[k] for k in done],
                              [str(self._results[k].settings.get("model", "?")) for k in done],
                              [self._vocab[k] for k in done], self._options.get("words"),
                              self.kept, context=self.context)

    @property
    def results(self) -> list[Any]:
        """Each model's ``ScoreResult`` (partial while scoring; None before it starts)."""
        with self._lock:
            return list(self._results)

    @property
    def exception(self) -> BaseException | None:
        """The last run's failure, a ``ComparisonError`` (None: it did not fail)."""
        return self._live.exception

    def start(self) -> None:
        """Score every model in a background thread (the view fills as they finish)."""
        if not self._models:
            raise RuntimeError("this view shows a finished Comparison: nothing to score")
        self.cancel()
        self.wait(raise_error=False)
        self.error, self.status = "", "scoring"
        self._live.start(self._score_all)

    def cancel(self) -> None:
        """Stop the model scoring within one batch (it stays, partial); skip the rest."""
        self._live.cancel()

    def wait(self, timeout: float | None = None, *, raise_error: bool = True) -> Comparison:
        """Block until every model is scored (or cancelled); re-raise a failure."""
        self._live.wait(timeout, raise_error=raise_error)
        return self.comparison

    def _index(self, model: int | str) -> int:
        """A model given by index or label, checked as ``Comparison.index`` checks it."""
        if isinstance(model, str):
            if model not in self.labels:
                raise ValueError(f"no model labelled {model!r}; labels are {list(self.labels)}")
            return list(self.labels).index(model)
        n = len(self.labels)
        if isinstance(model, bool) or not hasattr(model, "__index__"):
            raise TypeError(f"a model is chosen by index or label, got {type(model).__name__}")
        if not -n <= model.__index__() < n:
            raise ValueError(f"model index must be in [0, {n}), got {model}")
        return model.__index__() % n

    @traitlets.validate("pair")
    def _check_pair(self, proposal: dict) -> list[int]:
        a, b = proposal["value"]
        n = len(self.labels)
        if not (0 <= a < n and 0 <= b < n) or a == b:
            raise traitlets.TraitError(
                f"pair must name two different models among 0..{n - 1}, got {[a, b]}")
        return [a, b]

    # ---- static page (views/export.py: the same bundle, no kernel) --------
    def static_state(self) -> dict[str, Any]:
        """The synced state a page with no kernel draws from (what the view shows now)."""
        names = [n for n in self.class_traits(sync=True) if n in _OWN_TRAITS]
        return self.get_state(names)

    def _page_state(self) -> dict[str, Any]:
        return self.static_state()

    def _page_title(self, _state: dict[str, Any]) -> str:
        return f"ppl-widget · {' vs '.join(self.labels)}"

    def _page_view(self) -> dict[str, Any]:
        from .export import summary_number

        ppl = ", ".join(f"{r['label']} {summary_number(r.get('word_ppl'))}" for r in self.table)
        summary = (f"ppl-widget comparison of {len(self.labels)} models · perplexity per word: "
                   f"{ppl or 'none scored yet'} (the coloured view needs JavaScript)")
        return {"esm": "compare.js", "css": ("widget.css", "compare.css"), "summary": summary}

    # ---- scoring thread (a LiveRun) ----------------------------------------
    def _score_all(self, _run_id: int, cancel: threading.Event) -> str:
        k, last_push = 0, 0.0
        try:
            events = iter_compare(self._source, self._models, cancel=cancel, kept=self.kept,
                                  **self._load, **self._options)
            for event in events:
                k = event.k
                if event.kind == "loaded":
                    self._vocab[k] = event.vocab_size
                    self._publish(k, None, "scoring", model=getattr(event.lm, "name", ""))
                elif event.kind == "progress":
                    item = event.progress
                    now = time.monotonic()
                    wait_s = max(MIN_UPDATE_S, item.done / TOKENS_PER_UPDATE_S)
                    if now - last_push >= wait_s or item.done >= item.total:
                        last_push = now
                        self._publish(k, item.result, "scoring", done=item.done,
                                      total=item.total)
                else:
                    k = event.k + 1  # a failure from here on is the next model's (loading)
                    res = event.result
                    self._publish(event.k, res, "cancelled" if res.partial else "done",
                                  done=len(res.surprisal), total=len(res.surprisal))
                    finished = [r for r in self._results if r is not None and not r.partial]
                    check_unit_counts(finished, [self.labels[i] for i, r in
                                                 enumerate(self._results)
                                                 if r is not None and not r.partial])
            return "cancelled" if cancel.is_set() else "done"
        except Exception as exc:  # named after the model; kept, shown and re-raised by LiveRun
            failed = exc if isinstance(exc, ComparisonError) else ComparisonError(
                f"model {self.labels[k]!r} could not be scored: {type(exc).__name__}: {exc}",
                None)
            failed.comparison = self.comparison
            if failed is exc:
                raise
            raise failed from exc

    def _end(self, _run_id: int, status: str, error: BaseException | None) -> None:
        """The run ended (LiveRun): the models not scored are marked, then the status."""
        if error is not None:
            # the model that failed: the first one not finished (loading, or scoring)
            k = next((i for i, e in enumerate(self.models_data)
                      if e["status"] in ("waiting", "scoring")), len(self.labels) - 1)
            self._mark(k, "error")
            self.error = str(error)
        self._skip_rest("waiting" if status == "done" else "skipped")
        self.status = status

    def _publish(self, k: int, result: Any, status: str, *, model: str | None = None,
                 done: int = 0, total: int | None = None) -> None:
        """Put model ``k``'s state (and, when it has a result, its table row) in the view."""
        with self._lock:
            if result is not None:
                self._results[k] = result
            res = self._results[k]
            name = str(res.settings.get("model")) if res is not None else (model or "")
            entry = model_state(res, self._units, self._spans, label=self.labels[k],
                                model=name or model or "", status=status,
                                vocab_size=self._vocab[k], done=done, total=total)
            data = list(self.models_data)
            data[k] = entry
            rows = [table_row(r, label=self.labels[i], model=str(r.settings.get("model")),
                              status=data[i]["status"], vocab_size=self._vocab[i])
                    for i, r in enumerate(self._results) if r is not None]
        with self.hold_trait_notifications():
            self.models_data = data
            self.table = rows

    def _mark(self, k: int, status: str) -> None:
        data = list(self.models_data)
        data[k] = {**data[k], "status": status}
        self.models_data = data

    def _skip_rest(self, status: str) -> None:
        for k, entry in enumerate(self.models_data):
            if entry["status"] in ("waiting", "scoring") and self._results[k] is None:
                self._mark(k, status)

    def _on_front_end_message(self, _widget: Any, content: dict, _buffers: list) -> None:
        if isinstance(content, dict) and content.get("type") == MSG_CANCEL:
            self.cancel()


def _checked_options(options: dict[str, Any]) -> dict[str, Any]:
    """score()'s rules, applied before any model loads: a typo fails here, not later."""
    known = {"max_length", "stride", "prefix", "add_eos", "top_k", "batch_size", "words",
             "context"}
    unknown = set(options) - known
    if unknown:
        raise TypeError(f"unknown scoring options {sorted(unknown)}; known: {sorted(known)}")
    out = check_options(options)
    if "context" in out:
        out["context"] = check_context(out["context"])
    if "prefix" in out:
        out["prefix"] = None if check_prefix(out["prefix"]) == "none" else "bos"
    max_length, stride = check_window(out.get("max_length"), out.get("stride"))
    for key, value in (("max_length", max_length), ("stride", stride)):
        if value is not None:
            out[key] = value
    if "words" in out:
        TextUnits.of("", out["words"])  # a bad word pattern fails here
    return out
