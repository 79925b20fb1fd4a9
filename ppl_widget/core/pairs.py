"""Minimal pairs as a table: the input checked, the scores turned into columns.

Pure pandas/numpy: the model work is in ``scoring/analyses/pairs.py``.  Two criteria, both
common in papers (BLiMP uses the first):

* totals: ``delta = bad_nll - good_nll`` (nats); ``correct = delta > 0``, the model
  gives the grammatical sentence the higher probability;
* per token: ``delta_mean = bad_mean_nll - good_mean_nll`` (nats per token);
  ``correct_mean = delta_mean > 0``, the length-normalised comparison.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

#: The two sentences of a pair, in the order they are scored.
SIDES = ("good", "bad")
#: Columns ``score_pairs`` adds, in order.
#: Pairs a pairs view shows at most (show_pairs' limit; score_pairs keeps the scored
#: tokens of this many for it).
MAX_SHOWN = 500
SCORE_COLUMNS = ("good_nll", "bad_nll", "good_tokens", "bad_tokens", "delta", "correct",
                 "good_mean_nll", "bad_mean_nll", "delta_mean", "correct_mean")


class PairsInputError(ValueError):
    """The pairs given to ``score_pairs`` break a rule (the message names the row)."""


def pairs_frame(pairs: Any) -> pd.DataFrame:
    """``pairs`` as a DataFrame with str columns ``good`` and ``bad`` (and ``context``
    when given), every other column kept; a ``PairsInputError`` naming the first row
    that breaks a rule (a missing column, a value that is not text, an empty sentence)."""
    if isinstance(pairs, pd.DataFrame):
        missing = [c for c in SIDES if c not in pairs.columns]
        if missing:
            raise PairsInputError(f"pairs needs columns 'good' and 'bad'; missing "
                                  f"{missing} (columns: {list(pairs.columns)})")
        taken = [c for c in SCORE_COLUMNS if c in pairs.columns]
        if taken:
            raise PairsInputError(f"pairs already has the score columns {taken}: score the "
                                  "original frame, or drop them first")
        frame = pairs.copy()
    elif isinstance(pairs, str | bytes) or not isinstance(pairs, Iterable):
        raise PairsInputError("pairs must be a DataFrame with columns 'good' and 'bad', or an "
                              f"iterable of (good, bad) tuples; got {type(pairs).__name__}")
    else:
        rows = []
        for i, pair in enumerate(pairs):
            if isinstance(pair, str | bytes) or not hasattr(pair, "__len__") or len(pair) != 2:
                raise PairsInputError(f"pair {i} must be a (good, bad) tuple, got {pair!r}")
            rows.append(tuple(pair))
        frame = pd.DataFrame(rows, columns=list(SIDES), dtype=object)
    for column in (*SIDES, "context"):
        if column in frame.columns:
            _check_texts(frame, column, allow_empty=column == "context")
    return frame


def _check_texts(frame: pd.DataFrame, column: str, *, allow_empty: bool) -> None:
    for pos, (label, value) in enumerate(frame[column].items()):
        row = f"row {pos}" + (f" (index {label!r})" if label != pos else "")
        if not isinstance(value, str):
            what = "missing (NaN/None)" if _is_missing(value) else f"a {type(value).__name__}"
            raise PairsInputError(f"{row}: {column!r} must be text, got {what}: {value!r}")
        if not allow_empty and not value.strip():
            raise PairsInputError(f"{row}: {column!r} is empty; every sentence of a pair "
                                  "needs at least one non-space character")


def _is_missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def add_score_columns(frame: pd.DataFrame, nll: np.ndarray, tokens: np.ndarray) -> pd.DataFrame:
    """``frame`` with ``SCORE_COLUMNS`` added from ``nll`` and ``tokens``, each of shape
    ``(len(frame), 2)``: column 0 the good sentence, 1 the bad one."""
    nll = np.asarray(nll, dtype=np.float64).reshape(len(frame), 2)
    tokens = np.asarray(tokens, dtype=np.int64).reshape(len(frame), 2)
    out = frame.copy()
    out["good_nll"], out["bad_nll"] = nll[:, 0], nll[:, 1]
    out["good_tokens"], out["bad_tokens"] = tokens[:, 0], tokens[:, 1]
    out["delta"] = nll[:, 1] - nll[:, 0]
    out["correct"] = out["delta"] > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = nll / tokens
    out["good_mean_nll"], out["bad_mean_nll"] = mean[:, 0], mean[:, 1]
    out["delta_mean"] = mean[:, 1] - mean[:, 0]
    out["correct_mean"] = out["delta_mean"] > 0
    return out


def first_difference(good: str, bad: str) -> int:
    """Index of the first character where the two sentences differ (the length of
    the shorter one if one is a prefix of the other; ``len(good)`` if they are equal)."""
    n = min(len(good), len(bad))
    for i in range(n):
        if good[i] != bad[i]:
            return i
    return n


def accuracy(frame: pd.DataFrame, by: str | list[str] | None = None,
             column: str = "correct") -> pd.DataFrame:
    """Accuracy (share of pairs with ``column`` true) and pair count, overall or per
    group of ``by``."""
    if column not in frame.columns:
        raise PairsInputError(f"accuracy needs the column {column!r} (from score_pairs)")
    if by is None:
        return pd.DataFrame({"accuracy": [frame[column].mean()], "n_pairs": [len(frame)]})
    keys = [by] if isinstance(by, str) else list(by)
    missing = [k for k in keys if k not in frame.columns]
    if missing:
        raise PairsInputError(f"no column {missing} to group by (columns: "
                              f"{list(frame.columns)})")
    grouped = frame.groupby(keys, sort=True, dropna=False)[column]
    return pd.DataFrame({"accuracy": grouped.mean(), "n_pairs": grouped.size()}).reset_index()


def read_pairs(path: str) -> pd.DataFrame:
    """Pairs from a ``.csv`` (a header row naming ``good``, ``bad``, optional ``context``
    and any other columns) or a ``.jsonl`` file (one object per line), text kept as text;
    an empty cell stays missing, so ``pairs_frame`` names its row."""
    lower = str(path).lower()
    text_columns = {c: str for c in (*SIDES, "context")}
    if lower.endswith(".csv"):
        frame = pd.read_csv(path, dtype=text_columns, keep_default_na=False, na_values=[""])
    elif lower.endswith((".jsonl", ".ndjson")):
        frame = pd.read_json(path, lines=True, dtype=text_columns)
    else:
        raise PairsInputError(f"{path}: pairs are read from a .csv or .jsonl file")
    return pairs_frame(frame)
