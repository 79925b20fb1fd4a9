"""The smoothing parameters mgcv's ``magic`` (src/magic.c, mgcv 1.8) finds for a Gaussian
``gam()`` with GCV, found the way magic finds them, because the GCV surface can have more
than one minimum and R's answer is the one magic's path reaches.

magic's path: start at ``initial.sp``; each iteration try the Newton step on the score (its
largest component at most 5), or where the Hessian is not positive definite the steepest
descent step (largest component 1); halve until the score falls (after three halvings a
Newton step gives way to steepest descent; give up after ``mgcv.half = 15`` tries); after
the third iteration stop once the last decrease is <= tol (1 + score) and the gradient's norm
<= tol^(1/3) (1 + score) (tol = ``mgcv.tol`` = 1e-7); finally move each log smoothing
parameter by 2 (up to 5 times) in the downhill direction while the score falls, the check
magic makes for optima at infinity.
"""

from __future__ import annotations

import numpy as np

from .gcv import GcvFit, GcvProblem, initial_log_sp

TOL = 1e-7  # gam.control()$mgcv.tol
MAX_HALF = 15  # gam.control()$mgcv.half
MAX_ITER = 400  # magic's own limit


def _directions(grad: np.ndarray, hess: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """(Newton step or None where the Hessian is not positive definite, steepest descent
    step), as magic forms them."""
    values, vectors = np.linalg.eigh(hess)
    newton = None
    if not (values < 0).any():
        newton = -vectors @ ((vectors.T @ grad) / values)
        biggest = np.abs(newton).max()
        if biggest > 5:
            newton *= 5 / biggest
    return newton, -grad / np.abs(grad).max()


def fit_gcv(x: np.ndarray, y: np.ndarray, penalties: list[tuple[np.ndarray, int]]) -> GcvFit:
    """The penalized least-squares fit of ``y`` on ``x`` at the smoothing parameters
    magic chooses; ``penalties`` are ``(S_j, first column)`` blocks."""
    problem = GcvProblem(x, y, penalties)
    n = problem.n
    rho = initial_log_sp(x, penalties) if penalties else np.zeros(0)
    iterations, grad = 0, np.zeros(0)
    if penalties:
        current = problem.evaluate(rho)
        min_score = current.score(n)
        d_score = 1e10
        newton, steepest, use_sd = None, None, False
        converged = False
        while not converged:
            iterations += 1
            if iterations > MAX_ITER:
                break
            tries = 0
            if iterations > 1:
                step = steepest.copy() if use_sd else newton.copy()
                while True:
                    tries += 1
                    if tries == 4 and not use_sd:
                        use_sd, step = True, steepest.copy()
                    trial = rho + step
                    score = problem.evaluate(trial, derivatives=False).score(n)
                    if score < min_score:
                        d_score, min_score, rho = min_score - score, score, trial
                        break
                    step /= 2
                    if tries == MAX_HALF - 1:
                        step[:] = 0.0
                    if tries == MAX_HALF:
                        break
            if iterations > 3:
                converged = (d_score <= TOL * (1 + min_score)
                             and np.sqrt(grad @ grad) <= TOL ** (1 / 3) * (1 + abs(min_score)))
                converged = converged or tries == MAX_HALF
            current = problem.evaluate(rho)
            grad, hess = current.score_derivatives(n)
            newton, steepest = _directions(grad, hess)
            use_sd = newton is None
        for k in range(len(rho)):  # optima at +/- infinity
            sign = 1.0 if grad[k] < 0 else -1.0
            for _ in range(5):
                trial = rho.copy()
                trial[k] += 2 * sign
                score = problem.evaluate(trial, derivatives=False).score(n)
                if score >= min_score:
                    break
                min_score, rho = score, trial
    final = problem.evaluate(rho, derivatives=False)
    m_inv = final.pinv @ final.pinv.T
    edf = np.einsum("ij,ji->i", m_inv, problem.r.T @ problem.r)
    return GcvFit(log_sp=rho, coef=final.coef, m_inv=m_inv, edf=edf, rss=final.rss,
                  score=final.score(n), iterations=iterations, gradient=grad,
                  rank=final.pinv.shape[1])
