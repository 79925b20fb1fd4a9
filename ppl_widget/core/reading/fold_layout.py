"""Which cross-validation fold each row of a regression belongs to.

Three layouts: ``contiguous`` (blocks of rows in order, as R's ``cut(seq(1, n), breaks =
folds, labels = FALSE)`` lays them: the layout of Wilcox et al. 2023's R scripts),
``group`` (whole groups, e.g. texts, so no text is both fitted and predicted) and
``random`` (rows shuffled with a seed, then cut into near-equal blocks).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

FoldBy = Literal["contiguous", "group", "random"]
FOLD_LAYOUTS: tuple[str, ...] = ("contiguous", "group", "random")


class FoldError(ValueError):
    """The rows cannot be laid into the folds asked for."""


def r_seq_length_out(start: float, stop: float, length_out: int) -> np.ndarray:
    """R's ``seq.int(start, stop, length.out = n)`` to the last bit: the first half counted
    up from ``start``, the second half down from ``stop`` (R's seq.c)."""
    out = np.empty(length_out, dtype=np.float64)
    out[0], out[-1] = start, stop
    if length_out > 2:
        step = (stop - start) / (length_out - 1)
        i = np.arange(1, length_out - 1)
        out[1:-1] = np.where(i < length_out // 2, start + i * step,
                             stop - (length_out - 1 - i) * step)
    return out


def r_cut_codes(x: np.ndarray, breaks: int) -> np.ndarray:
    """``cut(x, breaks = breaks, labels = FALSE)`` in R: ``breaks`` equal-width bins over the
    range of ``x``, right-closed ``(a, b]``, the outer edges widened by range/1000
    (R's cut.default and .bincode); codes 1..breaks."""
    x = np.asarray(x, dtype=np.float64)
    low, high = float(x.min()), float(x.max())
    span = high - low
    if span == 0:  # R: one value -> bins of +/- |x|/1000 around it
        half = abs(low) / 1000 if low != 0 else 0.001
        edges = r_seq_length_out(low - half, high + half, breaks + 1)
    else:
        edges = r_seq_length_out(low, high, breaks + 1)
        edges[0], edges[-1] = low - span / 1000, high + span / 1000
    # .bincode with right = TRUE: code i when edges[i-1] < x <= edges[i]
    return np.searchsorted(edges, x, side="left").astype(np.int64)


def lay_folds(n_rows: int, folds: int, fold_by: FoldBy, *, groups: np.ndarray | None = None,
              seed: int | None = None) -> np.ndarray:
    """Fold number (1..k) of each of ``n_rows`` rows. ``groups``: one group code per row
    (needed for ``fold_by="group"``; groups are numbered in order of first appearance and
    cut into ``min(folds, number of groups)`` contiguous blocks of whole groups)."""
    if fold_by not in FOLD_LAYOUTS:
        raise FoldError(f"fold_by must be one of {list(FOLD_LAYOUTS)}, not {fold_by!r}")
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2:
        raise FoldError(f"folds must be an integer of at least 2 (cross-validation needs a "
                        f"held-out part), not {folds!r}")
    if n_rows < folds:
        raise FoldError(f"{n_rows} usable row(s) cannot fill {folds} folds: every fold needs "
                        "at least one held-out row")
    if fold_by == "contiguous":
        return r_cut_codes(np.arange(1, n_rows + 1), folds)
    if fold_by == "random":
        order = np.random.default_rng(seed).permutation(n_rows)
        out = np.empty(n_rows, dtype=np.int64)
        out[order] = r_cut_codes(np.arange(1, n_rows + 1), folds)
        return out
    if groups is None:
        raise FoldError('fold_by="group" needs by= (the groups, e.g. a text id column)')
    _, first, codes = np.unique(groups, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)  # group number in order of appearance
    rank[np.argsort(first, kind="stable")] = np.arange(1, len(first) + 1)
    n_groups = len(first)
    if n_groups < 2:
        raise FoldError('fold_by="group" needs at least 2 groups with usable rows; there is '
                        f"{n_groups}")
    return r_cut_codes(np.arange(1, n_groups + 1), min(folds, n_groups))[rank[codes] - 1]
