"""Cross-validated Gaussian log-likelihood of an ordinary-least-squares regression.

For each fold, the regression (with an intercept) is fitted on the other folds and each
held-out row gets the log-density of its value under Normal(prediction, sigma), sigma =
sqrt(RSS / (n_train - p)) of the training fit: what R's ``lm`` with ``sigma()`` and
``dnorm(log = TRUE)`` give, as the reading-time literature computes it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

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
    rank = 0
    for j in range(x.shape[1]):
        grown = np.linalg.matrix_rank(x[:, : j + 1])
        if grown == rank:
            raise ReadingTimeError(f"predictor {names[j - 1]!r} is collinear with the "
                                   f"intercept and {names[: j - 1]} on the rows used (a linear "
                                   "combination of them): the design is rank-deficient")
        rank = grown


def held_out_log_density(y: np.ndarray, x: np.ndarray, folds: np.ndarray) -> HeldOut:
    """Cross-validated log-density of each row of ``y`` under the OLS fit of ``y`` on
    ``x`` (which holds its intercept column) made without that row's fold."""
    log_density = np.empty(len(y))
    predicted = np.empty(len(y))
    p = x.shape[1]
    for k in np.unique(folds):
        test = folds == k
        train = ~test
        n_train = int(train.sum())
        if n_train <= p:
            raise ReadingTimeError(f"fold {k}: {n_train} training row(s) for {p} coefficients; "
                                   "OLS with a residual sigma needs more training rows than "
                                   "coefficients (use fewer folds or predictors, or more rows)")
        coef, _, rank, _ = np.linalg.lstsq(x[train], y[train], rcond=None)
        if rank < p:  # sigma's df uses the rank, as R's lm does
            warnings.warn(f"fold {k}: the training design has rank {rank} < {p} coefficients "
                          "(a predictor is constant or collinear on the other folds); fitted "
                          "by minimum-norm least squares, sigma on n - rank degrees of "
                          "freedom (R's lm would drop the aliased coefficients)",
                          ReadingTimeWarning, stacklevel=3)
        residual = y[train] - x[train] @ coef
        sigma = np.sqrt(residual @ residual / (n_train - rank))
        mean = x[test] @ coef
        predicted[test] = mean
        z = (y[test] - mean) / sigma
        log_density[test] = -_HALF_LOG_2PI - np.log(sigma) - 0.5 * z * z
    return HeldOut(log_density=log_density, predicted=predicted)
