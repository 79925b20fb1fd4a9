"""One window rule (core.windows.check_window_settings) and one top-k rule, with
score()'s messages, at every entry point: score(), the command line, the widget (built,
re-scored, a trait set) and the magics."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("anywidget")
import traitlets  # noqa: E402
from IPython.core.error import UsageError  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

from ppl_widget import PerplexityWidget, score  # noqa: E402
from ppl_widget.cli import main  # noqa: E402
from ppl_widget.core.windows import check_window_params, check_window_settings  # noqa: E402

TEXT = "The quick brown fox jumps over the lazy dog. " * 3
STRIDE_RANGE = "(1 <= stride <= max_length)"

#: settings score() refuses (the tiny model's context, and so its default window, is 64)
BAD = [
    ({"stride": 0}, f"stride must be at least 1 {STRIDE_RANGE}, got 0"),
    ({"max_length": 0}, "max_length must be at least 1, got 0"),
    ({"max_length": -3, "stride": 2}, "max_length must be at least 1, got -3"),
    ({"max_length": 8, "stride": 9},
     f"stride must not exceed max_length {STRIDE_RANGE}, got stride=9 > max_length=8: "
     "tokens would be skipped"),
    ({"stride": 65}, f"stride must not exceed max_length {STRIDE_RANGE}, got stride=65 > "
                     "max_length=64: tokens would be skipped"),
    ({"max_length": 65}, "max_length must not exceed the model's context length (64), got 65"),
    ({"top_k": -1}, "top_k must be a non-negative integer, got -1"),
]
IDS = [" ".join(f"{k}={v}" for k, v in settings.items()) for settings, _ in BAD]


def _flags(settings: dict) -> list[str]:
    return [part for k, v in settings.items() for part in (f"--{k.replace('_', '-')}", str(v))]


@pytest.fixture(scope="module")
def shell(tiny_gpt2):
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "ppl_widget")
    sh.user_ns["tiny"] = tiny_gpt2
    yield sh


@pytest.mark.parametrize(("settings", "message"), BAD, ids=IDS)
def test_score_gives_the_message(tiny_gpt2, settings, message):
    with pytest.raises(ValueError) as info:
        score(TEXT, tiny_gpt2, **settings)
    assert str(info.value) == message


@pytest.mark.parametrize(("settings", "message"), BAD, ids=IDS)
def test_the_command_line_gives_the_message(tmp_path, capsys, tiny_gpt2_dir, settings, message):
    path = tmp_path / "t.txt"
    path.write_text(TEXT, encoding="utf-8")
    code = main(["score", str(path), "--model", tiny_gpt2_dir, *_flags(settings)])
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert code == 2 and errors == [f"ppl-widget: error: {message}"]


@pytest.mark.parametrize(("settings", "message"), BAD, ids=IDS)
def test_the_widget_gives_the_message(tiny_gpt2, settings, message):
    with pytest.raises(ValueError) as info:
        PerplexityWidget(TEXT, tiny_gpt2, autostart=False, **settings)
    assert str(info.value) == message
    w = PerplexityWidget(TEXT, tiny_gpt2, autostart=False)  # the model's default window
    with pytest.raises(traitlets.TraitError) as info:
        w.rescore(**settings)
    assert str(info.value) == message
    if settings.keys() == {"stride"} or settings.keys() == {"max_length"}:
        (name, value), = settings.items()
        with pytest.raises(traitlets.TraitError) as info:
            setattr(w, name, value)
        assert str(info.value) == message
    assert (w.max_length, w.stride, w.result) == (None, None, None)  # nothing changed


@pytest.mark.parametrize(("settings", "message"), BAD, ids=IDS)
def test_the_magics_give_the_message(shell, settings, message):
    shell.run_line_magic("ppl_config", "--reset")
    result = shell.run_cell(f"%surprisal {TEXT!r} --model tiny {' '.join(_flags(settings))}")
    assert isinstance(result.error_in_exec, UsageError)
    assert str(result.error_in_exec) == message
    if "max_length" in settings and settings.get("max_length") != 65:
        with pytest.raises(UsageError) as info:  # the kernel's defaults: the same rule
            shell.run_line_magic("ppl_config", " ".join(_flags(settings)))
        assert str(info.value) == message


def test_none_is_the_models_default_and_stays_none():
    assert check_window_settings(None, None) == (None, None)
    assert check_window_settings(None, 7) == (None, 7)
    assert check_window_settings(16, None, context_length=16) == (16, None)
    assert check_window_params(16) == (16, 8)  # stride: half the window
    assert check_window_params(1) == (1, 1)
    with pytest.raises(ValueError, match="max_length must be an integer, got None"):
        check_window_params(None, 4)


@pytest.mark.parametrize("value", ["0", "-2", "abc"])
def test_batch_size_is_checked_by_scores_rule_before_the_corpus_run(tmp_path, capsys,
                                                                     monkeypatch, value):
    from ppl_widget.scoring import corpus

    monkeypatch.setattr(corpus, "score_corpus", lambda *a, **k: pytest.fail("corpus run"))
    code = main(["score-corpus", str(tmp_path), "--out", str(tmp_path / "o.parquet"),
                 "--batch-size", value])
    shown = value if value == "abc" else int(value)
    assert code == 2 and capsys.readouterr().err == (
        f"ppl-widget: error: batch_size must be 'auto' or a positive integer, got {shown!r}\n")
    with pytest.raises(traitlets.TraitError, match="batch_size must be 'auto' or a positive "
                                                   "integer"):
        PerplexityWidget(TEXT, None, autostart=False).rescore(batch_size=0)
