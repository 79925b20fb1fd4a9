"""Cross-validated Gaussian log-likelihood of an ordinary-least-squares regression.

For each fold, the regression (with an intercept) is fitted on the other folds and each
held-out row gets the log-density of its value under Normal(prediction, sigma), sigma =
sqrt(RSS / (n_train - p)) of the training fit: what R's ``lm`` with ``sigma()`` and
``dnorm(log = TRUE)`` give, as the reading-time literature computes it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from .spillover import ReadingTimeError, ReadingTimeWarning

_HALF_LOG_2PI = 0.5 * np.log(2 * np.pi)


@dataclass(frozen=True)
class HeldOut:
    """Per row: the held-out log-density (nats) and the prediction it was scored around."""

    log_density: np.ndarray
    predicted: np.ndarray


def design_matrix(columns: dict[str, np.ndarray], names: list[str]) -> np.ndarray:
    """An intercept column followed by ``names``' columns."""
    n = len(next(iter(columns.values()))) if columns else 0
    return np.column_stack([np.ones(n)] + [columns[name] for name in names])


def check_full_rank(x: np.ndarray, names: list[str]) -> None:
    """Every predictor varies and none is a linear combination of the intercept and the
    ones before it, on the rows used (rule: OLS needs a full-rank design); the error names
    the first predictor that breaks it."""
    for j, name in enumerate(names, start=1):
        column = x[:, j]
        if np.ptp(column) == 0:
            raise ReadingTimeError(f"predictor {name!r} is constant ({column[0]!r}) on the "
                                   f"{len(column)} rows used: a constant predictor cannot "
                                   "be told apart from the intercept (rank-deficient design)")
    gram = _cross_products(_standardised(x))
    if _well_conditioned(gram):
        return
    for j in range(2, x.shape[1]):  # name the first column that adds no rank
        if not _well_conditioned(gram[: j + 1, : j + 1]):
            raise ReadingTimeError(f"predictor {names[j - 1]!r} is collinear with the "
                                   f"intercept and {names[: j - 1]} on the rows used (a linear "
                                   "combination of them): the design is rank-deficient")


#: a cross-product matrix of standardised columns more ill-conditioned than this is
#: treated as rank-deficient (float64 solves lose all digits near 1e16)
_MAX_CONDITION = 1e10


def _well_conditioned(gram: np.ndarray) -> bool:
    eig = np.linalg.eigvalsh(gram)
    return bool(eig[0] > 0 and eig[-1] / eig[0] < _MAX_CONDITION)


def _cross_products(x: np.ndarray) -> np.ndarray:
    return np.einsum("ni,nj->ij", x, x)


def _standardised(x: np.ndarray) -> np.ndarray:
    """The predictor columns centred and scaled (the intercept kept): the same fitted values,
    a better-conditioned cross-product matrix."""
    out = x.copy()
    out[:, 1:] -= x[:, 1:].mean(axis=0)
    scale = np.sqrt((out[:, 1:] ** 2).mean(axis=0))
    out[:, 1:] /= np.where(scale > 0, scale, 1.0)
    return out


def check_fold_sizes(folds: np.ndarray, p: int) -> np.ndarray:
    """The training rows of each fold (sorted fold order), each more than the ``p``
    coefficients (rule: OLS with a residual sigma needs n_train - p > 0)."""
    keys, fold_of = np.unique(folds, return_inverse=True)
    n_train = len(folds) - np.bincount(fold_of, minlength=len(keys))
    short = np.flatnonzero(n_train <= p)
    if len(short):
        k = short[0]
        raise ReadingTimeError(f"fold {keys[k]}: {n_train[k]} training row(s) for {p} "
                               "coefficients; OLS with a residual sigma needs more training "
                               "rows than coefficients (use fewer folds or predictors, or more "
                               "rows)")
    return n_train


def held_out_log_density(y: np.ndarray, x: np.ndarray, folds: np.ndarray) -> HeldOut:
    """Cross-validated log-density of each row of ``y`` under the OLS fit of ``y`` on
    ``x`` (which holds its intercept column) made without that row's fold.

    All folds at once: each fold's training cross-products are the total minus its own
    (standardised columns keep them well conditioned), solved as one batch; a fold whose
    training design is rank-deficient is refitted by least squares, with a warning."""
    x = _standardised(x)
    keys, fold_of = np.unique(folds, return_inverse=True)
    p = x.shape[1]
    n_train = check_fold_sizes(folds, p)
    order = np.argsort(fold_of, kind="stable")
    starts = np.searchsorted(fold_of[order], np.arange(len(keys)))
    xtx = np.add.reduceat(np.einsum("ni,nj->nij", x, x)[order], starts, axis=0)
    xty = np.add.reduceat((x * y[:, None])[order], starts, axis=0)
    gram, moment = xtx.sum(axis=0) - xtx, xty.sum(axis=0) - xty
    rank = np.full(len(keys), p)
    coef = np.empty((len(keys), p))
    for k in range(len(keys)):
        if _well_conditioned(gram[k]):
            coef[k] = np.linalg.solve(gram[k], moment[k])
        else:  # sigma's df uses the rank, as R's lm does
            train = fold_of != k
            coef[k], _, rank[k], _ = np.linalg.lstsq(x[train], y[train], rcond=None)
            warnings.warn(f"fold {keys[k]}: the training design has rank {rank[k]} < {p} "
                          "coefficients (a predictor is constant or collinear on the other "
                          "folds); fitted by minimum-norm least squares, sigma on n - rank "
                          "degrees of freedom (R's lm would drop the aliased coefficients)",
                          ReadingTimeWarning, stacklevel=3)
    fitted = np.einsum("np,kp->nk", x, coef)  # every row under every fold's fit
    squared = (y[:, None] - fitted) ** 2
    rss = squared.sum(axis=0) - np.bincount(fold_of, weights=squared[np.arange(len(y)), fold_of],
                                            minlength=len(keys))
    sigma = np.sqrt(rss / (n_train - rank))
    predicted = fitted[np.arange(len(y)), fold_of]
    z = (y - predicted) / sigma[fold_of]
    log_density = -_HALF_LOG_2PI - np.log(sigma[fold_of]) - 0.5 * z * z
    return HeldOut(log_density=log_density, predicted=predicted)


def per_word_frame(y: np.ndarray, baseline: HeldOut, target: HeldOut, fold: np.ndarray,
                   index: Any) -> Any:
    """The per-word table of a ΔLL (OLS or GAM fits alike): each held-out row's fold, both
    log-densities, their difference, and the target model's prediction and residual."""
    import pandas as pd

    return pd.DataFrame({"fold": fold, "ll_baseline": baseline.log_density,
                         "ll_target": target.log_density,
                         "delta_ll": target.log_density - baseline.log_density,
                         "rt_predicted": target.predicted,
                         "rt_residual": y - target.predicted}, index=index)
