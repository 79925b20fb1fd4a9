"""Cross-validated Gaussian log-likelihood of a GAM, as Wilcox et al. (TACL 2023) compute it
in R: per fold, ``gam()`` on the other folds (its bases, knots included, from those rows),
then per held-out row ``log(dnorm(rt, predict(m, newdata = test), sigma(m)))``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..held_out_ll import HeldOut
from ..spillover import ReadingTimeError
from .fit import fit_gam
from .formula import Term

_HALF_LOG_2PI = 0.5 * np.log(2 * np.pi)


def gam_held_out_log_density(y: np.ndarray, columns: dict[str, np.ndarray], terms: list[Term],
                             folds: np.ndarray, method: str = "GCV.Cp"
                             ) -> tuple[HeldOut, pd.DataFrame]:
    """Per row, the held-out log-density under the GAM fitted without its fold; and per
    fold and smooth term, the fit's effective degrees of freedom and smoothing parameters
    (columns ``fold``, ``term``, ``edf``)."""
    used = sorted({c for t in terms for c in t.columns})
    log_density = np.empty(len(y))
    predicted = np.empty(len(y))
    rows = []
    for key in np.unique(folds):
        test = folds == key
        train = ~test
        try:
            fit = fit_gam(y[train], {c: columns[c][train] for c in used}, terms, method)
        except ReadingTimeError as error:
            raise ReadingTimeError(f"fold {key} (fitted on the other folds): {error}") from None
        if fit.n <= len(fit.coef):
            raise ReadingTimeError(f"fold {key}: {fit.n} training row(s) for {len(fit.coef)} "
                                   "coefficients; sigma needs more rows than coefficients")
        mean = fit.predict({c: columns[c][test] for c in used})
        z = (y[test] - mean) / fit.sigma
        log_density[test] = -_HALF_LOG_2PI - np.log(fit.sigma) - 0.5 * z * z
        predicted[test] = mean
        rows += [{"fold": int(key), "term": label, "edf": edf}
                 for label, edf in fit.edf.items()]
    return HeldOut(log_density=log_density, predicted=predicted), pd.DataFrame(rows)
