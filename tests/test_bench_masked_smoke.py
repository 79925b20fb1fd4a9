"""benchmarks/bench_masked.py --smoke: a tiny random BERT; the ratio to minicons is
printed (not timed here: speed is the benchmark's to report) and the two agree."""

from __future__ import annotations

import re

import pytest
from test_scorer_bench_smoke import run_bench

pytest.importorskip("minicons.scorer")


def test_bench_masked_smoke_prints_its_ratio():
    text = run_bench("bench_masked.py")
    assert re.search(r"score\(\) \(float32, batch_size=\d+\): [\d.]+ s", text), text
    assert re.search(r"ratio [\d.]+x; with ranks [\d.]+x \(target: >= 3\)", text), text
    diff = re.search(r"score\(\) vs minicons: max \|diff\| ([\d.e+-]+) nats", text)
    assert diff and float(diff[1]) < 1e-4, text
