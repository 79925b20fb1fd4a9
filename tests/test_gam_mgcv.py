"""GAMs fitted as R's mgcv fits them (core/reading/gam/, issue #43): the cr basis, te
tensor products, constraints and penalties equal mgcv's own ``gam(..., fit = FALSE)``; the
link study's ΔLL (Wilcox et al. TACL 2023: linear and non-linear surprisal over a te()
baseline, ten contiguous folds) agrees with R's on three languages within R's own spread,
run at test time;
bad terms get errors that name them.

R (Debian: r-base-core, r-cran-mgcv) is a test reference only; without it the R tests
skip with the reason. The whole 11-language x 4-model grid is checked by
tests/mgcv_reference/compare.py (results in docs/reading_times.md).
"""

from __future__ import annotations

import os
import pathlib
import subprocess

import numpy as np
import pandas as pd
import pytest
from background_setup import wait_for
from mgcv_reference.compare import (
    HERE,
    compare,
    pair_signs,
    paper_rows,
    r_missing,
    run_r,
    xlang_dir,
)

from ppl_widget import delta_ll
from ppl_widget.core.reading.gam.basis import CrBasis
from ppl_widget.core.reading.gam.design import build_design
from ppl_widget.core.reading.gam.effect import gam_term_effect
from ppl_widget.core.reading.gam.fit import fit_gam
from ppl_widget.core.reading.gam.formula import parse_terms
from ppl_widget.core.reading.spillover import ReadingTimeError

FORMULA = ["surp", "s(prev_surp, bs='cr', k=6)", "te(freq, len, bs='cr')"]


@pytest.fixture(scope="module")
def xlang() -> pathlib.Path:
    path = xlang_dir()
    if not (path / "en.csv").is_file():
        pytest.skip(f"xlang data not found at {path} (set PPL_WIDGET_DATA to the folder "
                    "holding xlang/)")
    return path


@pytest.fixture(scope="module")
def r_setup(xlang, tmp_path_factory) -> pathlib.Path:
    wait_for("debian-packages")  # scripts/test.sh installs R in the background on a new machine
    why = r_missing()
    if why:  # CI installs R (scripts/test.sh): there a missing reference is a failure
        (pytest.fail if os.environ.get("CI") else pytest.skip)(why)
    out = tmp_path_factory.mktemp("mgcv_setup")
    subprocess.run(["Rscript", str(HERE / "setup_and_effect.R"), str(xlang / "en.csv"),
                    "mgpt_sc", str(out)], check=True, capture_output=True)
    return out


def _columns(rows: pd.DataFrame) -> dict[str, np.ndarray]:
    return {c: rows[c].to_numpy(float) for c in ("surp", "prev_surp", "freq", "len")}


def test_model_matrix_penalties_and_prediction_equal_mgcv(r_setup):
    rows = paper_rows("en", "mgpt_sc")
    design = build_design(parse_terms(FORMULA), _columns(rows))
    want_x = np.loadtxt(r_setup / "X.txt")
    assert design.X.shape == want_x.shape == (len(rows), 1 + 1 + 5 + 24)
    assert np.abs(design.X - want_x).max() <= 1e-10 * np.abs(want_x).max()
    offsets = np.loadtxt(r_setup / "off.txt").astype(int) - 1  # R counts from 1
    assert [p.start for p in design.penalties] == offsets.tolist()
    for i, penalty in enumerate(design.penalties, start=1):
        want = np.loadtxt(r_setup / f"S{i}.txt")
        assert np.abs(penalty.matrix - want).max() <= 1e-10 * np.abs(want).max()
    # new values, beyond the knots too (mgcv's cr basis is linear there)
    new = {"prev_surp": np.array([-3, 0, 5, 10, 20, 45.0]),
           "freq": np.array([0, 3, 8, 12, 20, 40.0]), "len": np.array([1, 2, 5, 9, 15, 30.0])}
    for i, smooth in enumerate(design.smooths, start=1):
        want = np.loadtxt(r_setup / f"P{i}.txt")
        assert np.abs(smooth.matrix(new) - want).max() <= 1e-10 * np.abs(want).max()


