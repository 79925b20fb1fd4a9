"""What the charts draw, computed with numpy (pure, tested by hand): rolling means,
bin means of long texts, GLTR rank buckets.  ``charts.py`` draws them with Altair."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

RANK_BUCKETS = (("top 10", 10), ("top 100", 100), ("top 1000", 1000), ("rest", math.inf))


def check_positive(name: str, value: Any) -> int:
    """A chart option that counts something (window, bins, points): a positive integer."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_columns(chart: str, frame: Any, needed: list[str]) -> None:
    """Every column a chart draws is in its frame (rule: name the missing ones, and the
    columns there are)."""
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ValueError(f"{chart}: no column(s) {missing} (columns: {list(frame.columns)})")


def rolling_mean(x: np.ndarray, window: int) -> np.ndarray:
    """Trailing mean over the last ``window`` values (fewer at the start)."""
    window = check_positive("window", window)
    x = np.asarray(x, dtype=np.float64)
    c = np.concatenate([[0.0], np.cumsum(x)])
    i = np.arange(1, len(x) + 1)
    lo = np.maximum(0, i - window)
    return (c[i] - c[lo]) / (i - lo)


def rank_bucket_fractions(rank: np.ndarray) -> dict[str, float]:
    """GLTR-style: fraction of tokens whose rank is in the top 10 / 100 / 1000 / rest."""
    rank = np.asarray(rank)
    n = len(rank)
    out, lo = {}, 0
    for label, hi in RANK_BUCKETS:
        out[label] = float(((rank > lo) & (rank <= hi)).sum() / n) if n else math.nan
        lo = hi
    return out


def bin_means(x: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Means of consecutive bins of ``size`` values (the last may be shorter):
    (first index, last index, mean) per bin."""
    size = check_positive("size", size)
    x = np.asarray(x, dtype=np.float64)
    starts = np.arange(0, len(x), size)
    sums = np.add.reduceat(x, starts) if len(x) else np.zeros(0)
    ends = np.minimum(starts + size, len(x))
    return starts, ends - 1, sums / (ends - starts)


def bin_size(n: int, max_points: int) -> int:
    """Values per bin so that ``n`` values make at most ``max_points`` bins."""
    return max(1, math.ceil(n / max_points))


def quantile_bin_means(x: np.ndarray, y: np.ndarray, bins: int,
                       z: float = 1.96) -> dict[str, np.ndarray]:
    """``y``'s mean per bin of ``x`` (bins of about equal counts, at ``x``'s quantiles;
    ties can merge bins), with ``mean +/- z * sd / sqrt(n)`` (sd with ddof 1; a bin of one
    value has no interval: NaN): keys ``x`` (the bin's mean x), ``x_lo``, ``x_hi``,
    ``mean``, ``low``, ``high``, ``n``."""
    bins = check_positive("bins", bins)
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    edges = np.unique(np.quantile(x, np.linspace(0, 1, bins + 1))) if len(x) else np.zeros(1)
    which = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, max(len(edges) - 2, 0))
    out: dict[str, list[float]] = {k: [] for k in ("x", "x_lo", "x_hi", "mean", "low",
                                                   "high", "n")}
    for k in np.unique(which):
        xs, ys = x[which == k], y[which == k]
        half = z * ys.std(ddof=1) / math.sqrt(len(ys)) if len(ys) > 1 else math.nan
        for key, value in (("x", xs.mean()), ("x_lo", xs.min()), ("x_hi", xs.max()),
                           ("mean", ys.mean()), ("low", ys.mean() - half),
                           ("high", ys.mean() + half), ("n", len(ys))):
            out[key].append(float(value))
    return {k: np.asarray(v) for k, v in out.items()}


def merge_equal_series(series: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Series that hold the same values drawn as one, labelled ``"a = b"``: on an ASCII
    text perplexity per character equals perplexity per byte, and two lines drawn on the
    same points would hide one under the other (its legend entry naming nothing seen)."""
    groups: list[tuple[list[str], np.ndarray]] = []  # in the order of first appearance
    for label, values in series.items():
        for names, kept in groups:
            if kept.shape == values.shape and np.allclose(kept, values, rtol=1e-12, atol=0,
                                                          equal_nan=True):
                names.append(label)
                break
        else:
            groups.append(([label], values))
    return {" = ".join(names): values for names, values in groups}
