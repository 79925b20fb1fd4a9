"""Is reading time linear in surprisal? ``link_shape`` fits, over one baseline and on the
same rows and folds, a target with surprisal as plain (linear) predictors and a target with
a smooth of each (non-linear), and tests their per-word difference: the comparison of
Wilcox, Pimentel, Meister, Cotterell and Levy (TACL 2023), whose R script
(analysis/analysis_link.Rmd) fits, per language and model,

- baseline: ``gaze_rt ~ te(freq, len, bs = 'cr') + te(prev_freq, prev_len, bs = 'cr')``
- linear: the baseline + ``surp + prev_surp``
- non-linear: the baseline + ``s(surp, bs = 'cr', k = 6) + s(prev_surp, bs = 'cr', k = 6)``

on ten contiguous folds and compares the two ΔLLs with a paired permutation test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .fold_layout import FoldBy
from .gam.effect import gam_term_effect
from .gam.fit import METHODS, check_method
from .gam.formula import is_smooth_term
from .gam.reading import gam_delta_many
from .predictive_power import TESTS, DeltaLL, PairedDifference, delta_ll
from .spillover import ReadingTimeError, as_names

#: the paper's smooth of each surprisal column (mgcv's cubic regression spline, 6 knots)
SMOOTH_K = 6
#: the two fits ``link_effects`` draws
FITS = ("linear", "non-linear")
#: the columns of ``LinkShape.row()``
ROW_COLUMNS = ["dll_linear", "se_linear", "dll_nonlinear", "se_nonlinear", "difference",
               "se_difference", "p_value", "test", "n", "method", "conclusion"]
#: the significance level of a conclusion
ALPHA = 0.05


def smooth_term(column: str, k: int = SMOOTH_K) -> str:
    """The R spelling of a cubic-regression-spline smooth of ``column`` with ``k`` knots,
    as ``delta_ll`` reads it: ``s(surp, bs='cr', k=6)``."""
    return f"s({column}, bs='cr', k={k})"


@dataclass(frozen=True)
class LinkShape:
    """The linear and the non-linear target's ΔLL over the same baseline, on the same
    rows, and ``difference``: the non-linear minus the linear per word, with its
    ``p_value`` (``difference.test`` says which test)."""

    linear: DeltaLL
    nonlinear: DeltaLL
    difference: PairedDifference
    method: str = "GCV.Cp"

    @property
    def p_value(self) -> float:
        return self.difference.p_value

    def conclusion(self, alpha: float = ALPHA) -> str:
        """What the comparison says: ``"non-linear better"`` / ``"linear better"`` when the
        difference's p-value is below ``alpha``, else ``"no difference (non-linear
        ahead)"`` / ``"no difference (linear ahead)"`` by the sign of the mean."""
        ahead = "non-linear" if self.difference.mean > 0 else "linear"
        return f"{ahead} better" if self.p_value < alpha else f"no difference ({ahead} ahead)"

    def row(self) -> dict[str, Any]:
        """One row of a tidy table (``ROW_COLUMNS``)."""
        return {"dll_linear": self.linear.mean, "se_linear": self.linear.se,
                "dll_nonlinear": self.nonlinear.mean, "se_nonlinear": self.nonlinear.se,
                "difference": self.difference.mean, "se_difference": self.difference.se,
                "p_value": self.p_value, "test": self.difference.test, "n": self.linear.n,
                "method": self.method, "conclusion": self.conclusion()}

    def __repr__(self) -> str:
        d = self.difference
        return (f"LinkShape(linear ΔLL={self.linear.mean:.5g}, non-linear ΔLL="
                f"{self.nonlinear.mean:.5g}, difference={d.mean:.3g} (se {d.se:.3g}), "
                f"p={self.p_value:.4g} by {d.test}, n={self.linear.n}, {self.method})")


