"""``show_pairs``: scored minimal pairs in a widget (and a static page).

Each pair's two sentences one above the other, every token coloured by its surprisal
on the single-model view's scale, the delta and the verdict, a mark on the token
where the two sentences first differ; sortable by delta, by either criterion (total
NLL or NLL per token).  The front end is ``js/src/pairs/``; it shows the rows it is
given (the first ``limit``).  Text only ever reaches the page as text.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import anywidget
import pandas as pd
import traitlets

from ..core.pairs import (
    MAX_SHOWN,
    SCORE_COLUMNS,
    SIDES,
    accuracy,
    first_difference,
    pairs_frame,
)
from .assets import bundle_path, bundle_text
from .export import StaticPageOutput

SORTS = ("input", "delta_asc", "delta_desc")
_OWN_TRAITS = ("pairs", "n_total", "sort", "criterion", "surprisal_unit", "objective")
_UNIT_RENAMED = ("unit is deprecated: the pairs view's unit is surprisal_unit, as in every "
                 "other view")


class PairsWidget(StaticPageOutput, anywidget.AnyWidget):
    """Scored minimal pairs, coloured per token (build one with ``show_pairs``)."""

    _esm = bundle_path("pairs.js")
    _css = bundle_text("widget.css") + "\n" + bundle_text("pairs.css")

    pairs = traitlets.List(traitlets.Dict()).tag(sync=True)
    n_total = traitlets.Int(0).tag(sync=True)  # pairs in the frame (more than shown: limit)
    sort = traitlets.Enum(SORTS, "input").tag(sync=True)
    criterion = traitlets.Enum(("total", "mean"), "total").tag(sync=True)
    surprisal_unit = traitlets.Enum(("bits", "nats"), "bits").tag(sync=True)
    #: a masked LM's pairs: ``{"objective": "pll", "pll_metric": ...}`` (score_pairs'
    #: frame.attrs), which the view names its numbers by; empty for a causal model
    objective = traitlets.Dict().tag(sync=True)

    def __init__(self, **kwargs: Any):
        if "unit" in kwargs:
            warnings.warn(_UNIT_RENAMED, DeprecationWarning, stacklevel=2)
            kwargs.setdefault("surprisal_unit", kwargs.pop("unit"))
        super().__init__(**kwargs)

    @property
    def unit(self) -> str:
        """Deprecated: ``surprisal_unit``."""
        warnings.warn(_UNIT_RENAMED, DeprecationWarning, stacklevel=2)
        return self.surprisal_unit

    @unit.setter
    def unit(self, value: str) -> None:
        warnings.warn(_UNIT_RENAMED, DeprecationWarning, stacklevel=2)
        self.surprisal_unit = value

    def _page_state(self) -> dict[str, Any]:
        return self.get_state([n for n in _OWN_TRAITS])

    def _page_title(self, _state: dict[str, Any]) -> str:
        return f"ppl-widget · {self.n_total} minimal pairs"

    def _page_view(self) -> dict[str, Any]:
        right = sum(bool(p["correct"]) for p in self.pairs)
        summary = (f"ppl-widget minimal pairs: {right} of {len(self.pairs)} correct "
                   "(the coloured view needs JavaScript)")
        return {"esm": "pairs.js", "css": ("widget.css", "pairs.css"), "summary": summary}


def show_pairs(df: Any, lm: Any = None, *, label: str | None = None, sort: str = "input",
               criterion: str = "total", surprisal_unit: str = "bits",
               limit: int = MAX_SHOWN, unit: str | None = None,
               **score_options: Any) -> PairsWidget:
    """A widget of scored minimal pairs.

    ``df``: ``score_pairs``'s frame (or pairs to score: then ``lm`` scores them first).
    The per-token colours are the ones ``score_pairs`` scored when ``df`` is its frame
    and ``lm`` and ``score_options`` are the ones it was scored with; else the first
    ``limit`` pairs' sentences are scored again with them.
    ``label``: a column shown beside each pair (default ``phenomenon`` when there is
    one).  ``sort``: ``"input"``, ``"delta_asc"``, ``"delta_desc"``; ``criterion``:
    ``"total"`` (``delta``, ``correct``) or ``"mean"`` (``delta_mean``, ``correct_mean``).
    ``surprisal_unit``: ``"bits"`` or ``"nats"`` (``unit``: its deprecated name).
    """
    from ..scoring.analyses.pairs import score_pairs

    if unit is not None:
        warnings.warn(_UNIT_RENAMED, DeprecationWarning, stacklevel=2)
        surprisal_unit = unit
    frame = df if isinstance(df, pd.DataFrame) else pairs_frame(df)
    if not all(c in frame.columns for c in SCORE_COLUMNS):
        frame = score_pairs(frame, lm, **score_options)
    if label is None and "phenomenon" in frame.columns:
        label = "phenomenon"
    if label is not None and label not in frame.columns:
        raise ValueError(f"label: no column {label!r} (columns: {list(frame.columns)})")
    objective = {k: frame.attrs[k] for k in ("objective", "pll_metric")
                 if frame.attrs.get(k) is not None}
    if "pll_metric" in objective:  # the pieces scored as the frame was (a masked LM)
        score_options.setdefault("pll_metric", objective["pll_metric"])
    rows = pairs_state(frame.head(limit), lm, label=label, **score_options)
    return PairsWidget(pairs=rows, n_total=len(frame), sort=sort, criterion=criterion,
                       surprisal_unit=surprisal_unit, objective=objective)


def pairs_state(frame: pd.DataFrame, lm: Any = None, *, label: str | None = None,
                **score_options: Any) -> list[dict[str, Any]]:
    """The front end's rows for scored pairs: pieces per sentence with their NLL."""
    from ..scoring.analyses.pairs import TOKEN_PIECES, sentence_tokens

    texts = [t for g, b in zip(frame["good"], frame["bad"], strict=True) for t in (g, b)]
    contexts = (None if "context" not in frame.columns
                else [c for c in frame["context"] for _ in SIDES])
    # score_pairs kept the tokens it scored: the same model and options score nothing again
    pieces = sentence_tokens(texts, lm, contexts=contexts,
                             scored=frame.attrs.get(TOKEN_PIECES), **score_options)
    out = []
    for k, (_, row) in enumerate(frame.iterrows()):
        d = first_difference(row["good"], row["bad"])
        out.append({
            "row": k, "label": "" if label is None else str(row[label]),
            "context": str(row["context"]) if contexts is not None else "",
            "good": _side(pieces[2 * k], d), "bad": _side(pieces[2 * k + 1], d),
            **{c: _number(row[c]) for c in ("delta", "delta_mean")},
            **{c: bool(row[c]) for c in ("correct", "correct_mean")},
        })
    return out


def _side(pieces: list[tuple[str, float]], diff_at: int) -> dict[str, Any]:
    """Pieces as [text, nats | None] and the index of the piece holding ``diff_at``."""
    first, pos = -1, 0
    for i, (text, _) in enumerate(pieces):
        if first < 0 and pos <= diff_at < pos + len(text):
            first = i
        pos += len(text)
    return {"pieces": [[text, _number(v)] for text, v in pieces], "first": first}


def _number(value: Any) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def accuracy_table(frame: pd.DataFrame, by: str | None = None) -> pd.DataFrame:
    """Accuracy by both criteria, per group of ``by``: ``accuracy`` (totals),
    ``accuracy_mean`` (per token), ``n_pairs``."""
    totals = accuracy(frame, by)
    totals["accuracy_mean"] = accuracy(frame, by, column="correct_mean")["accuracy"]
    return totals
