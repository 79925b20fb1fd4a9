"""The restricted likelihood (REML) of a Gaussian identity-link GAM with unknown scale, and
its exact gradient and Hessian in ``(log lambda_1..M, log phi)``, as mgcv's ``gam.fit3``
with its C routine ``gdi1`` computes them for ``gam(method = "REML")`` (Wood 2011, JRSSB
73:3; for a Gaussian model the Laplace approximation is exact):

    V = Dp / (2 phi) + (n - Mp) / 2 log(2 pi phi) + log|X'X + S| / 2 - log|S|+ / 2

with ``Dp = ||y - X b||^2 + b'S b`` at the penalized least-squares ``b``, ``Mp`` the
dimension of the penalties' joint null space and ``log|S|+`` from stable_penalty.py. As in
mgcv, every evaluation works in the stable reparameterization ``T = U1 diag(Qs, I)``: the
QR factor of ``[R T; E]`` (``X = QR``, ``E'E = S``) gives the coefficients and
``log|X'X + S|``. The scale mgcv reports (``m$sig2``) is not ``phi`` but ``RSS / (n -
tr(A))``, ``scale_est`` here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..spillover import ReadingTimeError
from .stable_penalty import penalty_space, stable_penalty

LOG_2PI = float(np.log(2 * np.pi))
RANK_TOL = float(np.finfo(float).eps) * 100  # gam.fit3's rank.tol for gdi1


@dataclass
class RemlEvaluation:
    """The fit at one ``rho`` (log lambdas then log phi): REML ``score``, ``grad`` and
    ``hess`` (None when not asked for), ``scale_est``, the coefficients ``coef`` and ``v``
    ((X'X + S)^-1) in the original parameterization, ``rss`` and ``trace`` (tr(A))."""

    rho: np.ndarray
    score: float
    grad: np.ndarray | None
    hess: np.ndarray | None
    scale_est: float
    coef: np.ndarray
    v: np.ndarray
    rss: float
    trace: float


def r_cond(r: np.ndarray) -> float:
    """mgcv's ``R_cond``: the condition number estimate of an upper triangular ``r`` by
    Cline, Moler, Stewart and Wilkinson (1979), as the C routine computes it."""
    c = r.shape[1]
    p = np.zeros(c)
    y = np.zeros(c)
    for k in range(c - 1, -1, -1):
        yp = (1 - p[k]) / r[k, k]
        ym = (-1 - p[k]) / r[k, k]
        pp = p[:k] + r[:k, k] * yp
        pm = p[:k] + r[:k, k] * ym
        if abs(yp) + np.abs(pp).sum() >= abs(ym) + np.abs(pm).sum():
            y[k], p[:k] = yp, pp
        else:
            y[k], p[:k] = ym, pm
    return float(np.abs(np.triu(r[:c, :c])).sum(axis=1).max() * np.abs(y).max())


def _pivoted_r(a: np.ndarray) -> np.ndarray:
    """The triangular factor of ``a`` with column pivoting on the largest remaining norm
    (LAPACK's dgeqp3, which mgcv's ``mgcv_qr`` calls), by Householder reflections."""
    a = a.copy()
    rows, cols = a.shape
    for j in range(min(rows, cols)):
        norms = np.sum(a[j:, j:] ** 2, axis=0)
        best = j + int(np.argmax(norms))
        a[:, [j, best]] = a[:, [best, j]]
        x = a[j:, j]
        alpha = -np.copysign(np.linalg.norm(x), x[0])
        v = x.copy()
        v[0] -= alpha
        vv = v @ v
        if vv > 0:
            a[j:, j:] -= np.outer(v, (v @ a[j:, j:]) * (2 / vv))
    return np.triu(a[:min(rows, cols)])


class RemlProblem:
    """REML and its derivatives for one data set (X reduced to its QR triangle)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, penalties: list[tuple[np.ndarray, int]]):
        self.n, self.p = x.shape
        q, self.r = np.linalg.qr(x)
        self.f = q.T @ y
        self.rss0 = float(np.sum((y - q @ self.f) ** 2))
        self.space = penalty_space(penalties, self.p)
        self.m = len(penalties)
        self.null_scale = float(np.sum((y - y.mean()) ** 2) / self.n)

    def _check_rank(self, rt: np.ndarray, t: np.ndarray) -> None:
        """gdiPK's identifiability test: ``[R/||R||; Es/||Es||]`` (Es the balanced penalty
        root) must have R_cond below 1 / (100 eps); mgcv would drop the columns past the
        rank, which this fit does not do, so it stops with the rule named."""
        es = self.space.eb @ t
        stacked = np.vstack([rt / np.linalg.norm(rt), es / np.linalg.norm(es)])
        values = np.linalg.svd(stacked, compute_uv=False)
        # R_cond estimates the infinity-norm condition, at most p times the 2-norm one: the
        # estimate is needed only when that bound does not already clear the test
        if values[-1] > 0 and RANK_TOL * self.p * values[0] / values[-1] <= 1:
            return
        if RANK_TOL * r_cond(_pivoted_r(stacked)) > 1:
            raise ReadingTimeError(
                "REML: the model is not identifiable (its model matrix and penalties leave "
                "coefficients undetermined: mgcv's rank test R_cond > 1 / (100 eps)); drop "
                "a collinear term or use method='GCV.Cp'")

    def evaluate(self, rho: np.ndarray, deriv: int = 2) -> RemlEvaluation:
        """gam.fit3 at ``rho`` with ``deriv`` 0 (score only) or 2 (gradient, Hessian)."""
        lam, phi = np.exp(rho[:-1]), float(np.exp(rho[-1]))
        space, p, mp = self.space, self.p, self.space.mp
        stable = stable_penalty(space.roots, lam, deriv)
        t = space.u1.copy()
        rank_s = p - mp
        t[:, :rank_s] = space.u1[:, :rank_s] @ stable.qs
        rt = self.r @ t
        self._check_rank(rt, t)
        e = np.zeros((rank_s, p))
        e[:, :rank_s] = stable.e
        qh, rh = np.linalg.qr(np.vstack([rt, e]))
        pinv = np.linalg.solve(rh, np.eye(p))
        beta = pinv @ (qh[:p].T @ self.f)
        resid = self.f - rt @ beta
        rss = self.rss0 + float(resid @ resid)
        roots = [np.vstack([r, np.zeros((mp, r.shape[1]))]) for r in stable.roots]
        u = [rs.T @ beta for rs in roots]
        bsb = np.array([lj * float(uj @ uj) for lj, uj in zip(lam, u, strict=True)])
        dp = rss + bsb.sum()
        ldet = 2 * float(np.sum(np.log(np.abs(np.diag(rh)))))
        trace = float(np.sum((rt @ pinv) ** 2))
        n = self.n
        score = (dp / (2 * phi) + n / 2 * (LOG_2PI + np.log(phi)) + ldet / 2 - stable.det / 2
                 - mp / 2 * (LOG_2PI + np.log(phi)))
        grad = hess = None
        if deriv:
            pts = [pinv.T @ rs for rs in roots]
            ldet1 = np.array([lj * np.sum(c * c) for lj, c in zip(lam, pts, strict=True)])
            grad = np.append(bsb / (2 * phi) + ldet1 / 2 - stable.det1 / 2,
                             -dp / (2 * phi) + n / 2 - mp / 2)
            sb = [lj * (rs @ uj) for lj, rs, uj in zip(lam, roots, u, strict=True)]
            a = [pinv @ (pinv.T @ v) for v in sb]
            m = self.m
            d2 = np.diag(bsb) - 2 * np.array([[sb[k] @ a[j] for j in range(m)]
                                              for k in range(m)])
            cross = [[pts[k].T @ pts[j] for j in range(m)] for k in range(m)]
            ldet2 = np.diag(ldet1) - np.array([[lam[k] * lam[j] * np.sum(cross[k][j] ** 2)
                                                for j in range(m)] for k in range(m)])
            hess = np.zeros((m + 1, m + 1))
            hess[:m, :m] = (d2 / phi + ldet2 - stable.det2) / 2
            hess[:m, m] = hess[m, :m] = -bsb / (2 * phi)
            hess[m, m] = dp / (2 * phi)
        tp = t @ pinv
        return RemlEvaluation(rho=rho, score=float(score), grad=grad, hess=hess,
                              scale_est=rss / (n - trace), coef=t @ beta, v=tp @ tp.T,
                              rss=rss, trace=trace)

    def start(self, initial_log_sp: np.ndarray) -> np.ndarray:
        """mgcv's start: ``initial.sp``'s log lambdas and log(null deviance / n / 10)."""
        return np.append(initial_log_sp, np.log(self.null_scale / 10))
