"""The total penalty ``S = sum_j lambda_j S_j`` of a GAM in mgcv's stable form, as REML needs
it: ``log|S|+`` (the log pseudo-determinant over the penalties' range space) with its first
and second derivatives in the log smoothing parameters, and a square root ``E`` (``E'E =
S``), computed as mgcv computes them (``totalPenaltySpace``; ``gam.reparam`` and its C
routine ``get_stableS``, Wood 2011 JRSSB 73:3, appendix B).

Why the similarity transform: when one lambda is many orders larger than another, adding the
penalties and factorising loses the small one's contribution to ``log|S|``. get_stableS
instead peels off the dominant terms one group at a time, each in its own eigenbasis, so the
determinant and its derivatives stay accurate at any spread of lambdas.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EPS = float(np.finfo(float).eps)
D_TOL = EPS ** 0.3  # grouping dominant terms (gam.reparam's d.tol)
R_TOL = EPS ** 0.75  # their joint rank (r.tol)


@dataclass(frozen=True)
class PenaltySpace:
    """``totalPenaltySpace``: ``u1`` = [Y Z] (range then null space of the scaled total
    penalty, eigenvalues descending), ``eb`` (its balanced root, for rank decisions), ``mp``
    (the null space's dimension) and each penalty's root in range-space coordinates."""

    u1: np.ndarray
    eb: np.ndarray
    mp: int
    roots: tuple[np.ndarray, ...]


def matrix_root(s: np.ndarray) -> np.ndarray:
    """``B`` with ``B B' = s`` (columns: the non-null eigen directions; mgcv's ``mroot``
    returns another root of the same product, and only the product is used)."""
    values, vectors = np.linalg.eigh((s + s.T) / 2)
    keep = values > values.max() * EPS ** (2 / 3)
    return vectors[:, keep] * np.sqrt(values[keep])


def penalty_space(penalties: list[tuple[np.ndarray, int]], p: int) -> PenaltySpace:
    """The range and null space of ``sum_j S_j / ||S_j||_F`` (eigenvalues below
    ``max * eps^0.66`` are null), and each penalty's root projected on the range space."""
    total = np.zeros((p, p))
    full_roots = []
    for s, start in penalties:
        cols = slice(start, start + len(s))
        total[cols, cols] += s / np.sqrt(np.sum(s * s))
        b = matrix_root(s)
        root = np.zeros((p, b.shape[1]))
        root[cols] = b
        full_roots.append(root)
    values, vectors = np.linalg.eigh(total)
    values, vectors = values[::-1], vectors[:, ::-1]
    keep = values > values.max() * EPS ** 0.66
    y = vectors[:, keep]
    eb = np.sqrt(values[keep])[:, None] * y.T
    return PenaltySpace(u1=vectors, eb=eb, mp=int((~keep).sum()),
                        roots=tuple(y.T @ b for b in full_roots))


@dataclass(frozen=True)
class StablePenalty:
    """get_stableS's output: ``s`` (the transformed total penalty), ``qs`` (``s = qs' S0
    qs``), ``roots`` (each penalty's root, transformed and with its leakage beyond its
    dominant block set to zero), ``e`` (a root of ``s``), ``det`` = log|S|+ and its
    derivatives ``det1``, ``det2`` in log lambda."""

    s: np.ndarray
    qs: np.ndarray
    roots: tuple[np.ndarray, ...]
    e: np.ndarray
    det: float
    det1: np.ndarray
    det2: np.ndarray


def _qr_logdet_inverse(a: np.ndarray) -> tuple[float, np.ndarray]:
    """``log|det(a)|`` from the diagonal of its QR factor, and its inverse."""
    q, r = np.linalg.qr(a)
    return float(np.sum(np.log(np.abs(np.diag(r))))), np.linalg.solve(r, q.T)


