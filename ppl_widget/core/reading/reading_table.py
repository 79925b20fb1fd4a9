"""A reading-time table as psycholinguists keep it (one row per word shown, in reading
order, with text ids and one or several reading-time columns), checked before anything is
scored: the columns ``predictive_power`` and the ``reading`` command use are there, the
reading times are numbers, the words are words.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from .spillover import ReadingTimeError, ReadingTimeWarning, as_names, check_columns, numeric

#: baseline predictors computed from the word when the table has no such column
COMPUTED = ("length", "frequency")
DEFAULT_BASELINE = "length+frequency"


@dataclass(frozen=True)
class ReadingSpec:
    """The checked column names: reading-time measures, word, groups, baseline
    predictors (``length`` / ``frequency`` may be computed) and the RT side's word label."""

    rt: list[str]
    word: str
    by: list[str] | None
    baseline: list[str]
    rt_word: str | None
    computed: list[str]  # baseline names the table lacks, computed from the words


def baseline_names(baseline: str | Sequence[str]) -> list[str]:
    """``"length+frequency"`` or a list of names, as a list."""
    if isinstance(baseline, str):
        return [part.strip() for part in baseline.split("+")]
    return as_names(baseline, "baseline")


def check_reading_table(reading: pd.DataFrame, *, rt: str | Sequence[str], word: str,
                        by: str | Sequence[str] | None,
                        baseline: str | Sequence[str] = DEFAULT_BASELINE,
                        rt_word: str | None = None) -> ReadingSpec:
    """The table's columns named by the arguments, checked (rules: every named column
    exists, reading times are numeric, the row labels are unique so rows can be named).
    ``rt_word=None`` takes ``word.y`` when ``word`` is ``word.x`` (MECO's pair)."""
    if not isinstance(reading, pd.DataFrame):
        raise ReadingTimeError(f"the reading table must be a pandas DataFrame, not "
                               f"{type(reading).__name__}")
    rts = as_names(rt, "rt")
    by_names = None if by is None else as_names(by, "by")
    names = baseline_names(baseline)
    if rt_word is None and word == "word.x" and "word.y" in reading.columns:
        rt_word = "word.y"
    check_columns(reading, [word], "word")
    check_columns(reading, rts, "rt")
    if by_names is not None:
        check_columns(reading, by_names, "by")
    if rt_word is not None:
        check_columns(reading, [rt_word], "rt_word")
    check_columns(reading, [n for n in names if n not in COMPUTED], "baseline")
    for name in rts:
        numeric(reading, name, "the reading time")
    if not reading.index.is_unique:
        raise ReadingTimeError("the reading table's row labels (index) repeat: rows are "
                               "named by their label in results, so reset_index() first")
    computed = [n for n in names if n in COMPUTED and n not in reading.columns]
    return ReadingSpec(rt=rts, word=word, by=by_names, baseline=names, rt_word=rt_word,
                       computed=computed)


def warn_label_mismatch(reading: pd.DataFrame, word: str, rt_word: str | None) -> list:
    """Warn of (and return) the rows where the RT side's word label differs from the word
    shown: their reading times may belong to another word (MECO English text 3 runs one
    word off on 21 rows)."""
    if rt_word is None:
        return []
    differs = reading[word].astype(str) != reading[rt_word].astype(str)
    rows = reading.index[differs.to_numpy()].tolist()
    if rows:
        shown = ", ".join(f"{r!r}: {reading.at[r, word]!r} vs {reading.at[r, rt_word]!r}"
                          for r in rows[:8])
        warnings.warn(f"{len(rows)} row(s) where {word!r} (the word shown) differs from "
                      f"{rt_word!r} (the reading-time side's label): their reading times may "
                      f"belong to another word; kept. Rows {rows}; e.g. {shown}",
                      ReadingTimeWarning, stacklevel=3)
    return rows
