"""``ppl-widget reading TABLE.csv``: the printed table and its CSV are predictive_power's;
bad columns and bad cells are one-line errors before any model is loaded."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppl_widget import predictive_power
from ppl_widget.cli import main

pytest.importorskip("torch")
pytest.importorskip("wordfreq")

TEXTS = ["The old man read the paper while the young girl read a long book.",
         "Rain fell on the roof as the whole family ate dinner in the kitchen.",
         "A small boat sailed across the quiet lake in the early morning light."]


def write_table(path) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    rows = [(t, w) for t, text in enumerate(TEXTS, start=1) for w in text.split()]
    frame = pd.DataFrame(rows, columns=["text", "word"])
    frame["gaze_rt"] = (200 + 12 * frame["word"].str.len() + rng.normal(0, 20, len(frame)))
    frame["total_rt"] = frame["gaze_rt"] * 1.3
    frame.loc[4, "gaze_rt"] = np.nan  # written as NA: counted as a missing reading time
    frame.to_csv(path, index=False, na_rep="NA")
    return frame


def test_reading_prints_and_writes_predictive_power(tmp_path, capsys, tiny_gpt2_dir):
    path, out_csv, words_csv = tmp_path / "rt.csv", tmp_path / "dll.csv", tmp_path / "w.csv"
    frame = write_table(path)
    code = main(["reading", str(path), "--rt", "gaze_rt", "--rt", "total_rt", "--by", "text",
                 "--folds", "3", "--model", tiny_gpt2_dir, "--device", "cpu",
                 "-o", str(out_csv), "--per-word", str(words_csv)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.split("\n")[0].split() == ["model", "rt", "delta_ll", "se", "ci_low", "ci_high",
                                          "n", "mean_surprisal_bits", "word_perplexity"]
    assert "3 folds by group, spillover 2, baseline length+frequency" in err
    got = pd.read_csv(out_csv)
    from ppl_widget import load_model

    want = predictive_power(frame, load_model(tiny_gpt2_dir, device="cpu"),
                            rt=["gaze_rt", "total_rt"], by="text", folds=3)
    np.testing.assert_allclose(got["delta_ll"], want["delta_ll"], rtol=1e-6, atol=1e-9)
    assert got["n"].tolist() == [len(frame) - 6 - 1, len(frame) - 6]  # + the NA row
    per_word = pd.read_csv(words_csv, keep_default_na=False)
    assert len(per_word) == 2 * len(frame)
    assert "missing reading time" in set(per_word["dropped"])


@pytest.mark.parametrize("args, message", [
    (["--rt", "gaze"], r"rt names column\(s\) \['gaze'\]"),
    (["--rt", "gaze_rt", "--by", "story"], r"by names column\(s\) \['story'\]"),
    (["--rt", "gaze_rt", "--baseline", "length+freq"], r"baseline names column\(s\) \['freq'\]"),
    (["--rt", "word"], r"line 2: column 'word' must hold numbers"),
])
def test_bad_columns_fail_before_the_model_loads(tmp_path, capsys, args, message):
    import re

    path = tmp_path / "rt.csv"
    write_table(path)
    code = main(["reading", str(path), *args, "--model", "/nonexistent/model"])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.startswith("ppl-widget: error: ") and re.search(message, err), err
    assert "nonexistent" not in err  # the model was never looked for


def test_reading_prints_the_folds_it_used_and_says_when_group_gives_fewer(tmp_path, capsys,
                                                                           tiny_gpt2_dir):
    path, words_csv = tmp_path / "rt.csv", tmp_path / "w.csv"
    write_table(path)  # three texts
    code = main(["reading", str(path), "--rt", "gaze_rt", "--by", "text", "--model",
                 tiny_gpt2_dir, "--device", "cpu", "--per-word", str(words_csv)])
    _, err = capsys.readouterr()
    assert code == 0, err
    assert "3 folds by group, spillover 2" in err and "10 folds" not in err
    assert "--folds 10 asked, 3 used: --fold-by group keeps each text whole" in err
    per_word = pd.read_csv(words_csv, keep_default_na=False)
    assert sorted(set(per_word["fold"].astype(str)) - {""}) == ["1", "2", "3"]


def test_reading_table_errors_speak_of_a_reading_table_and_suggest_word(tmp_path, capsys):
    path = tmp_path / "rt.csv"
    pd.DataFrame({"text": [1, 1], "ia": ["The", "cat"], "gaze_rt": [200, 210]}).to_csv(
        path, index=False)
    code = main(["reading", str(path), "--rt", "gaze_rt", "--model", "/nonexistent/model"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "has no 'word' column (its header: text, ia, gaze_rt); a reading table has one " \
           "row per word shown: name the column holding the words with --word COL" in err
    assert "word list" not in err
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert main(["reading", str(empty), "--rt", "gaze_rt", "--model", "/nonexistent/m"]) == 2
    _, err = capsys.readouterr()
    assert "is empty: a reading table needs a header row" in err and "word list" not in err


def test_reading_reads_the_word_column_that_word_names(tmp_path, capsys, tiny_gpt2_dir):
    path = tmp_path / "rt.csv"
    frame = write_table(path).rename(columns={"word": "ia"})
    frame.to_csv(path, index=False, na_rep="NA")
    code = main(["reading", str(path), "--rt", "gaze_rt", "--word", "ia", "--by", "text",
                 "--folds", "3", "--model", tiny_gpt2_dir, "--device", "cpu"])
    _, err = capsys.readouterr()
    assert code == 0, err
