"""``PerplexityWidget``: the text coloured by surprisal, scored live in the background.

The class wires the synced traits (widget_traits.py) to the scoring: a run's streamed
state and messages are a ``WidgetRun`` (widget_run.py), its thread a ``LiveRun``
(live_run.py), the wire format ``protocol.py``.
"""

from __future__ import annotations

import threading
from typing import Any

import traitlets

from ..core.protocols import check_protocol, get_protocol, protocol_stride
from ..core.result import ScoreResult
from ..core.text_units import TextUnits, WordSpec
from ..core.validation import check_text
from ..scoring.kinds.models import LoadedModel, as_loaded
from ..scoring.runner.context import move_whitespace
from ..scoring.runner.scorer import ScoringError, stream, stream_any_text
from . import protocol as P
from .assets import bundle_path
from .export import StaticPageOutput
from .live_run import LiveRun
from .widget_explain import WidgetExplainer
from .widget_run import Message, WidgetRun
from .widget_settings import CONTROL_FIELDS as CONTROLS
from .widget_settings import Context, Prefix, SettingError, check_options, check_window
from .widget_traits import PerplexityTraits


class PerplexityWidget(StaticPageOutput, PerplexityTraits):
    """Score ``text`` with a causal LM and show every token coloured by surprisal.

    ``model`` takes anything ``load_model`` takes, or what it returned.  Scoring
    starts at once in a background thread; the kernel stays free.  Use
    ``.result`` for the ``ScoreResult`` (``partial`` until scoring ends),
    ``.cancel()`` to stop, ``.wait()`` to block until done, ``.to_html()`` for a
    page that shows it with no kernel.  Changing
    ``max_length``, ``stride``, ``prefix`` or ``prefix_every_window`` (here or in the
    widget), or ``text`` or ``context``, re-scores.  ``context``: a string or a chat the
    model reads before ``text`` (see ``score()``), shown before it, uncoloured.
    ``protocol``: ``score()``'s; the tokens it leaves unscored are shown greyed, and the
    panel says how many (an edit re-scores in full where its windows move).
    ``pll_metric``: a masked LM's (``score()``'s); its pseudo-surprisal is coloured and
    its pseudo-perplexity shown, named so, with the metric (docs/masked.md).

    Why is a token surprising: click it in the view (or press ``e`` on the focused one),
    or call ``explain(token=...)`` / ``explain(word=...)``; the text before it is coloured
    by how much each unit changed its surprisal (docs/explain.md).
    """

    _esm = bundle_path("widget.js")
    _css = bundle_path("widget.css")
    # the synced traits (text, status, settings, max_length, result_data, ...) are
    # PerplexityTraits' (widget_traits.py), which a page with no kernel starts from too

    def __init__(self, text: str, model: Any = None, *, max_length: int | None = None,
                 stride: int | None = None, prefix: str | None = "bos", add_eos: bool = False,
                 top_k: int = 5, batch_size: int | str = "auto", words: WordSpec = None,
                 sentences: Any = None, unigram: Any = None, ci: float | None = None,
                 editable: bool = False, autostart: bool = True, context: Any = None,
                 prefix_every_window: bool = False, protocol: str = "exact",
                 pll_metric: str | None = None, **kwargs: Any) -> None:
        # score()'s rule: an empty text has nothing to score, but an editable widget may
        # start empty (it shows an empty result until something is typed)
        check_text(text, add_eos or editable)
        # set before the traits: their validators check against the model's context length
        self._model_spec = model
        self._lm: LoadedModel | None = model if isinstance(model, LoadedModel) else None
        self._options = check_options({"add_eos": add_eos, "top_k": top_k,
                                       "batch_size": batch_size, "words": words,
                                       "protocol": protocol, "pll_metric": pll_metric})
        if not isinstance(prefix_every_window, bool):
            raise ValueError(f"prefix_every_window must be True or False, got "
                             f"{prefix_every_window!r}")
        max_length, stride = check_window(max_length, stride, self._lm,
                                          prefix_every_window=prefix_every_window)
        check_protocol(protocol, max_length, stride, prefix_every_window=prefix_every_window,
                       add_eos=add_eos, context=context)
        if ci is not None and not (isinstance(ci, float | int) and not isinstance(ci, bool)
                                   and 0 < ci < 1):
            raise ValueError(f"ci must be a confidence level between 0 and 1, got {ci!r}")
        self._sentences, self._unigram_spec, self._ci = sentences, unigram, ci
        # the view shows the continuation as scored: a string context's trailing
        # whitespace moves to the text (score()'s seam rule, scoring/runner/context.py)
        context, text = move_whitespace(Context().validate(None, context), text)
        super().__init__(text=text, max_length=max_length, stride=stride, prefix=prefix,
                         editable=editable, context=context,
                         prefix_every_window=prefix_every_window, **kwargs)
        self._lock = threading.RLock()
        self._live = LiveRun("scoring", self._end)
        self._run: WidgetRun | None = None  # the run whose result the view holds
        self._shown_status = "idle"  # the status of the result held (done/cancelled/error)
        self._run_settings: tuple | None = None  # (max_length, stride, prefix) being scored
        self._collecting_control_edits = self._controls_edited = False
        self.on_msg(self._on_front_end_message)
        self.observe(self._on_setting_change, names=list(CONTROLS))
        self.observe(self._on_context_change, names=["context"])
        self._edited = False  # the text changed: the next run reuses the unchanged windows
        self._moving_whitespace = False  # a new context's trailing whitespace is moving
        self.observe(self._on_text_change, names=["text"])
        self._explainer = WidgetExplainer(self)
        if autostart:
            self.start()

    # ---- public API ------------------------------------------------------
    @property
    def result(self) -> ScoreResult | None:
        """What has been scored so far (``partial`` until scoring finished)."""
        with self._lock:
            if self._run is not None and self._run.result is not None:
                return self._run.result
            exc = self._live.exception
            return exc.partial_result if isinstance(exc, ScoringError) else None

    @property
    def exception(self) -> BaseException | None:
        """The last run's error (None: it did not fail)."""
        return self._live.exception

    def start(self) -> None:
        """Score in a background thread (cancelling a run in progress first).

        What was scored before stays (on screen, in ``result`` and ``result_data``)
        until the new run has scored its first tokens: a run that fails at once
        loses nothing."""
        edited, self._edited = self._edited, False
        self.error = ""
        self._explainer.clear()  # an explanation of the old result means nothing now
        self._live.start(lambda run_id, cancel: self._score(run_id, cancel, edited))

    def cancel(self) -> None:
        """Stop scoring within one batch; what was scored stays, marked partial."""
        self._live.cancel()

    def wait(self, timeout: float | None = None, *, raise_error: bool = True) -> ScoreResult | None:
        """Block until scoring ends; re-raise its error unless ``raise_error=False``."""
        self._live.wait(timeout, raise_error=raise_error)
        return self.result

    def explain(self, token: int | None = None, word: int | None = None, *,
                method: str = "occlusion", wait: bool = True) -> Any:
        """Explain a scored token (or word) in the view, as a click does: its context
        coloured by attribution, the panel beside it.  Computed in the background;
        ``wait=True`` blocks until done and returns the ``Explanation`` (``explain()``'s,
        with the widget's settings), ``wait=False`` returns None at once."""
        self._explainer.start(token=token, word=word, method=method)
        return self._explainer.wait() if wait else None

    def show_explanation(self, explanation: Any, curve: Any = None) -> None:
        """Show an ``Explanation`` of this text computed with ``ppl_widget.explain`` (and
        its ``context_curve`` frame, if any); it travels with ``to_html``."""
        self._explainer.show(explanation, curve)

    def clear_explanation(self) -> None:
        """Stop an explanation computing and show none."""
        self._explainer.clear()

    def _explain_settings(self) -> dict[str, Any]:
        """score()'s settings of the result shown, for explain() and context_curve()."""
        return {"max_length": self.max_length, "stride": self.stride,
                "prefix": "bos" if self.prefix == "bos" else None,
                "prefix_every_window": self.prefix_every_window, "context": self.context,
                **{k: self._options[k] for k in ("add_eos", "words", "protocol")},
                # a masked LM's metric (a causal model takes none)
                **({"pll_metric": self._options["pll_metric"]}
                   if self._options.get("pll_metric") is not None else {})}

    def chart(self, kind: str = "surprisal", **options: Any) -> Any:
        """An Altair chart of the result so far: ``surprisal``, ``running_perplexity``
        or ``distributions`` (see ``ppl_widget.charts``); bits or nats as the widget shows."""
        from .charts.charts import for_result

        options.setdefault("unit", self.surprisal_unit)
        return for_result(self.result, kind, **options)

    def rescore(self, **changes: Any) -> None:
        """Change max_length / stride / prefix (or add_eos, top_k, ...) and score again.

        Every value is checked first, as ``score()`` checks it: a rejected one raises
        ``SettingError`` (a ``TraitError`` and ``ValueError``), changes nothing and
        starts no run."""
        traits = {k: changes.pop(k) for k in CONTROLS if k in changes}
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
        every = traits.get("prefix_every_window", self.prefix_every_window)
        if not isinstance(every, bool):
            raise SettingError(f"prefix_every_window must be True or False, got {every!r}",
                               "prefix_every_window")
        check_window(max_length, stride, self._lm, prefix_every_window=every)
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

    # ---- static page (views/export.py: to_html, the notebook's text/html) ----
    def _page_state(self) -> dict[str, Any]:
        from .export import widget_state

        return widget_state(self)

    # ---- scoring thread (a LiveRun) ----------------------------------------
    def _score(self, run_id: int, cancel: threading.Event, edited: bool) -> str | None:
        if self._lm is None:
            self.status = "loading"  # a first-time preparation also says how far it is
            self._lm = as_loaded(self._model_spec, progress=lambda note, fraction: self._send_run(
                run_id, (P.loading_message(note, fraction), None)))
        self.status = "scoring"
        text = self.text  # read once: an edit while starting is the next run's
        # an edited text keeps the windows before the edit (scoring/runner/incremental.py)
        reuse = self.result if edited and get_protocol(
            self._options["protocol"]).every_token else None  # else: its plan moves
        context = self.context
        run = WidgetRun(run_id, text, self._lm, words=self._options["words"],
                        sentences=self._sentences, unigram=self._unigram_spec, ci=self._ci)
        scorer = stream_any_text if self.editable else stream  # editable: empty is no error
        items = scorer(text, self._lm, max_length=self.max_length, stride=self.stride,
                       prefix="bos" if self.prefix == "bos" else None, cancel=cancel,
                       reuse=reuse, context=context,
                       prefix_every_window=self.prefix_every_window, **self._options)
        for item in items:
            if not self._live.is_current(run_id):
                return None
            with self._lock:
                first = run.last is None
                chunk = run.add(item)
                if first:  # the new run has data: now the previous result gives way
                    self._show(run)
            self._send_run(run_id, chunk)
        cancelled = run.last.cancelled if run.last is not None else cancel.is_set()
        return "cancelled" if cancelled else "done"

    def _show(self, run: WidgetRun) -> None:
        self._run = run
        self.result_data = None
        self.settings = settings = run.settings()
        # show the resolved window defaults; equal to the run's settings, they re-score nothing
        # (a protocol that fixes the stride to max_length keeps it unset: it follows)
        stride = None if protocol_stride(self._options["protocol"], 1, None) else \
            settings["stride"]
        self._run_settings = (settings["max_length"], stride, self.prefix,
                              self.prefix_every_window)
        with self.hold_trait_notifications():
            self.max_length, self.stride = settings["max_length"], stride
        self._send_run(run.run_id, run.reset())

    def _send_run(self, run_id: int, message: Message) -> None:
        if self._live.is_current(run_id):
            content, buffers = message
            self.send({**content, "run_id": run_id}, buffers)

    def _end(self, run_id: int, status: str, error: BaseException | None) -> None:
        """The run ended (LiveRun): its result_data, done message and status."""
        with self._lock:
            run = self._run if self._run is not None and self._run.run_id == run_id else None
            if run is not None and isinstance(error, ScoringError) \
                    and error.partial_result is not None:
                run.failed = error.partial_result
        if error is not None:
            self.error = f"{type(error).__name__}: {error}"
            self._send_run(run_id, (P.error_message(self.error), None))
        if run is None:  # nothing scored by this run: the previous result stays
            self.status = status if status == "error" or self._run is None \
                else self._shown_status
            return
        with self._lock:
            self.result_data = run.finish()
            self.settings = run.settings()  # final: an EOS is scored only at the end
        self._send_run(run_id, (run.done, None))
        self._shown_status = self.status = status

    # ---- front end -------------------------------------------------------
    def _on_front_end_message(self, _widget: Any, content: dict, _buffers: list) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        if kind is not None and self._explainer.on_message(content):
            return
        if kind == P.MSG_CANCEL:
            self.cancel()
        elif kind == P.MSG_REPLAY:
            self._replay()

    def _on_context_change(self, change: dict) -> None:
        if change["old"] == change["new"] or self._moving_whitespace:
            return
        context, text = move_whitespace(change["new"], self.text)
        if text != self.text:  # one run for both changes
            self._moving_whitespace = True
            try:
                self.context, self.text = context, text
            finally:
                self._moving_whitespace = False
        self.start()

    def _on_text_change(self, _change: dict) -> None:
        self._edited = True
        if self._moving_whitespace:
            return
        self.start()

    def _replay(self) -> None:
        """A view attached mid-run: send everything scored so far as one chunk."""
        with self._lock:
            run = self._run
            if run is None or run.failed is not None:  # a new run's reset will come
                return
            for message in run.replay():
                self._send_run(run.run_id, message)

    def set_state(self, sync_data: dict) -> None:
        # The front end's form changes max_length, stride and prefix in one update;
        # start one run for all of them, not one per trait.
        self._collecting_control_edits, self._controls_edited = True, False
        try:
            super().set_state(sync_data)
        except traitlets.TraitError as exc:  # rolled back: shown beside the control
            field = getattr(exc, "field", None) or next(
                (k for k in sync_data if k in CONTROLS), "")
            self._send_run(self._live.run_id, (P.settings_error_message(field, str(exc)), None))
            # the front end's copy still holds the rejected values: send the kept ones
            self.send_state([k for k in sync_data if k in self.keys])
            return
        finally:
            self._collecting_control_edits = False
        if self._controls_edited:
            self.start()  # the traits' validators have checked the values already

    def _on_setting_change(self, change: dict) -> None:
        if change["old"] == change["new"]:
            return
        if (self.max_length, self.stride, self.prefix,
                self.prefix_every_window) == self._run_settings:
            return  # the traits now describe the run in progress (or just finished)
        if self._collecting_control_edits:
            self._controls_edited = True
            return
        self.start()  # the traits' validators have checked the values already

    @traitlets.validate("max_length", "stride")
    def _check_window(self, proposal: dict) -> int | None:
        """The new value together with the other window setting, as score() checks them."""
        name = proposal["trait"].name
        window = {"max_length": self.max_length, "stride": self.stride, name: proposal["value"]}
        check_window(window["max_length"], window["stride"], self._lm, field=name,
                     prefix_every_window=self.prefix_every_window)
        return proposal["value"]

    @traitlets.validate("prefix_every_window")
    def _check_prefix_every_window(self, proposal: dict) -> bool:
        check_window(self.max_length, self.stride, self._lm, field="max_length",
                     prefix_every_window=proposal["value"])
        return proposal["value"]
