"""Optional parts: pyproject's extras list what core/extras.py says they install, and a
missing one fails only where it is used, naming the extra; the main job never needs one."""

from __future__ import annotations

import logging
import pathlib
import re
import sys

import pytest
import tomllib

from ppl_widget import score
from ppl_widget.core import extras
from ppl_widget.core.extras import MissingExtraError

ROOT = pathlib.Path(__file__).parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
TEXT = "The cat sat on the mat. It was sunny. Colorless green ideas sleep furiously."


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in requirements}


@pytest.fixture
def without(monkeypatch):
    """Make modules unimportable, as if their extra were not installed."""
    def hide(*modules: str) -> None:
        for name in list(sys.modules):
            if name.partition(".")[0] in modules:
                monkeypatch.delitem(sys.modules, name)
        for name in modules:
            monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError
    return hide


def test_each_optional_module_is_in_the_extra_it_names():
    optional = PYPROJECT["project"]["optional-dependencies"]
    core = _names(PYPROJECT["project"]["dependencies"])
    for module, (dist, extra) in extras.OPTIONAL.items():
        assert dist in _names(optional[extra]), (module, extra)
        assert dist not in core, f"{dist} is a core dependency, not optional"
    # the main job's own needs are core: the sentence level, the live chart
    assert {"pysbd", "altair", "anywidget", "transformers", "gguf"} <= core
    assert "pysbd" not in _names(optional["analysis"])


def test_require_names_the_extra(without):
    without("pyarrow")
    with pytest.raises(MissingExtraError, match=r'pip install "ppl-widget\[corpus\]"') as info:
        extras.require("pyarrow.parquet", "reading Parquet")
    assert isinstance(info.value, ImportError) and "reading Parquet needs pyarrow" in str(
        info.value)
    with pytest.raises(ValueError, match="not an optional dependency"):
        extras.require("numpy", "anything")


def test_log_freq_without_wordfreq(tiny_gpt2, without):
    result = score(TEXT, tiny_gpt2)
    without("wordfreq")
    frame = result.to_frame("word")  # asked for by no one: quietly left out
    assert "log_freq" not in frame.columns and len(frame) == len(TEXT.split())
    with pytest.raises(MissingExtraError, match=r"log_freq needs wordfreq.*\[analysis\]"):
        result.to_frame("word", log_freq=True)


def test_corpus_without_pyarrow_fails_before_scoring(tmp_path, without):
    from ppl_widget.core.corpus import CorpusResults
    from ppl_widget.scoring.corpus import score_corpus

    without("pyarrow")
    # lm=object(): the check comes before any model is loaded or document read
    with pytest.raises(MissingExtraError, match=r"score_corpus.*\[corpus\]"):
        score_corpus({"a": "text"}, tmp_path / "out.parquet", lm=object())
    assert not list(tmp_path.iterdir())
    with pytest.raises(MissingExtraError, match=r"\[corpus\]"):
        CorpusResults(tmp_path / "out.parquet")


def test_score_corpus_command_without_pyarrow(tmp_path, without, capsys):
    from ppl_widget.cli import main

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("text")
    without("pyarrow")
    assert main(["score-corpus", str(tmp_path / "docs"), "--out",
                 str(tmp_path / "out.parquet")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ppl-widget: error: ") and 'pip install "ppl-widget[corpus]"' in err
    assert "Traceback" not in err


def test_saved_dataset_without_datasets(tmp_path, without):
    from ppl_widget.scoring.corpus.input import open_documents

    (tmp_path / "dataset_info.json").write_text("{}")
    (tmp_path / "state.json").write_text("{}")
    without("datasets")
    with pytest.raises(MissingExtraError, match=r"Hugging Face dataset.*\[corpus\]"):
        open_documents(tmp_path)


def test_chart_without_vl_convert_draws_live_and_says_so_once(tiny_gpt2, without, caplog,
                                                               monkeypatch):
    from ppl_widget import charts
    from ppl_widget.views.charts import chart_renderer

    result = score(TEXT, tiny_gpt2)
    without("vl_convert")
    monkeypatch.setattr(chart_renderer, "_MISSING_TOLD", [])
    with caplog.at_level(logging.WARNING, logger=chart_renderer.__name__):
        bundles = [chart_renderer.render(charts.surprisal(result).to_dict())[0]
                   for _ in range(2)]
    for bundle in bundles:
        assert chart_renderer.VEGALITE_MIME in bundle and "image/svg+xml" not in bundle
    told = [r.getMessage() for r in caplog.records]
    assert len(told) == 1 and 'pip install "ppl-widget[charts]"' in told[0]


def test_widget_and_sentences_need_no_extra(tiny_gpt2, without):
    from ppl_widget.views.widget import PerplexityWidget

    without("wordfreq", "vl_convert", "pyarrow", "datasets", "nltk")
    w = PerplexityWidget(TEXT, tiny_gpt2, max_length=32, stride=16)
    result = w.wait()
    assert w.status == "done" and not w.error
    assert len(result.to_frame("sentence")) == 3
    assert "<html" in result.to_html().lower()
