"""``show_reading``: a text coloured by surprisal with each word's reading time under it.

The input is ``predictive_power``'s per-word frame (``frame.attrs["per_word"]``: one row
per model x RT measure x word) or any frame with one row per word in reading order (the
column names are arguments).  Each word is coloured by its surprisal, its reading time,
or the regression's residual (RT - predicted); a bar under the word is its reading
time; the tooltip gives its numbers.  The front end is ``js/src/reading/``.  Text only
ever reaches the page as text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import anywidget
import numpy as np
import pandas as pd
import traitlets

from ..core.jsonable import json_safe
from ..core.metrics import LN2
from .assets import bundle_path, bundle_text
from .export import StaticPageOutput

#: Words sent to the front end at most (the summary says how many there were).
MAX_WORDS = 20_000
COLOR_BY = ("surprisal", "rt", "residual")
#: The payload's fields and the per-word frame's columns they come from by default
#: (``predictive_power``'s per-word frame).
COLUMNS = {"word": "word", "rt": "rt_value", "surprisal": "surprisal_bits",
           "frequency": "frequency", "length": "length", "predicted": "rt_predicted",
           "residual": "rt_residual", "delta_ll": "delta_ll"}
_OWN_TRAITS = ("data", "groups", "n_total", "color_by", "surprisal_unit", "rt_name",
               "frequency_name", "note")


class ReadingWidget(StaticPageOutput, anywidget.AnyWidget):
    """Words coloured by surprisal, reading time or residual, each with its reading time
    drawn under it (build one with ``show_reading``)."""

    _esm = bundle_path("reading.js")
    _css = bundle_text("widget.css") + "\n" + bundle_text("reading.css")

    data = traitlets.Dict().tag(sync=True)  # columns: word, group, rt, surprisal (nats), ...
    # (delta_ll: each word's gain in held-out log-likelihood, nats; the view averages it
    # per text)
    groups = traitlets.List(traitlets.Unicode()).tag(sync=True)  # the texts' labels
    n_total = traitlets.Int(0).tag(sync=True)  # words in the frame (more than shown: limit)
    color_by = traitlets.Enum(COLOR_BY, "surprisal").tag(sync=True)
    surprisal_unit = traitlets.Enum(("bits", "nats"), "bits").tag(sync=True)
    rt_name = traitlets.Unicode("reading time").tag(sync=True)
    frequency_name = traitlets.Unicode("frequency").tag(sync=True)
    note = traitlets.Unicode("").tag(sync=True)  # one line shown above the text

    def _page_state(self) -> dict[str, Any]:
        return self.get_state(list(_OWN_TRAITS))

    def _page_title(self, _state: dict[str, Any]) -> str:
        return f"ppl-widget · reading times · {len(self.data.get('word', []))} words"

    def _page_view(self) -> dict[str, Any]:
        n = len(self.data.get("word", []))
        summary = (f"ppl-widget reading view: {n} words, {len(self.groups)} texts"
                   f"{' · ' + self.note if self.note else ''} (the coloured view needs "
                   "JavaScript)")
        return {"esm": "reading.js", "css": ("widget.css", "reading.css"), "summary": summary}


def show_reading(per_word: pd.DataFrame, *, model: Any = None, rt: str | None = None,
                 by: str | Sequence[str] | None = None,
                 columns: Mapping[str, str] | None = None, surprisal_in: str | None = None,
                 color_by: str = "surprisal", surprisal_unit: str = "bits",
                 note: str | None = None, frequency_name: str | None = None,
                 limit: int = MAX_WORDS) -> ReadingWidget:
    """The reading view of one model's and one RT measure's words.

    ``per_word``: ``predictive_power(...).attrs["per_word"]`` (then ``model`` and ``rt``
    pick one model and RT measure: default the first of each), or a frame of one row per
    word in reading order.  ``by``: the text-id column(s) (default the frame's
    ``attrs["by"]``; none: one text).  ``columns``: the frame's column for each of
    ``word``, ``rt``, ``surprisal``, ``frequency``, ``length``, ``predicted``, ``residual``
    where it differs from ``COLUMNS`` (``surprisal``: also score_words' ``surprisal``
    column; ``residual`` is RT - predicted when the frame has none; ``delta_ll``: each
    word's ΔLL, averaged per text beside it).  ``surprisal_in``:
    the surprisal column's unit, ``"bits"`` or ``"nats"`` (default: bits for a name
    ending in ``_bits``, nats for ``surprisal``, as ``score_words`` gives it).
    ``color_by``: ``"surprisal"``, ``"rt"`` or ``"residual"``. ``frequency_name``: the
    tooltip's name of the frequency (default ``"Zipf frequency"`` when the frame's
    ``attrs["frequency_scale"]`` says so, as ``predictive_power``'s does, else the
    column's name).
    """
    if not isinstance(per_word, pd.DataFrame):
        raise TypeError(f"per_word must be a DataFrame, got {type(per_word).__name__}")
    if color_by not in COLOR_BY:
        raise ValueError(f"color_by must be one of {COLOR_BY}, got {color_by!r}")
    cols = {**COLUMNS, **(columns or {})}
    unknown = set(columns or {}) - set(COLUMNS)
    if unknown:
        raise ValueError(f"columns: unknown field(s) {sorted(unknown)}; the view takes "
                         f"{list(COLUMNS)}")
    if cols["surprisal"] not in per_word.columns and "surprisal" in per_word.columns \
            and "surprisal" not in (columns or {}):
        cols["surprisal"] = "surprisal"  # score_words' own column (nats)
    by = per_word.attrs.get("by") if by is None else by
    by_cols = [by] if isinstance(by, str) else list(by or [])
    frame, chosen = _one_model_and_measure(per_word, model, rt)
    data, groups = reading_state(frame.head(limit), cols, by_cols,
                                 surprisal_factor(cols["surprisal"], surprisal_in))
    if note is None:
        note = _delta_ll_note(per_word.attrs.get("delta_ll", per_word.attrs.get("results")),
                              chosen)
    if frequency_name is None:
        frequency_name = ("Zipf frequency" if per_word.attrs.get("frequency_scale") == "Zipf"
                          and cols["frequency"] == COLUMNS["frequency"] else cols["frequency"])
    # the measure's name (gaze_rt, ...), else the frame's own column name if it chose one
    rt_name = chosen[1] if chosen[1] is not None else (
        cols["rt"] if cols["rt"] != COLUMNS["rt"] else "reading time")
    return ReadingWidget(data=data, groups=groups, n_total=len(frame), color_by=color_by,
                         surprisal_unit=surprisal_unit, rt_name=str(rt_name),
                         frequency_name=str(frequency_name), note=note)


def _one_model_and_measure(frame: pd.DataFrame, model: Any,
                           rt: str | None) -> tuple[pd.DataFrame, tuple[Any, Any]]:
    """The rows of one model and one RT measure of a long per-word frame (a frame
    without ``model`` / ``rt`` + ``rt_value`` columns is one already)."""
    frame, chosen_model = pick(frame, "model", model)
    frame, chosen_rt = pick(frame, "rt", rt)
    return frame, (chosen_model, chosen_rt)


def pick(frame: pd.DataFrame, column: str, wanted: Any) -> tuple[pd.DataFrame, Any]:
    """The rows of ``wanted`` (default: the first value) in a long per-word frame's
    ``model`` or ``rt`` column (``rt`` counts only beside ``rt_value``: else it holds
    reading times); a frame without the column is returned whole, with None."""
    is_long = column in frame.columns and (column != "rt" or "rt_value" in frame.columns)
    if not is_long:
        if wanted is not None:
            raise ValueError(f"{column}={wanted!r}: the frame has no {column!r} column to "
                             "pick it from (it holds one already)")
        return frame, None
    values = list(pd.unique(frame[column]))
    choice = values[0] if wanted is None else wanted
    if choice not in values:
        raise ValueError(f"{column}={choice!r}: not in the frame (it has {values})")
    return frame[frame[column] == choice], choice


def surprisal_factor(column: str, surprisal_in: str | None) -> float:
    """Factor from the surprisal column's unit to nats (the payload is in nats)."""
    if surprisal_in is None:
        if column.endswith("_bits"):
            surprisal_in = "bits"
        elif column == "surprisal":
            surprisal_in = "nats"
        else:
            raise ValueError(f"surprisal_in: say whether column {column!r} is in 'bits' or "
                             "'nats' (only *_bits and score_words' 'surprisal' are known)")
    if surprisal_in not in ("bits", "nats"):
        raise ValueError(f"surprisal_in must be 'bits' or 'nats', got {surprisal_in!r}")
    return LN2 if surprisal_in == "bits" else 1.0


