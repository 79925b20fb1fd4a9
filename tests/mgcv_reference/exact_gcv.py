"""magic's GCV score of one link-study fit in 300-bit arithmetic, to tell a rounding
tie-break from a real difference: at given log smoothing parameters, on our model matrix
and penalty roots for that fold, with magic's two truncations (the penalty root's pivoted
Cholesky stops at ``n u max(diag)``, singular values of ``[R; S^1/2]`` below sqrt(eps) of
the largest dropped) done exactly. docs/reading_times.md ("GCV: where our fits and R's
part") reports what it found. Needs mpmath; about 10 s a point.

    PYTHONPATH=. python tests/mgcv_reference/exact_gcv.py LANG MODEL FORMULA FOLD LOG_SP...

(each LOG_SP comma-separated, in mgcv's order of the penalties)
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from compare import TARGETS, TE, paper_rows  # noqa: E402


def fold_problem(lang: str, model: str, formula: str, fold: int):
    """Our model matrix, response and penalties ``(S, first column)`` of one fit."""
    from ppl_widget.core.reading.fold_layout import lay_folds
    from ppl_widget.core.reading.gam.design import build_design
    from ppl_widget.core.reading.gam.formula import parse_terms

    terms = TE if formula == "baseline" else TARGETS[formula] + TE
    rows = paper_rows(lang, model)
    train = rows[lay_folds(len(rows), 10, "contiguous") != fold]
    columns = ["surp", "prev_surp", "freq", "len", "prev_freq", "prev_len"]
    design = build_design(parse_terms(terms), {c: train[c].to_numpy(float) for c in columns})
    return design.X, train["gaze_rt"].to_numpy(float), [(p.matrix, p.start)
                                                         for p in design.penalties]


def exact_scores(x: np.ndarray, y: np.ndarray, penalties, log_sps, bits: int = 300):
    """Per log sp vector: (score, rank, smallest / largest singular value, rss, tr(A))."""
    import mpmath as mp

    from ppl_widget.core.reading.gam.gcv import penalty_root

    mp.mp.prec = bits
    n, p = x.shape
    cols = [[mp.mpf(float(v)) for v in col] for col in x.T]
    ym = [mp.mpf(float(v)) for v in y]
    xtx = mp.matrix(p, p)
    for i in range(p):
        for j in range(i, p):
            xtx[i, j] = xtx[j, i] = mp.fsum(a * b for a, b in zip(cols[i], cols[j], strict=True))
    xty = [mp.fsum(a * b for a, b in zip(col, ym, strict=True)) for col in cols]
    yty = mp.fsum(v * v for v in ym)
    roots = [mp.matrix(penalty_root(s, start, p).tolist()) for s, start in penalties]
    squares = [b.T * b for b in roots]  # the penalties as their roots make them, exactly
    u = mp.mpf(2) ** -53
    out = []
    for rho in log_sps:
        total = mp.matrix(p, p)
        for r, sq in zip(rho, squares, strict=True):
            total += mp.exp(mp.mpf(float(r))) * sq
        stop = p * u * max(total[i, i] for i in range(p))  # dpstrf's default tolerance
        work, kept = total.copy(), mp.matrix(p, p)
        for _ in range(p):
            j = max(range(p), key=lambda i: work[i, i])
            if not work[j, j] > stop:
                break
            row = [work[j, c] / mp.sqrt(work[j, j]) for c in range(p)]
            for a in range(p):
                for c in range(p):
                    work[a, c] -= row[a] * row[c]
                    kept[a, c] += row[a] * row[c]
        values, vectors = mp.eigsy(xtx + kept)  # singular values of [R; root], squared
        order = sorted(range(p), key=lambda i: -values[i])
        top = values[order[0]]
        keep = [i for i in order if mp.sqrt(values[i]) >= mp.sqrt(top) * mp.mpf(2) ** -26]
        coef = [mp.mpf(0)] * p
        tau = mp.mpf(0)
        for c in keep:
            v = [vectors[a, c] for a in range(p)]
            proj = mp.fsum(va * b for va, b in zip(v, xty, strict=True)) / values[c]
            coef = [a + proj * va for a, va in zip(coef, v, strict=True)]
            xv = [mp.fsum(xtx[a, b] * v[b] for b in range(p)) for a in range(p)]
            tau += mp.fsum(va * b for va, b in zip(v, xv, strict=True)) / values[c]
        fitted = mp.fsum(coef[a] * mp.fsum(xtx[a, b] * coef[b] for b in range(p))
                         for a in range(p))
        rss = yty - 2 * mp.fsum(a * b for a, b in zip(coef, xty, strict=True)) + fitted
        ratio = mp.sqrt(values[order[-1]] / top)
        out.append((n * rss / (n - tau) ** 2, len(keep), ratio, rss, tau))
    return out


if __name__ == "__main__":
    lang, model, formula, fold = sys.argv[1:5]
    x, y, penalties = fold_problem(lang, model, formula, int(fold))
    points = [[float(v) for v in arg.split(",")] for arg in sys.argv[5:]]
    scores = exact_scores(x, y, penalties, points)
    for rho, (score, rank, ratio, rss, tau) in zip(points, scores, strict=True):
        print(" ".join(f"{r:.6f}" for r in rho), f"score {float(score):.17g} rank {rank} "
              f"d_min/d_max {float(ratio):.6g} rss {float(rss):.17g} tr(A) {float(tau):.17g}")
