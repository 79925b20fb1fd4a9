"""Our GAM ΔLL against R mgcv's on the xlang data (Wilcox et al. TACL 2023's link study):
run xlang_link.R for some languages and models, fit the same three regressions with
``delta_ll``, and report the largest differences per language and model.

As a script (the whole grid; prints a table for docs/reading_times.md):
    PYTHONPATH=. python tests/mgcv_reference/compare.py [LANGS] [MODELS] [METHOD]

(``GAM_REFERENCE_DIR``: an earlier xlang_link.R output to compare with instead of running
R. R's own spread: ``r_spread`` of a plain run and one with permuted training rows.)

Per fold, which fits land where (criterion score, rank, iterations, log smoothing
parameters, ours and R's, for one language and model):
    PYTHONPATH=. python tests/mgcv_reference/compare.py folds LANG MODEL [METHOD]
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pandas as pd

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ENV = "PPL_WIDGET_DATA"
LANGS = ["du", "en", "fi", "ge", "gr", "he", "it", "ko", "ru", "sp", "tr"]
MODELS = ["mgpt_sc", "mgpt_lc", "monot_30m", "monot_all"]
TE = ["te(freq, len, bs='cr')", "te(prev_freq, prev_len, bs='cr')"]
TARGETS = {"linear": ["surp", "prev_surp"],
           "nonlinear": ["s(surp, bs='cr', k=6)", "s(prev_surp, bs='cr', k=6)"]}


def xlang_dir() -> pathlib.Path:
    """The xlang folder: in ``$PPL_WIDGET_DATA`` (the one variable the data loaders read),
    else the shared copy beside the checkout."""
    return pathlib.Path(os.environ[ENV]) / "xlang" if os.environ.get(ENV) else \
        ROOT.parent / "shared" / "data" / "xlang"


def r_missing() -> str | None:
    """Why R's reference cannot run here, or None."""
    if shutil.which("Rscript") is None:
        return "Rscript not found (Debian: apt-get install r-base-core r-cran-mgcv)"
    done = subprocess.run(["Rscript", "-e", "library(mgcv)"], capture_output=True, text=True)
    if done.returncode:
        return f"R's mgcv is not installed (apt-get install r-cran-mgcv): {done.stderr[-200:]}"
    return None


def run_r(langs: list[str], models: list[str], out: pathlib.Path, method: str = "GCV.Cp",
          permute: int | None = None) -> tuple[float, float]:
    """xlang_link.R's per-row log-densities and edfs into ``out`` (``gam(method =
    method)``; ``permute``: each fold's training rows shuffled with that seed first); R's
    (elapsed, CPU) seconds in the fits and predictions, measured inside R."""
    extra = [method] + ([] if permute is None else [str(permute)])
    subprocess.run(["Rscript", str(HERE / "xlang_link.R"), str(xlang_dir()), str(out),
                    ",".join(langs), ",".join(models), *extra], check=True,
                   capture_output=True)
    elapsed, cpu = (float(v) for v in (out / "time.txt").read_text().split())
    return elapsed, cpu


def paper_rows(lang: str, model: str) -> pd.DataFrame:
    """The analysis's rows: one model's, ``freq``, ``prev_freq``, ``prev2_freq`` > 0."""
    frame = pd.read_csv(xlang_dir() / f"{lang}.csv", keep_default_na=False, na_values=["NA"],
                        index_col=0)
    frame = frame[frame["model"] == model]
    keep = np.ones(len(frame), dtype=bool)
    for column in ("freq", "prev_freq", "prev2_freq"):
        keep &= np.isfinite(frame[column].to_numpy(float)) & (frame[column] > 0).to_numpy()
    return frame[keep]


def ours(lang: str, model: str, method: str = "GCV.Cp") -> dict:
    """delta_ll's linear and non-linear results on the paper's rows (one baseline fit per
    fold for both, as link_shape fits them)."""
    from ppl_widget.core.reading.gam.reading import gam_delta_many
    from ppl_widget.core.reading.predictive_power import DeltaLL

    rows = paper_rows(lang, model)
    parts = gam_delta_many(rows, "gaze_rt", TARGETS, TE, spillover=0, by=None, folds=10,
                           fold_by="contiguous", seed=None, method=method)
    return {name: DeltaLL(per_word=p, dropped=d, settings=s, smooth_edf=e)
            for name, (p, d, s, e) in parts.items()}


