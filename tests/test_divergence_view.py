"""The divergence view (the main widget's renderer, coloured by KL) and its chart, from a
DivergenceResult of two tiny models."""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("anywidget")

from conftest import CORPUS  # noqa: E402


@pytest.fixture(scope="module")
def result(tiny_gpt2):
    import torch

    from ppl_widget import divergence, load_model

    model = copy.deepcopy(tiny_gpt2.model)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(1 + 0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(2)))
    other = load_model((model, tiny_gpt2.tokenizer), device="cpu", dtype="float32")
    return divergence(" ".join(CORPUS[:3]), tiny_gpt2, other, max_length=32,
                      labels=("fp32", "<b>q4</b>"))


def test_the_widget_holds_both_models_and_colours_by_kl(result):
    from ppl_widget.views.protocol import DIVERGENCE_FIELDS

    w = result.widget()
    assert w.color_mode == "kl" and w.status == "done" and w.text == result.text
    rd = w.result_data
    assert rd["count"] == len(result)
    dv = rd["divergence"]
    assert dv["labels"] == ["fp32", "<b>q4</b>"]
    kl = np.frombuffer(dv["kl"], "<f4")
    np.testing.assert_allclose(kl, result.kl, rtol=1e-6)
    top_k = rd["top_k"]
    for name, dtype, per in DIVERGENCE_FIELDS:
        assert len(np.frombuffer(dv[name], dtype)) == len(result) * (per or top_k), name
    np.testing.assert_array_equal(np.frombuffer(dv["same_top"], "<i4"), result.same_top)
    # the other model's alternatives have their text
    for t in np.unique(result.other.topk_ids).tolist():
        assert str(t) in rd["vocab"]
    assert "fp32" in w.settings["model"] and "compared_with" in w.settings


def test_to_html_is_the_same_view_with_the_labels_inert(result, tmp_path):
    page = result.to_html(tmp_path / "div.html", color_mode="surprisal")
    assert (tmp_path / "div.html").read_text(encoding="utf-8") == page
    assert "<b>q4</b>" not in page  # labels travel as escaped JSON and text only
    state = json.loads(re.search(r'class="pplw-state">(.*?)</script>', page, re.S)[1])
    assert state["state"]["color_mode"] == "surprisal"
    assert state["state"]["result_data"]["divergence"]["labels"][1] == "<b>q4</b>"
    paths = [b["path"] for b in state["buffers"]]
    assert ["result_data", "divergence", "kl"] in paths
    assert "mean KL" in page  # the summary line shown without JavaScript


def test_bad_input_is_named(result):
    from ppl_widget.views.divergence_view import DivergenceWidget

    with pytest.raises(TypeError, match="DivergenceResult"):
        DivergenceWidget(result.base)
    with pytest.raises(TypeError, match="unknown widget setting"):
        result.widget(colour="kl")


def test_the_chart_bins_kl_on_a_log_axis(result):
    from ppl_widget.views.charts.charts_divergence import kl_histogram

    spec = result.chart(bins=12).to_dict()
    bars, rules = spec["layer"]
    assert bars["encoding"]["x"]["scale"]["type"] == "log"
    data = spec["datasets"]
    counts = [sum(r["count"] for r in rows) for rows in data.values()
              if rows and "count" in rows[0]]
    assert counts == [len(result)]  # every token in one bin
    stats = next(rows for rows in data.values() if rows and "statistic" in rows[0])
    assert [r["statistic"] for r in stats] == ["median", "mean", "99%"]  # in the legend order
    assert stats[1]["value"] == pytest.approx(result.kl.mean())
    assert stats[0]["value"] == pytest.approx(np.median(result.kl))
    bits = result.chart(unit="bits").to_dict()
    assert "bits" in json.dumps(bits["layer"][0]["encoding"]["x"]["title"])
    hist = kl_histogram(np.array([1e-9, 1e-3, 1.0]), 3)
    assert hist["count"].sum() == 3 and hist["lo"].iloc[0] == pytest.approx(1e-6)
    with pytest.raises(ValueError, match="bins"):
        result.chart(bins=0)


def test_shown_where_no_front_end_draws_it(result, monkeypatch):
    """nbconvert and friends: the display waits for the result (here: at once) and shows
    the static page."""
    from ppl_widget.views import headless
    from ppl_widget.views.export import display_widget

    shown = []
    monkeypatch.setattr(headless, "no_front_end", lambda: True)
    monkeypatch.setattr("IPython.display.display",
                        lambda data, **kw: shown.append(data))
    w = result.widget()
    assert w.wait() is result
    display_widget(w)
    assert shown and "text/html" in shown[0] and "mean KL" in shown[0]["text/html"]
