"""The IPython extension: %%surprisal, %surprisal, %ppl_config in a real InteractiveShell."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from ppl_widget import NGramModel, score

CORPUS = ["I am Sam", "Sam I am", "I do not like green eggs and ham"]


@pytest.fixture(scope="module")
def shell():
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "ppl_widget")
    sh.user_ns["bigram"] = NGramModel(2, "add-k").fit(CORPUS)
    yield sh


@pytest.fixture(autouse=True)
def fresh_config(shell):
    shell.run_line_magic("ppl_config", "--reset")


def test_loading_the_extension_imports_no_torch_or_transformers():
    code = ("import sys\nfrom IPython.core.interactiveshell import InteractiveShell\n"
            "ip = InteractiveShell.instance()\nip.run_line_magic('load_ext', 'ppl_widget')\n"
            "assert ip.find_cell_magic('surprisal') and ip.find_line_magic('ppl_config')\n"
            "heavy = [m for m in ('torch', 'transformers', 'anywidget') if m in sys.modules]\n"
            "print(heavy)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_cell_magic_scores_the_body_and_binds_it(shell):
    body = "I am Sam\nSam I am\n"
    result = shell.run_cell(f"%%surprisal --model bigram --as w --add-eos\n{body}")
    assert result.error_in_exec is None
    widget = shell.user_ns["w"]
    assert result.result is widget  # the cell's output
    res = widget.wait()
    ref = score(body, shell.user_ns["bigram"], add_eos=True)
    np.testing.assert_allclose(res.surprisal, ref.surprisal)
    assert res.settings["add_eos"] is True and res.settings["prefix"] == "bos"


def test_protocol_option_scores_as_score_does(shell):
    text = "Sam I am. I do not like green eggs and ham. Sam I am."
    shell.user_ns["t"] = text
    result = shell.run_cell("%surprisal t --model bigram --max-length 6 --stride 2 "
                            "--protocol hf-guide")
    assert result.error_in_exec is None
    res = result.result.wait()
    ref = score(text, shell.user_ns["bigram"], max_length=6, stride=2, protocol="hf-guide")
    assert res.settings["protocol"] == "hf-guide"
    np.testing.assert_array_equal(res.offsets, ref.offsets)
    np.testing.assert_allclose(res.surprisal, ref.surprisal)
    assert len(res.unscored_token_ids) == len(ref.unscored_token_ids) > 0


def test_line_magic_takes_a_variable_an_expression_or_a_file(shell, tmp_path):
    shell.user_ns["t"] = "Sam I am"
    w = shell.run_line_magic("surprisal", "t --model bigram --no-prefix --top-k 2")
    res = w.wait()
    assert res.tokens == [" I", " am"] and res.topk_ids.shape == (2, 2)
    w = shell.run_line_magic("surprisal", "t.upper() + ' I' --model bigram")
    assert w.wait().text == "SAM I AM I"
    w = shell.run_line_magic("surprisal", "'I am' --model bigram")
    assert w.wait().text == "I am"
    path = tmp_path / "notes.txt"
    path.write_text("green eggs and ham", encoding="utf-8")
    w = shell.run_line_magic("surprisal", f"{path} --model bigram --max-length 3 --stride 1")
    res = w.wait()
    assert res.text == "green eggs and ham" and res.settings["max_length"] == 3


def test_config_sets_defaults_and_prints_them(shell, capsys, tiny_gpt2):
    shell.user_ns["tiny"] = tiny_gpt2
    shell.run_line_magic("ppl_config", "--model tiny --max-length 8 --stride 4 --prefix none")
    w = shell.run_line_magic("surprisal", "'one two three four five six seven eight nine'")
    res = w.wait()
    assert res.settings["model"] == tiny_gpt2.name
    assert (res.settings["max_length"], res.settings["stride"]) == (8, 4)
    assert res.settings["prefix"] is None
    capsys.readouterr()
    shell.run_line_magic("ppl_config", "")
    shown = capsys.readouterr().out
    assert "max_length  8" in shown and "model       'tiny'" in shown


@pytest.mark.parametrize(("line", "message"), [
    ("%surprisal 'x' --bogus 1", "unrecognized arguments: --bogus"),
    ("%surprisal 'x' --model bigram --max-length ten", "argument --max-length: invalid int"),
    # score()'s messages (the one rule, core/windows.py; tests/test_window_rule.py)
    ("%surprisal 'x' --model bigram --stride 0",
     "stride must be at least 1 (1 <= stride <= max_length), got 0"),
    ("%surprisal 'x' --model bigram --max-length 4 --stride 8",
     "stride must not exceed max_length (1 <= stride <= max_length), got stride=8 > "
     "max_length=4: tokens would be skipped"),
    ("%surprisal 'x' --model bigram --top-k -1", "top_k must be a non-negative integer, got -1"),
    ("%surprisal 'x' --model bigram --as 2w", "--as needs a Python name"),
    ("%surprisal undefined_name --model bigram", "'undefined_name' is neither a file nor"),
    ("%surprisal 42 --model bigram", "'42' is a int, not a str"),
    ("%surprisal 'x' --model ./no/such/model", "--model './no/such/model': model not found"),
    ("%ppl_config --prefix maybe", "argument --prefix: invalid choice: 'maybe'"),
    ("%surprisal 'x' --model bigram --protocol llama",
     "argument --protocol: invalid choice: 'llama'"),
    ("%ppl_config --device tpu", "--device must be auto, cpu, cuda, cuda:N or mps"),
    ("%ppl_config --dtype f8", "--dtype must be one of"),
    ("%%surprisal --stride x\nsome text", "argument --stride: invalid int value: 'x'"),
])
def test_bad_options_are_one_line_errors_in_the_cell(shell, capsys, line, message):
    result = shell.run_cell(line)
    assert isinstance(result.error_in_exec, UsageError)
    assert message in str(result.error_in_exec)
    shown = capsys.readouterr()
    text = shown.out + shown.err
    assert f"UsageError: {message}" in text and "Traceback" not in text


def test_a_bad_config_changes_nothing(shell):
    shell.run_line_magic("ppl_config", "--max-length 16")
    with pytest.raises(UsageError):
        shell.run_line_magic("ppl_config", "--stride 32")
    magics = shell.magics_manager.registry["PplMagics"]
    assert magics.config_values["max_length"] == 16 and magics.config_values["stride"] is None


def test_usage_is_shown_with_a_question_mark(shell, capsys):
    shell.run_cell("%%surprisal?")
    shown = capsys.readouterr().out
    assert "%surprisal [--model MODEL] [--max-length MAX_LENGTH]" in shown
    assert "--as NAME" in shown and "Score the cell body" in shown
