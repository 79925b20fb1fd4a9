"""The linking chart and the quality-power chart: their numbers by hand, and what a reader
sees once vl-convert draws them (points and intervals with extent, a count axis from
zero, every legend entry drawn), in the default and the dark theme."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("altair")
vlc = pytest.importorskip("vl_convert")

from meco_data import meco_dir  # noqa: E402

from ppl_widget.views.charts.chart_data import quantile_bin_means  # noqa: E402
from ppl_widget.views.charts.charts_reading import linking_chart, quality_power_chart  # noqa: E402

POINTS = [  # a published.json-like list: two languages, two targets
    {"target": t, "lang": lang, "avg_surp": s, "delta_ll": d, "ci_low": d - 0.004,
     "ci_high": d + 0.004, "model": m}
    for t in ("surprisal", "renyi") for lang, off in (("ee", 0.0), ("tr", 0.003))
    for m, s, d in ((1_000_000, 10.0, 0.008 + off), (-1, 6.0, 0.015 + off),
                    (10_000_000, 8.0, 0.012 + off))]


def scene(chart, theme=None) -> dict:
    spec = chart.to_dict(validate=True)
    assert '"url"' not in json.dumps(spec)  # data inlined
    svg = vlc.vegalite_to_svg(spec, vl_version="5.20", theme=theme)
    assert svg.startswith("<svg")
    return vlc.vegalite_to_scenegraph(spec, vl_version="5.20", theme=theme)


def items(node, marktype, role, out=None) -> list[dict]:
    """Every scenegraph item of a mark type and role (mark, legend-label, axis-label...)."""
    out = [] if out is None else out
    if isinstance(node, dict):
        if node.get("marktype") == marktype and node.get("role") == role:
            out.extend(node.get("items", []))
        for v in node.values():
            items(v, marktype, role, out)
    elif isinstance(node, list):
        for v in node:
            items(v, marktype, role, out)
    return out


def per_word(n=600, seed=1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    s = rng.gamma(2.0, 2.0, n)
    return pd.DataFrame({"word": [f"w{k}" for k in range(n)], "rt_value": 150 + 12 * s
                         + rng.normal(0, 20, n), "surprisal_bits": s})


def test_bin_means_by_hand():
    b = quantile_bin_means(np.arange(10.0), np.arange(10.0) * 2, 5)
    assert b["x"].tolist() == [0.5, 2.5, 4.5, 6.5, 8.5]
    assert b["mean"].tolist() == [1, 5, 9, 13, 17] and b["n"].tolist() == [2] * 5
    half = 1.96 * np.std([0.0, 2.0], ddof=1) / math.sqrt(2)
    assert b["high"][0] - b["mean"][0] == pytest.approx(half)
    one = quantile_bin_means(np.array([1.0, 1, 1, 2]), np.array([1.0, 2, 3, 4]), 4)
    assert one["n"].tolist() == [3, 1] and math.isnan(one["low"][1])  # ties merge bins


@pytest.mark.parametrize("theme", [None, "dark"])
def test_linking_chart_draws_points_intervals_line_and_counts(theme):
    frame = per_word()
    chart = linking_chart(frame, bins=10)
    spec = chart.to_dict()
    means = next(v for v in spec["datasets"].values() if v and "mean" in v[0])
    assert len(means) == 10 and sum(r["n"] for r in means) == len(frame)
    ref = quantile_bin_means(frame["surprisal_bits"], frame["rt_value"], 10)
    assert [r["mean"] for r in means] == pytest.approx(ref["mean"].tolist())
    sg = scene(chart, theme)
    points = items(sg, "symbol", "mark")
    assert len(points) == 10
    rules = items(sg, "rule", "mark")  # the intervals: each has a length
    assert len(rules) == 10 and all(abs(r["y2"] - r["y"]) > 1 for r in rules)
    assert len(items(sg, "line", "mark")) >= 2  # the fitted line's two ends
    bars = items(sg, "rect", "mark")
    assert bars and all(b["height"] >= 0 for b in bars)
    labels = [t["text"] for t in items(sg, "text", "axis-label")]
    counts = [lab for lab in labels if lab.lstrip("−-").replace(",", "").isdigit()]
    assert not [lab for lab in counts if lab.startswith(("−", "-"))]  # no negative count
    sub = " ".join(spec["title"]["subtitle"])
    slope = np.polyfit(frame["surprisal_bits"], frame["rt_value"], 1)[0]
    assert f"{slope:+.1f} ms per bit" in sub


def test_linking_chart_one_series_per_model_in_nats():
    a, b = per_word(seed=1).assign(model="lm"), per_word(seed=2).assign(model="bigram")
    frame = pd.concat([a, b]).assign(rt="gaze_rt")
    chart = linking_chart(frame, unit="nats", bins=8)
    sg = scene(chart)
    assert [t["text"] for t in items(sg, "text", "legend-label")] == ["lm", "bigram"]
    assert len(items(sg, "symbol", "mark")) == 16
    spec = chart.to_dict()
    means = next(v for v in spec["datasets"].values() if v and "mean" in v[0])
    lm = [r for r in means if r["series"] == "lm"]
    assert max(r["x"] for r in lm) <= a["surprisal_bits"].max() * math.log(2) + 1e-9
    assert "ms per nat" in " ".join(spec["title"]["subtitle"])
    with pytest.raises(ValueError, match=r"rt='first_fix': not in the frame"):
        linking_chart(frame, measure="first_fix")
    with pytest.raises(ValueError, match="no column"):
        linking_chart(frame, rt="nope")


def test_linking_chart_says_which_words_it_draws_and_how_many_the_regression_used():
    frame = per_word(n=200)
    frame["delta_ll"] = np.where(np.arange(200) % 20 < 2, np.nan, 0.01)  # 20 left out
    sub = " ".join(linking_chart(frame, bins=5).to_dict()["title"]["subtitle"])
    assert "every word with a reading time and a surprisal" in sub
    assert "200 words (ΔLL's regression: 180)" in sub
    spec = linking_chart(frame, bins=5, rows="regression").to_dict()
    sub = " ".join(spec["title"]["subtitle"])
    assert "those ΔLL's regression used" in sub and "180 words" in sub
    means = next(v for v in spec["datasets"].values() if v and "mean" in v[0])
    assert sum(r["n"] for r in means) == 180
    with pytest.raises(ValueError, match=r"rows must be one of \['all', 'regression'\]"):
        linking_chart(frame, rows="used")
    with pytest.raises(ValueError, match="rows='regression' needs the frame's delta_ll"):
        linking_chart(frame.drop(columns="delta_ll"), rows="regression")


@pytest.mark.parametrize("theme", [None, "dark"])
def test_quality_power_chart_from_published_points(theme):
    chart = quality_power_chart(POINTS)
    sg = scene(chart, theme)
    assert [t["text"] for t in items(sg, "text", "legend-label")] == ["Estonian", "Turkish"]
    assert [t["text"] for t in items(sg, "text", "legend-title")] == ["language"]
    assert all(t.get("opacity", 1) > 0 for t in items(sg, "text", "legend-label"))
    assert len(items(sg, "symbol", "mark")) == len(POINTS)
    intervals = [r for r in items(sg, "rule", "mark") if "y2" in r]
    assert len(intervals) == len(POINTS) and all(r["y2"] != r["y"] for r in intervals)
    zero = [r for r in items(sg, "rule", "mark") if "y2" not in r]
    assert len(zero) == 2  # one dashed zero rule per panel
    headers = [t["text"] for t in items(sg, "text", "title-text")]
    assert {"surprisal", "renyi"} <= set(headers)
    lines = items(sg, "line", "mark")
    assert len(lines) == len(POINTS)  # 4 lines (2 panels x 2 languages) of 3 points


def test_quality_power_chart_lines_run_along_model_quality():
    spec = quality_power_chart(pd.DataFrame(POINTS)).to_dict()
    rows = next(iter(spec["datasets"].values()))
    ee = [r["avg_surp"] for r in rows if r["lang"] == "ee" and r["target"] == "surprisal"]
    assert ee == sorted(ee)  # each line drawn from the best model to the worst
    with pytest.raises(ValueError, match=r"no column\(s\) \['nope'\]"):
        quality_power_chart(POINTS, color="nope")


def test_quality_power_chart_from_predictive_power_table():
    table = pd.DataFrame({"model": ["smollm2", "bigram"], "rt": ["gaze_rt"] * 2,
                          "delta_ll": [0.012, 0.004], "ci_low": [0.004, -0.002],
                          "ci_high": [0.02, 0.01], "mean_surprisal_bits": [7.5, 10.2]})
    sg = scene(quality_power_chart(table))
    assert len(items(sg, "symbol", "mark")) == 2
    # unrelated models: no line between them; each point named by its colour in the legend
    assert items(sg, "line", "mark") == []
    assert [t["text"] for t in items(sg, "text", "legend-label")] == ["smollm2", "bigram"]
    # a family of models (sizes of one kind) may be joined on request
    joined = scene(quality_power_chart(table, line=True))
    assert len(items(joined, "line", "mark")) == 2  # one line mark through both points


def test_quality_power_chart_straight_from_published_json():
    published = json.loads((meco_dir() / "published.json").read_text())
    sg = scene(quality_power_chart(published))
    assert sorted(t["text"] for t in items(sg, "text", "legend-label")) == [
        "English", "Estonian", "Finnish", "Korean", "Turkish"]
    assert len(items(sg, "symbol", "mark")) == 120
