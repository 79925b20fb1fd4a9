"""The smoothing parameters mgcv's ``gam(method = "REML")`` finds for a Gaussian GAM, found
the way mgcv finds them: its outer Newton iteration (``gam.outer`` -> ``newton``, mgcv 1.8)
over ``rho = (log lambda, log phi)``, from its start (``initial.sp``; log phi = log(null
deviance / n / 10)), because REML can have more than one optimum and R's answer is the one
its path reaches, and because R stops at its own convergence test, not at the optimum.

newton's rules, as ported: the Newton step on the parameters not yet converged (the
Hessian's eigenvalues made positive, at least max * eps^0.7; the step's largest component
at most 5); accepted when the score falls and the quadratic model's error is < 0.8 of the
change; else halved (the fourth try, in the first nine iterations, a steepest descent step
of length <= 2; up to 30 tries); when the Hessian was not positive definite a steepest
descent line search competes; converged when the Hessian is positive definite, no
gradient component exceeds 5 conv.tol (|log scale| + |score|) and the score changed by at
most conv.tol times that (conv.tol = 1e-6).
"""

from __future__ import annotations

import numpy as np

from .gcv import GcvFit, initial_log_sp
from .reml import RemlEvaluation, RemlProblem

CONV_TOL = 1e-6  # gam.control()$newton$conv.tol
MAX_N_STEP = 5.0  # $maxNstep
MAX_S_STEP = 2.0  # $maxSstep
MAX_HALF = 30  # $maxHalf
MAX_ITER = 200
Q_ERROR = 0.8  # qerror.thresh
EPS = float(np.finfo(float).eps)


def _finite(value: float | None) -> bool:
    return value is not None and bool(np.isfinite(value))


def _newton_step(grad: np.ndarray, hess: np.ndarray, free: np.ndarray, score_scale: float
                 ) -> tuple[np.ndarray, bool, bool]:
    """(step, positive definite, indefinite) as newton forms them."""
    d, vectors = np.linalg.eigh(hess[np.ix_(free, free)])
    d, vectors = d[::-1].copy(), vectors[:, ::-1]  # R's eigen: descending
    indef = bool(np.sum(-d > abs(d[0]) * EPS ** 0.5) > 0)
    if indef and len(d) == 1:
        indef = bool(d[0] < -score_scale * EPS ** 0.5)
    negative = d < 0
    pdef = not negative.any()
    d[negative] = -d[negative]
    low = d.max() * EPS ** 0.7
    small = d < low
    if small.any():
        pdef = False
    d[small] = low
    nonzero = d != 0
    d[nonzero] = 1 / d[nonzero]
    step = np.zeros(len(grad))
    step[free] = -vectors @ (d * (vectors.T @ grad[free]))
    biggest = np.abs(step).max()
    if biggest > MAX_N_STEP:
        step = MAX_N_STEP * step / biggest
    return step, pdef, indef


def _quadratic_error(grad, hess, step, change, score_scale) -> float:
    predicted = float(grad @ step + 0.5 * step @ hess @ step)
    return abs(predicted - change) / (max(abs(predicted), abs(change)) + score_scale * CONV_TOL)


