"""One smooth term set up as mgcv's ``smoothCon(..., absorb.cons = TRUE)`` sets it up for
``gam()``: the raw basis (cr, or a te of cr margins), each penalty scaled to the model
matrix (``S / (norm(S, "O") / norm(X, "I")^2)``), then the sum-to-zero identifiability
constraint ``colMeans(X) b = 0`` absorbed by the Householder reflection of R's ``qr()``
(LINPACK): the term's columns are ``X Z``, its penalties ``Z' S Z``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..spillover import ReadingTimeError
from .basis import CrBasis
from .formula import Smooth
from .tensor import row_kronecker, tensor_raw


def householder_null_space(c: np.ndarray) -> np.ndarray:
    """Z (k x k-1): the last k-1 columns of Q from R's ``qr(t(C))`` of one constraint row
    (LINPACK dqrdc2: ``u = c / (sign(c_1) |c|) + e_1``, ``Q = I - u u' / u_1``)."""
    norm = np.linalg.norm(c)
    if c[0] != 0:
        norm = np.copysign(norm, c[0])
    u = c / norm
    u[0] += 1
    q = np.eye(len(c)) - np.outer(u, u) / u[0]
    return q[:, 1:]


def constraint_map(mean_row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Z, keep)``: the columns of the constrained basis are ``(X Z)`` placed at ``keep``
    (smoothCon's two branches: all column means non-zero, or the reflection acts only on
    the columns whose mean is non-zero and the last of those is dropped)."""
    k = len(mean_row)
    nonzero = np.flatnonzero(mean_row != 0)
    if len(nonzero) == k:
        return householder_null_space(mean_row), np.arange(k)
    z = np.eye(k)
    z[np.ix_(nonzero, nonzero[:-1])] = householder_null_space(mean_row[nonzero])
    keep = np.setdiff1d(np.arange(k), nonzero[-1:])
    return z[:, keep], keep


@dataclass(frozen=True)
class SmoothTerm:
    """A smooth term ready to fit: ``margins`` (cr bases), ``z`` (the constraint's null
    space), ``penalties`` (constrained and scaled, as mgcv's ``G$S``), ``X`` on the fit's
    rows and ``matrix(data)`` for new rows."""

    term: Smooth
    margins: tuple[CrBasis, ...]
    z: np.ndarray
    penalties: tuple[np.ndarray, ...]
    X: np.ndarray

    @property
    def label(self) -> str:
        return self.term.label

    @property
    def width(self) -> int:
        return self.z.shape[1]

    def raw_matrix(self, columns: dict[str, np.ndarray]) -> np.ndarray:
        mats = [m.matrix(columns[v])
                for m, v in zip(self.margins, self.term.variables, strict=True)]
        return mats[0] if len(mats) == 1 else row_kronecker(mats)

    def matrix(self, columns: dict[str, np.ndarray]) -> np.ndarray:
        """The term's columns at new values (mgcv's ``PredictMat``: the basis, linear
        beyond the knots, times Z)."""
        return self.raw_matrix(columns) @ self.z


def check_smooth_data(term: Smooth, columns: dict[str, np.ndarray]) -> None:
    """Each variable varies and has at least ``k`` distinct values (rule: a cr basis of k
    functions puts its knots at k distinct values)."""
    for variable, k in zip(term.variables, term.k, strict=True):
        distinct = len(np.unique(columns[variable]))
        if distinct == 1:
            raise ReadingTimeError(f"term {term.text!r}: column {variable!r} is constant "
                                   f"({columns[variable][0]!r}) on the rows used; a smooth "
                                   "of a constant is not identifiable")
        if distinct < k:
            raise ReadingTimeError(f"term {term.text!r}: column {variable!r} has {distinct} "
                                   f"distinct value(s) on the rows used, fewer than k={k} "
                                   "knots (mgcv: 'insufficient unique values'); reduce k")


def build_smooth(term: Smooth, columns: dict[str, np.ndarray]) -> SmoothTerm:
    """The term on the fit's rows, as mgcv's ``gam()`` constructs it."""
    check_smooth_data(term, columns)
    margins = tuple(CrBasis.from_data(columns[v], k)
                    for v, k in zip(term.variables, term.k, strict=True))
    raw = [m.matrix(columns[v]) for m, v in zip(margins, term.variables, strict=True)]
    x = raw[0] if len(raw) == 1 else row_kronecker(raw)
    penalties = [margins[0].penalty] if len(margins) == 1 else tensor_raw(list(margins))
    row_norm = np.abs(x).sum(axis=1).max() ** 2
    penalties = [s / (np.abs(s).sum(axis=0).max() / row_norm) for s in penalties]
    z, _ = constraint_map(x.mean(axis=0))
    return SmoothTerm(term=term, margins=margins, z=z,
                      penalties=tuple(z.T @ s @ z for s in penalties), X=x @ z)
