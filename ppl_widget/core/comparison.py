"""One text scored by several models, compared fairly: the results and what is
computed from them (the metrics table, the per-word frame).  Pure: numpy, and pandas
for the tables; the models are run by ``scoring/analyses/compare.py``.

Perplexities of models with different tokenizers are comparable per word,
character or byte (the total NLL is the model's, the denominator the text's),
never per token.  ``Comparison.table()`` marks per-token perplexity as not
comparable; ``Comparison.words()`` sums every model's surprisal over the tokens
that make up each word, by the one rule of ``core/levels.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .levels import assign_tokens, unit_spans
from .metrics import LN2, is_pll, objective_labels
from .providers import provider
from .result import ScoreResult

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
#: Said under a table where a masked LM's pseudo-perplexity stands beside a perplexity.
PSEUDO_NOTE = ("A masked LM's pseudo-perplexity (PLL: each token masked and predicted from "
               "both sides) is not the probability of the text, as a causal model's "
               "perplexity is: the two measure different things (docs/masked.md).")


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
            return f"{base}\n† {self._note()}" if self._marked() else base

        def _note(self) -> str:
            return self.attrs.get("note", NOT_COMPARABLE_NOTE)

        def _repr_html_(self) -> str | None:
            if not self._marked():
                return super()._repr_html_()
            return self.styled().to_html()

        def styled(self) -> Any:
            """A pandas Styler, one column per model and one row per metric (fifteen
            metrics side by side run past a notebook's width; a few models never do):
            the not-comparable rows greyed and marked with a dagger, the note as a
            caption under the table, wrapped to its width."""
            plain = pd.DataFrame(self)
            marks = {c: f"{c} †" for c in NOT_COMPARABLE if c in plain.columns}
            shown = plain.rename(columns=marks)
            by_model = "label" in shown.columns and shown["label"].is_unique
            if by_model:
                shown = shown.set_index("label").T
                shown.columns.name = None
            sty = shown.style.set_caption(f"† {self._note()}")
            sty = sty.set_table_styles([{"selector": "caption", "props": [
                ("caption-side", "bottom"), ("text-align", "left"),
                ("white-space", "normal"), ("font-size", "0.9em"), ("padding-top", "4px")]}])
            cols = list(marks.values())
            if cols:
                subset = pd.IndexSlice[cols, :] if by_model else cols
                sty = sty.set_properties(subset=subset, **{"color": "#888",
                                                           "font-style": "italic"})
            return sty.format(_cell, na_rep="—")

    _ComparisonTable = ComparisonTable
    return ComparisonTable


_ComparisonTable: type | None = None


def _cell(value: Any) -> str:
    """A table cell: counts as integers, other numbers to 4 decimals (6 significant
    digits from a million: a random model's perplexity has 20 digits), text as is."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.number):
        return str(value)
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    return f"{float(value):.6g}" if abs(value) >= 1e6 else f"{float(value):.4f}"


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
    #: what every model read before ``text`` (a string or a chat), or None; ``text`` is
    #: then the continuation as scored (a string context's trailing whitespace moved to it)
    context: Any = None

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
                         "measure": objective_labels(res.settings)["perplexity"],
                         **{k: m[k] for k in TABLE_COLUMNS[3:]}})
        # a masked LM's row holds pseudo-perplexities: the table says which rows do
        mixed = any(is_pll(r.settings) for r in self.results)
        columns = [*TABLE_COLUMNS[:2], "measure", *TABLE_COLUMNS[2:]] if mixed \
            else list(TABLE_COLUMNS)
        table = _table_class()(rows, columns=columns)
        table.attrs["not_comparable"] = list(NOT_COMPARABLE)
        table.attrs["note"] = NOT_COMPARABLE_NOTE + (f" {PSEUDO_NOTE}" if mixed else "")
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
                                "predicted the word better",
                           # a masked LM's column holds pseudo-surprisals (core/metrics.py)
                           measures={label: objective_labels(res.settings)["surprisal"]
                                     for label, res in zip(self.labels, self.results,
                                                           strict=True)})
        return frame

    # ---- views (the views' work, registered with core/providers.py) ------
    def chart(self, a: int | str = 0, b: int | str = 1, **options: Any) -> Any:
        """Altair chart: per-unit perplexities side by side, and per-word surprisal of
        ``a`` against ``b`` (see ``ppl_widget.charts.comparison``)."""
        return provider("comparison_chart")(self, a=a, b=b, **options)

    def widget(self, a: int | str = 0, b: int | str = 1) -> Any:
        """The comparison view of these results (``ComparisonWidget``): each word
        coloured by the surprisal of ``a`` minus ``b``; nothing is scored again."""
        return provider("comparison_widget")(self, a, b)

    def to_html(self, path: Any = None, a: int | str = 0, b: int | str = 1) -> str:
        """The comparison view as one self-contained HTML page (no kernel, no network)."""
        return self.widget(a, b).to_html(path)

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()

    def __repr__(self) -> str:
        return f"<Comparison of {len(self)} models: {', '.join(self.labels)}>"
