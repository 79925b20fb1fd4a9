"""Psychometric predictive power: ΔLL, the mean per-word gain in held-out log-likelihood
of reading times when target predictors (surprisal) join a baseline (length, frequency).

``delta_ll`` fits both regressions by OLS on the same rows and the same folds (see
core/reading/: spillover.py for the rows, fold_layout.py for the folds, held_out_ll.py for
the fit) and returns a ``DeltaLL``; ``DeltaLL.compare`` pairs two of them on the same rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from .fold_layout import FoldBy, lay_folds
from .gam.fit import check_method
from .gam.formula import is_smooth_term
from .gam.reading import edf_summary, gam_delta_parts
from .held_out_ll import (
    check_fold_sizes,
    check_full_rank,
    design_matrix,
    held_out_log_density,
    per_word_frame,
)
from .permutation import PermutationTest, check_resamples, sign_flip_test
from .spillover import ReadingTimeError, as_names, build_design, check_columns, lag_name

__all__ = ["DeltaLL", "PairedDifference", "PermutationTest", "ReadingTimeError", "delta_ll"]


def _z(level: float) -> float:
    """The two-sided normal quantile of ``level``; 0.95 is 1.96 exactly, as the papers
    (and their R scripts) report ``mean +/- 1.96 * se``."""
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, not {level!r}")
    return 1.96 if level == 0.95 else NormalDist().inv_cdf(0.5 + level / 2)


def _mean_se(values: np.ndarray) -> tuple[float, float]:
    n = len(values)
    mean = float(np.mean(values)) if n else math.nan
    se = float(np.std(values, ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    return mean, se


#: the paired tests ``DeltaLL.compare`` runs
TESTS = ("normal", "permutation")


@dataclass(frozen=True)
class PairedDifference:
    """Per-word difference of two ΔLL results on the same rows (``first - second``), its
    mean, SE and a two-sided ``p_value`` by ``test``: ``"normal"`` (the paired mean over
    its SE against a normal: n is hundreds of words or more) or ``"permutation"`` (signs
    of the differences flipped at random, ``permutation`` holds its resamples and seed).
    ``p_value_normal`` is the normal approximation whichever test ran."""

    per_word: pd.Series
    mean: float
    se: float
    n: int
    test: str = "normal"
    permutation: PermutationTest | None = None

    @property
    def p_value_normal(self) -> float:
        if not self.se > 0:
            return math.nan
        return math.erfc(abs(self.mean / self.se) / math.sqrt(2))

    @property
    def p_value(self) -> float:
        return self.permutation.p_value if self.permutation is not None \
            else self.p_value_normal

    def ci(self, level: float = 0.95) -> tuple[float, float]:
        half = _z(level) * self.se
        return self.mean - half, self.mean + half

    def __repr__(self) -> str:
        how = "normal approximation"
        if self.permutation is not None:
            r = self.permutation
            how = (f"permutation, exact over {r.resamples:,} sign vectors" if r.exact else
                   f"permutation, {r.resamples:,} random sign flips, seed {r.seed}")
        return (f"PairedDifference(mean={self.mean:.5g}, se={self.se:.3g}, n={self.n}, "
                f"p_value={self.p_value:.4g} ({how}))")


@dataclass(frozen=True)
class DeltaLL:
    """ΔLL of a target regression over a baseline: ``mean`` (nats per word), ``se``,
    ``n`` (rows used), ``per_word`` (index = the input's labels: ``fold``,
    ``ll_baseline``, ``ll_target``, ``delta_ll``, ``rt_predicted``, ``rt_residual`` of
    the target fit), ``dropped`` (label -> ``reason``) and ``settings``; with smooth
    terms, ``smooth_edf``: the effective degrees of freedom of each fold's fitted smooths
    (``model`` baseline/target, ``fold``, ``term``, ``edf``; ``edf`` summarises them)."""

    per_word: pd.DataFrame
    dropped: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)
    smooth_edf: pd.DataFrame | None = None

    @property
    def edf(self) -> pd.DataFrame | None:
        """Per fit and smooth term, the mean, min and max effective degrees of freedom
        over the folds (None for an OLS result)."""
        if self.smooth_edf is None:
            return None
        return edf_summary(self.smooth_edf)

    @property
    def n(self) -> int:
        return len(self.per_word)

    @property
    def mean(self) -> float:
        return _mean_se(self.per_word["delta_ll"].to_numpy())[0]

    @property
    def se(self) -> float:
        return _mean_se(self.per_word["delta_ll"].to_numpy())[1]

    def ci(self, level: float = 0.95) -> tuple[float, float]:
        """mean -/+ z * se (0.95: 1.96, the papers' interval)."""
        half = _z(level) * self.se
        return self.mean - half, self.mean + half

    def compare(self, other: DeltaLL, test: str = "normal", *, n: int = 10_000,
                seed: int | None = None) -> PairedDifference:
        """This result's per-word ΔLL minus ``other``'s, on the same rows (rule: a paired
        comparison needs the same words, so the same rows must be used by both), with
        the p-value of ``test``: ``"normal"`` (default) or ``"permutation"`` (``n`` random
        sign flips drawn with ``seed``; exact when 2**words <= n)."""
        if test not in TESTS:
            raise ReadingTimeError(f"test must be one of {list(TESTS)}, not {test!r}")
        if not isinstance(other, DeltaLL):
            raise ReadingTimeError(f"compare needs another DeltaLL, not {type(other).__name__}")
        if test == "permutation":
            check_resamples(n)
        mine, theirs = self.per_word.index, other.per_word.index
        if not mine.equals(theirs):
            only = mine.difference(theirs).tolist()[:5] or theirs.difference(mine).tolist()[:5]
            raise ReadingTimeError(f"a paired comparison needs both results on the same rows; "
                                   f"they differ (e.g. rows {only}, {len(mine)} vs "
                                   f"{len(theirs)} rows)")
        diff = self.per_word["delta_ll"] - other.per_word["delta_ll"]
        mean, se = _mean_se(diff.to_numpy())
        permutation = sign_flip_test(diff.to_numpy(), n, seed) if test == "permutation" \
            else None
        return PairedDifference(per_word=diff, mean=mean, se=se, n=len(diff), test=test,
                                permutation=permutation)

    def __repr__(self) -> str:
        low, high = self.ci()
        return (f"DeltaLL(mean={self.mean:.5g}, se={self.se:.3g}, ci95=({low:.5g}, "
                f"{high:.5g}), n={self.n}, dropped={len(self.dropped)})")


def delta_ll(frame: pd.DataFrame, rt: str, target: str | Sequence[str],
             baseline: str | Sequence[str], *, spillover: int = 2,
             by: str | Sequence[str] | None = None, folds: int = 10,
             fold_by: FoldBy = "contiguous", seed: int | None = None,
             method: str = "GCV.Cp") -> DeltaLL:
    """ΔLL of ``target`` columns added to the ``baseline`` columns in an OLS regression of
    the reading time ``rt``, each predictor with its values for the ``spillover`` previous
    rows of its ``by`` group. Rows missing the reading time, a used value or their
    predecessors are dropped (``.dropped`` says why) before the folds are laid:
    ``contiguous`` (R's ``cut(seq(1, n), breaks = folds)``, Wilcox et al. 2023),
    ``group`` (whole ``by`` groups) or ``random`` (shuffled with ``seed``).

    Terms may be smooths spelled as in R's mgcv (``"s(surp, bs='cr', k=6)"``,
    ``"te(freq, len, bs='cr')"``) beside plain columns: both regressions are then fitted
    as ``mgcv::gam(method = method)`` fits them (core/reading/gam/: ``"GCV.Cp"``, mgcv's
    default, or ``"REML"``), each smooth lagged like a column, and ``smooth_edf`` reports
    the smooths' effective degrees of freedom. ``method`` has no effect on an OLS fit."""
    if not isinstance(frame, pd.DataFrame):
        raise ReadingTimeError(f"frame must be a pandas DataFrame, not {type(frame).__name__}")
    target, baseline = as_names(target, "target"), as_names(baseline, "baseline")
    check_method(method)
    by_names = None if by is None else as_names(by, "by")
    if isinstance(spillover, bool) or not isinstance(spillover, (int, np.integer)) \
            or spillover < 0:
        raise ReadingTimeError(f"spillover must be a non-negative integer, not {spillover!r}")
    if any(is_smooth_term(t) and t not in frame.columns for t in target + baseline):
        per_word, dropped, settings, smooth_edf = gam_delta_parts(
            frame, rt, target, baseline, spillover=int(spillover), by=by_names, folds=folds,
            fold_by=fold_by, seed=seed, method=method)
        return DeltaLL(per_word=per_word, dropped=dropped, settings=settings,
                       smooth_edf=smooth_edf)
    both = [c for c in baseline if c in target]
    if both:
        raise ReadingTimeError(f"column(s) {both} are in both baseline and target: the target "
                               "regression is the baseline plus the target columns")
    check_columns(frame, [rt], "rt")
    check_columns(frame, baseline, "baseline")
    check_columns(frame, target, "target")
    if by_names is not None:
        check_columns(frame, by_names, "by")
    if rt in baseline + target:
        raise ReadingTimeError(f"the reading time {rt!r} cannot also be a predictor")
    design = build_design(frame, rt, baseline + target, spillover=spillover, by=by_names)
    fold = lay_folds(len(design.y), folds, fold_by, groups=design.groups, seed=seed)

    def with_lags(names: list[str]) -> list[str]:
        return names + [lag_name(c, k) for k in range(1, spillover + 1) for c in names]

    names_base, names_target = with_lags(baseline), with_lags(baseline + target)
    x_target = design_matrix(design.columns, names_target)
    check_fold_sizes(fold, x_target.shape[1])
    check_full_rank(x_target, names_target)
    base = held_out_log_density(design.y, design_matrix(design.columns, names_base), fold)
    full = held_out_log_density(design.y, x_target, fold)
    per_word = per_word_frame(design.y, base, full, fold, frame.index[design.keep])
    settings = {"rt": rt, "target": target, "baseline": baseline, "spillover": spillover,
                "by": by_names, "folds": int(fold.max()), "folds_asked": folds,
                "fold_by": fold_by, "seed": seed,
                "predictors_baseline": names_base, "predictors_target": names_target,
                "n_dropped": len(design.dropped)}
    return DeltaLL(per_word=per_word, dropped=design.dropped, settings=settings)

