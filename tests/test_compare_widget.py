"""ComparisonWidget: models stream into one view; the state the front end reads is
checked against the Comparison (word sums, tokenizations, table, invariants)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import traitlets

from ppl_widget import ComparisonWidget, compare
from ppl_widget.core.levels import assign_tokens, unit_spans
from ppl_widget.scoring.analyses import compare as compare_mod
from ppl_widget.scoring.analyses.compare import NOT_COMPARABLE_NOTE, ComparisonError
from ppl_widget.views.compare_data import MODEL_FIELDS

TEXT = ("The quick brown fox jumps over the lazy dog. Surprisal is minus the log "
        "probability of a token given its context. 日本語 and émigré 🙂 too.")
OPTS = {"max_length": 32, "stride": 16}


def decode(entry: dict) -> dict[str, np.ndarray]:
    return {name: np.frombuffer(entry[name], dtype=dtype) for name, dtype in MODEL_FIELDS}


def utf16(text: str, i: int) -> int:
    return len(text[:i].encode("utf-16-le")) // 2


@pytest.fixture(scope="module")
def live(tiny_gpt2, tiny_llama):
    w = ComparisonWidget(TEXT, [tiny_gpt2, tiny_llama], labels=["gpt2", "llama"], **OPTS)
    w.wait()
    return w


def test_live_widget_holds_every_model_result(live, tiny_gpt2, tiny_llama):
    cmp = compare(TEXT, [tiny_gpt2, tiny_llama], labels=["gpt2", "llama"], **OPTS)
    assert live.status == "done"
    assert [e["status"] for e in live.models_data] == ["done", "done"]
    got = live.comparison
    assert got.labels == ["gpt2", "llama"]
    for a, b in zip(got.results, cmp.results, strict=True):
        np.testing.assert_array_equal(a.token_ids, b.token_ids)
        # the widget runs compare()'s stream: the same windows in the same batches, bit for bit
        np.testing.assert_array_equal(a.surprisal, b.surprisal)


def test_words_sent_in_utf16_offsets(live):
    spans = unit_spans(TEXT, "word")
    w = live.words
    assert w["count"] == len(spans) == len(TEXT.split())
    start = np.frombuffer(w["start16"], "<i4")
    end = np.frombuffer(w["end16"], "<i4")
    assert start.tolist() == [utf16(TEXT, s) for s in spans[:, 0]]
    assert end.tolist() == [utf16(TEXT, e) for e in spans[:, 1]]
    text16 = TEXT.encode("utf-16-le")
    words = [text16[2 * s:2 * e].decode("utf-16-le") for s, e in zip(start, end, strict=True)]
    assert words == TEXT.split()


def test_model_buffers_sum_to_word_surprisal_and_total(live):
    """What the front end sums per word equals Comparison.words(); with the tokens of
    no word (EOS, none here) each model's words add up to its total NLL."""
    frame = live.comparison.words(0, 1)
    for k, label in enumerate(live.labels):
        arrays = decode(live.models_data[k])
        res = live.results[k]
        assert len(arrays["word"]) == len(res.surprisal)
        owner = assign_tokens(TEXT, res.offsets, unit_spans(TEXT, "word"), res.is_eos)
        np.testing.assert_array_equal(arrays["word"], owner)
        sums = np.bincount(arrays["word"][arrays["word"] >= 0],
                           weights=arrays["surprisal"][arrays["word"] >= 0].astype(np.float64),
                           minlength=len(frame))
        np.testing.assert_allclose(sums, frame[f"surprisal:{label}"], rtol=1e-5, atol=1e-5)
        assert sums.sum() == pytest.approx(res.metrics()["total_nll"], rel=1e-5)


def test_tokenizations_differ_and_tokens_slice_the_text(live):
    per_model = []
    for k in range(2):
        a = decode(live.models_data[k])
        text16 = TEXT.encode("utf-16-le")
        toks = [text16[2 * s:2 * e].decode("utf-16-le", "replace")
                for s, e in zip(a["start16"], a["end16"], strict=True)]
        per_model.append(toks)
    assert per_model[0] != per_model[1]


def test_table_rows_match_metrics_and_mark_token_ppl(live):
    assert live.not_comparable == ["token_ppl"]
    assert live.note == NOT_COMPARABLE_NOTE
    rows = live.table
    assert [r["label"] for r in rows] == ["gpt2", "llama"]
    for row, res in zip(rows, live.results, strict=True):
        m = res.metrics()
        for key in ("word_ppl", "char_ppl", "byte_ppl", "bits_per_byte", "token_ppl"):
            assert row[key] == pytest.approx(m[key])
    assert len({(r["n_words"], r["n_chars"], r["n_bytes"]) for r in rows}) == 1
    assert rows[0]["n_tokens"] != rows[1]["n_tokens"]


def test_from_comparison_builds_the_same_state(live):
    view = live.comparison.widget("llama", "gpt2")
    assert view.pair == [1, 0]
    assert view.status == "done"
    for a, b in zip(view.models_data, live.models_data, strict=True):
        for name, _ in MODEL_FIELDS:
            assert a[name] == b[name]
    assert view.table == live.table
    with pytest.raises(RuntimeError, match="finished Comparison"):
        view.start()


