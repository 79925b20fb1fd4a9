"""benchmarks/bench_predictive_power.py --smoke runs end to end (a bigram, synthetic
texts) and prints both timings and their ratio."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("wordfreq")

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_bench_predictive_power_smoke():
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" /
                                               "bench_predictive_power.py"), "--smoke"],
                          capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "bigram" in proc.stdout and "720 words" in proc.stdout
    assert re.search(r"\| score_words \(the texts once\)\s+\|\s+\d+\.\d+ \|", proc.stdout)
    assert re.search(r"\| predictive_power \(3 RT measures, 10 folds\)\s+\|\s+\d+\.\d+ \|",
                     proc.stdout)
    assert re.search(r"predictive_power / score_words = \d+\.\d+x \(target <= 1.2x\)",
                     proc.stdout)
