"""Where does our GCV fit part from R's? One fit of the link study (language, model,
formula, fold) traced on both sides: mgcv's C ``magic`` rebuilt with a print of every score
evaluation and decision (magic_trace.R runs it as ``gam.fit`` does), and ours with every
score evaluation logged. docs/reading_times.md ("GCV: where our fits and R's part")
reports what this found.

    PYTHONPATH=. python tests/mgcv_reference/magic_trace.py MGCV_SRC LANG MODEL FORMULA FOLD

MGCV_SRC: mgcv 1.8-41's ``src`` folder (``apt-get source r-cran-mgcv``, or CRAN's
mgcv_1.8-41.tar.gz); FORMULA: baseline, linear or nonlinear; FOLD: 1-10. Needs a C compiler
and R's headers (``R CMD SHLIB``).
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from compare import HERE, TARGETS, TE, paper_rows  # noqa: E402

_PRINT = ('#include <R_ext/Print.h>\nstatic void pv(const char *l, double *v, int n) '
          '{int i; Rprintf("%s", l); for (i = 0; i < n; i++) Rprintf(" %.17g", v[i]); '
          'Rprintf("\\n");}\n')
# (anchor in magic.c, print placed after it): magic's decisions, in the order they happen
_TRACES = [
    ("fit_call++;  \n",
     'Rprintf("TRACE init score %.17g rank %d\\n", score, rank);'
     ' pv("TRACE init log_sp", sp, m);\n'),
    ("fit_call++;\n        if (score<min_score) /* accept step */",
     '\nRprintf("TRACE iter %d try %d use_sd %d score %.17g min_score %.17g rank %d accept %d\\n",'
     ' iter, try, use_sd, score, min_score, rank, score < min_score);'
     ' pv("TRACE   log_sp", nsp, mp);\n'),
    ("if (converged) { msg=sqrt(xx*xx/mp);if (try==max_half) step_fail=1;}",
     '\nRprintf("TRACE converged %d iter %d d_score %.17g grad_norm %.17g\\n", converged, iter,'
     ' d_score, xx);\n'),
    ("for (i=0;i<mp;i++) sd_step[i]= -grad[i]/xx;     \n",
     'pv("TRACE derivatives at", sp0, mp); pv("TRACE   grad", grad, mp);'
     ' pv("TRACE   hessian eigenvalues", ev, mp);\n'),
    ("fit_magic(X,sp,Si,H,gamma,scale,control,*rank_tol,yy,y0,y1,U1,V,d,b,&score,&norm,&delta,"
     "&rank,norm_const,n_score,nt);\n        if (score<min_score)",
     '\nRprintf("TRACE last check k %d log_sp %.17g score %.17g min_score %.17g rank %d rss %.17g'
     ' n-tr(A) %.17g accept %d\\n", k, sp0[k], score, min_score, rank, norm, delta,'
     ' score < min_score);\n'),
]


def patch_magic(source: str) -> str:
    """magic.c with the trace prints added (each anchor must occur once)."""
    source = source.replace('#include "matrix.h"', '#include "matrix.h"\n' + _PRINT, 1)
    for anchor, line in _TRACES:
        if source.count(anchor) != 1:
            raise ValueError(f"magic.c anchor not found once (another mgcv version?): {anchor!r}")
        head, tail = source.split(anchor)
        # after the anchor, or (a score's test) between the fit and the test
        cut = anchor.find("\n        if (score<min_score)")
        cut = len(anchor) if cut < 0 else cut
        source = head + anchor[:cut] + line + anchor[cut:] + tail
    return source


def build(mgcv_src: pathlib.Path, out: pathlib.Path) -> pathlib.Path:
    """mgcv's C sources with the traced magic.c, as ``mgcv_traced.so`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    for path in mgcv_src.iterdir():
        if path.suffix in (".c", ".h") and path.name != "init.c":  # no routine registration
            shutil.copy(path, out / path.name)
    (out / "magic.c").write_text(patch_magic((mgcv_src / "magic.c").read_text()))
    so = out / "mgcv_traced.so"
    sources = sorted(p.name for p in out.glob("*.c"))
    subprocess.run(["R", "CMD", "SHLIB", "-o", so.name, *sources, "-llapack", "-lblas",
                    "-lgfortran", "-lm"], cwd=out, check=True, capture_output=True)
    return so


def trace_ours(y: np.ndarray, columns: dict[str, np.ndarray], terms: list[str]) -> None:
    """Our fit with every score evaluation printed (log sp, score, rank, tr(A))."""
    from ppl_widget.core.reading.gam import gcv
    from ppl_widget.core.reading.gam.fit import fit_gam

    evaluate = gcv.GcvProblem.evaluate

    def logged(self, rho, derivatives=True):
        e = evaluate(self, rho, derivatives)
        print(f"OURS {'derivatives at' if derivatives else 'score at'} "
              + " ".join(f"{r:.17g}" for r in rho)
              + f": score {e.score(self.n):.17g} rank {e.pinv.shape[1]} rss {e.rss:.17g} "
                f"tr(A) {e.tau:.17g}")
        return e

    gcv.GcvProblem.evaluate = logged
    try:
        fit = fit_gam(y, columns, terms)
    finally:
        gcv.GcvProblem.evaluate = evaluate
    print(f"OURS RESULT score {fit.gcv.score:.17g} rank {fit.gcv.rank} iterations "
          f"{fit.gcv.iterations} log_sp " + " ".join(f"{r:.17g}" for r in fit.gcv.log_sp))


def main(mgcv_src: str, lang: str, model: str, formula: str, fold: int) -> None:
    from ppl_widget.core.reading.fold_layout import lay_folds

    terms = TE if formula == "baseline" else TARGETS[formula] + TE
    rows = paper_rows(lang, model)
    train = rows[lay_folds(len(rows), 10, "contiguous") != fold]
    with tempfile.TemporaryDirectory() as tmp:
        so = build(pathlib.Path(mgcv_src), pathlib.Path(tmp) / "build")
        csv = pathlib.Path(tmp) / "train.csv"
        train.to_csv(csv, index=False)
        r_formula = "gaze_rt ~ " + " + ".join(terms)
        done = subprocess.run(["Rscript", str(HERE / "magic_trace.R"), str(so), str(csv),
                               r_formula], capture_output=True, text=True)
        print(done.stdout, end="")
        if done.returncode:
            raise RuntimeError(f"magic_trace.R failed: {done.stderr[-2000:]}")
    used = list(dict.fromkeys(c for c in ("surp", "prev_surp", "freq", "len", "prev_freq",
                                          "prev_len") if any(c in t for t in terms)))
    trace_ours(train["gaze_rt"].to_numpy(float),
               {c: train[c].to_numpy(float) for c in used}, terms)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
