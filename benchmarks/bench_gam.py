"""Fitting the link study's three regressions (Wilcox et al. TACL 2023: baseline te()
smooths, + linear surprisal, + s() of surprisal) for one language and model, 10 folds each
(30 GAM fits and their held-out predictions): ppl_widget's gam/ against R's mgcv on this
machine, in one run, for each smoothness selection method (GCV.Cp, REML); R's time is
measured inside R around its fits (no start-up). Prints both times per fit and their ratio
(wall clock and CPU; the target is at most 3x mgcv), and the memory of one REML fit (the
peak of Python's traced allocations, numpy's included, over one ``fit_gam``).

    PYTHONPATH=. PPL_WIDGET_DATA=../shared/data \\
        python benchmarks/bench_gam.py [LANG] [MODEL] [--method REML] [--smoke]

``--smoke``: 2 folds on the first 400 rows, ours only (seconds; for the test).
"""

from __future__ import annotations

import os

# one BLAS thread, as R's reference BLAS: the CPU times then compare like with like
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))

from mgcv_reference.compare import TARGETS, TE, paper_rows, r_missing, run_r  # noqa: E402

from ppl_widget.core.reading.gam.fit import METHODS, fit_gam  # noqa: E402
from ppl_widget.core.reading.gam.formula import parse_terms  # noqa: E402
from ppl_widget.core.reading.gam.reading import gam_delta_many  # noqa: E402

COLUMNS = ("surp", "prev_surp", "freq", "len", "prev_freq", "prev_len")


def ours(rows, method: str, folds: int) -> tuple[float, float]:
    """(wall, CPU) seconds of the three regressions' fits and predictions on ``folds``
    contiguous folds, the baseline fitted once per fold (as R's script fits it)."""
    wall, cpu = time.perf_counter(), time.process_time()
    gam_delta_many(rows, "gaze_rt", TARGETS, TE, spillover=0, by=None, folds=folds,
                   fold_by="contiguous", seed=None, method=method)
    return time.perf_counter() - wall, time.process_time() - cpu


def one_fit_memory(rows, method: str) -> float:
    """MiB: the peak of traced allocations over one non-linear fit on all rows."""
    columns = {c: rows[c].to_numpy(float) for c in COLUMNS}
    y = rows["gaze_rt"].to_numpy(float)
    terms = parse_terms(TARGETS["nonlinear"] + TE)
    tracemalloc.start()
    fit_gam(y, columns, terms, method)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lang", nargs="?", default="en")
    parser.add_argument("model", nargs="?", default="mgpt_sc")
    parser.add_argument("--method", choices=METHODS, action="append",
                        help="repeat for several (default: both)")
    parser.add_argument("--smoke", action="store_true", help="2 folds on 400 rows")
    args = parser.parse_args()
    methods = args.method or list(METHODS)
    rows = paper_rows(args.lang, args.model)
    folds = 10
    if args.smoke:
        rows, folds = rows.iloc[:400], 2
    fits = 3 * folds
    why = r_missing()
    ours(rows.iloc[:300], "REML", 2)  # warm the imports and BLAS
    print(f"{args.lang}/{args.model}: {len(rows)} rows, 3 regressions x {folds} folds "
          f"= {fits} fits per method")
    for method in methods:
        wall, cpu = ours(rows, method, folds)
        line = f"  {method:6}: ppl_widget {wall / fits:.3f} s wall, {cpu / fits:.3f} s CPU per fit"
        if why is None and not args.smoke:
            with tempfile.TemporaryDirectory() as tmp:
                r_wall, r_cpu = run_r([args.lang], [args.model], pathlib.Path(tmp), method)
            line += (f"; mgcv {r_wall / fits:.3f} s wall, {r_cpu / fits:.3f} s CPU per fit; "
                     f"ratio {wall / r_wall:.2f}x wall, {cpu / r_cpu:.2f}x CPU (target <= 3x)")
        else:
            line += f"; mgcv not timed ({'smoke run' if args.smoke else why})"
        print(line)
    print(f"  memory of one REML fit on all {len(rows)} rows (peak traced): "
          f"{one_fit_memory(rows, 'REML'):.1f} MiB")


if __name__ == "__main__":
    main()