def test_pair_is_validated(live):
    with pytest.raises(traitlets.TraitError, match="two different models"):
        live.pair = [0, 0]
    with pytest.raises(traitlets.TraitError, match="two different models"):
        live.pair = [0, 5]
    assert live.pair == [0, 1]


def test_bad_options_fail_before_any_model_loads(tiny_gpt2, tiny_llama):
    with pytest.raises(ValueError, match="stride"):
        ComparisonWidget(TEXT, [tiny_gpt2, tiny_llama], max_length=16, stride=0)
    with pytest.raises(TypeError, match="unknown scoring options"):
        ComparisonWidget(TEXT, [tiny_gpt2, tiny_llama], strid=4)
    with pytest.raises(ValueError, match="no model labelled"):
        ComparisonWidget(TEXT, [tiny_gpt2, tiny_llama], pair=("x", 0))
    with pytest.raises(ValueError, match="at least 2 models"):
        ComparisonWidget(TEXT, [tiny_gpt2])


def test_models_stream_one_after_another(tiny_gpt2, tiny_llama):
    """Every update of models_data is recorded: model 0 scores (partial states with a
    growing count) and finishes before model 1 starts."""
    w = ComparisonWidget(TEXT * 6, [tiny_gpt2, tiny_llama], labels=["a", "b"],
                         autostart=False, max_length=16, stride=8, batch_size=1)
    seen: list[tuple[str, int, str, int]] = []
    w.observe(lambda ch: seen.append(tuple(x for e in ch["new"]
                                           for x in (e["status"], e.get("count", 0)))),
              names=["models_data"])
    compare_mod_min = pytest.MonkeyPatch()
    compare_mod_min.setattr("ppl_widget.views.compare_widget.MIN_UPDATE_S", 0.0)
    try:
        w.start()
        w.wait()
    finally:
        compare_mod_min.undo()
    first_b_scoring = next(i for i, s in enumerate(seen) if s[2] == "scoring")
    a_done = next(i for i, s in enumerate(seen) if s[0] == "done")
    assert a_done < first_b_scoring
    counts_a = [s[1] for s in seen[:a_done] if s[0] == "scoring"]
    assert len(counts_a) >= 3 and counts_a == sorted(counts_a) and counts_a[-1] > 0
    assert seen[-1][0] == seen[-1][2] == "done"


def test_cancel_keeps_the_partial_model_and_skips_the_rest(tiny_gpt2, tiny_llama, monkeypatch):
    gate = threading.Event()
    real = compare_mod.stream

    def slow_stream(*args, **kwargs):
        for item in real(*args, **kwargs):
            yield item
            gate.set()
    monkeypatch.setattr(compare_mod, "stream", slow_stream)
    w = ComparisonWidget(TEXT * 20, [tiny_gpt2, tiny_llama], labels=["a", "b"],
                         max_length=16, stride=8, batch_size=1)
    assert gate.wait(30)
    w._on_front_end_message(w, {"type": "cancel"}, [])  # the view's Cancel button
    w.wait()
    assert w.status == "cancelled"
    assert [e["status"] for e in w.models_data] == ["cancelled", "skipped"]
    partial = w.results[0]
    assert partial is not None and partial.partial and len(partial.surprisal) > 0
    assert decode(w.models_data[0])["surprisal"].size == len(partial.surprisal)
    assert w.comparison.labels == []  # only models scored to the end make the Comparison


def test_failure_is_shown_and_earlier_models_kept(tiny_gpt2, tmp_path):
    missing = str(tmp_path / "no-such-model")
    w = ComparisonWidget(TEXT, [tiny_gpt2, missing], labels=["a", "b"], **OPTS)
    with pytest.raises(ComparisonError) as info:
        w.wait()
    assert w.status == "error"
    assert "'b'" in w.error
    assert [e["status"] for e in w.models_data] == ["done", "error"]
    assert info.value.comparison.labels == ["a"]
    assert [r["label"] for r in w.table] == ["a"]


def test_notebook_output_carries_the_static_page(live, tmp_path):
    data = live._repr_mimebundle_()
    data = data[0] if isinstance(data, tuple) else data
    assert "application/vnd.jupyter.widget-view+json" in data
    html = data["text/html"]
    assert "pplw-static" in html and "perplexity per word: gpt2" in html
    page = live.comparison.to_html(tmp_path / "c.html")
    assert (tmp_path / "c.html").read_text(encoding="utf-8") == page
    assert page.count("<script") == 3  # bundle, state, host: nothing from the data


def test_markup_in_text_and_labels_never_reaches_the_page_as_markup(tiny_gpt2, tiny_llama):
    text = '<script>alert(1)</script> <img src=x onerror="alert(2)"> plain words'
    w = ComparisonWidget(text, [tiny_gpt2, tiny_llama], labels=["<b>a</b>", "b"], **OPTS)
    w.wait()
    page = w.to_html()
    assert "<script>alert" not in page and "<img" not in page and "<b>a</b>" not in page
    assert page.count("<script") == 3
