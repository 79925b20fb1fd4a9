"""mgcv's cubic regression spline (``bs = "cr"``): knots, basis and penalty.

The basis is parametrised by the function's values at the knots (a natural cubic spline:
zero second derivative at both end knots), as ``smooth.construct.cr.smooth.spec`` and its C
routine ``crspl`` build it (Wood 2017, section 5.3.1): ``F`` maps the values at the knots to
the second derivatives there, ``S = D' B^-1 D`` is the integrated squared second derivative.
Beyond the end knots the spline continues as a straight line, as mgcv's does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def r_quantile7(values: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """R's ``quantile(x, probs)`` (type 7) to the last bit: linear interpolation between
    order statistics at ``1 + (n - 1) * p``."""
    x = np.sort(values)
    index = 1 + (len(x) - 1) * probs
    lo = np.floor(index).astype(np.int64)
    hi = np.ceil(index).astype(np.int64)
    out = x[lo - 1].copy()
    h = index - lo
    interpolate = (index > lo) & (x[hi - 1] != out)
    out[interpolate] = ((1 - h[interpolate]) * out[interpolate]
                        + h[interpolate] * x[hi[interpolate] - 1])
    return out


def cr_knots(x: np.ndarray, k: int) -> np.ndarray:
    """mgcv's default cr knots: ``quantile(unique(x), seq(0, 1, length = k))``; R's ``seq``
    gives the inner probabilities as ``i * (1 / (k - 1))``."""
    probs = np.concatenate([[0.0], np.arange(1, k - 1) * (1.0 / (k - 1)), [1.0]])
    return r_quantile7(np.unique(x), probs)


def cr_f_and_penalty(knots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Fp, S)``: ``Fp`` (k x k) maps values at the knots to second derivatives there
    (rows 0 and k-1 zero: natural ends), ``S = D' B^-1 D`` the wiggliness penalty (mgcv's
    ``getFS``, symmetrised as the R side does)."""
    k = len(knots)
    h = np.diff(knots)
    d = np.zeros((k - 2, k))
    rows = np.arange(k - 2)
    d[rows, rows] = 1 / h[:-1]
    d[rows, rows + 2] = 1 / h[1:]
    d[rows, rows + 1] = -d[rows, rows] - d[rows, rows + 2]
    b = np.diag((h[:-1] + h[1:]) / 3)  # tridiagonal; k is small, so solved dense
    b[rows[:-1], rows[:-1] + 1] = b[rows[:-1] + 1, rows[:-1]] = h[1:-1] / 6
    binv_d = np.linalg.solve(b, d)
    fp = np.zeros((k, k))
    fp[1:-1] = binv_d
    s = d.T @ binv_d
    return fp, (s + s.T) / 2


def cr_basis(x: np.ndarray, knots: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """The cr model matrix at ``x`` (n x k), linear beyond the end knots (mgcv's ``crspl``)."""
    x = np.asarray(x, dtype=np.float64)
    k = len(knots)
    out = np.zeros((len(x), k))
    low, high = knots[0], knots[-1]
    inside = (x >= low) & (x <= high)
    xi = x[inside]
    # the interval j with knots[j] < x <= knots[j+1] (the first one for x == knots[0])
    j = np.clip(np.searchsorted(knots, xi, side="left") - 1, 0, k - 2)
    xj, xj1 = knots[j], knots[j + 1]
    width = xj1 - xj
    am, ap = xj1 - xi, xi - xj
    cm = am * (am * am / width - width) / 6
    cp = ap * (ap * ap / width - width) / 6
    rows = np.flatnonzero(inside)
    out[rows] = cm[:, None] * fp[j] + cp[:, None] * fp[j + 1]
    out[rows, j] += am / width
    out[rows, j + 1] += ap / width
    below = np.flatnonzero(x < low)
    if len(below):
        width = knots[1] - low
        xik = x[below] - low
        out[below] = (-xik * width / 3)[:, None] * fp[0] + (-xik * width / 6)[:, None] * fp[1]
        out[below, 0] += 1 - xik / width
        out[below, 1] += xik / width
    above = np.flatnonzero(x > high)
    if len(above):
        width = high - knots[-2]
        xik = x[above] - high
        out[above] = (xik * width / 6)[:, None] * fp[-2] + (xik * width / 3)[:, None] * fp[-1]
        out[above, -2] += -xik / width
        out[above, -1] += 1 + xik / width
    return out


@dataclass(frozen=True)
class CrBasis:
    """A fitted cr margin: its knots, the value-to-second-derivative map and penalty."""

    knots: np.ndarray
    fp: np.ndarray
    penalty: np.ndarray

    @classmethod
    def from_data(cls, x: np.ndarray, k: int) -> CrBasis:
        knots = cr_knots(x, k)
        fp, penalty = cr_f_and_penalty(knots)
        return cls(knots=knots, fp=fp, penalty=penalty)

    def matrix(self, x: np.ndarray) -> np.ndarray:
        return cr_basis(x, self.knots, self.fp)
