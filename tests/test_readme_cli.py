"""The README's first command-line example answers in seconds: it scores a short example
text shipped in examples/ (one window of the default model), and a long text says what it
will take once its first window is scored."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from ppl_widget.cli.score import LONG_RUN_S, long_run_note

ROOT = Path(__file__).parents[1]


def _readme_cli_example() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"^bash scripts/setup\.sh && \.venv/bin/(ppl-widget score .+)$", readme,
                      re.MULTILINE)
    assert found, "the README shows no `.venv/bin/ppl-widget score` example after the set-up"
    return found.group(1).split()


def test_the_readme_example_scores_a_short_shipped_text():
    argv = _readme_cli_example()
    assert argv[:2] == ["ppl-widget", "score"] and len(argv) == 3
    path = ROOT / argv[2]
    assert path.parent == ROOT / "examples" and path.is_file()
    assert len(path.read_text(encoding="utf-8")) < 2000  # a few hundred tokens at most


@pytest.mark.default_model
def test_the_readme_example_is_one_window_of_the_default_model(tmp_path, capsys, default_lm):
    from ppl_widget.cli import main

    out = tmp_path / "result.json"
    assert main(["score", str(ROOT / _readme_cli_example()[2]), "--json", str(out)]) == 0
    captured = capsys.readouterr()
    settings = json.loads(out.read_text())["settings"]
    assert settings["n_windows"] == 1 and "perplexity / word" in captured.out
    assert "tokens to score" not in captured.err  # a short run says nothing of its length


def test_a_long_run_says_what_it_will_take():
    assert long_run_note(300, 2.0, None) is None and long_run_note(300, math.nan, None) is None
    note = long_run_note(10_659, 180.0, None)
    assert "10,659 tokens to score, about 3 min" in note and "--max-length 256" in note
    assert "about 45 s" in long_run_note(5000, 45.0, 128)
    assert "--max-length" not in long_run_note(5000, LONG_RUN_S + 1, 128)
