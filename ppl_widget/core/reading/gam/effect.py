"""The fitted effect of one term of a GAM with its pointwise interval, as mgcv's
``predict(m, newdata, type = "terms", se.fit = TRUE)`` gives it and ``plot.gam`` draws it
(the smooth's own contribution, centred by its sum-to-zero constraint; ``se`` from the
Bayesian covariance ``Vp``; a plain column's effect is ``coef * x``, uncentred as mgcv
returns it), for the link chart: reading time against surprisal."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..spillover import ReadingTimeError, check_columns, numeric
from .fit import GamFit, fit_gam
from .formula import Linear, Smooth, Term, as_terms


def _find(terms: list[Term], term: str) -> Term:
    wanted = as_terms([term], [])[0].label if "(" in term else term
    for t in terms:
        if t.label == wanted:
            return t
    raise ReadingTimeError(f"term {term!r} is not in the model's terms "
                           f"{[t.label for t in terms]}")


def term_effect(fit: GamFit, term: str, x: np.ndarray, *, se_mult: float = 2.0
                ) -> pd.DataFrame:
    """The effect of the fitted model's ``term`` (a 1-D smooth or a plain column) at
    values ``x``: columns ``x``, ``effect``, ``se``, ``lower``, ``upper`` (effect -/+
    ``se_mult`` se; 2 is plot.gam's band)."""
    x = np.asarray(x, dtype=np.float64)
    design = fit.design
    if term in design.linear:
        j = 1 + design.linear.index(term)
        effect = fit.coef[j] * x
        se = np.abs(x) * np.sqrt(fit.covariance[j, j])
    else:
        labels = [sm.label for sm in design.smooths]
        wanted = as_terms([term], [])[0].label
        if wanted not in labels:
            raise ReadingTimeError(f"term {term!r} is not in the model's terms "
                                   f"{['(Intercept)', *design.linear, *labels]}")
        index = labels.index(wanted)
        smooth = design.smooths[index]
        if len(smooth.term.variables) != 1:
            raise ReadingTimeError(f"term {term!r} is a smooth of "
                                   f"{len(smooth.term.variables)} columns; an effect curve "
                                   "needs a smooth of one column")
        a, b = design.spans[index]
        xt = smooth.matrix({smooth.term.variables[0]: x})
        effect = xt @ fit.coef[a:b]
        se = np.sqrt(np.einsum("ij,jk,ik->i", xt, fit.covariance[a:b, a:b], xt))
    return pd.DataFrame({"x": x, "effect": effect, "se": se, "lower": effect - se_mult * se,
                         "upper": effect + se_mult * se})


def gam_term_effect(frame: pd.DataFrame, rt: str, terms: Sequence[str], term: str, *,
                    x: Sequence[float] | np.ndarray | None = None, n: int = 100,
                    se_mult: float = 2.0, method: str = "GCV.Cp") -> pd.DataFrame:
    """Fit ``gam(rt ~ terms)`` on every row of ``frame`` holding the reading time and all
    used columns (R's ``na.omit``), then the effect of ``term`` with its interval at ``x``
    (default: ``n`` evenly spaced values over the column's range on those rows, as
    plot.gam's grid); ``method``: mgcv's smoothness selection (``"GCV.Cp"``, ``"REML"``).
    Columns ``x``, ``effect``, ``se``, ``lower``, ``upper``; the fit's ``edf``, ``sigma``,
    ``n`` and ``method`` ride on ``.attrs``."""
    parsed = as_terms(list(terms), frame.columns)
    chosen = _find(parsed, term)
    check_columns(frame, [rt], "rt")
    used = list(dict.fromkeys(c for t in parsed for c in t.columns))
    check_columns(frame, used, "terms")
    values = {c: numeric(frame, c, "predictor") for c in used}
    y = numeric(frame, rt, "the reading time")
    keep = ~np.isnan(y)
    for v in values.values():
        keep &= ~np.isnan(v)
    fit = fit_gam(y[keep], {c: v[keep] for c, v in values.items()}, parsed, method)
    if x is None:
        if isinstance(chosen, Smooth) and len(chosen.variables) != 1:
            raise ReadingTimeError(f"term {term!r} is a smooth of {len(chosen.variables)} "
                                   "columns; an effect curve needs one column")
        column = chosen.column if isinstance(chosen, Linear) else chosen.variables[0]
        seen = values[column][keep]
        x = np.linspace(seen.min(), seen.max(), n)
    out = term_effect(fit, chosen.label if isinstance(chosen, Linear) else chosen.text,
                      np.asarray(x, dtype=np.float64), se_mult=se_mult)
    out.attrs.update({"term": chosen.label, "edf": fit.edf, "sigma": fit.sigma, "n": fit.n,
                      "method": method})
    return out
