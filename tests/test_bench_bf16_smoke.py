"""benchmarks/bench_bf16.py --smoke: a tiny random Llama in float32 and in bfloat16 with
the chosen products and with the other ones, side by side."""

from __future__ import annotations

import re

import pytest
from test_scorer_bench_smoke import run_bench

pytest.importorskip("torch")


def test_bench_bf16_smoke_prints_both_paths_beside_float32(tmp_path, monkeypatch):
    monkeypatch.setenv("PPL_WIDGET_CACHE", str(tmp_path))  # measured here, not in ~/.cache
    monkeypatch.delenv("PPL_WIDGET_BF16_PRODUCTS", raising=False)
    text = run_bench("bench_bf16.py")
    chosen = re.search(r"chosen: (native|float32) products \(measured at this first load; "
                       r"the timed product: native [\d.]+ GFLOP/s, float32 [\d.]+ GFLOP/s\)",
                       text)
    assert chosen, text
    other = "native" if chosen[1] == "float32" else "float32"
    rows = re.findall(r"^\| (float32|bfloat16 chosen|bfloat16 other) +\| ([\w-]+) +\|.*"
                      r"x \|\s+([\d.]+) \|\s+[\d.]+ \|$", text, re.M)
    assert [r[:2] for r in rows] == [("float32", "-"), ("bfloat16 chosen", chosen[1]),
                                     ("bfloat16 other", other)], text
    diffs = [float(r[2]) for r in rows]  # max |d surprisal| from float32, nats
    assert diffs[0] == 0 and 0 < max(diffs[1:]) < 0.5, text  # bf16 rounding, no more
    assert (tmp_path / "bf16_products.json").is_file()
    assert f"with the chosen ({chosen[1]}) products" in text
