"""A Gaussian GAM fitted as R's ``mgcv::gam()`` fits it (identity link, GCV), and what the
reading-time analyses read from it: coefficients, effective degrees of freedom per term,
``sigma`` as R's ``sigma(model)`` returns it, predictions at new rows.

``sigma``: R has no ``sigma`` method for a gam, so ``sigma(m)`` is ``stats:::sigma.default``,
``sqrt(deviance / (nobs - number of coefficients))``: the residual sum of squares over ``n``
minus ALL the model matrix's columns (not its effective degrees of freedom). mgcv's own
scale estimate ``m$sig2`` (RSS / (n - sum(edf))) is ``scale`` here; it is what the
posterior covariance ``Vp`` (intervals of the smooths) uses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..spillover import ReadingTimeError
from .design import Design, build_design
from .formula import Term, parse_terms
from .gcv import GcvFit
from .magic import fit_gcv
from .newton import fit_reml

#: smoothness selection methods, as mgcv's ``gam(method = ...)`` names them
METHODS = ("GCV.Cp", "REML")


@dataclass(frozen=True)
class GamFit:
    """A fitted GAM: ``design`` (bases fixed by the fit's rows), ``gcv`` (the optimum),
    ``n`` rows."""

    design: Design
    gcv: GcvFit
    n: int

    @property
    def coef(self) -> np.ndarray:
        return self.gcv.coef

    @property
    def smoothing_parameters(self) -> dict[str, float]:
        """mgcv's ``m$sp``, named as it names them (``te(freq,len)1``, ...)."""
        out, counts = {}, {}
        for pen in self.design.penalties:
            label = self.design.smooths[pen.smooth].label
            counts[label] = counts.get(label, 0) + 1
        seen: dict[str, int] = {}
        for pen, rho in zip(self.design.penalties, self.gcv.log_sp, strict=True):
            label = self.design.smooths[pen.smooth].label
            seen[label] = seen.get(label, 0) + 1
            out[label + (str(seen[label]) if counts[label] > 1 else "")] = float(np.exp(rho))
        return out

    @property
    def edf(self) -> dict[str, float]:
        """Effective degrees of freedom of each smooth term (mgcv's ``summary(m)$edf``: the
        sum of ``m$edf`` over the term's coefficients)."""
        return {sm.label: float(self.gcv.edf[a:b].sum())
                for sm, (a, b) in zip(self.design.smooths, self.design.spans, strict=True)}

    @property
    def total_edf(self) -> float:
        return float(self.gcv.edf.sum())

    @property
    def sigma(self) -> float:
        """R's ``sigma(m)``: sqrt(RSS / (n - number of coefficients))."""
        return float(np.sqrt(self.gcv.rss / (self.n - len(self.coef))))

    @property
    def scale(self) -> float:
        """mgcv's ``m$sig2``: RSS / (n - total edf)."""
        return float(self.gcv.rss / (self.n - self.total_edf))

    @property
    def covariance(self) -> np.ndarray:
        """mgcv's ``m$Vp``: the Bayesian posterior covariance ``(X'X + S)^-1 scale``."""
        return self.gcv.m_inv * self.scale

    def predict(self, columns: dict[str, np.ndarray]) -> np.ndarray:
        """``predict(m, newdata)``: the linear predictor at new rows."""
        return self.design.matrix(columns) @ self.coef


def check_method(method: str) -> str:
    """The smoothness selection method, checked (rule: one of mgcv's methods supported
    here, spelled as mgcv spells them)."""
    if method not in METHODS:
        raise ReadingTimeError(f"method must be one of {list(METHODS)} (mgcv's names), not "
                               f"{method!r}")
    return method


def fit_gam(y: np.ndarray, columns: dict[str, np.ndarray], terms: list[str] | list[Term],
            method: str = "GCV.Cp") -> GamFit:
    """``gam(y ~ terms, method = method)`` on rows where every column is present (no
    missing values); ``method`` ``"GCV.Cp"`` (mgcv's default) or ``"REML"``."""
    check_method(method)
    parsed = parse_terms(terms) if terms and isinstance(terms[0], str) else list(terms)
    design = build_design(parsed, columns)
    penalties = [(p.matrix, p.start) for p in design.penalties]
    fit = fit_reml if method == "REML" and penalties else fit_gcv
    gcv = fit(design.X, np.asarray(y, dtype=np.float64), penalties)
    return GamFit(design=design, gcv=gcv, n=len(y))