def newton(problem: RemlProblem, rho: np.ndarray) -> tuple[RemlEvaluation, int, np.ndarray]:
    """mgcv's ``newton`` from ``rho``: (the fit R returns, iterations, the final rho)."""
    b = problem.evaluate(rho, 2)
    score, grad, hess = b.score, b.grad, b.hess
    old_score = score
    score_scale = abs(np.log(b.scale_est)) + abs(score)
    free = np.abs(grad) > score_scale * CONV_TOL
    if not free.any():
        free[:] = True
    ii = 0
    for iteration in range(1, MAX_ITER + 1):
        if not free.any():
            free[np.abs(grad) == np.abs(grad).max()] = True
        step_n, pdef, indef = _newton_step(grad, hess, free, score_scale)
        steepest = -grad / np.abs(grad).max()
        sd_unused = True
        rho1 = rho + step_n
        b = problem.evaluate(rho1, 2 if pdef else 0)
        score1 = b.score
        ii = 0
        change = score1 - score
        qerror = _quadratic_error(grad, hess, step_n, change, score_scale)
        score2 = None
        if _finite(score1) and change < 0 and pdef and qerror < Q_ERROR:
            old_score, rho = score, rho1
            score, grad, hess = b.score, b.grad, b.hess
        elif not _finite(score1) or score1 >= score or qerror >= Q_ERROR:
            step = step_n
            while (not _finite(score1) or score1 >= score or qerror >= Q_ERROR) \
                    and ii < MAX_HALF:
                if ii == 3 and iteration < 10:
                    length = min(float(np.sqrt(step @ step)), MAX_S_STEP)
                    step = steepest * length / float(np.sqrt(steepest @ steepest))
                    sd_unused = False
                else:
                    step = step / 2
                rho1 = rho + step
                b1 = problem.evaluate(rho1, 0)
                score1 = b1.score
                change = score1 - score
                qerror = Q_ERROR / 2 if ii > min(4, MAX_HALF / 2) else \
                    _quadratic_error(grad, hess, step, change, score_scale)
                if _finite(score1) and change < 0 and qerror < Q_ERROR:
                    if pdef or not sd_unused:
                        b = problem.evaluate(rho1, 2)
                        old_score, rho = score, rho1
                        score, grad, hess = b.score, b.grad, b.hess
                    else:
                        b, score2 = b1, score1
                    score1 = score - abs(score) - 1
                if not _finite(score1) or score1 >= score or qerror >= Q_ERROR:
                    ii += 1
            if not pdef and sd_unused and ii < MAX_HALF:
                score1 = score2
        if not pdef and sd_unused:
            rho1, score1 = _steepest_search(problem, rho, score, grad, hess, steepest,
                                            score_scale, rho1, score1)
            b = problem.evaluate(rho1, 2)
            old_score, rho = score, rho1
            score, grad, hess = b.score, b.grad, b.hess
        converged = not indef
        score_scale = abs(np.log(b.scale_est)) + abs(score)
        limit = score_scale * CONV_TOL
        free = (np.abs(grad) > limit * 0.1) | (np.abs(np.diag(hess)) > limit * 0.1)
        if (np.abs(grad) > limit * 5).any():
            converged = False
        if abs(old_score - score) > limit:
            if converged:
                free[:] = True
            converged = False
        if ii == MAX_HALF:
            converged = True
        if converged:
            break
    return b, iteration, rho


def _steepest_search(problem, rho, score, grad, hess, steepest, score_scale, rho1, score1):
    """newton's line search along steepest descent when the Hessian was not positive
    definite: halve from twice the unit step while the score keeps falling (at most 40
    tries); it replaces the Newton trial when it scores lower."""
    step = steepest * 2
    best, best_rho = None, None
    for _ in range(40):
        step = step / 2
        trial = rho + step
        score3 = problem.evaluate(trial, 0).score
        qerror = _quadratic_error(grad, hess, step, score3 - score, score_scale)
        if not _finite(best) or (_finite(score3) and score3 <= best and qerror < Q_ERROR):
            best, best_rho = score3, trial
        if _finite(best) and _finite(score3) and best < score and score3 > best:
            break
    if _finite(best) and (score1 is None or best < score1):
        return best_rho, best
    return rho1, score1


def fit_reml(x: np.ndarray, y: np.ndarray, penalties: list[tuple[np.ndarray, int]]) -> GcvFit:
    """The penalized least-squares fit of ``y`` on ``x`` at the smoothing parameters
    ``gam(method = "REML")`` chooses; ``penalties`` are ``(S_j, first column)`` blocks."""
    problem = RemlProblem(x, y, penalties)
    if not penalties:
        raise ValueError("REML needs at least one penalty (a model without smooths is OLS)")
    rho0 = problem.start(initial_log_sp(x, penalties))
    final, iterations, rho = newton(problem, rho0)
    edf = np.einsum("ij,ji->i", final.v, problem.r.T @ problem.r)
    # m$sp is the last accepted rho; the coefficients are those of newton's last fit, which
    # after a failed step search is the rejected trial's (as R returns it)
    return GcvFit(log_sp=rho[:-1], coef=final.coef, m_inv=final.v, edf=edf,
                  rss=final.rss, score=final.score, iterations=iterations,
                  gradient=final.grad if final.grad is not None else np.zeros(0),
                  rank=len(final.coef))
