"""Errors a newcomer meets first (issue 36, item 5): each one clear, named, and given
before any model loads."""

from __future__ import annotations

import pytest

from ppl_widget.cli import main

pytest.importorskip("torch")


@pytest.fixture
def no_model(monkeypatch):
    """Any model load fails the test: the error must come first."""
    from ppl_widget.cli import load_bar
    from ppl_widget.scoring.kinds import models

    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("model loaded"))
    monkeypatch.setattr(load_bar, "load_with_bar", lambda *a, **k: pytest.fail("model loaded"))


def _error(argv, capsys) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out, err)
    assert err.count("\n") == 1 and err.startswith("ppl-widget: error: "), err
    return err.removeprefix("ppl-widget: error: ").strip()


@pytest.mark.parametrize("blank", [" \n\t \r\n", "\u00a0\u2003\n"])
def test_a_whitespace_only_file_is_an_error_like_an_empty_one(blank, tmp_path, capsys,
                                                               no_model):
    path = tmp_path / "blank.txt"
    path.write_text(blank, encoding="utf-8")
    message = _error(["score", str(path)], capsys)
    assert message.startswith(f"{path} holds only whitespace (no word): there is nothing "
                              "to score")
    assert "--add-eos" in message
    (tmp_path / "empty.txt").write_text("")
    assert "is empty: there is nothing to score" in _error(["score", str(tmp_path /
                                                                       "empty.txt")], capsys)


def test_whitespace_alone_is_refused_in_python_too(tiny_gpt2):
    """``score('   \\n\\t')`` is the same error as a blank file or cell (issue #44): it has
    no word, so its word perplexity would be NaN; ``add_eos=True`` still scores it."""
    from ppl_widget import score

    with pytest.raises(ValueError, match=r"text holds only whitespace \(no word\): there is "
                                         r"nothing to score .*add_eos=True"):
        score("   \n\t", tiny_gpt2)
    res = score(" \n ", tiny_gpt2, add_eos=True)
    assert res.is_eos.tolist()[-1]  # the end-of-text token is scored


def test_a_missing_file_is_named_plainly(tmp_path, capsys, no_model):
    missing = tmp_path / "nope.txt"
    assert _error(["score", str(missing)], capsys) == f"no such file: {missing}"
    assert _error(["words", str(tmp_path / "w.csv")], capsys) == \
        f"no such file: {tmp_path / 'w.csv'}"
    assert _error(["score", str(tmp_path)], capsys) == f"{tmp_path} is a folder, not a file"


def test_a_word_list_without_a_word_column_says_so_before_the_model_loads(tmp_path, capsys,
                                                                          no_model):
    path = tmp_path / "stimuli.csv"
    path.write_text("item,token\n1,The\n1,cat\n", encoding="utf-8")
    assert _error(["words", str(path)], capsys) == (
        f"{path} has no 'word' column (its header: item, token); a word list has one word "
        "a row in a column named 'word'")
    path.write_text("item,word\n1,The\n1,cat\n", encoding="utf-8")
    assert "by names column(s) ['sentence']" in _error(["words", str(path), "--by",
                                                        "sentence"], capsys)


def test_divergence_with_an_ngram_model_points_to_compare(tiny_gpt2):
    from ppl_widget import NGramModel, divergence

    bigram = NGramModel(2, "add-k").fit(["the cat sat on the mat"])
    for base, other in ((tiny_gpt2, bigram), (bigram, tiny_gpt2)):
        with pytest.raises(TypeError, match=r"compare\(text, \[base, other\]\)") as info:
            divergence("the cat sat", base, other)
        assert "NGramModel" in str(info.value)
        assert "model must be None" not in str(info.value)


def test_quantized_copy_is_public_and_the_notebook_imports_it_from_there():
    import json
    from pathlib import Path

    import ppl_widget
    from ppl_widget.scoring.kinds.gguf.quantize import quantized_copy

    assert ppl_widget.quantized_copy is quantized_copy and "quantized_copy" in ppl_widget.__all__
    root = Path(__file__).parents[1]
    for path in [*root.glob("examples/*.ipynb"), *root.glob("docs/*.md"), root / "README.md"]:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".ipynb":
            text = "".join("".join(c["source"]) for c in json.loads(text)["cells"])
        assert "ppl_widget.scoring.kinds.gguf.quantize import" not in text, path


def test_llama_cpp_on_a_short_text_suggests_a_window_that_fits():
    from ppl_widget.core.protocols import plan_llama_cpp

    with pytest.raises(ValueError, match=r"e\.g\. max_length=64 \(--max-length 64\)"):
        plan_llama_cpp(188, 1024, bos=True)
    assert len(plan_llama_cpp(188, 64, bos=True)) == 2  # and that one runs