@dataclass(frozen=True)
class LinkMethods:
    """The same comparison under several smoothness selection methods (``shapes``: method
    -> LinkShape, same rows and folds): is the answer robust to the method?"""

    shapes: dict[str, LinkShape]

    def conclusions(self, alpha: float = ALPHA) -> dict[str, str]:
        return {m: shape.conclusion(alpha) for m, shape in self.shapes.items()}

    def differs(self, alpha: float = ALPHA) -> bool:
        """True when the methods' conclusions differ (the sign of non-linear minus linear,
        or whether its p-value is below ``alpha``)."""
        return len(set(self.conclusions(alpha).values())) > 1

    def rows(self) -> pd.DataFrame:
        """One ``LinkShape.row()`` per method, and ``conclusion_differs`` on each."""
        out = pd.DataFrame([shape.row() for shape in self.shapes.values()])
        out["conclusion_differs"] = self.differs()
        return out

    def row(self) -> dict[str, Any]:
        """One wide row: per method ``dll_linear_<method>``, ``dll_nonlinear_<method>``,
        ``difference_<method>``, ``p_value_<method>``, ``conclusion_<method>``; and
        ``conclusion_differs``."""
        out: dict[str, Any] = {}
        for method, shape in self.shapes.items():
            row = shape.row()
            for key in ("dll_linear", "dll_nonlinear", "difference", "p_value", "conclusion"):
                out[f"{key}_{method}"] = row[key]
        out["n"] = next(iter(self.shapes.values())).linear.n
        out["conclusion_differs"] = self.differs()
        return out

    def __repr__(self) -> str:
        parts = "; ".join(f"{m}: difference={s.difference.mean:.3g}, p={s.p_value:.3g}, "
                          f"{s.conclusion()}" for m, s in self.shapes.items())
        flag = "conclusions DIFFER" if self.differs() else "same conclusion"
        return f"LinkMethods({parts}; {flag})"


def _check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 3:
        raise ReadingTimeError(f"k (the smooth's basis size) must be an integer of at least 3 "
                               f"(a cubic regression spline needs 3 knots), not {k!r}")
    return int(k)


def _check_methods(method: str, methods: Sequence[str] | None) -> list[str]:
    if methods is None:
        return [check_method(method)]
    chosen = [methods] if isinstance(methods, str) else list(methods)
    if not chosen or len(set(chosen)) < len(chosen):
        raise ReadingTimeError(f"methods must name each of {list(METHODS)} at most once, "
                               f"not {methods!r}")
    return [check_method(m) for m in chosen]


def link_shape(frame: pd.DataFrame, rt: str, surprisal: str | Sequence[str],
               baseline: str | Sequence[str], *, k: int = SMOOTH_K,
               linear: Sequence[str] | None = None, nonlinear: Sequence[str] | None = None,
               spillover: int = 0, by: str | Sequence[str] | None = None, folds: int = 10,
               fold_by: FoldBy = "contiguous", test: str = "permutation", n: int = 10_000,
               seed: int | None = 0, method: str = "GCV.Cp",
               methods: Sequence[str] | None = None) -> LinkShape | LinkMethods:
    """ΔLL of surprisal as a linear predictor and as a smooth, over ``baseline`` (column
    names or smooth terms such as ``"te(freq, len, bs='cr')"``), with the per-word
    difference (non-linear - linear) tested by ``test`` (``"permutation"``: ``n`` random
    sign flips; ``"normal"``).

    ``surprisal``: the surprisal column(s), e.g. ``["surp", "prev_surp"]`` when the table
    carries its own spillover columns (then ``spillover=0``, the default). The linear
    target is these columns, the non-linear one ``s(col, bs='cr', k=k)`` of each; either
    can be given whole instead (``linear=`` / ``nonlinear=``). ``spillover``, ``by``,
    ``folds`` and ``fold_by`` are ``delta_ll``'s (default: the paper's ten contiguous
    folds); ``seed`` draws the random folds and the permutations. Both targets are fitted
    on the same rows (those with every column either uses), and the baseline once per
    fold for both.

    ``method``: mgcv's smoothness selection, ``"GCV.Cp"`` (the default, mgcv's and the
    paper's) or ``"REML"``. ``methods=("GCV.Cp", "REML")`` runs the comparison under each
    and returns a ``LinkMethods``: both results and whether their conclusions differ.
    """
    columns = as_names(surprisal, "surprisal")
    k = _check_k(k)
    chosen = _check_methods(method, methods)
    if test not in TESTS:
        raise ReadingTimeError(f"test must be one of {list(TESTS)}, not {test!r}")
    lin = as_names(linear, "linear") if linear is not None else columns
    smooth = as_names(nonlinear, "nonlinear") if nonlinear is not None else \
        [smooth_term(c, k) for c in columns]
    base = as_names(baseline, "baseline")
    if lin == smooth:
        raise ReadingTimeError(f"the linear and the non-linear target are the same terms "
                               f"{lin}: there is nothing to compare")
    options = {"spillover": spillover, "by": by, "folds": folds, "fold_by": fold_by,
               "seed": seed}
    shapes = {}
    for name in chosen:
        if any(is_smooth_term(t) and t not in frame.columns for t in lin + smooth + base):
            by_names = None if by is None else as_names(by, "by")
            parts = gam_delta_many(frame, rt, {"linear": lin, "nonlinear": smooth}, base,
                                   method=name, **{**options, "by": by_names})
            linear_ll, nonlinear_ll = (DeltaLL(per_word=p, dropped=d, settings=s,
                                               smooth_edf=e)
                                       for p, d, s, e in parts.values())
        else:  # no smooth anywhere: two OLS regressions, the method plays no part
            linear_ll = delta_ll(frame, rt, lin, base, **options)
            nonlinear_ll = delta_ll(frame, rt, smooth, base, **options)
        difference = nonlinear_ll.compare(linear_ll, test, n=n, seed=seed)
        shapes[name] = LinkShape(linear=linear_ll, nonlinear=nonlinear_ll,
                                 difference=difference, method=name)
    return shapes[chosen[0]] if methods is None else LinkMethods(shapes=shapes)


