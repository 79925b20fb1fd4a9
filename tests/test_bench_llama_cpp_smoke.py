"""benchmarks/bench_llama_cpp.py --smoke runs without llama.cpp (a tiny random model):
score(protocol="llama.cpp") beside llama-perplexity's loop written out by hand."""

from __future__ import annotations

import re

import pytest
from test_scorer_bench_smoke import run_bench

pytest.importorskip("torch")


def test_bench_llama_cpp_smoke_prints_its_table():
    text = run_bench("bench_llama_cpp.py")
    assert "| dtype    |        loop s | score() s | ratio | median ratio |" in text
    # the smoke run has no median ratio (one run of the loop): that column is blank
    row = re.search(r"\| float32  \|\s+([\d.]+) \|\s+([\d.]+) \|\s+([\d.]+) \|\s+\|"
                    r"\s+([\d.]+) \|\s+([\d.]+) \|\s+(\d+) \|", text)
    assert row, text
    assert float(row[4]) == pytest.approx(float(row[5]), rel=1e-4)  # the same PPL
    assert int(row[6]) == 4 * (32 - 1 - 16)  # 4 chunks of 32, 15 scored in each
