"""benchmarks/bench_gam.py --smoke: both methods' fits timed per fit (not judged here:
speed is the benchmark's to report, side by side with mgcv in its full run) and the memory
of one REML fit printed."""

from __future__ import annotations

import re

import pytest
from mgcv_reference.compare import xlang_dir
from test_scorer_bench_smoke import run_bench


def test_bench_gam_smoke_prints_both_methods_and_memory():
    if not (xlang_dir() / "en.csv").is_file():
        pytest.skip(f"xlang data not found at {xlang_dir()}")
    text = run_bench("bench_gam.py")
    assert "400 rows, 3 regressions x 2 folds = 6 fits per method" in text, text
    for method in ("GCV.Cp", "REML"):
        assert re.search(rf"{re.escape(method)} *: ppl_widget [\d.]+ s wall, [\d.]+ s CPU "
                         r"per fit; mgcv not timed \(smoke run\)", text), text
    memory = re.search(r"memory of one REML fit on all 400 rows \(peak traced\): ([\d.]+) MiB",
                       text)
    assert memory and 0 < float(memory[1]) < 200, text
