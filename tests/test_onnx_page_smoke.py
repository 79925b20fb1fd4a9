"""bench_onnx_page.py --smoke: a tiny random Llama exported to ONNX, loaded by the page's
adapter (js/src/live/models/onnx.js) in a Web Worker of headless Chromium from 127.0.0.1,
scores a text as score() does (same ids, |Δ surprisal| at fp32 noise), and the page
requests nothing outside its folder."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest
from background_setup import wait_for

ROOT = pathlib.Path(__file__).parents[1]
pytest.importorskip("onnxruntime")
pytest.importorskip("playwright")


@pytest.mark.browser
def test_bench_onnx_page_smoke():
    wait_for("debian-packages")  # test.sh installs Chromium in the background on a new machine
    if not pathlib.Path("/usr/bin/chromium").exists():
        pytest.skip("needs Chromium at /usr/bin/chromium")
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks/bench_onnx_page.py"),
                           "--smoke"], capture_output=True, text=True, timeout=900,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    row = re.search(r"^fp32 +(.*)$", proc.stdout, re.M)
    assert row, proc.stdout
    cols = row.group(1).split()
    # page MB, model MB, cold s, warm s, tok/s, ratio, mean |Δ|, max |Δ|, ids, peak MB, outside
    mean, worst, ids, outside = float(cols[6]), float(cols[7]), cols[8], int(cols[10])
    assert ids == "same" and outside == 0
    assert 0 <= mean <= worst < 1e-4
    assert "backend fp32 (onnxruntime-web, wasm)" in proc.stdout
