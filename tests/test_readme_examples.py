"""Every example in the README runs as written (issue 36, item 4): its Python block
executes on the default model, and each command-line example (besides the two set-up
commands, which tests/test_main_command.py, tests/test_readme_cli.py and CI itself run)
exits 0 with what it promises. The README's `.venv/bin/` is the project environment
scripts/setup.sh makes; a checkout without one (a developer's own environment) runs
this interpreter's commands instead."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", README, re.MULTILINE | re.DOTALL)


def _commands() -> list[str]:
    """The README's command lines, comments dropped, the set-up commands left out."""
    lines = [line.split("   #", 1)[0].strip() for block in _blocks("bash")
             for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("bash scripts/")]


def _argv(command: str) -> list[str]:
    argv = shlex.split(command)
    venv_bin = ROOT / ".venv" / "bin"
    if argv[0].startswith(".venv/bin/"):
        name = argv[0].removeprefix(".venv/bin/")
        if venv_bin.exists():
            argv[0] = str(venv_bin / name)
        elif os.environ.get("CI"):
            pytest.fail("no .venv: CI runs the README's commands as written (scripts/setup.sh)")
        else:
            argv[0:1] = [sys.executable] if name == "python" else \
                [sys.executable, "-m", "ppl_widget"] if name == "ppl-widget" else [name]
    return argv


def test_the_readme_is_short_and_has_what_a_newcomer_needs():
    assert len(README.splitlines()) <= 120
    for needed in ("docs/widget.png", "examples/course_site/build.py", "docs/performance.md",
                   "docs/usage.md", "docs/teaching.md"):
        assert needed in README, needed
    assert "tok/s" not in README  # the figures live in docs/performance.md
    for link in re.findall(r"\]\((docs/[^)#]+)", README):
        assert (ROOT / link).is_file(), link
    assert len(_blocks("python")) == 1 and len(_commands()) >= 3


@pytest.mark.default_model
def test_the_readme_python_block_runs(default_lm, monkeypatch):
    monkeypatch.chdir(ROOT)  # it reads examples/surprisal.txt as a user in the checkout would
    names: dict = {}
    exec(compile(_blocks("python")[0], "README.md", "exec"), names)
    result, widget = names["result"], names["widget"]
    assert result.metrics()["n_words"] == len(names["text"].split())
    assert list(result.to_frame("word")["text"])[:3] == names["text"].split()[:3]
    # one window either way (187 tokens): the widget's numbers are score()'s
    assert widget.wait().metrics()["total_nll"] == pytest.approx(
        result.metrics()["total_nll"], rel=1e-5)


@pytest.mark.default_model
@pytest.mark.parametrize("command", _commands())
def test_each_readme_command_runs_as_written(command, default_lm):
    env = {**os.environ, "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(_argv(command), cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env=env)
    assert proc.returncode == 0, f"{command}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    if "--protocol llama.cpp" in command:
        assert "llama-perplexity's final PPL" in proc.stdout
    if command.split()[0].endswith("ppl-widget") and "cache" in command.split():
        assert "cached" in proc.stdout or "total" in proc.stdout
    if "course_site/build.py" in command:
        assert (ROOT / "examples/course_site/_site/index.html").is_file()
        assert (ROOT / "examples/course_site/_site/frozen.html").is_file()