def link_effects(frame: pd.DataFrame, rt: str, surprisal: str | Sequence[str],
                 baseline: str | Sequence[str], *, k: int = SMOOTH_K,
                 x: Sequence[float] | np.ndarray | None = None, n: int = 101,
                 anchor: bool = True, se_mult: float = 2.0, method: str = "GCV.Cp",
                 methods: Sequence[str] | None = None) -> pd.DataFrame:
    """The fitted effect of surprisal on reading time, as a line (the linear model's
    ``coef * surprisal``) and as a smooth (the non-linear model's ``s(surprisal)``), each
    with its pointwise interval (effect -/+ ``se_mult`` standard errors, mgcv's
    ``predict(type = "terms", se.fit = TRUE)``), both models fitted on every usable row
    (no folds): the paper's link figure. The effect is of the first ``surprisal`` column;
    the others (``prev_surp``) stay in both models, as linear terms or smooths.

    ``x``: the surprisal values (default ``n`` evenly spaced over the rows' range).
    ``anchor``: shift each curve and its band so that the effect is 0 at the first ``x``
    (the paper: "0 surprisal = 0 ms"), so the two curves start together. Columns ``fit``
    (``"linear"``, ``"non-linear"``), ``x``, ``effect``, ``se``, ``lower``, ``upper``,
    ``method`` (mgcv's smoothness selection: ``method``, or each of ``methods``, whose
    curves are stacked); ``attrs``: the non-linear fit's ``edf`` (of the first method) and
    the rows ``n``."""
    columns = as_names(surprisal, "surprisal")
    base = as_names(baseline, "baseline")
    k = _check_k(k)
    first = columns[0]
    smooth = [smooth_term(c, k) for c in columns]
    parts, attrs = [], {}
    for name in _check_methods(method, methods):
        linear = gam_term_effect(frame, rt, columns + base, first, x=x, n=n,
                                 se_mult=se_mult, method=name)
        x = linear["x"].to_numpy()
        curved = gam_term_effect(frame, rt, smooth + base, smooth[0], x=x, se_mult=se_mult,
                                 method=name)
        attrs = attrs or {"edf": curved.attrs.get("edf"), "n": curved.attrs.get("n")}
        for fit, effect in zip(FITS, (linear, curved), strict=True):
            effect = effect.copy()
            if anchor:
                shift = float(effect["effect"].iloc[0])
                for c in ("effect", "lower", "upper"):
                    effect[c] = effect[c] - shift
            effect.insert(0, "fit", fit)
            effect["method"] = name
            parts.append(effect)
    out = pd.concat(parts, ignore_index=True)
    out.attrs.update(**attrs, term=smooth[0], anchored=anchor)
    return out