def stable_penalty(roots: tuple[np.ndarray, ...], sp: np.ndarray, deriv: int) -> StablePenalty:
    """get_stableS on the range-space roots ``roots`` at smoothing parameters ``sp``
    (lambda, not log)."""
    q = roots[0].shape[0]
    m = len(roots)
    roots = [r.copy() for r in roots]
    blocks = [r @ r.T for r in roots]
    s = np.zeros((q, q))
    qf = np.eye(q)
    k0, size = 0, q
    remaining = np.ones(m, dtype=bool)
    first = True
    while True:
        frob = np.array([np.sqrt(np.sum(b * b)) if remaining[i] else 0.0
                         for i, b in enumerate(blocks)])
        max_frob = np.max(frob * sp)
        alpha = remaining & (frob * sp > max_frob * D_TOL)
        later = remaining & ~alpha
        if later.any():
            scaled = sum(blocks[i] / frob[i] for i in np.flatnonzero(alpha))
            ev = np.linalg.eigvalsh(scaled)
            r = 1
            while r < size and ev[size - r - 1] > ev[size - 1] * R_TOL:
                r += 1
        else:
            r = size
        if r == size:
            if first:
                s = sum(sp[i] * blocks[i] for i in range(m))
            break
        dominant = sum(sp[i] * blocks[i] for i in np.flatnonzero(alpha))
        ev, u = np.linalg.eigh(dominant)
        ev, u = ev[::-1], u[:, ::-1]
        if first:
            qf = u.copy()
        else:
            qf[:, k0:] = qf[:, k0:] @ u
        rest = sum((sp[i] * blocks[i] for i in np.flatnonzero(later)), np.zeros((size, size)))
        if k0 > 0:
            upper = s[:k0, k0:] @ u
            s[:k0, k0:] = upper
            s[k0:, :k0] = upper.T
        c = u.T @ rest @ u
        c[np.arange(r), np.arange(r)] += ev[:r]
        s[k0:, k0:] = c
        for i in range(m):
            if alpha[i]:
                roots[i][k0:k0 + r] = u[:, :r].T @ roots[i][k0:]
                roots[i][k0 + r:] = 0.0
            elif later[i]:
                roots[i][k0:] = u.T @ roots[i][k0:]
        null = u[:, r:]
        for i in np.flatnonzero(later):
            blocks[i] = null.T @ blocks[i] @ null
        k0, size = k0 + r, size - r
        remaining = later
        first = False
    s = (s + s.T) / 2
    det, inverse = _qr_logdet_inverse(s)
    det1 = np.zeros(m)
    det2 = np.zeros((m, m))
    if deriv:
        det1 = np.array([sp[i] * np.sum(roots[i] * (inverse @ roots[i])) for i in range(m)])
    if deriv == 2:
        prods = [inverse @ r @ r.T for r in roots]
        for i in range(m):
            for j in range(i, m):
                det2[i, j] = det2[j, i] = -sp[i] * sp[j] * np.sum(prods[i] * prods[j].T)
        det2[np.arange(m), np.arange(m)] += det1
    return StablePenalty(s=s, qs=qf, roots=tuple(roots), e=_balanced_root(s), det=det,
                         det1=det1, det2=det2)


def _balanced_root(s: np.ndarray) -> np.ndarray:
    """``E`` with ``E'E = s``, from the Cholesky factor of ``s`` with its diagonal scaled to
    one (gam.reparam: a root without large-zero leakage)."""
    p = np.sqrt(np.abs(np.diag(s)))
    p[p == 0] = 1.0
    scaled = s / p[:, None] / p[None, :]
    scaled = (scaled + scaled.T) / 2
    try:
        lower = np.linalg.cholesky(scaled)
    except np.linalg.LinAlgError:  # semi-definite: a root from the eigen decomposition
        values, vectors = np.linalg.eigh(scaled)
        lower = vectors * np.sqrt(np.clip(values, 0, None))
    return lower.T * p[None, :]
