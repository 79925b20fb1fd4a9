"""The course page in one command (issue #44, item 6): ``scripts/course_site.sh`` installs
the ``[live]`` extra, builds with the q4 transformer and serves; ``build.py --serve`` serves
the site over http (a page that loads a model cannot work from ``file:``), and
``--transformer`` without the extra says what to install before minutes of building."""

from __future__ import annotations

import importlib.util
import pathlib
import re
import subprocess
import sys
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = ROOT / "examples" / "course_site" / "build.py"


def _load_build():
    spec = importlib.util.spec_from_file_location("course_site_build", BUILD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_one_command_installs_the_extra_builds_q4_and_serves():
    script = (ROOT / "scripts" / "course_site.sh").read_text()
    assert "bash scripts/setup.sh" in script and ".[analysis,charts,live]" in script
    assert "--transformer q4 --serve" in script
    assert "bash scripts/course_site.sh" in (ROOT / "README.md").read_text()


def test_transformer_without_the_live_extra_names_the_extra(monkeypatch):
    build = _load_build()
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "onnxscript" else object())
    with pytest.raises(SystemExit, match=r"\[live\] extra \(onnxscript missing\)"):
        build._require_live_extra()


def test_serve_serves_the_built_site_over_http(tmp_path):
    proc = subprocess.Popen([sys.executable, str(BUILD), "--out", str(tmp_path / "site"),
                             "--frozen-model", "bigram", "--serve", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=ROOT)
    try:
        url = None
        for line in proc.stdout:  # waits on the line that names the port, not on a clock
            if (m := re.search(r"http://localhost:(\d+)/", line)):
                url = f"http://127.0.0.1:{m.group(1)}/"
                break
        assert url, "the server never said where it serves"
        with urllib.request.urlopen(url + "index.html", timeout=30) as resp:
            assert resp.status == 200 and b"Surprisal, live" in resp.read()
        with urllib.request.urlopen(url + "live/index.html", timeout=30) as resp:
            assert resp.status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
