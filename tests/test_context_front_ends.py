"""A context and the prefix token in every window through the command line, the widget
and the magics: the same result as score(), the same errors."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("anywidget")
from IPython.core.error import UsageError  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

from ppl_widget import PerplexityWidget, score  # noqa: E402
from ppl_widget.cli import main  # noqa: E402

CONTEXT = "Surprisal is minus the log probability of a token "
TEXT = "given its context. The quick brown fox jumps over the lazy dog."
CHAT = [{"role": "user", "content": "What does the fox do?"}]
TEMPLATE = ("{% for m in messages %}<|endoftext|>{{ m['role'] }}\n{{ m['content'] }}"
            "<|endoftext|>\n{% endfor %}{% if add_generation_prompt %}<|endoftext|>assistant\n"
            "{% endif %}")


@pytest.fixture(scope="module")
def chat_dir(tmp_path_factory, tiny_gpt2):
    path = tmp_path_factory.mktemp("tiny_chat")
    tok = copy.deepcopy(tiny_gpt2.tokenizer)
    tok.chat_template = TEMPLATE
    tiny_gpt2.model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


def _files(tmp_path):
    (tmp_path / "text.txt").write_text(TEXT, encoding="utf-8")
    (tmp_path / "context.txt").write_text(CONTEXT, encoding="utf-8")
    (tmp_path / "chat.json").write_text(json.dumps(CHAT), encoding="utf-8")
    return str(tmp_path / "text.txt"), str(tmp_path / "context.txt"), str(tmp_path / "chat.json")


def test_the_command_line_scores_a_continuation(tmp_path, capsys, tiny_gpt2_dir, tiny_gpt2):
    text, ctx, _ = _files(tmp_path)
    out = tmp_path / "r.json"
    code = main(["score", text, "--model", tiny_gpt2_dir, "--context", ctx, "--max-length", "16",
                 "--prefix-every-window", "--json", str(out)])
    printed = capsys.readouterr().out
    assert code == 0 and "given a context of" in printed and "prefix token in every" in printed
    data = json.loads(out.read_text(encoding="utf-8"))
    want = score(TEXT, tiny_gpt2, context=CONTEXT, max_length=16, prefix_every_window=True)
    # the command line runs score() on the same weights (saved and loaded): bit for bit
    np.testing.assert_array_equal(np.float32(data["tokens"]["surprisal"]), want.surprisal)
    assert data["context"] == CONTEXT.rstrip() and data["text"] == " " + TEXT


def test_the_command_line_reads_a_chat(tmp_path, capsys, chat_dir, tiny_gpt2):
    text, _, chat = _files(tmp_path)
    out = tmp_path / "r.json"
    assert main(["score", text, "--model", chat_dir, "--chat", chat, "--add-eos",
                 "--json", str(out)]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["context"] == CHAT and data["tokens"]["is_eos"][-1] is True


@pytest.mark.parametrize(("flags", "message"), [
    (["--chat", "CHAT"], "this tokenizer has no chat template"),
    (["--context", "CONTEXT", "--chat", "CHAT"], "not allowed with argument"),
    (["--prefix-every-window", "--max-length", "1"],
     "max_length must be at least 2 with prefix_every_window=True"),
])
def test_the_command_line_errors(tmp_path, capsys, tiny_gpt2_dir, flags, message):
    text, ctx, chat = _files(tmp_path)
    flags = [{"CHAT": chat, "CONTEXT": ctx}.get(f, f) for f in flags]
    try:
        code = main(["score", text, "--model", tiny_gpt2_dir, *flags])
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code
    assert code == 2 and message in capsys.readouterr().err


def test_the_widget_scores_and_shows_the_context(tiny_gpt2):
    w = PerplexityWidget(TEXT, tiny_gpt2, context=CONTEXT, max_length=16,
                         prefix_every_window=True)
    res = w.wait()
    want = score(TEXT, tiny_gpt2, context=CONTEXT, max_length=16, prefix_every_window=True)
    np.testing.assert_array_equal(res.surprisal, want.surprisal)  # score()'s stream: bit for bit
    assert w.settings["context"] == CONTEXT.rstrip() and w.settings["prefix_every_window"]
    assert w.settings["context_tokens"] == want.settings["context_tokens"] > 0
    w.prefix_every_window = False  # a settings control: re-scores
    res = w.wait()
    assert res.settings["prefix_every_window"] is False
    w.context = None  # the text alone
    assert w.wait().context is None and "context" not in w.settings


def test_the_widget_refuses_bad_settings(tiny_gpt2):
    with pytest.raises(ValueError, match="context must hold more than whitespace"):
        PerplexityWidget(TEXT, tiny_gpt2, context=" ", autostart=False)
    with pytest.raises(ValueError, match="max_length must be at least 2 with"):
        PerplexityWidget(TEXT, tiny_gpt2, max_length=1, prefix_every_window=True,
                         autostart=False)
    w = PerplexityWidget(TEXT, tiny_gpt2, max_length=1, stride=1, autostart=False)
    with pytest.raises(ValueError, match="max_length must be at least 2 with"):
        w.prefix_every_window = True
    assert w.prefix_every_window is False


def test_the_magic_reads_a_context(tiny_gpt2):
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "ppl_widget")
    sh.user_ns.update(tiny=tiny_gpt2, ctx=CONTEXT)
    w = sh.run_cell_magic("surprisal", "--model tiny --context ctx --max-length 16", TEXT)
    want = score(TEXT, tiny_gpt2, context=CONTEXT, max_length=16)
    np.testing.assert_array_equal(w.wait().surprisal, want.surprisal)  # the same stream
    w = sh.run_cell_magic("surprisal", "--model tiny --context 'The quick brown'", "fox")
    assert w.wait().context == "The quick brown"
    with pytest.raises(UsageError, match="--context 'nothere'"):
        sh.run_cell_magic("surprisal", "--model tiny --context nothere", TEXT)


def test_the_widget_shows_the_continuation_as_scored(tiny_gpt2):
    w = PerplexityWidget("fox jumps.", tiny_gpt2, context="The quick brown ")
    assert (w.context, w.text) == ("The quick brown", " fox jumps.")
    assert w.wait().text == w.text
    w.context = "A lazy dog "  # the whitespace moves again: one run, offsets into w.text
    assert (w.context, w.text) == ("A lazy dog", "  fox jumps.")
    res = w.wait()
    assert res.text == w.text and res.offsets[-1, 1] == len(w.text)
