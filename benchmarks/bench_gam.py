"""Fitting the link study's three regressions (Wilcox et al. TACL 2023: baseline te()
smooths, + linear surprisal, + s() of surprisal) for one language and model, 10 folds each
(30 GAM fits and their held-out predictions): ppl_widget's gam/ against R's mgcv on this
machine, R's time measured inside R around the fits (no start-up). Prints both times and
the ratio (wall clock and CPU); the target is at most 3x mgcv.

    PYTHONPATH=. PPL_WIDGET_DATA=../shared/data \
        python benchmarks/bench_gam.py [LANG] [MODEL]
"""

from __future__ import annotations

import os

# one BLAS thread, as R's reference BLAS: the CPU times then compare like with like
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pathlib  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))

from mgcv_reference.compare import paper_rows, r_missing, run_r  # noqa: E402

from ppl_widget import delta_ll  # noqa: E402

TE = ["te(freq, len, bs='cr')", "te(prev_freq, prev_len, bs='cr')"]


def main(lang: str = "en", model: str = "mgpt_sc") -> None:
    why = r_missing()
    if why:
        sys.exit(why)
    rows = paper_rows(lang, model)
    with tempfile.TemporaryDirectory() as tmp:
        r_wall, r_cpu = run_r([lang], [model], pathlib.Path(tmp))
    delta_ll(rows.iloc[:400], "gaze_rt", ["surp"], TE, spillover=0, folds=2)  # warm imports
    wall, cpu = time.perf_counter(), time.process_time()
    # baseline fitted twice (once per delta_ll), as R's script fits it once: count the
    # second baseline out by timing it alone and subtracting
    delta_ll(rows, "gaze_rt", ["surp", "prev_surp"], TE, spillover=0)
    delta_ll(rows, "gaze_rt", ["s(surp, bs='cr', k=6)", "s(prev_surp, bs='cr', k=6)"], TE,
             spillover=0)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    from ppl_widget.core.reading.fold_layout import lay_folds
    from ppl_widget.core.reading.gam.formula import parse_terms
    from ppl_widget.core.reading.gam.held_out import gam_held_out_log_density
    columns = {c: rows[c].to_numpy(float) for c in ("freq", "len", "prev_freq", "prev_len")}
    y = rows["gaze_rt"].to_numpy(float)
    base_wall, base_cpu = time.perf_counter(), time.process_time()
    gam_held_out_log_density(y, columns, parse_terms(TE), lay_folds(len(y), 10, "contiguous"))
    wall -= time.perf_counter() - base_wall
    cpu -= time.process_time() - base_cpu
    print(f"{lang}/{model}: {len(rows)} rows, 3 regressions x 10 folds")
    print(f"  mgcv (inside R): {r_wall:.2f} s wall, {r_cpu:.2f} s CPU")
    print(f"  ppl_widget gam/: {wall:.2f} s wall, {cpu:.2f} s CPU")
    print(f"  ratio (ours / mgcv): {wall / r_wall:.2f}x wall, {cpu / r_cpu:.2f}x CPU "
          "(target <= 3x)")


if __name__ == "__main__":
    main(*sys.argv[1:3])
