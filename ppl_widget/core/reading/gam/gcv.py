"""The GCV score of a penalized least-squares fit and its exact derivatives in the log
smoothing parameters ``rho``: ``V(rho) = n * RSS / (n - tr(A))^2``, ``A = X (X'X +
sum_j exp(rho_j) S_j)^-1 X'`` (Wood 2004, JASA 99:673), as mgcv's ``magic`` scores a
Gaussian identity-link ``gam()`` (``method = "GCV.Cp"``); magic.py walks it as magic does.

Every evaluation works on the p x p triangle ``R`` of ``X = QR``: ``M = R'R + S = Rm'Rm``
by the QR of ``[R; sqrt(lambda_j) B_j]`` (``B_j'B_j = S_j``), stable for any lambda.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: gam.control()$rank.tol: magic's relative threshold on the singular values
RANK_TOL = float(np.finfo(float).eps ** 0.5)

@dataclass(frozen=True)
class GcvFit:
    """The penalized least-squares fit at the chosen smoothing parameters: ``log_sp``,
    ``coef``, ``m_inv`` ((X'X + S)^-1), ``edf`` per coefficient (diag of (X'X + S)^-1
    X'X), ``rss``, ``score`` (GCV), ``iterations``, ``gradient`` (of the score) at the end."""

    log_sp: np.ndarray
    coef: np.ndarray
    m_inv: np.ndarray
    edf: np.ndarray
    rss: float
    score: float
    iterations: int
    gradient: np.ndarray
    rank: int


def penalty_root(s: np.ndarray, start: int, p: int) -> np.ndarray:
    """``B`` (rank x p) with ``B'B`` the penalty ``s`` placed at columns ``start:``."""
    values, vectors = np.linalg.eigh(s)
    keep = values > values.max() * 1e-13
    root = np.zeros((int(keep.sum()), p))
    root[:, start:start + len(s)] = (np.sqrt(values[keep]) * vectors[:, keep]).T
    return root


def pivoted_cholesky_root(a: np.ndarray) -> np.ndarray:
    """``B`` (rank x n) with ``B'B`` = ``a`` on the directions LAPACK's ``dpstrf`` keeps:
    pivot on the largest remaining diagonal, stop once it is <= n u max(diag(a)) (its
    default tolerance, as mgcv's ``mroot`` calls it; u = dlamch('E') = 2^-53)."""
    n = len(a)
    if not np.diag(a).max() > 0:
        return np.zeros((0, n))
    work = a.copy()
    stop = n * (np.finfo(float).eps / 2) * np.diag(a).max()
    rows = []
    for _ in range(n):
        diag = np.diag(work)
        j = int(np.argmax(diag))
        if not diag[j] > stop:
            break
        row = work[j] / np.sqrt(diag[j])
        rows.append(row)
        work = work - np.outer(row, row)
    return np.array(rows).reshape(len(rows), n)


def initial_log_sp(x: np.ndarray, penalties: list[tuple[np.ndarray, int]]) -> np.ndarray:
    """mgcv's ``initial.sp``: each lambda makes its penalty's diagonal as large as X'X's on
    the penalized columns, then all scaled by powers of 10 until the mean of
    ``diag(X'X) / (diag(X'X) + diag(S))`` crosses 0.4."""
    ldxx = (x * x).sum(axis=0)
    ldss = np.zeros_like(ldxx)
    penalized = np.zeros(len(ldxx), dtype=bool)
    sp = np.zeros(len(penalties))
    for i, (s, start) in enumerate(penalties):
        mas = np.abs(s).max()
        thresh = np.finfo(float).eps ** 0.8 * mas
        ind = (np.abs(s).mean(axis=1) > thresh) & (np.abs(s).mean(axis=0) > thresh) \
            & (np.abs(np.diag(s)) > thresh)
        cols = slice(start, start + len(s))
        penalized[cols] |= ind
        sp[i] = ldxx[cols][ind].mean() / np.diag(s)[ind].mean()
        ldss[cols] += sp[i] * np.diag(s)
    ind = (ldss > 0) & penalized & (ldxx > 0)
    ldxx, ldss = ldxx[ind], ldss[ind]
    while np.mean(ldxx / (ldxx + ldss)) > 0.4:
        sp, ldss = sp * 10, ldss * 10
    while np.mean(ldxx / (ldxx + ldss)) < 0.4:
        sp, ldss = sp / 10, ldss / 10
    return np.log(sp)


class GcvProblem:
    """``log V`` and its derivatives for one data set (X reduced to its QR triangle)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, penalties: list[tuple[np.ndarray, int]]):
        self.n, self.p = x.shape
        q, self.r = np.linalg.qr(x)
        self.f = q.T @ y
        self.rss0 = float(np.sum((y - q @ self.f) ** 2))  # outside X's column space
        self.roots = [penalty_root(s, start, self.p) for s, start in penalties]
        self.full_penalties = [b.T @ b for b in self.roots]

    def solve(self, rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(P, coef)`` with ``P P'`` the (pseudo-)inverse of ``M = R'R + S_lambda`` as
        magic's ``fit_magic`` forms it: ``S_lambda``'s root by LAPACK's pivoted Cholesky
        (``mroot``: directions below n eps max(diag) dropped, which matters when one
        lambda is huge), then ``P = V D^-1`` from the SVD of ``[R; root]`` with singular
        values below ``RANK_TOL`` times the largest dropped (a near-singular problem is
        fitted in magic's reduced space: the same coefficients R gets)."""
        total = sum((np.exp(rj) * s for rj, s in zip(rho, self.full_penalties, strict=True)),
                    np.zeros((self.p, self.p)))
        stack = np.vstack([self.r, pivoted_cholesky_root(total)])
        _, d, vt = np.linalg.svd(stack, full_matrices=False)
        rank = int(np.sum(d >= d[0] * RANK_TOL))
        pinv = vt[:rank].T / d[:rank]
        coef = pinv @ (pinv.T @ (self.r.T @ self.f))
        return pinv, coef

    def evaluate(self, rho: np.ndarray, derivatives: bool = True) -> Evaluation:
        """RSS, tr(A) and (with ``derivatives``) their first and second derivatives in
        ``rho``: with ``M = R'R + S``, ``a_j = M^-1 S_j~ b`` (``S_j~ = lambda_j S_j``),
        ``dRSS_j = 2 b'S a_j``, ``dtr_j = -tr(M^-1 S_j~ M^-1 R'R)`` and their second
        derivatives (Wood 2004, section 3)."""
        pinv, coef = self.solve(rho)
        k = self.r @ pinv
        kk = k.T @ k
        resid = self.f - self.r @ coef
        rss = self.rss0 + float(resid @ resid)
        tau = float(np.sum(k * k))
        if not derivatives:
            return Evaluation(rss, tau, pinv, coef)
        lam = np.exp(rho)
        m = len(rho)
        bp = [b @ pinv for b in self.roots]
        s_hat = [lj * (c.T @ c) for lj, c in zip(lam, bp, strict=True)]  # lambda_j P' S_j P
        sb = [lj * (b.T @ (b @ coef)) for lj, b in zip(lam, self.roots, strict=True)]  # S_j~ b
        a = [pinv @ (pinv.T @ v) for v in sb]
        s_beta = np.sum(sb, axis=0)
        g_vec = pinv @ (pinv.T @ s_beta)  # M^-1 S b
        tau1 = np.array([-np.sum(sh * kk) for sh in s_hat])
        r1 = np.array([2 * s_beta @ aj for aj in a])
        ra = np.array([self.r @ aj for aj in a])
        # g' S_i~ a_j for every pair, through the roots: lambda_i (B_i g).(B_i a_j)
        gsa = np.array([[lam[i] * (b @ g_vec) @ (b @ a[j]) for j in range(m)]
                        for i, b in enumerate(self.roots)])
        sk = [sh @ kk for sh in s_hat]
        tau2 = np.array([[2 * np.sum(s_hat[j] * sk[i].T) for j in range(m)]
                         for i in range(m)]) + np.diag(tau1)
        r2 = 2 * (ra @ ra.T - gsa - gsa.T) + np.diag(r1)
        return Evaluation(rss, tau, pinv, coef, r1, r2, tau1, tau2)


@dataclass
class Evaluation:
    """The fit at one ``rho``: RSS, tr(A), ``P`` (M = (P P')^-1), coefficients, and the
    derivatives of RSS and tr(A) in ``rho`` when asked for."""

    rss: float
    tau: float
    pinv: np.ndarray
    coef: np.ndarray
    rss1: np.ndarray | None = None
    rss2: np.ndarray | None = None
    tau1: np.ndarray | None = None
    tau2: np.ndarray | None = None

    def score(self, n: int) -> float:
        """GCV: n RSS / (n - tr(A))^2."""
        return n * self.rss / (n - self.tau) ** 2

    def score_derivatives(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and Hessian of the GCV score (not its log: magic's Newton works on the
        score itself)."""
        delta = n - self.tau
        d1, d2 = -self.tau1, -self.tau2
        grad = n * self.rss1 / delta**2 - 2 * n * self.rss * d1 / delta**3
        hess = (n * self.rss2 / delta**2
                - 2 * n * (np.outer(self.rss1, d1) + np.outer(d1, self.rss1)) / delta**3
                + 6 * n * self.rss * np.outer(d1, d1) / delta**4
                - 2 * n * self.rss * d2 / delta**3)
        return grad, hess
