"""``ppl-widget pairs``: a CSV or JSONL of pairs in, the scored table and accuracy out."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ppl_widget.cli import main

pytest.importorskip("torch")

PAIRS = pd.DataFrame({
    "good": ["The dog sleeps.", "These dogs sleep.", "The fox jumps."],
    "bad": ["The dog sleep.", "This dogs sleep.", "The fox jump."],
    "phenomenon": ["agreement", "determiner", "agreement"],
})


def test_csv_in_csv_out_equals_score_pairs(tmp_path, capsys, tiny_gpt2_dir, tiny_gpt2):
    from ppl_widget import score_pairs

    src, dst = tmp_path / "pairs.csv", tmp_path / "out.csv"
    PAIRS.to_csv(src, index=False)
    code = main(["pairs", str(src), "-o", str(dst), "--model", tiny_gpt2_dir,
                 "--by", "phenomenon", "--device", "cpu", "--dtype", "float32"])
    out, err = capsys.readouterr()
    assert code == 0, err
    table = pd.read_csv(dst)
    expected = score_pairs(PAIRS, tiny_gpt2)
    # the command runs score_pairs on the same weights, the same packing: bit for bit
    pd.testing.assert_series_equal(table["delta"], expected["delta"], check_exact=True)
    assert list(table["phenomenon"]) == list(PAIRS["phenomenon"])
    lines = out.splitlines()
    assert lines[0].split() == ["phenomenon", "pairs", "accuracy", "per", "token"]
    assert lines[1].split()[:3] == ["all", "3", f"{expected['correct'].mean():.3f}"]
    assert [line.split()[0] for line in lines[2:]] == ["agreement", "determiner"]


def test_jsonl_with_context(tmp_path, capsys, tiny_gpt2_dir):
    src = tmp_path / "pairs.jsonl"
    rows = [{"context": "Yesterday", "good": " the dog slept.", "bad": " the dog sleeps."}]
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    code = main(["pairs", str(src), "-o", "-", "--model", tiny_gpt2_dir, "--device", "cpu"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.splitlines()[0].startswith("context,good,bad,good_nll,bad_nll")


def test_an_empty_cell_is_an_error_naming_the_row(tmp_path, capsys, monkeypatch):
    from ppl_widget.scoring.kinds import models

    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("model loaded"))
    src = tmp_path / "pairs.csv"
    src.write_text("good,bad\nThe dog sleeps.,The dog sleep.\nA cat.,\n")
    code = main(["pairs", str(src)])
    _, err = capsys.readouterr()
    assert code == 2
    assert "ppl-widget: error: row 1: 'bad' must be text, got missing" in err


def test_other_file_types_and_top_k_are_refused(tmp_path, capsys):
    src = tmp_path / "pairs.txt"
    src.write_text("x")
    assert main(["pairs", str(src)]) == 2
    assert "a .csv or .jsonl file" in capsys.readouterr()[1]
    with pytest.raises(SystemExit):
        main(["pairs", str(src), "--top-k", "3"])
