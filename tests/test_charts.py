"""Altair charts: hand-computed data, Vega-Lite schema validity, offline SVG, long texts."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

alt = pytest.importorskip("altair")
vlc = pytest.importorskip("vl_convert")

import ppl_widget  # noqa: E402
from ppl_widget.core.metrics import LN2  # noqa: E402
from ppl_widget.core.result import ScoreResult  # noqa: E402
from ppl_widget.views.charts import charts  # noqa: E402

TEXT = "The quick brown fox jumps over the lazy dog. Surprisal is minus the log probability."


def fake_result(n: int, seed: int = 0) -> ScoreResult:
    """n one-character tokens over 'ab ab ab ...' with random numbers (no model)."""
    rng = np.random.default_rng(seed)
    text = ("ab " * (n // 3 + 1))[:n]
    offsets = np.stack([np.arange(n), np.arange(n) + 1], axis=1)
    units = np.zeros((n, 3), np.int64)
    units[:, 1] = units[:, 2] = 1
    units[:, 0] = [1 if (i % 3 == 0) else 0 for i in range(n)]
    return ScoreResult(text=text, token_ids=rng.integers(0, 50, n), offsets=offsets,
                       surprisal=rng.gamma(2.0, 2.0, n), entropy=rng.gamma(2.0, 2.0, n),
                       rank=rng.integers(1, 5000, n), context_length=np.arange(n) + 1,
                       topk_ids=np.zeros((n, 0)), topk_probs=np.zeros((n, 0)), units=units,
                       is_eos=np.zeros(n, bool), settings={"model": "fake", "max_length": 8,
                                                          "stride": 4})


def check(chart) -> dict:
    """Valid against the Vega-Lite schema, renders to SVG offline, no remote data."""
    spec = chart.to_dict(validate=True)
    text = json.dumps(spec)
    assert '"url"' not in text  # data inlined, nothing fetched
    svg = vlc.vegalite_to_svg(spec)
    assert svg.startswith("<svg") and "<path" in svg
    return spec


def datasets(spec: dict) -> list[list]:
    return list(spec.get("datasets", {}).values())


# ---- computations by hand ------------------------------------------------------
def test_rolling_mean_by_hand():
    got = charts.rolling_mean(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), 3)
    np.testing.assert_allclose(got, [1.0, 1.5, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(charts.rolling_mean(np.array([4.0, 8.0]), 1), [4.0, 8.0])
    with pytest.raises(ValueError, match="window must be a positive integer"):
        charts.rolling_mean(np.ones(3), 0)


def test_rank_buckets_by_hand():
    fr = charts.rank_bucket_fractions(np.array([1, 10, 11, 100, 101, 1000, 1001, 50000]))
    assert fr == {"top 10": 0.25, "top 100": 0.25, "top 1000": 0.25, "rest": 0.25}
    fr = charts.rank_bucket_fractions(np.array([3, 3, 3, 2000]))
    assert fr == {"top 10": 0.75, "top 100": 0.0, "top 1000": 0.0, "rest": 0.25}


def test_bin_means_by_hand():
    first, last, mean = charts.bin_means(np.array([1.0, 3.0, 5.0, 7.0, 10.0]), 2)
    assert first.tolist() == [0, 2, 4] and last.tolist() == [1, 3, 4]
    assert mean.tolist() == [2.0, 6.0, 10.0]


def test_running_perplexity_by_hand():
    r = fake_result(3)
    r.surprisal[:] = [1.0, 2.0, 3.0]  # words: tokens 0 (1 word), chars 1 each
    spec = check(charts.running_perplexity(r, unit="nats", units=("token", "char", "word")))
    rows = datasets(spec)[0]
    # one character per token: the two series are equal and drawn as one line
    assert {x["unit"] for x in rows} == {"per token = per char", "per word"}
    tok = [x for x in rows if x["unit"] == "per token = per char"]
    assert [x["perplexity"] for x in tok] == pytest.approx(
        [math.exp(1), math.exp(3 / 2), math.exp(6 / 3)])
    word = [x for x in rows if x["unit"] == "per word"]
    assert [x["perplexity"] for x in word] == pytest.approx([math.exp(1), math.exp(3),
                                                             math.exp(6)])
    assert word[1]["cross_entropy"] == pytest.approx(3.0)  # nats per word


def test_surprisal_data_in_bits_and_nats():
    r = fake_result(30)
    bits = datasets(check(charts.surprisal(r, window=4)))[0]
    nats = datasets(check(charts.surprisal(r, unit="nats", window=4)))[0]
    assert [x["surprisal"] for x in bits] == pytest.approx(list(r.surprisal / LN2))
    assert [x["surprisal"] for x in nats] == pytest.approx(list(r.surprisal))
    assert [x["rolling"] for x in nats] == pytest.approx(
        list(charts.rolling_mean(r.surprisal, 4)))
    assert [x["token"] for x in nats] == r.tokens
    with pytest.raises(ValueError, match="unit must be 'bits' or 'nats'"):
        charts.surprisal(r, unit="bans")


def test_distributions_by_hand():
    r = fake_result(8)
    r.rank[:] = [1, 2, 50, 500, 5000, 1, 1, 1]
    spec = check(charts.distributions(r, unit="nats", bins=4))
    sets = datasets(spec)
    buckets = next(d for d in sets if d and "bucket" in d[0])
    assert {d["bucket"]: d["fraction"] for d in buckets} == {
        "top 10": 0.625, "top 100": 0.125, "top 1000": 0.125, "rest": 0.125}
    hist = next(d for d in sets if d and "lo" in d[0])
    counts, edges = np.histogram(r.surprisal, bins=4)
    assert [d["tokens"] for d in hist] == counts.tolist()
    assert [d["lo"] for d in hist] == pytest.approx(list(edges[:-1]))


# ---- long texts -----------------------------------------------------------------
@pytest.fixture(scope="module")
def long_result():
    return fake_result(100_000)


def test_long_texts_are_aggregated_and_say_so(long_result):
    for kind in charts.KINDS:
        chart = charts.for_result(long_result, kind)
        spec = check(chart)  # would raise MaxRowsError beyond Altair's limit
        assert all(len(d) <= 5000 for d in datasets(spec)), kind
        subtitles = json.dumps(spec)
        assert "100,000 tokens" in subtitles, kind
    spec = charts.surprisal(long_result).to_dict()
    rows = datasets(spec)[0]
    assert len(rows) == 4000 and rows[1]["position"] == 25  # bins of 25 tokens
    assert rows[0]["surprisal"] == pytest.approx(long_result.surprisal[:25].mean() / LN2)


# ---- with real models -----------------------------------------------------------
@pytest.fixture(scope="module")
def cmp(tiny_gpt2, tiny_llama):
    return ppl_widget.compare(TEXT, [tiny_gpt2, tiny_llama], labels=["gpt2", "llama"],
                              max_length=32, stride=16)


def test_comparison_chart(cmp):
    spec = check(cmp.chart())
    text = json.dumps(spec)
    assert "NOT comparable across tokenizers" in text
    sets = datasets(spec)
    bars = next(d for d in sets if d and "perplexity" in d[0])
    table = cmp.table()
    for row in bars:
        unit = row["unit"].split()[1].rstrip(":")
        expect = table.set_index("label").loc[row["label"], f"{unit}_ppl"]
        assert row["perplexity"] == pytest.approx(expect)
        assert row["comparable"] == ("no" if unit == "token" else "yes")
    words = next(d for d in sets if d and "word" in d[0])
    w = cmp.words()
    assert [p["A"] for p in words] == pytest.approx(list(w["surprisal_bits:gpt2"]))
    assert [p["B"] for p in words] == pytest.approx(list(w["surprisal_bits:llama"]))


def test_stride_sweep(tiny_gpt2):
    frame = charts.stride_sweep_frame(TEXT, tiny_gpt2, max_length=16, strides=[16, 4])
    assert frame["stride"].tolist() == [16, 4]
    assert (frame["seconds"] > 0).all()
    # more context never costs fewer windows, and each target sees more context on average
    assert frame["n_windows"].iloc[1] > frame["n_windows"].iloc[0]
    assert frame["mean_context"].iloc[1] > frame["mean_context"].iloc[0]
    alone = ppl_widget.score(TEXT, tiny_gpt2, max_length=16, stride=4).metrics()
    assert frame["word_ppl"].iloc[1] == pytest.approx(alone["word_ppl"])
    check(charts.stride_sweep(TEXT, tiny_gpt2, max_length=16, strides=[16, 4], data=frame))
    with pytest.raises(ValueError, match="at least one stride"):
        charts.stride_sweep_frame(TEXT, tiny_gpt2, max_length=32, strides=[])


def test_reachable_from_the_package_and_png(tiny_gpt2, tmp_path):
    assert ppl_widget.charts is charts
    r = ppl_widget.score(TEXT, tiny_gpt2, max_length=32)
    chart = ppl_widget.charts.surprisal(r)
    chart.save(str(tmp_path / "s.png"))
    chart.save(str(tmp_path / "s.svg"))
    assert (tmp_path / "s.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "s.svg").read_text().startswith("<svg")
    with pytest.raises(ValueError, match="kind must be one of"):
        charts.for_result(r, "pie")
    with pytest.raises(ValueError, match="nothing scored yet"):
        charts.for_result(None, "surprisal")


def test_widget_chart_follows_the_widgets_unit(tiny_gpt2):
    from ppl_widget import PerplexityWidget

    w = PerplexityWidget(TEXT, tiny_gpt2, max_length=32)
    r = w.wait()
    w.surprisal_unit = "nats"
    rows = datasets(check(w.chart("surprisal")))[0]
    assert [x["surprisal"] for x in rows] == pytest.approx(list(r.surprisal))
    check(w.chart("distributions", unit="bits"))


def test_charts_display_offline_in_jupyterlab_and_nbconvert():
    """Displayed, a chart carries the Vega-Lite 5 spec JupyterLab 4's built-in renderer
    draws (no CDN script) and an SVG drawn here for nbconvert; a renderer the user
    chose is kept."""
    from IPython.core.interactiveshell import InteractiveShell

    from ppl_widget.views.charts import chart_renderer

    alt.renderers.enable("default")
    chart = charts.surprisal(fake_result(50))  # first use turns the renderer on
    assert alt.renderers.active == chart_renderer.NAME
    data = InteractiveShell.instance().display_formatter.format(chart)[0]
    spec = data[chart_renderer.VEGALITE_MIME]
    assert spec["$schema"].endswith("/v5.json")
    assert "<svg" in data["image/svg+xml"] and "surprisal" in data["image/svg+xml"]
    assert "text/html" not in data  # Altair's default HTML loads Vega from a CDN
    json.dumps(spec)  # inline data only, JSON-ready

    alt.renderers.enable("html")
    charts.surprisal(fake_result(50))
    assert alt.renderers.active == "html"
    alt.renderers.enable("default")
