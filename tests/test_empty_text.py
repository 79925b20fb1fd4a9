"""An empty text has nothing to score: every entry point says so with the same rule
(core/validation.py check_text), before a model loads; ``add_eos=True`` scores the
end-of-text token alone and is allowed.  An editable widget may start empty: it shows an
empty result, not an error, and scores what is typed."""

from __future__ import annotations

import io

import pytest

from ppl_widget import score
from ppl_widget.core.validation import check_text

#: whitespace alone is as empty, in Python as in a file or a cell (issue #44)
RULE = (r"is empty: there is nothing to score \(a text needs at least one character besides "
        r"whitespace; ")
BLANK_RULE = (r"there is nothing to score \(a text needs at least one character besides "
              r"whitespace; ")


def test_the_rule():
    assert check_text("x") == "x" and check_text("", add_eos=True) == ""
    with pytest.raises(ValueError, match="text " + RULE + r"add_eos=True scores the end-of-"):
        check_text("")
    with pytest.raises(TypeError, match="text must be a str, got bytes"):
        check_text(b"x")


def test_score_refuses_it_before_loading_a_model(monkeypatch):
    from ppl_widget.scoring.runner import scorer

    monkeypatch.setattr(scorer, "as_loaded", lambda *a, **k: pytest.fail("a model was loaded"))
    with pytest.raises(ValueError, match="text " + RULE):
        score("", "no/such-model")


def test_score_with_add_eos_scores_the_eos_token_alone(tiny_gpt2):
    res = score("", tiny_gpt2, add_eos=True)
    assert len(res) == 1 and res.is_eos.tolist() == [True]


def test_a_widget_with_a_fixed_empty_text_is_an_error_at_once(tiny_gpt2):
    pytest.importorskip("anywidget")
    from ppl_widget import PerplexityWidget

    with pytest.raises(ValueError, match="text " + RULE):
        PerplexityWidget("", tiny_gpt2)
    w = PerplexityWidget("", tiny_gpt2, add_eos=True)
    assert len(w.wait()) == 1


def test_an_editable_widget_starts_empty_without_an_error(tiny_gpt2):
    pytest.importorskip("anywidget")
    from ppl_widget import PerplexityWidget

    w = PerplexityWidget("", tiny_gpt2, editable=True)
    empty = w.wait()
    assert w.status == "done" and w.error == "" and len(empty) == 0
    w.text = "The cat sat."
    assert len(w.wait()) > 0 and w.status == "done"
    w.text = ""  # deleting everything goes back to the empty state
    assert len(w.wait()) == 0 and w.status == "done" and w.error == ""


def test_the_command_line_names_the_empty_file(tmp_path, monkeypatch, capsys):
    from ppl_widget.cli import main
    from ppl_widget.scoring.kinds import models

    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("a model loaded"))
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert main(["score", str(empty)]) == 2
    err = capsys.readouterr().err
    assert f"ppl-widget: error: {empty} is empty: there is nothing to score" in err
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["score", "-"]) == 2
    err = capsys.readouterr().err
    assert "standard input is empty" in err and "--add-eos scores the end-of-text" in err


def test_the_line_magic_names_the_source():
    pytest.importorskip("anywidget")
    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "ppl_widget")
    # an empty %%surprisal cell is IPython's own error ("the cell body is empty")
    shell.user_ns["nothing"] = ""
    with pytest.raises(UsageError, match="'nothing' is empty: " + BLANK_RULE + "--add-eos"):
        shell.run_line_magic("surprisal", "nothing --model no/such-model")
    shell.user_ns["blank"] = " \n\t "
    with pytest.raises(UsageError, match="'blank' holds only whitespace \\(no word\\): "
                       + BLANK_RULE + "--add-eos"):
        shell.run_line_magic("surprisal", "blank --model no/such-model")