def our_fits(lang: str, model: str, method: str = "GCV.Cp") -> pd.DataFrame:
    """Per formula (baseline, linear, nonlinear) and fold, our fit's criterion score, rank,
    iterations and log smoothing parameters (in mgcv's order), on the rows and folds
    ``ours`` uses."""
    from ppl_widget.core.reading.fold_layout import lay_folds
    from ppl_widget.core.reading.gam.fit import fit_gam
    from ppl_widget.core.reading.spillover import build_design

    rows = paper_rows(lang, model)
    formulas = {"baseline": TE, **{name: terms + TE for name, terms in TARGETS.items()}}
    used = ["freq", "len", "prev_freq", "prev_len", "surp", "prev_surp"]
    design = build_design(rows, "gaze_rt", used, spillover=0, by=None)
    fold = lay_folds(len(design.y), 10, "contiguous")
    out = []
    for name, terms in formulas.items():
        for k in range(1, 11):
            train = fold != k
            fit = fit_gam(design.y[train], {c: v[train] for c, v in design.columns.items()},
                          terms, method)
            out.append({"formula": name, "fold": k, "score": fit.gcv.score,
                        "rank": fit.gcv.rank, "iterations": fit.gcv.iterations,
                        "log_sp": fit.gcv.log_sp})
    return pd.DataFrame(out)


def fold_table(ref: pathlib.Path, lang: str, model: str, method: str = "GCV.Cp"
               ) -> pd.DataFrame:
    """Our fits next to R's (xlang_link.R's fits.csv in ``ref``), per formula and fold: the
    score, rank and iterations of each, the largest log smoothing parameter difference
    (``d_log_sp``) and both sets of log smoothing parameters."""
    r = pd.read_csv(ref / "fits.csv")
    r = r[(r["lang"] == lang) & (r["model"] == model)].reset_index(drop=True)
    mine = our_fits(lang, model, method)
    assert (mine[["formula", "fold"]].to_numpy() == r[["formula", "fold"]].to_numpy()).all()
    r_sp = [np.array(v.split(), dtype=float) for v in r["log_sp"]]
    return pd.DataFrame({
        "formula": r["formula"], "fold": r["fold"], "score_r": r["score"],
        "score": mine["score"], "rank_r": r["rank"], "rank": mine["rank"],
        "iter_r": r["iterations"], "iter": mine["iterations"],
        "d_log_sp": [np.abs(a - b).max() for a, b in zip(r_sp, mine["log_sp"], strict=True)],
        "log_sp_r": [" ".join(f"{v:.2f}" for v in a) for a in r_sp],
        "log_sp": [" ".join(f"{v:.2f}" for v in b) for b in mine["log_sp"]]})


def compare(ref: pathlib.Path, langs: list[str], models: list[str], method: str = "GCV.Cp"
            ) -> pd.DataFrame:
    """Per language, model and target: the largest difference to R in a row's target and
    baseline log-density and ΔLL, in the mean ΔLL, and in a fold's smooth edf."""
    ll = pd.read_csv(ref / "ll.csv")
    edf = pd.read_csv(ref / "edf.csv")
    out = []
    for lang in langs:
        for model in models:
            r_rows = ll[(ll["lang"] == lang) & (ll["model"] == model)]
            r_edf = edf[(edf["lang"] == lang) & (edf["model"] == model)]
            for name, result in ours(lang, model, method).items():
                pw = result.per_word
                assert (pw.index.astype(str) == r_rows["row"].astype(str).to_numpy()).all()
                want_delta = (r_rows[name] - r_rows["baseline"]).to_numpy()
                mine = result.smooth_edf
                edf_diff = 0.0
                for fit, formula in (("baseline", "baseline"), ("target", name)):
                    got = mine[mine["model"] == fit].sort_values(["fold", "term"])
                    want = r_edf[r_edf["formula"] == formula].sort_values(["fold", "term"])
                    assert got["term"].tolist() == want["term"].tolist()
                    edf_diff = max(edf_diff, np.abs(got["edf"].to_numpy()
                                                    - want["edf"].to_numpy()).max())
                out.append({
                    "lang": lang, "model": model, "target": name, "n": len(pw),
                    "delta_ll": result.mean, "delta_ll_r": want_delta.mean(),
                    "mean_diff": abs(result.mean - want_delta.mean()),
                    "row_target_diff": np.abs(pw["ll_target"] - r_rows[name].to_numpy()).max(),
                    "row_baseline_diff": np.abs(pw["ll_baseline"]
                                                - r_rows["baseline"].to_numpy()).max(),
                    "row_delta_diff": np.abs(pw["delta_ll"].to_numpy() - want_delta).max(),
                    "edf_diff": edf_diff})
    return pd.DataFrame(out)


