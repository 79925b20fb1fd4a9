"""``ppl-widget words FILE.csv``: the word list's rows come back in order with their
columns as written, the surprisals are score_words'; errors are one line naming the row
by its line in the file."""

from __future__ import annotations

import pandas as pd
import pytest

from ppl_widget.cli import main

pytest.importorskip("torch")

from float64 import TINY_NATS, assert_within  # noqa: E402
from test_words import brute_words  # noqa: E402

CSV = ("item,word,rt\n"
       "1,The,301\n1,quick,NA\n1,fox.,355\n"
       "2,NA,290\n2,\"said,\",310\n2,1990,330\n")


def test_words_csv_round_trip(tmp_path, capsys, tiny_gpt2_dir, tiny_gpt2):
    from ppl_widget import score_words

    path = tmp_path / "list.csv"
    path.write_text(CSV, encoding="utf-8")
    out_path = tmp_path / "out.csv"
    code = main(["words", str(path), "--by", "item", "-o", str(out_path),
                 "--model", tiny_gpt2_dir, "--device", "cpu", "--add-eos"])
    _, err = capsys.readouterr()
    assert code == 0, err
    assert "6 words in 2 text(s) scored" in err
    got = pd.read_csv(out_path, dtype=str, keep_default_na=False)
    # every cell as written: "NA" is a word (and a reading time), 1990 stays "1990"
    assert got["word"].tolist() == ["The", "quick", "fox.", "NA", "said,", "1990"]
    assert got["rt"].tolist() == ["301", "NA", "355", "290", "310", "330"]
    ref = score_words(["The", "quick", "fox."], tiny_gpt2, add_eos=True)
    assert got["n_tokens"].astype(int).tolist()[:3] == ref["n_tokens"].tolist()
    # packed with the other item here: held to the float64 brute force, not to score_words
    # of the item alone (another packing, other float32 rounding)
    per, n, _ = brute_words(tiny_gpt2, ["The", "quick", "fox."], add_eos=True)
    assert_within(got["surprisal"].astype(float)[:3], per, TINY_NATS, n)


def test_words_to_stdout_and_an_error_naming_the_line(tmp_path, capsys, tiny_gpt2_dir):
    path = tmp_path / "list.csv"
    path.write_text("word\n\"Hello,\"\nworld.\n", encoding="utf-8")
    code = main(["words", str(path), "--model", tiny_gpt2_dir, "--device", "cpu",
                 "--bow-correction"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.splitlines()[0] == ("word,surprisal,surprisal_bits,n_tokens,"
                                   "surprisal_corrected,surprisal_corrected_bits")
    assert [line.split(",")[0] for line in out.splitlines()[1:]] == ['"Hello', "world."]
    path.write_text("word\nHello\n\nworld\ntwo words\n", encoding="utf-8")  # line 3 blank
    code = main(["words", str(path), "--model", tiny_gpt2_dir, "--device", "cpu"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    errors = [line for line in err.splitlines() if line.startswith("ppl-widget: error")]
    assert errors == ["ppl-widget: error: row 5: the word 'two words' contains whitespace; a "
                      "word list holds one word a row (split it into rows)"], err


def test_a_row_with_an_unquoted_comma_is_named(tmp_path, capsys, tiny_gpt2_dir):
    path = tmp_path / "list.csv"
    path.write_text("word,rt\nHello,,300\nworld.,310\n", encoding="utf-8")
    code = main(["words", str(path), "--model", tiny_gpt2_dir])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert f"ppl-widget: error: {path}, line 2: 3 field(s), the header has 2" in err
