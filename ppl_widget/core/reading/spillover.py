"""The regression rows of a reading-time table: each predictor with its values for the
previous words (spillover), lagged within each text, and which rows cannot be used and why.

Reading effects spill over: a word's reading time depends on the words before it, so
surprisal-and-reading-time regressions add ``prev1_x``, ``prev2_x`` for each predictor
``x``. A row is used only with all its predecessors in its own group (text) and no missing
value in any used column; the rest are dropped here, before any fold is laid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd


class ReadingTimeError(ValueError):
    """A reading-time regression's input breaks one of its rules (the message names it)."""


class ReadingTimeWarning(UserWarning):
    """Something in a reading-time table the regression works around (rows it drops)."""


def lag_name(column: str, k: int) -> str:
    """The spillover column of ``column`` for the k-th previous word."""
    return f"prev{k}_{column}"


@dataclass(frozen=True)
class Design:
    """The usable rows: ``y`` and the columns ``columns`` (predictors with their lags),
    ``keep`` (a mask over the input rows), ``groups`` (a group code per kept row) and
    ``dropped`` (original index label -> reason, for every other row)."""

    y: np.ndarray
    columns: dict[str, np.ndarray]
    keep: np.ndarray
    groups: np.ndarray | None
    dropped: pd.DataFrame


def as_names(value: str | Sequence[str], what: str) -> list[str]:
    """A column name or a list of them, as a list; an empty list is an error."""
    names = [value] if isinstance(value, str) else list(value)
    if not names or not all(isinstance(n, str) for n in names):
        raise ReadingTimeError(f"{what} must be a column name or a non-empty list of them, "
                               f"not {value!r}")
    return names


def check_columns(frame: pd.DataFrame, names: Sequence[str], what: str) -> None:
    """Every named column is in ``frame`` (rule: the regression reads only the table's own
    columns)."""
    missing = [n for n in names if n not in frame.columns]
    if missing:
        raise ReadingTimeError(f"{what} names column(s) {missing} the table does not have; "
                               f"it has {list(frame.columns)}")


def numeric(frame: pd.DataFrame, column: str, what: str) -> np.ndarray:
    """The column as float64 (missing values NaN), or an error naming the first value that
    is not a number (rule: reading times and predictors are numbers)."""
    values = frame[column]
    if pd.api.types.is_bool_dtype(values) or not (pd.api.types.is_numeric_dtype(values)
                                                  or values.isna().all()):
        converted = pd.to_numeric(values, errors="coerce")
        bad = converted.isna() & values.notna()
        if bad.any():
            label = values.index[int(np.flatnonzero(bad.to_numpy())[0])]
            raise ReadingTimeError(f"{what} column {column!r} must be numeric; row {label!r} "
                                   f"holds {values.loc[label]!r}")
        values = converted
    return values.to_numpy(dtype=np.float64, na_value=np.nan)


def group_codes(frame: pd.DataFrame, by: list[str] | None) -> np.ndarray | None:
    """One integer per row naming its group (rows of a group need not be adjacent)."""
    if by is None:
        return None
    keys = frame[by]
    if keys.isna().any(axis=None):
        label = frame.index[int(np.flatnonzero(keys.isna().any(axis=1).to_numpy())[0])]
        raise ReadingTimeError(f"row {label!r}: the by column(s) {by} hold a missing value; "
                               "every row needs its group")
    if len(by) == 1:  # the common case, without groupby's cost
        return pd.factorize(keys.iloc[:, 0], sort=False)[0]
    return keys.groupby(by, sort=False).ngroup().to_numpy()


def build_design(frame: pd.DataFrame, rt: str, predictors: Sequence[str], *, spillover: int,
                 by: list[str] | None) -> Design:
    """The rows and columns both regressions use: ``predictors`` and their ``spillover``
    lags within ``by`` groups; rows missing the reading time, a used value or a
    predecessor are dropped (with a reason each) and groups too short are warned of."""
    import warnings

    y = numeric(frame, rt, "the reading time")
    own = {name: numeric(frame, name, "predictor") for name in predictors}
    groups = group_codes(frame, by)
    n = len(frame)
    # position of each row within its group (frame order), for the lag and the predecessors
    if groups is None:
        position = np.arange(n)
        lag_source = {k: np.arange(n) - k for k in range(1, spillover + 1)}
    else:
        position = pd.Series(groups).groupby(groups).cumcount().to_numpy()
        rows_of = pd.Series(np.arange(n)).groupby(groups)
        lag_source = {k: rows_of.shift(k).to_numpy(dtype=np.float64, na_value=-1).astype(np.int64)
                      for k in range(1, spillover + 1)}
    columns: dict[str, np.ndarray] = {}
    reason = np.full(n, "", dtype=object)
    reason[np.isnan(y)] = "missing reading time"  # counted first: the commonest reason
    for name in predictors:
        columns[name] = own[name]
        reason[(reason == "") & np.isnan(own[name])] = f"missing value in {name}"
    short = (reason == "") & (position < spillover)
    reason[short] = f"fewer than {spillover} predecessor(s) in its group"
    for k in range(1, spillover + 1):
        source = lag_source[k]
        for name in predictors:
            lagged = np.where(source >= 0, own[name][np.maximum(source, 0)], np.nan)
            columns[lag_name(name, k)] = lagged
            reason[(reason == "") & np.isnan(lagged)] = f"missing value in {lag_name(name, k)}"
    if groups is not None and spillover > 0:
        sizes = np.bincount(groups)
        too_short = [_label(frame, groups, g, by) for g in np.flatnonzero(sizes <= spillover)]
        if too_short:
            warnings.warn(f"group(s) {too_short} of {by} have at most {spillover} row(s): with "
                          f"spillover={spillover} none of their rows has {spillover} "
                          "predecessor(s) in its group, so all are dropped",
                          ReadingTimeWarning, stacklevel=3)
    keep = reason == ""
    dropped = pd.DataFrame({"reason": reason[~keep].astype(str)}, index=frame.index[~keep])
    return Design(y=y[keep], columns={k: v[keep] for k, v in columns.items()}, keep=keep,
                  groups=None if groups is None else groups[keep], dropped=dropped)


def _label(frame: pd.DataFrame, groups: np.ndarray, code: int, by: list[str]) -> object:
    """The ``by`` value(s) of group ``code`` (for messages)."""
    row = frame[by].iloc[int(np.flatnonzero(groups == code)[0])].tolist()  # plain values
    return row[0] if len(by) == 1 else tuple(row)
