"""The command line: encodings, counts checked before a model loads, one-line
errors, and Ctrl-C keeping what was scored (issue 11, items 1, 3 and 4)."""

from __future__ import annotations

import io
import json
import os
import sys

import pytest

from ppl_widget.cli import main

pytest.importorskip("torch")

TEXT = ("Caf\u00e9 cr\u00e8me, na\u00efve r\u00e9sum\u00e9.\r\n"
        "The quick brown fox jumps over the dog.")


def _run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("ppl-widget: error")]


def test_a_file_that_is_not_utf8_is_named_with_its_byte_offset(tmp_path, capsys, monkeypatch):
    from ppl_widget.scoring.kinds import models

    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("model loaded"))
    path = tmp_path / "latin.txt"
    path.write_bytes(TEXT.encode("latin-1"))
    code, out, err = _run(["score", str(path)], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1, err  # one line
    assert (f"ppl-widget: error: {path} is not valid utf-8: byte 0xe9 at offset 3 (line 1) "
            "cannot be decoded") in err
    assert "--encoding latin-1" in err


def test_the_offset_and_line_are_those_of_the_bad_byte(tmp_path, capsys):
    path = tmp_path / "t.txt"
    data = "line one\nline two \u00e9\n".encode() + b"third \xff line\n"
    path.write_bytes(data)
    code, _, err = _run(["score", str(path)], capsys)
    assert code == 2
    offset = data.index(b"\xff")
    assert f"byte 0xff at offset {offset} (line 3)" in err


def test_encoding_option_reads_the_file(tmp_path, capsys, tiny_gpt2_dir, tiny_gpt2):
    from ppl_widget import score

    path = tmp_path / "latin.txt"
    path.write_bytes(TEXT.encode("latin-1"))
    out_json = tmp_path / "r.json"
    code, out, err = _run(["score", str(path), "--encoding", "latin-1", "--model", tiny_gpt2_dir,
                           "--max-length", "16", "--stride", "8", "--top-k", "2",
                           "--json", str(out_json)], capsys)
    assert code == 0, err
    data = json.loads(out_json.read_text())
    assert data["text"] == TEXT  # decoded right, CRLF kept as written
    expected = score(TEXT, tiny_gpt2, max_length=16, stride=8, top_k=2).metrics()
    # the command line runs score() on the same weights (saved and loaded): bit for bit
    assert data["metrics"]["total_nll"] == expected["total_nll"]
    assert "perplexity / word" in out


def test_utf8_bom_is_dropped_and_stdin_works(tmp_path, capsys, tiny_gpt2_dir, monkeypatch):
    out_json = tmp_path / "r.json"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(
        b"\xef\xbb\xbf" + TEXT.encode("utf-8"))))
    code, _, err = _run(["score", "-", "--model", tiny_gpt2_dir, "--max-length", "16",
                         "--json", str(out_json)], capsys)
    assert code == 0, err
    assert json.loads(out_json.read_text())["text"] == TEXT


def test_stdin_in_another_encoding(tmp_path, capsys, tiny_gpt2_dir, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(TEXT.encode("cp1252"))))
    code, _, err = _run(["score", "-", "--model", tiny_gpt2_dir], capsys)
    assert code == 2 and "standard input is not valid utf-8: byte 0xe9 at offset 3" in err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(TEXT.encode("cp1252"))))
    out_json = tmp_path / "r.json"
    code, _, err = _run(["score", "-", "--encoding", "cp1252", "--model", tiny_gpt2_dir,
                         "--json", str(out_json)], capsys)
    assert code == 0, err
    assert json.loads(out_json.read_text())["text"] == TEXT


def test_unknown_encoding(tmp_path, capsys):
    path = tmp_path / "t.txt"
    path.write_text("hi", encoding="utf-8")
    code, _, err = _run(["score", str(path), "--encoding", "klingon"], capsys)
    assert code == 2 and _error_lines(err) == [
        "ppl-widget: error: unknown encoding 'klingon' (--encoding); try utf-8, latin-1, "
        "cp1252, utf-16"]


