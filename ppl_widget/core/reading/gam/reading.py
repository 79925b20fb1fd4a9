"""ΔLL with smooth terms: the rows, lags and folds of ``delta_ll`` (spillover.py,
fold_layout.py), each fold's baseline and target fitted as mgcv's ``gam()`` fits them
(held_out.py), the effective degrees of freedom of every fold's smooths kept."""

from __future__ import annotations

import pandas as pd

from ..fold_layout import FoldBy, lay_folds
from ..held_out_ll import per_word_frame
from ..spillover import ReadingTimeError, build_design, check_columns, lag_name
from .fit import check_method
from .formula import Smooth, Term, as_terms, lagged
from .held_out import gam_held_out_log_density


def _with_lags(terms: list[Term], spillover: int) -> list[Term]:
    return terms + [lagged(t, k, lag_name) for k in range(1, spillover + 1) for t in terms]


def _columns_of(terms: list[Term]) -> list[str]:
    return list(dict.fromkeys(c for t in terms for c in t.columns))


def _checked_terms(frame: pd.DataFrame, terms: list[str], what: str) -> list[Term]:
    parsed = as_terms(terms, frame.columns)
    seen = [t.label for t in parsed]
    twice = sorted({x for x in seen if seen.count(x) > 1})
    if twice:
        raise ReadingTimeError(f"{what} names term(s) {twice} more than once")
    for term in parsed:
        check_columns(frame, list(term.columns),
                      f"{what} term {term.text!r}" if isinstance(term, Smooth) else what)
    return parsed


def gam_delta_many(frame: pd.DataFrame, rt: str, targets: dict[str, list[str]],
                   baseline: list[str], *, spillover: int, by: list[str] | None, folds: int,
                   fold_by: FoldBy, seed: int | None, method: str = "GCV.Cp"
                   ) -> dict[str, tuple[pd.DataFrame, pd.DataFrame, dict, pd.DataFrame]]:
    """Per named target, ``(per_word, dropped, settings, smooth_edf)`` of its ΔLL over
    ``baseline`` (terms as in an R formula) with GAM fits by ``method``, every target on the
    same rows (those with every column any of them uses) and folds, the baseline fitted
    once per fold for all of them; ``smooth_edf`` has one row per fit, fold and smooth term
    (``model`` baseline/target, ``fold``, ``term``, ``edf``)."""
    check_method(method)
    check_columns(frame, [rt], "rt")
    base_terms = _checked_terms(frame, baseline, "baseline")
    labels = [t.label for t in base_terms]
    target_terms = {}
    for name, target in targets.items():
        parsed = _checked_terms(frame, target, "target")
        both = [t.label for t in parsed if t.label in labels]
        if both:
            raise ReadingTimeError(f"term(s) {both} are in both baseline and target: the "
                                   "target model is the baseline plus the target terms")
        target_terms[name] = parsed
    used = _columns_of(base_terms + [t for ts in target_terms.values() for t in ts])
    if rt in used:
        raise ReadingTimeError(f"the reading time {rt!r} cannot also be a predictor")
    design = build_design(frame, rt, used, spillover=spillover, by=by)
    fold = lay_folds(len(design.y), folds, fold_by, groups=design.groups, seed=seed)
    fit_base = _with_lags(base_terms, spillover)
    base, base_edf = gam_held_out_log_density(design.y, design.columns, fit_base, fold,
                                              method=method)
    out = {}
    for name, parsed in target_terms.items():
        # target terms first, as the papers' R formulas write them (y ~ s(surp) + te(freq,
        # len)): the same model, and mgcv's column order, so near-singular fits round alike
        fit_target = _with_lags(parsed + base_terms, spillover)
        full, full_edf = gam_held_out_log_density(design.y, design.columns, fit_target, fold,
                                                  method=method)
        per_word = per_word_frame(design.y, base, full, fold, frame.index[design.keep])
        smooth_edf = pd.concat([base_edf.assign(model="baseline"),
                                full_edf.assign(model="target")], ignore_index=True)
        smooth_edf = smooth_edf.reindex(columns=["model", "fold", "term", "edf"])
        settings = {"rt": rt, "target": targets[name], "baseline": baseline,
                    "spillover": spillover, "by": by, "folds": int(fold.max()),
                    "fold_by": fold_by, "seed": seed,
                    "predictors_baseline": [t.label for t in fit_base],
                    "predictors_target": [t.label for t in fit_target],
                    "n_dropped": len(design.dropped), "method": method,
                    "fit": f"gam (mgcv {method})"}
        out[name] = (per_word, design.dropped, settings, smooth_edf)
    return out


def gam_delta_parts(frame: pd.DataFrame, rt: str, target: list[str], baseline: list[str], *,
                    spillover: int, by: list[str] | None, folds: int, fold_by: FoldBy,
                    seed: int | None, method: str = "GCV.Cp"
                    ) -> tuple[pd.DataFrame, pd.DataFrame, dict, pd.DataFrame]:
    """``(per_word, dropped, settings, smooth_edf)`` of the ΔLL of ``target`` over
    ``baseline`` with GAM fits (``gam_delta_many`` with one target)."""
    return gam_delta_many(frame, rt, {"target": target}, baseline, spillover=spillover,
                          by=by, folds=folds, fold_by=fold_by, seed=seed,
                          method=method)["target"]


def edf_summary(smooth_edf: pd.DataFrame) -> pd.DataFrame:
    """Per fit (baseline/target) and smooth term: the mean, min and max edf over folds."""
    return (smooth_edf.groupby(["model", "term"], sort=False)["edf"]
            .agg(["mean", "min", "max"]).reset_index())

