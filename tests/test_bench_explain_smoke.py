"""benchmarks/bench_explain.py --smoke: a tiny random Llama; the ratios are printed (not
timed here: speed is the benchmark's to report) and the two paths' surprisals agree."""

from __future__ import annotations

import re

import pytest
from test_scorer_bench_smoke import run_bench

pytest.importorskip("torch")


def test_bench_explain_smoke_prints_its_ratios():
    text = run_bench("bench_explain.py")
    assert re.search(r"gradient x input: [\d.]+ s; one forward \+ backward: [\d.]+ s; "
                     r"ratio [\d.]+ \(target: <= 2\)", text), text
    floor = re.search(r"occlusion of all (\d+) words: [\d.]+ s; floor (\d+) positions x "
                      r"[\d.]+ ms = [\d.]+ s; ratio [\d.]+ \(target: <= 1.3\)", text)
    assert floor and int(floor[1]) > 16 and int(floor[2]) > 64, text
    assert re.search(r"16 nearest words: [\d.]+ s", text), text
    diff = re.search(r"occlusion vs gradient path: \|diff\| ([\d.e+-]+) nats", text)
    assert diff and float(diff[1]) < 1e-4, text