@pytest.mark.parametrize("argv, message", [
    (["--stride", "0"], r"stride must be at least 1 \(1 <= stride <= max_length\), got 0"),
    (["--max-length", "8", "--stride", "9"], "stride must not exceed max_length"),
    (["--max-length", "0"], "max_length must be at least 1, got 0"),
    (["--top-k", "-1"], "top_k must be a non-negative integer, got -1"),
])
def test_bad_counts_fail_before_the_model_loads(tmp_path, capsys, monkeypatch, argv, message):
    import re

    from ppl_widget.scoring.kinds import models

    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("model loaded"))
    path = tmp_path / "t.txt"
    path.write_text("hi there", encoding="utf-8")
    code, _, err = _run(["score", str(path), *argv], capsys)
    assert code == 2 and len(_error_lines(err)) == 1 and re.search(message, err), err


@pytest.mark.parametrize("value", ["3.5", "1e3", "ten", "True"])
def test_counts_must_be_whole_numbers(capsys, value):
    with pytest.raises(SystemExit) as info:
        main(["score", "x.txt", "--stride", value])
    assert info.value.code == 2
    assert f"argument --stride: must be a whole number, got '{value}'" in capsys.readouterr().err


def test_model_errors_are_one_line(tmp_path, capsys):
    path = tmp_path / "t.txt"
    path.write_text("hi there", encoding="utf-8")
    code, _, err = _run(["score", str(path), "--model", str(tmp_path)], capsys)
    assert code == 2
    assert _error_lines(err) == [line for line in err.splitlines() if "error" in line]
    assert "has no config.json" in err
    code, _, err = _run(["score", str(path), "--model", str(tmp_path), "--device", "tpu"],
                        capsys)
    assert code == 2 and "unknown device 'tpu'" in err
    code, _, err = _run(["score", str(tmp_path / "missing.txt")], capsys)
    assert code == 2 and "missing.txt" in err and len(_error_lines(err)) == 1


def test_ctrl_c_prints_what_was_scored(tmp_path, capsys, tiny_gpt2_dir, monkeypatch, tiny_gpt2):
    from ppl_widget.scoring.runner import scorer

    real = scorer.stream

    def interrupted(*args, **kwargs):
        it = real(*args, **{**kwargs, "batch_size": 1})  # a window per chunk: a first one
        yield next(it)
        raise KeyboardInterrupt

    monkeypatch.setattr(scorer, "stream", interrupted)
    path = tmp_path / "t.txt"
    path.write_text(TEXT * 4, encoding="utf-8")
    out_json = tmp_path / "r.json"
    code, out, err = _run(["score", str(path), "--model", tiny_gpt2_dir, "--max-length", "16",
                           "--stride", "8", "--json", str(out_json)], capsys)
    assert code == 130
    assert "interrupted" in err and "PARTIAL" in out
    data = json.loads(out_json.read_text())
    first = next(real(TEXT * 4, tiny_gpt2, max_length=16, stride=8, batch_size=1))
    assert data["metrics"]["n_tokens"] == first.done > 0


def test_help_texts_carry_no_markup():
    """What --help prints is plain text: no reStructuredText backticks (issue #44)."""
    from ppl_widget.cli import build_parser

    parser = build_parser()
    texts = [parser.format_help()]
    texts += [p.format_help() for p in parser._subparsers._group_actions[0].choices.values()]
    for text in texts:
        assert "``" not in text, text[:200]
    assert "ppl-widget score FILE" in texts[0]


@pytest.mark.parametrize("start", ["module", "script"])
def test_the_command_ends_without_collecting_its_heap(start, tmp_path):
    """``python -m ppl_widget`` and the ``ppl-widget`` script freeze the heap as they end
    (cli.console): the interpreter's collections at exit cost 2-3 s of CPU with torch
    loaded. An exit handler registered before the command runs sees it, and the command's
    output and status are as ``main()``'s."""
    import shutil
    import subprocess

    script = shutil.which("ppl-widget", path=os.path.dirname(sys.executable))
    run = ("runpy.run_module('ppl_widget', run_name='__main__')" if start == "module" else
           f"runpy.run_path({script!r}, run_name='__main__')")
    code = ("import atexit, gc, runpy, sys\n"
            "atexit.register(lambda: print('frozen:', gc.get_freeze_count() > 0))\n"
            f"sys.argv = ['ppl-widget', 'cache']\n{run}\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PPL_WIDGET_CACHE": str(tmp_path / "cache")},
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.rstrip().endswith("frozen: True"), proc.stdout
    assert str(tmp_path / "cache") in proc.stdout  # the cache command's own output came first