def pair_signs(table: pd.DataFrame) -> pd.DataFrame:
    """Per language and model: non-linear minus linear mean ΔLL, ours and R's, their
    difference and whether the signs agree (``compare``'s table in)."""
    wide = table.pivot_table(index=["lang", "model"], columns="target",
                             values=["delta_ll", "delta_ll_r"])
    out = pd.DataFrame({
        "ours": wide[("delta_ll", "nonlinear")] - wide[("delta_ll", "linear")],
        "r": wide[("delta_ll_r", "nonlinear")] - wide[("delta_ll_r", "linear")]})
    out["diff"] = (out["ours"] - out["r"]).abs()
    out["same_sign"] = np.sign(out["ours"]) == np.sign(out["r"])
    return out.reset_index()


def r_spread(first: pathlib.Path, second: pathlib.Path) -> pd.DataFrame:
    """R against R: two xlang_link.R runs (e.g. plain and with permuted training rows), per
    language, model and target, the largest row difference of the target, the baseline
    and the ΔLL, the mean ΔLL's difference and the largest edf difference."""
    a_ll, b_ll = pd.read_csv(first / "ll.csv"), pd.read_csv(second / "ll.csv")
    a_edf, b_edf = pd.read_csv(first / "edf.csv"), pd.read_csv(second / "edf.csv")
    keys = ["lang", "model", "formula", "fold", "term"]
    edf = a_edf.merge(b_edf, on=keys, suffixes=("_a", "_b"))
    out = []
    for (lang, model), a in a_ll.groupby(["lang", "model"], sort=False):
        b = b_ll[(b_ll["lang"] == lang) & (b_ll["model"] == model)]
        assert (a["row"].to_numpy() == b["row"].to_numpy()).all()
        for name in TARGETS:
            da = (a[name] - a["baseline"]).to_numpy()
            db = (b[name] - b["baseline"]).to_numpy()
            e = edf[(edf["lang"] == lang) & (edf["model"] == model)
                    & edf["formula"].isin(["baseline", name])]
            out.append({"lang": lang, "model": model, "target": name,
                        "delta_ll": da.mean(), "delta_ll_other": db.mean(),
                        "mean_diff": abs(da.mean() - db.mean()),
                        "row_target_diff": np.abs(a[name].to_numpy() - b[name].to_numpy()).max(),
                        "row_baseline_diff": np.abs(a["baseline"].to_numpy()
                                                    - b["baseline"].to_numpy()).max(),
                        "row_delta_diff": np.abs(da - db).max(),
                        "edf_diff": np.abs(e["edf_a"] - e["edf_b"]).max()})
    return pd.DataFrame(out)


def _folds_main(args: list[str]) -> None:
    lang, model = args[0], args[1]
    method = args[2] if len(args) > 2 else "GCV.Cp"
    with tempfile.TemporaryDirectory() as tmp:
        ref = pathlib.Path(os.environ.get("GAM_REFERENCE_DIR") or tmp)
        if not os.environ.get("GAM_REFERENCE_DIR"):
            run_r([lang], [model], ref, method)
        table = fold_table(ref, lang, model, method)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_colwidth", 80)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.10g}"))
    apart = table[table["d_log_sp"] > 1e-4]
    print(f"{len(apart)} of {len(table)} fits end more than 1e-4 apart in a log smoothing "
          "parameter")


if __name__ == "__main__" and sys.argv[1:2] == ["folds"]:
    _folds_main(sys.argv[2:])
elif __name__ == "__main__":
    langs = sys.argv[1].split(",") if len(sys.argv) > 1 and sys.argv[1] else LANGS
    models = sys.argv[2].split(",") if len(sys.argv) > 2 and sys.argv[2] else MODELS
    method = sys.argv[3] if len(sys.argv) > 3 else "GCV.Cp"
    ref_dir = pathlib.Path(os.environ.get("GAM_REFERENCE_DIR", "")) if os.environ.get(
        "GAM_REFERENCE_DIR") else None
    with tempfile.TemporaryDirectory() as tmp:
        if ref_dir is None:
            ref_dir = pathlib.Path(tmp)
            run_r(langs, models, ref_dir, method)
        table = compare(ref_dir, langs, models, method)
    pd.set_option("display.width", 200)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print(pair_signs(table).to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print("max:", table[["mean_diff", "row_target_diff", "row_baseline_diff", "row_delta_diff",
                         "edf_diff"]].max().to_dict())