def test_fit_sigma_edf_and_term_effect_equal_mgcv(r_setup):
    rows = paper_rows("en", "mgpt_sc")
    fit = fit_gam(rows["gaze_rt"].to_numpy(float), _columns(rows), FORMULA)
    sigma, sig2, *edf = np.loadtxt(r_setup / "fit.txt")
    assert fit.sigma == pytest.approx(sigma, rel=1e-9)  # R's sigma(): RSS / (n - p)
    assert fit.scale == pytest.approx(sig2, rel=1e-9)  # mgcv's m$sig2: RSS / (n - edf)
    assert np.abs(np.array(list(fit.edf.values())) - edf).max() < 1e-6
    want = np.loadtxt(r_setup / "effect.txt")
    smooth = gam_term_effect(rows, "gaze_rt", FORMULA, "s(prev_surp, bs='cr', k=6)",
                             x=want[:, 0])
    assert np.abs(smooth["effect"] - want[:, 1]).max() < 1e-6
    assert np.abs(smooth["se"] - want[:, 2]).max() < 1e-6
    assert np.allclose(smooth["upper"] - smooth["effect"], 2 * smooth["se"])
    linear = gam_term_effect(rows, "gaze_rt", FORMULA, "surp", x=want[:, 5])
    assert np.abs(linear["effect"] - want[:, 3]).max() < 1e-6
    assert np.abs(linear["se"] - want[:, 4]).max() < 1e-6


def test_link_study_delta_ll_agrees_with_mgcv_on_three_languages(xlang, tmp_path):
    """GCV's answer can turn on rounding where a smoothing parameter runs to infinity
    across a rank-truncation step, and there R's own answer moves when only the order of
    its training rows changes (docs/reading_times.md: up to 4.5e-4 in a mean ΔLL, 0.3 nats
    in a row, on ko). The issue's pass mark is the mean ΔLL within 2e-4 of R's and R's sign
    of non-linear minus linear. On en, it and ru (mgpt_sc), run here, R's own spread is at
    most 7e-10 per row, so the rows are held to what we measured there, 2e-5 (en's
    non-linear fit: 1.04e-5; magic's path ends inside its tolerance a little elsewhere)."""
    wait_for("debian-packages")  # scripts/test.sh installs R in the background on a new machine
    why = r_missing()
    if why:  # CI installs R (scripts/test.sh): there a missing reference is a failure
        (pytest.fail if os.environ.get("CI") else pytest.skip)(why)
    langs, models = ["en", "it", "ru"], ["mgpt_sc"]
    run_r(langs, models, tmp_path)
    table = compare(tmp_path, langs, models)
    assert len(table) == 6
    assert table["mean_diff"].max() < 2e-4, table
    pairs = pair_signs(table)
    assert pairs["same_sign"].all(), pairs
    for column in ("row_target_diff", "row_baseline_diff", "row_delta_diff"):
        assert table[column].max() < 2e-5, table


def test_cr_basis_interpolates_at_knots_and_is_linear_beyond():
    x = np.linspace(0, 10, 200) ** 1.5
    basis = CrBasis.from_data(x, 6)
    assert np.allclose(basis.matrix(basis.knots), np.eye(6), atol=1e-12)
    far = basis.matrix(np.array([-10.0, -20.0, -30.0]))
    assert np.allclose(far[1] - far[0], far[2] - far[1])  # linear below the first knot
    values = np.linalg.eigvalsh(basis.penalty)
    assert np.sum(np.abs(values) < 1e-10 * values.max()) == 2  # null space: lines


@pytest.mark.parametrize(("term", "message"), [
    ("s(surp, bs='cr', k=6", "does not parse"),
    ("s(surp, bs='tp')", "only the cubic regression spline"),
    ("s(surp)", "thin plate"),
    ("s(surp, bs='cr', by=len)", "by= is not supported"),
    ("log(surp)", "only column names and the smooths"),
    ("te(surp, surp)", "names a column twice"),
])
def test_bad_terms_are_named(term, message):
    with pytest.raises(ReadingTimeError, match="term") as caught:
        parse_terms([term])
    assert message in str(caught.value) and term.split(",")[0] in str(caught.value)


def _table(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"rt": rng.normal(300, 30, n), "surp": rng.gamma(2, 2, n),
                         "len": rng.integers(1, 12, n).astype(float), "flat": np.ones(n),
                         "few": np.tile([1.0, 2.0, 3.0], n // 3)})


@pytest.mark.parametrize(("target", "message"), [
    (["s(nope, bs='cr')"], "nope"),
    (["s(flat, bs='cr', k=5)"], "is constant"),
    (["s(few, bs='cr', k=5)"], "3 distinct value(s)"),
])
def test_bad_smooths_in_delta_ll_name_the_term(target, message):
    with pytest.raises(ReadingTimeError) as caught:
        delta_ll(_table(), "rt", target, ["len"], spillover=0)
    assert message in str(caught.value) and target[0] in str(caught.value)


def test_smooth_terms_with_spillover_are_lagged_like_columns():
    result = delta_ll(_table(), "rt", ["s(surp, bs='cr', k=5)"], ["len"], spillover=1,
                      folds=3)
    assert result.settings["predictors_target"] == ["s(surp)", "len", "s(prev1_surp)",
                                                     "prev1_len"]
    assert set(result.smooth_edf["term"]) == {"s(surp)", "s(prev1_surp)"}
    assert set(result.edf["model"]) == {"target"}
    assert result.n == 59 and np.isfinite(result.mean)
