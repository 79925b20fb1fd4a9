"""Score one text with several models and compare them fairly.

Perplexities of models with different tokenizers are comparable per word,
character or byte (the total NLL is the model's, the denominator the text's),
never per token.  ``compare`` scores the text with each model in turn (one model
in memory at a time unless ``keep_models=True``); ``Comparison`` holds the
results, the table (per-token perplexity marked as not comparable) and a
word-level frame where every model's surprisal is summed over the tokens that
make up each word, by the one rule of ``core/levels.py``.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.levels import assign_tokens, unit_spans
from ..core.metrics import LN2
from ..core.result import ScoreResult
from .models import LoadedModel, load_model
from .scorer import ScoreProgress, ScoringError, stream

#: Columns of ``Comparison.table()``, in order (the metrics() keys the issue lists).
TABLE_COLUMNS = ("label", "model", "vocab_size", "total_nll", "total_bits", "n_tokens",
                 "n_words", "n_chars", "n_bytes", "token_ppl", "word_ppl", "char_ppl",
                 "byte_ppl", "bits_per_char", "bits_per_byte")
#: Columns whose values depend on each model's tokenizer: not comparable across models.
NOT_COMPARABLE = ("token_ppl",)
NOT_COMPARABLE_NOTE = ("token_ppl is not comparable across tokenizers: a model that cuts the "
                       "text into more tokens divides the same total NLL by more units. "
                       "Compare word_ppl, char_ppl, byte_ppl or bits_per_byte.")
UNIT_COUNT_COLUMNS = ("n_words", "n_chars", "n_bytes")


class ComparisonError(ValueError):
    """A comparison could not be completed; ``comparison`` keeps the models scored so far."""

    def __init__(self, message: str, comparison: Comparison | None = None):
        super().__init__(message)
        self.comparison = comparison


def _table_class() -> type:
    """A DataFrame whose display carries the not-comparable note (built lazily: pandas)."""
    import pandas as pd

    global _ComparisonTable
    if _ComparisonTable is not None:
        return _ComparisonTable

    class ComparisonTable(pd.DataFrame):
        """``Comparison.table()``: a DataFrame that says, wherever it is shown, that
        per-token perplexity is not comparable across tokenizers."""

        @property
        def _constructor(self) -> type:
            return ComparisonTable

        def _marked(self) -> bool:
            return any(c in self.columns for c in NOT_COMPARABLE)

        def __repr__(self) -> str:
            base = super().__repr__()
            return f"{base}\n† {NOT_COMPARABLE_NOTE}" if self._marked() else base

        def _repr_html_(self) -> str | None:
            if not self._marked():
                return super()._repr_html_()
            return self.styled().to_html()

        def styled(self) -> Any:
            """A pandas Styler: the not-comparable columns greyed, headed with a dagger,
            and the note as the caption."""
            plain = pd.DataFrame(self)
            marks = {c: f"{c} †" for c in NOT_COMPARABLE if c in plain.columns}
            shown = plain.rename(columns=marks)
            sty = shown.style.set_caption(f"† {NOT_COMPARABLE_NOTE}")
            cols = list(marks.values())
            if cols:
                sty = sty.set_properties(subset=cols, **{"color": "#888",
                                                         "font-style": "italic"})
            return sty.format(precision=4, na_rep="—")

    _ComparisonTable = ComparisonTable
    return ComparisonTable


_ComparisonTable: type | None = None


@dataclass
class Comparison:
    """One text scored by several models: ``results`` in model order, ``labels``."""

    text: str
    results: list[ScoreResult]
    labels: list[str]
    models: list[str] = field(default_factory=list)  # each model's name (its spec)
    vocab_sizes: list[int | None] = field(default_factory=list)
    words_spec: Any = None  # the word pattern the metrics used
    loaded: list[Any] = field(default_factory=list, repr=False)  # with keep_models=True

    def __post_init__(self) -> None:
        if len(self.results) != len(self.labels):
            raise ValueError(f"one label per result: {len(self.labels)} labels for "
                             f"{len(self.results)} results")
        self.models = self.models or [r.settings.get("model", "?") for r in self.results]
        self.vocab_sizes = self.vocab_sizes or [None] * len(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def index(self, model: int | str) -> int:
        """Position of a model given by index or label."""
        if isinstance(model, str):
            if model not in self.labels:
                raise ValueError(f"no model labelled {model!r}; labels are {self.labels}")
            return self.labels.index(model)
        if isinstance(model, bool) or not isinstance(model, int | np.integer):
            raise TypeError(f"a model is chosen by index or label, got {type(model).__name__}")
        if not -len(self) <= int(model) < len(self):
            raise ValueError(f"model index must be in [0, {len(self)}), got {model}")
        return int(model) % len(self)

    # ---- tables ----------------------------------------------------------
    def table(self) -> Any:
        """One row per model: label, model, vocab_size and the metrics.

        The unit counts (n_words, n_chars, n_bytes) are properties of the text and
        the same in every row; ``token_ppl`` is marked not comparable (a dagger and
        a caption in notebooks, a footnote in text, ``attrs["not_comparable"]``).
        """
        rows = []
        for label, model, vocab, res in zip(self.labels, self.models, self.vocab_sizes,
                                            self.results, strict=True):
            m = res.metrics()
            rows.append({"label": label, "model": model, "vocab_size": vocab,
                         **{k: m[k] for k in TABLE_COLUMNS[3:]}})
        table = _table_class()(rows, columns=list(TABLE_COLUMNS))
        table.attrs["not_comparable"] = list(NOT_COMPARABLE)
        table.attrs["note"] = NOT_COMPARABLE_NOTE
        table.attrs["conventions"] = [r.conventions() for r in self.results]
        return table

    def owners(self, k: int) -> np.ndarray:
        """Word index of each scored token of model ``k`` (-1: no word, e.g. EOS)."""
        res = self.results[k]
        return assign_tokens(self.text, res.offsets, self.word_spans(), res.is_eos)

    def word_spans(self) -> np.ndarray:
        """(n, 2) character spans of the words, as the metrics count them."""
        if not hasattr(self, "_word_spans"):
            self._word_spans = unit_spans(self.text, "word", words=self.words_spec)
        return self._word_spans

    def words(self, a: int | str = 0, b: int | str = 1) -> Any:
        """One row per word: per model its surprisal (nats, and bits), the tokens it was
        split into and their surprisals; ``diff`` = surprisal of ``a`` minus ``b``
        (positive: ``b`` predicted the word better).

        Columns per model label L: ``surprisal:L``, ``surprisal_bits:L``, ``n_tokens:L``,
        ``tokens:L`` (list of token texts), ``token_surprisal:L`` (list, nats).
        ``attrs["outside"][L]`` lists the tokens of no word (EOS, trailing whitespace):
        with them, each model's column sums to its total NLL.
        """
        import pandas as pd

        ia, ib = self.index(a), self.index(b)
        spans = self.word_spans()
        n = len(spans)
        frame = pd.DataFrame({"text": [self.text[s:e] for s, e in spans.tolist()],
                              "start": spans[:, 0], "end": spans[:, 1]})
        frame.index.name = "word"
        outside: dict[str, list] = {}
        for k, (label, res) in enumerate(zip(self.labels, self.results, strict=True)):
            owner = self.owners(k)
            inside = owner >= 0
            nll = np.bincount(owner[inside], weights=res.surprisal[inside], minlength=n)
            toks = res.tokens
            tok_lists: list[list[str]] = [[] for _ in range(n)]
            sur_lists: list[list[float]] = [[] for _ in range(n)]
            for i in np.flatnonzero(inside).tolist():
                tok_lists[owner[i]].append(toks[i])
                sur_lists[owner[i]].append(float(res.surprisal[i]))
            frame[f"surprisal:{label}"] = nll
            frame[f"surprisal_bits:{label}"] = nll / LN2
            frame[f"n_tokens:{label}"] = np.bincount(owner[inside], minlength=n)
            frame[f"tokens:{label}"] = tok_lists
            frame[f"token_surprisal:{label}"] = sur_lists
            outside[label] = [{"token": i, "text": toks[i],
                               "surprisal": float(res.surprisal[i]),
                               "reason": "EOS" if res.is_eos[i] else "outside every word"}
                              for i in np.flatnonzero(~inside).tolist()]
        la, lb = self.labels[ia], self.labels[ib]
        frame["diff"] = frame[f"surprisal:{la}"] - frame[f"surprisal:{lb}"]
        frame["diff_bits"] = frame["diff"] / LN2
        frame.attrs.update(a=la, b=lb, outside=outside,
                           diff=f"surprisal of {la} minus {lb} (nats); positive: {lb} "
                                "predicted the word better")
        return frame

    # ---- views (forwarders to the views layer) ---------------------------
    def chart(self, a: int | str = 0, b: int | str = 1, **options: Any) -> Any:
        """Altair chart: per-unit perplexities side by side, and per-word surprisal of
        ``a`` against ``b`` (see ``ppl_widget.charts.comparison``)."""
        from ..views.charts import comparison

        return comparison(self, a=a, b=b, **options)

    def widget(self, a: int | str = 0, b: int | str = 1) -> Any:
        """The comparison view of these results (``ComparisonWidget``): each word
        coloured by the surprisal of ``a`` minus ``b``; nothing is scored again."""
        from ..views.compare_widget import ComparisonWidget

        return ComparisonWidget.from_comparison(self, a, b)

    def to_html(self, path: Any = None, a: int | str = 0, b: int | str = 1) -> str:
        """The comparison view as one self-contained HTML page (no kernel, no network)."""
        return self.widget(a, b).to_html(path)

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()

    def __repr__(self) -> str:
        return f"<Comparison of {len(self)} models: {', '.join(self.labels)}>"


# ---- scoring ---------------------------------------------------------------
def _is_spec(model: Any) -> bool:
    """A spec that ``compare`` loads (and so may free): None, a name or a path."""
    return model is None or isinstance(model, str | os.PathLike)


def default_labels(models: Sequence[Any]) -> list[str]:
    """A readable, unique label per model."""
    out: list[str] = []
    for m in models:
        if m is None:
            name = "default"
        elif isinstance(m, str | os.PathLike):
            name = os.path.basename(os.fspath(m).rstrip("/\\")) or os.fspath(m)
        else:
            name = getattr(m, "name", None) or type(m).__name__
        base, k = str(name), 2
        while name in out:
            name, k = f"{base} #{k}", k + 1
        out.append(str(name))
    return out


def check_labels(models: Sequence[Any], labels: Sequence[str] | None) -> list[str]:
    if labels is None:
        return default_labels(models)
    labels = list(labels)
    if len(labels) != len(models):
        raise ValueError(f"labels must give one label per model: {len(labels)} labels for "
                         f"{len(models)} models")
    if any(not isinstance(x, str) or not x for x in labels):
        raise TypeError("labels must be non-empty strings")
    if len(set(labels)) != len(labels):
        raise ValueError(f"labels must be unique, got {labels}")
    return labels


def check_models(models: Any) -> list[Any]:
    if isinstance(models, str | os.PathLike | LoadedModel) or not isinstance(models, Sequence):
        raise TypeError("models must be a list of models (anything load_model takes), "
                        f"got {type(models).__name__}")
    models = list(models)
    if len(models) < 2:
        raise ValueError(f"compare needs at least 2 models, got {len(models)}")
    return models


def vocab_size_of(lm: Any) -> int | None:
    tok = getattr(lm, "tokenizer", None)
    if tok is not None:
        try:
            return len(tok)
        except TypeError:
            pass
    size = getattr(lm, "vocab_size", None)
    return int(size) if isinstance(size, int | np.integer) else None


def _release_all(devices: list[Any]) -> None:
    """Give back the memory of the models compare loaded itself (references dropped)."""
    if not devices:
        return
    cuda = any(getattr(d, "type", None) == "cuda" for d in devices)
    devices.clear()
    gc.collect()
    if cuda:
        import torch

        torch.cuda.empty_cache()


@dataclass
class ModelEvent:
    """One step of ``iter_compare``: model ``k`` was loaded, scored a batch, or ended.

    A ``done`` event carries the ``result`` only (a progress item holds the model)."""

    k: int
    kind: str  # "loaded" | "progress" | "done"
    progress: ScoreProgress | None = None
    result: ScoreResult | None = None
    lm: Any = None
    vocab_size: int | None = None


def iter_compare(text: str, models: Sequence[Any], *, keep_models: bool = False,
                 cancel: Any = None, device: str | Any = "auto", dtype: str | Any = "auto",
                 kept: list | None = None, **score_options: Any) -> Iterator[ModelEvent]:
    """Score ``text`` with each model in turn, yielding a ``ModelEvent`` per step.

    Models given as names or paths are loaded here and freed after scoring (del,
    garbage collection, and the CUDA cache emptied) unless ``keep_models`` (then
    appended to ``kept``); models given loaded are used as they are.  ``cancel``
    (an Event or a callable) stops the running model within one batch and skips
    the rest.
    """
    from .models import as_loaded

    freed: list[Any] = []  # devices of models to release once the consumer moved on
    for k, spec in enumerate(models):
        # released here, not right after scoring: until it asks for the next event the
        # consumer still holds the last progress item, and through it the model
        _release_all(freed)
        if _is_cancelled(cancel):
            return
        owned = _is_spec(spec) and spec is not None
        if spec is None:
            lm = as_loaded(None)  # the default model, cached by the scorer anyway
        elif owned:
            lm = load_model(spec, device=device, dtype=dtype)
        elif isinstance(spec, tuple | list):
            lm = load_model(tuple(spec), device=device, dtype=dtype)
        else:
            lm = spec  # LoadedModel, or another model kind score() accepts (n-gram)
        vocab = vocab_size_of(lm)
        yield ModelEvent(k, "loaded", lm=lm, vocab_size=vocab)
        last = None
        for item in stream(text, lm, cancel=cancel, **score_options):
            last = item
            yield ModelEvent(k, "progress", progress=item)
        result = last.result
        del last, item  # progress items hold the model (through the scorer's closure)
        if keep_models and kept is not None:
            kept.append(lm)
        if owned and not keep_models:
            freed.append(getattr(lm, "device", None))
        del lm
        yield ModelEvent(k, "done", result=result, vocab_size=vocab)
        if result.partial:  # cancelled: the remaining models are skipped
            break
    _release_all(freed)


def _is_cancelled(cancel: Any) -> bool:
    if cancel is None:
        return False
    if hasattr(cancel, "is_set"):
        return cancel.is_set()
    return bool(cancel())


def check_unit_counts(results: list[ScoreResult], labels: list[str]) -> None:
    """The unit counts are properties of the text: equal for every model, or explain."""
    if not results:
        return
    first = results[0].metrics()
    for label, res in zip(labels[1:], results[1:], strict=False):
        m = res.metrics()
        bad = [k for k in UNIT_COUNT_COLUMNS if m[k] != first[k]]
        if bad:
            k = bad[0]
            raise ComparisonError(
                f"unit counts must be the same for every model (they are properties of the "
                f"text), but {k} is {first[k]} for {labels[0]!r} and {m[k]} for {label!r}. "
                "With prefix=None each model leaves its own first token unscored, and those "
                "differ between tokenizers: use prefix='bos' (the default); with add_eos=True "
                "every model needs an EOS token.")


def compare(text: str, models: Sequence[Any], *, labels: Sequence[str] | None = None,
            keep_models: bool = False, device: str | Any = "auto", dtype: str | Any = "auto",
            on_progress: Callable[[ModelEvent], None] | None = None,
            **score_options: Any) -> Comparison:
    """Score ``text`` with every model in ``models`` and return a ``Comparison``.

    ``models``: anything ``load_model`` takes (names, paths, ``.gguf`` files,
    ``(model, tokenizer)`` pairs, loaded models), or another model kind ``score``
    accepts (an n-gram model).  Models given by name or path are loaded one at a
    time and freed after scoring, unless ``keep_models=True`` (then
    ``comparison.loaded`` holds them).  ``labels``: one unique name per model
    (default: from the names).  ``score_options`` go to ``score`` for every model
    (``max_length``, ``stride``, ``prefix``, ``add_eos``, ``top_k``, ``words``...).

    If a model fails, ``ComparisonError.comparison`` keeps the models scored before.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    models = check_models(models)
    labels = check_labels(models, labels)
    results: list[ScoreResult] = []
    names: list[str] = []
    vocabs: list[int | None] = []
    kept: list[Any] = []

    def so_far() -> Comparison:
        n = len(results)
        return Comparison(text, list(results), labels[:n], names[:n], vocabs[:n],
                          score_options.get("words"), kept)

    try:
        for event in iter_compare(text, models, keep_models=keep_models, device=device,
                                  dtype=dtype, kept=kept, **score_options):
            if on_progress is not None:
                on_progress(event)
            if event.kind == "done":
                res = event.result
                results.append(res)
                names.append(str(res.settings.get("model", labels[event.k])))
                vocabs.append(event.vocab_size)
                check_unit_counts(results, labels)
    except ComparisonError as exc:
        exc.comparison = so_far()
        raise
    except ScoringError as exc:
        k = len(results)
        raise ComparisonError(f"scoring with model {labels[k]!r} failed: {exc}",
                              so_far()) from exc
    except (OSError, RuntimeError, ValueError, TypeError) as exc:
        k = len(results)
        raise ComparisonError(f"model {labels[k]!r} could not be scored: "
                              f"{type(exc).__name__}: {exc}", so_far()) from exc
    return so_far()
