"""``PerplexityWidget``: the text coloured by surprisal, scored live in the background."""

from __future__ import annotations

import logging
import threading
from typing import Any

import anywidget
import numpy as np
import traitlets

from ..core.jsonable import json_safe
from ..core.result import TOKEN_ARRAYS, ScoreResult
from ..core.text_units import TextUnits, WordSpec
from ..scoring.models import LoadedModel, as_loaded
from ..scoring.scorer import ScoreProgress, ScoringError, stream
from . import protocol as P
from .assets import bundle_path
from .widget_levels import LevelAssigner, with_levels
from .widget_settings import Count, Prefix, SettingError, check_options, check_window

log = logging.getLogger(__name__)

class PerplexityWidget(anywidget.AnyWidget):
    """Score ``text`` with a causal LM and show every token coloured by surprisal.

    ``model`` takes anything ``load_model`` takes, or what it returned.  Scoring
    starts at once in a background thread; the kernel stays free.  Use
    ``.result`` for the ``ScoreResult`` (``partial`` until scoring ends),
    ``.cancel()`` to stop, ``.wait()`` to block until done.  Changing
    ``max_length``, ``stride`` or ``prefix`` (here or in the widget), or ``text``,
    re-scores.
    """

    _esm = bundle_path("widget.js")
    _css = bundle_path("widget.css")

    text = traitlets.Unicode("").tag(sync=True)
    status = traitlets.Unicode("idle").tag(sync=True)  # idle|loading|scoring|done|cancelled|error
    error = traitlets.Unicode("").tag(sync=True)
    settings = traitlets.Dict().tag(sync=True)
    # checked by score()'s rules on every assignment (widget_settings.py)
    max_length = Count().tag(sync=True)
    stride = Count().tag(sync=True)
    prefix = Prefix().tag(sync=True)  # "bos" or "none"
    result_data = traitlets.Dict(None, allow_none=True).tag(sync=True)
    color_mode = traitlets.Unicode("surprisal").tag(sync=True)
    show_boundaries = traitlets.Bool(False).tag(sync=True)
    level = traitlets.Enum(("token", "word", "sentence"), "token").tag(sync=True)
    surprisal_unit = traitlets.Enum(("bits", "nats"), "bits").tag(sync=True)
    bow_correction = traitlets.Bool(False).tag(sync=True)  # word tooltips: corrected value
    editable = traitlets.Bool(False).tag(sync=True)  # a text box that re-scores as you type

    def __init__(self, text: str, model: Any = None, *, max_length: int | None = None,
                 stride: int | None = None, prefix: str | None = "bos", add_eos: bool = False,
                 top_k: int = 5, batch_size: int | str = "auto", words: WordSpec = None,
                 sentences: Any = None, unigram: Any = None, ci: float | None = None,
                 editable: bool = False, autostart: bool = True, **kwargs: Any) -> None:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        # set before the traits: their validators check against the model's context length
        self._model_spec = model
        self._lm: LoadedModel | None = model if isinstance(model, LoadedModel) else None
        self._options = check_options({"add_eos": add_eos, "top_k": top_k,
                                       "batch_size": batch_size, "words": words})
        max_length, stride = check_window(max_length, stride, self._lm)
        if ci is not None and not (isinstance(ci, float | int) and not isinstance(ci, bool)
                                   and 0 < ci < 1):
            raise ValueError(f"ci must be a confidence level between 0 and 1, got {ci!r}")
        self._sentences, self._unigram_spec, self._ci = sentences, unigram, ci
        self._levels: LevelAssigner | None = None
        self._unigram: Any = None
        self._next: tuple | None = None  # (levels, unigram, units) of the run being started
        super().__init__(text=text, max_length=max_length, stride=stride, prefix=prefix,
                         editable=editable, **kwargs)
        self._units: TextUnits | None = None  # UTF-16 offsets of the text being scored
        self._lock = threading.RLock()
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._run_id = 0
        self._chunks: list[dict[str, np.ndarray]] = []
        self._vocab: dict[int, str] = {}
        self._last: ScoreProgress | None = None
        self._top_k = 0
        self._total = 0
        self._done_msg: dict | None = None  # the run's final message, kept for replays
        self._fresh = False  # a run started and has not scored anything yet
        self._shown_status = "idle"  # the status of the result held (done/cancelled/error)
        self.exception: BaseException | None = None
        self._run_settings: tuple | None = None  # (max_length, stride, prefix) being scored
        self._collecting_control_edits = self._controls_edited = False
        self.on_msg(self._on_front_end_message)
        self.observe(self._on_setting_change, names=["max_length", "stride", "prefix"])
        self._edited = False  # the text changed: the next run reuses the unchanged windows
        self.observe(self._on_text_change, names=["text"])
        if autostart:
            self.start()

    # ---- public API ------------------------------------------------------
    @property
    def result(self) -> ScoreResult | None:
        """What has been scored so far (``partial`` until scoring finished)."""
        with self._lock:
            if self._last is not None:
                return self._last.result
            if self.exception is not None and isinstance(self.exception, ScoringError):
                return self.exception.partial_result
            return None

    def start(self) -> None:
        """Score in a background thread (cancelling a run in progress first).

        What was scored before stays (on screen, in ``result`` and ``result_data``)
        until the new run has scored its first tokens: a run that fails at once
        loses nothing."""
        self.cancel()
        self.wait(raise_error=False)
        with self._lock:
            # an edited text keeps the windows before the edit (scoring/incremental.py)
            reuse, self._edited = (self.result if self._edited else None), False
            self._run_id += 1
            self._cancel = threading.Event()
            self._fresh = True  # no tokens of this run yet
            self.exception = None
            self.error = ""
            self._thread = threading.Thread(target=self._run,
                                            args=(self._run_id, self._cancel, reuse),
                                            name="ppl-widget-scorer", daemon=True)
            self._thread.start()

    def cancel(self) -> None:
        """Stop scoring within one batch; what was scored stays, marked partial."""
        self._cancel.set()

    def wait(self, timeout: float | None = None, *, raise_error: bool = True) -> ScoreResult | None:
        """Block until scoring ends; re-raise its error unless ``raise_error=False``."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        if raise_error and self.exception is not None:
            raise self.exception
        return self.result

    def chart(self, kind: str = "surprisal", **options: Any) -> Any:
        """An Altair chart of the result so far: ``surprisal``, ``running_perplexity``
        or ``distributions`` (see ``ppl_widget.charts``); bits or nats as the widget shows."""
        from .charts import for_result

        options.setdefault("unit", self.surprisal_unit)
        return for_result(self.result, kind, **options)

    def rescore(self, **changes: Any) -> None:
        """Change max_length / stride / prefix (or add_eos, top_k, ...) and score again.

        Every value is checked first, as ``score()`` checks it: a rejected one raises
        ``SettingError`` (a ``TraitError`` and ``ValueError``), changes nothing and
        starts no run."""
        traits = {k: changes.pop(k) for k in ("max_length", "stride", "prefix") if k in changes}
        unknown = set(changes) - set(self._options)
        if unknown:
            raise TypeError(f"rescore() got unknown settings {sorted(unknown)}")
        try:
            options = check_options(changes)
        except ValueError as exc:
            raise SettingError(str(exc), str(exc).split(" ", 1)[0]) from None
        if "prefix" in traits:
            traits["prefix"] = Prefix().validate(self, traits["prefix"])
        max_length = traits.get("max_length", self.max_length)
        stride = traits.get("stride", self.stride)
        check_window(max_length, stride, self._lm)
        if "words" in options:
            TextUnits.of(self.text, options["words"])  # a bad spec raises here, as in score()
        self._options.update(options)
        self._run_settings = None  # whatever the traits say now, it is a new run
        self._collecting_control_edits = True  # collect the trait changes; start once below
        try:
            with self.hold_trait_notifications():
                for key, value in traits.items():
                    setattr(self, key, value)
        finally:
            self._collecting_control_edits = False
        self.start()

    # ---- static page (views/export.py) ------------------------------------
    def to_html(self, path: Any = None, **kwargs: Any) -> str:
        """What the widget shows now, as one self-contained HTML page (no kernel, no
        network); written to ``path`` when given.  A run still going is exported as partial."""
        from .export import widget_to_html

        return widget_to_html(self, path, **kwargs)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        # the live view, plus the static page as text/html for where no widget manager runs
        from .export import with_static_fallback

        return with_static_fallback(self, super()._repr_mimebundle_(**kwargs))

    def _ipython_display_(self) -> None:
        # shown with a display id, so the text/html is brought up to date when scoring ends
        from .export import display_widget

        display_widget(self)

    # ---- scoring thread --------------------------------------------------
    def _is_current(self, run_id: int) -> bool:
        return run_id == self._run_id

    def _send_msg(self, run_id: int, content: dict, buffers: list[bytes] | None = None) -> None:
        if self._is_current(run_id):
            self.send({**content, "run_id": run_id}, buffers)

    def _on_text_change(self, _change: dict) -> None:
        self._edited = True
        self.start()

    def _run(self, run_id: int, cancel: threading.Event, reuse: ScoreResult | None = None,
             ) -> None:
        try:
            if self._lm is None:
                self.status = "loading"
                self._lm = as_loaded(self._model_spec)
            lm = self._lm
            self.status = "scoring"
            text = self.text  # read once: an edit while starting is the next run's
            unigram = None
            if self._unigram_spec is not None:
                from ..core.unigram import as_unigram

                unigram = as_unigram(self._unigram_spec, lm.tokenizer, text=text)
            units = TextUnits.of(text)  # UTF-16 offsets, for the spans and every chunk
            self._next = (LevelAssigner(text, units, words=self._options["words"],
                                        sentences=self._sentences), unigram, units)
            progress = stream(text, lm, max_length=self.max_length, stride=self.stride,
                              prefix="bos" if self.prefix == "bos" else None, cancel=cancel,
                              reuse=reuse, **self._options)
            for item in progress:
                if not self._is_current(run_id):
                    return
                with self._lock:
                    if self._fresh:
                        self._on_first(run_id, item)
                    self._last = item
                    chunk = with_levels(item.chunk, self._levels, self._unigram)
                    if len(chunk["token_ids"]):
                        self._chunks.append(chunk)
                        self._vocab.update(item.new_vocab)
                self._send_chunk(run_id, item.start, chunk, item.new_vocab, item)
            cancelled = cancel.is_set() if self._fresh else self._last.cancelled
            self._finish(run_id, "cancelled" if cancelled else "done")
        except Exception as exc:  # shown in the widget, logged, and re-raised by wait()
            self.exception = exc
            if isinstance(exc, ScoringError) and exc.partial_result is not None \
                    and not self._fresh:
                with self._lock:
                    self._last = None
            log.error("ppl-widget: scoring failed: %s", exc, exc_info=exc)
            if self._is_current(run_id):
                self.error = f"{type(exc).__name__}: {exc}"
                self._send_msg(run_id, {"type": P.MSG_ERROR, "message": self.error})
                self._finish(run_id, "error")

    def _on_first(self, run_id: int, item: ScoreProgress) -> None:
        # the new run has data: now the previous result gives way
        self._fresh = False
        self._levels, self._unigram, self._units = self._next
        self._chunks, self._vocab, self._last, self._done_msg = [], {}, None, None
        self.result_data = None
        res = item.result
        self._top_k = int(res.settings.get("top_k", 0))
        self._total = item.total
        self.settings = settings = P.result_settings(res, unigram=self._unigram, ci=self._ci)
        # show the resolved window defaults; equal to the run's settings, they re-score nothing
        self._run_settings = (settings["max_length"], settings["stride"], self.prefix)
        with self.hold_trait_notifications():
            self.max_length, self.stride = settings["max_length"], settings["stride"]
        self._send_reset(run_id)

    def _send_reset(self, run_id: int) -> None:
        self._send_msg(run_id, {"type": P.MSG_RESET, "total_tokens": self._total,
                                "top_k": self._top_k, "levels": self._levels.counts(),
                                "level_notes": self._levels.notes}, self._levels.buffers())


    def _send_chunk(self, run_id: int, start: int, arrays: dict[str, np.ndarray],
                    vocab: dict[int, str], item: ScoreProgress) -> None:
        progress = json_safe({"done": item.done, "total": item.total,
                               "tokens_per_s": item.tokens_per_s, "eta_s": item.eta_s,
                               "elapsed_s": item.elapsed_s})
        content = {"type": P.MSG_CHUNK, "start": start, "count": len(arrays["token_ids"]),
                   "top_k": self._top_k, "vocab": {str(k): v for k, v in vocab.items()},
                   "progress": progress}
        self._send_msg(run_id, content, P.encode_chunk(arrays, self._units))

    def _all_scored(self, res: ScoreResult | None = None) -> dict[str, np.ndarray] | None:
        """Every chunk so far as one array per field (replays stay cheap).  ``res``, the
        run's result built from the same chunks, lends its token arrays: only the
        widget's own fields (word, sentence, context gain) are joined here."""
        if not self._chunks:
            return None
        if len(self._chunks) > 1:
            n = sum(len(c["token_ids"]) for c in self._chunks)
            shared = res is not None and len(res.token_ids) == n
            self._chunks = [{k: getattr(res, k) if shared and k in TOKEN_ARRAYS
                             else np.concatenate([c[k] for c in self._chunks])
                             for k in self._chunks[0]}]
        return self._chunks[0]

    def _finish(self, run_id: int, status: str) -> None:
        if not self._is_current(run_id):
            return
        if self._fresh:  # nothing scored by this run: the previous result stays as it was
            self.status = status if status == "error" or self._last is None \
                else self._shown_status
            return
        with self._lock:
            res = self.result
            data = self._all_scored(res) or {}
            self.result_data = P.result_data(
                res, levels=self._levels, unigram=self._unigram, ci=self._ci, run_id=run_id,
                columns={k: data[k] for k in ("word", "sentence", "context_gain") if k in data})
            self.settings = P.result_settings(res, unigram=self._unigram, ci=self._ci)
            self._done_msg = {"type": P.MSG_DONE, "partial": self.result_data["partial"],
                              "metrics": self.result_data["metrics"]}
        self._send_msg(run_id, self._done_msg)
        self._shown_status = status
        self.status = status

    # ---- front end -------------------------------------------------------
    def _on_front_end_message(self, _widget: Any, content: dict, _buffers: list) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == P.MSG_CANCEL:
            self.cancel()
        elif kind == P.MSG_REPLAY:
            self._replay()

    def _replay(self) -> None:
        """A view attached mid-run: send everything scored so far as one chunk."""
        with self._lock:
            run_id = self._run_id
            if self._last is None or self._fresh:  # a new run's reset will come
                return
            self._send_reset(run_id)
            data = self._all_scored()
            if data is not None:
                self._send_chunk(run_id, 0, data, self._vocab, self._last)
            if self._done_msg is not None:
                self._send_msg(run_id, self._done_msg)

    def set_state(self, sync_data: dict) -> None:
        # The front end's form changes max_length, stride and prefix in one update;
        # start one run for all of them, not one per trait.
        self._collecting_control_edits, self._controls_edited = True, False
        try:
            super().set_state(sync_data)
        except traitlets.TraitError as exc:  # rolled back: shown beside the control
            field = getattr(exc, "field", None) or next(
                (k for k in sync_data if k in ("max_length", "stride", "prefix")), "")
            self._send_msg(self._run_id, {"type": P.MSG_SETTINGS_ERROR, "field": field,
                                          "message": str(exc)})
            # the front end's copy still holds the rejected values: send the kept ones
            self.send_state([k for k in sync_data if k in self.keys])
            return
        finally:
            self._collecting_control_edits = False
        if self._controls_edited:
            self._restart_for_new_settings()

    def _on_setting_change(self, change: dict) -> None:
        if change["old"] == change["new"]:
            return
        if (self.max_length, self.stride, self.prefix) == self._run_settings:
            return  # the traits now describe the run in progress (or just finished)
        if self._collecting_control_edits:
            self._controls_edited = True
            return
        self._restart_for_new_settings()

    def _restart_for_new_settings(self) -> None:
        self.start()  # the traits' validators have checked the values already

    @traitlets.validate("max_length", "stride")
    def _check_window(self, proposal: dict) -> int | None:
        """The new value together with the other window setting, as score() checks them."""
        name = proposal["trait"].name
        window = {"max_length": self.max_length, "stride": self.stride, name: proposal["value"]}
        check_window(window["max_length"], window["stride"], self._lm, field=name)
        return proposal["value"]