def reading_state(frame: pd.DataFrame, cols: Mapping[str, str], by: Sequence[str],
                  to_nats: float) -> tuple[dict[str, list[Any]], list[str]]:
    """The front end's columns (JSON-safe, null for missing) and the texts' labels."""
    needed = [cols["word"], cols["rt"], cols["surprisal"], *by]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ValueError(f"the per-word frame has no column(s) {missing} (columns: "
                         f"{list(frame.columns)}); name yours with columns=/by=")
    if by:
        keys = list(zip(*(frame[c] for c in by), strict=True))
        labels = [" · ".join(str(v) for v in key) for key in keys]
    else:
        labels = ["1"] * len(frame)
    groups = list(dict.fromkeys(labels))
    index = {g: k for k, g in enumerate(groups)}

    def numbers(field: str, factor: float = 1.0) -> list[Any]:
        name = cols[field]
        if name not in frame.columns:
            return [None] * len(frame)
        values = pd.to_numeric(frame[name], errors="raise").to_numpy(dtype=float)
        return json_safe(values * factor)

    data = {"word": ["" if pd.isna(w) else str(w) for w in frame[cols["word"]]],
            "group": [index[g] for g in labels],
            **{f: numbers(f) for f in ("rt", "frequency", "length", "predicted", "delta_ll")},
            "surprisal": numbers("surprisal", to_nats)}
    if cols["residual"] in frame.columns:
        data["residual"] = numbers("residual")
    else:  # RT - predicted: what the regression left unexplained
        rt_ms = pd.to_numeric(frame[cols["rt"]]).to_numpy(dtype=float)
        pred = np.asarray([np.nan if v is None else v for v in data["predicted"]], dtype=float)
        data["residual"] = json_safe(rt_ms - pred)
    return data, groups


def _delta_ll_note(results: Any, chosen: tuple[Any, Any]) -> str:
    """"ΔLL = ... nats/word (95% CI ...) over the n words in the regression" of the chosen
    model and measure, when the frame carries ``predictive_power``'s numbers (its per-word
    frame's ``attrs["delta_ll"]``: plain numbers; or ``DeltaLL`` results)."""
    if not isinstance(results, Mapping) or chosen not in results:
        return ""
    r = results[chosen]
    if isinstance(r, Mapping):
        mean, low, high, n, dropped = (r["delta_ll"], r["ci_low"], r["ci_high"], r["n"],
                                       r.get("n_dropped"))
    else:
        (low, high), mean, n, dropped = r.ci(), r.mean, r.n, len(r.dropped)
    rest = (f" ({dropped:,} left out: no reading time, a missing value, or too few words "
            "before them in their text)") if dropped else ""
    return (f"{chosen[0]}: ΔLL {mean:.4f} nats/word (95% CI {low:.4f} to {high:.4f}) over "
            f"the {n:,} words in the regression{rest}")
