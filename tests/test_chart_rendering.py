"""Every chart rendered (vl-convert's scene graph: what Vega draws, mark by mark) and
checked against what a reader must see: bars with height standing on zero, no negative
count axis, every legend entry drawn, lines not hidden under each other, labels level and
whole, a width that fits a notebook; and the live chart's colours following the page."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

alt = pytest.importorskip("altair")
vlc = pytest.importorskip("vl_convert")

from test_charts import TEXT, fake_result  # noqa: E402

import ppl_widget  # noqa: E402
from ppl_widget.core.divergence import DivergenceResult  # noqa: E402
from ppl_widget.views.charts import chart_renderer, charts  # noqa: E402
from ppl_widget.views.charts.charts_pairs import pairs_accuracy_chart  # noqa: E402
from ppl_widget.views.charts.charts_protocols import protocol_context_chart  # noqa: E402

#: A notebook's output area at a 1280-pixel window (JupyterLab's default layout).
NOTEBOOK_WIDTH = 840


# ---- the scene graph ------------------------------------------------------------
def scene(chart: Any, theme: str | None = None) -> dict:
    spec = chart if isinstance(chart, dict) else chart.to_dict()
    options = {"theme": theme} if theme else {}
    return vlc.vegalite_to_scenegraph(spec, vl_version=chart_renderer.VL_VERSION, **options)


def groups(node: Any) -> Iterator[dict]:
    """Every mark group of the scene (a dict with marktype, role, name, items)."""
    if isinstance(node, dict):
        if "marktype" in node:
            yield node
        for key in ("scenegraph", "items"):
            if key in node:
                yield from groups(node[key])
    elif isinstance(node, list):
        for child in node:
            yield from groups(child)


def items(sg: dict, marktype: str, role: str = "mark") -> list[dict]:
    return [i for g in groups(sg) if g["marktype"] == marktype and g.get("role") == role
            for i in g.get("items", [])]


def lines(sg: dict) -> list[dict]:
    """Each drawn line (one per series or segment): stroke, width, opacity, points."""
    out = []
    for g in groups(sg):
        if g["marktype"] == "line" and g.get("role") == "mark" and g.get("items"):
            first = g["items"][0]
            out.append({"stroke": first.get("stroke"), "width": first.get("strokeWidth", 1),
                        "opacity": first.get("opacity", 1),
                        "points": [(round(i["x"], 3), round(i["y"], 3)) for i in g["items"]]})
    return out


def texts(sg: dict, role: str) -> list[str]:
    return [i["text"] for i in items(sg, "text", role)]


def legend_entries(sg: dict) -> dict[str, dict]:
    """label -> its symbol, in order."""
    symbols = items(sg, "symbol", "legend-symbol")
    labels = texts(sg, "legend-label")
    assert len(symbols) == len(labels)
    return dict(zip(labels, symbols, strict=True))


def axis_labels(sg: dict, axis: str) -> list[dict]:
    """The drawn labels of the x (below the plot) or y (left of it) axes."""
    align = "right" if axis == "y" else "center"
    return [t for t in items(sg, "text", "axis-label")
            if t.get("text") and t.get("align", "center") == align]


def numbers(labels: list[str]) -> list[float]:
    return [float(t.replace(",", "").replace("−", "-").rstrip("%")) for t in labels]


# ---- the charts --------------------------------------------------------------------
@pytest.fixture(scope="module")
def divergence_result() -> DivergenceResult:
    r = fake_result(300)
    rng = np.random.default_rng(1)
    kl = np.exp(rng.normal(-4, 2, 300))
    kl[:20] = 0  # identical predictions: the first bin
    return DivergenceResult(base=r, other=r, kl=kl, same_top=rng.random(300) > 0.2,
                            labels=("fp32", "Q4_0"))


def test_divergence_bars_have_height_and_stand_on_zero(divergence_result):
    chart = divergence_result.chart()
    sg = scene(chart)
    spec = chart.to_dict()
    hist = next(v for v in spec["datasets"].values() if v and "count" in v[0])
    bars = items(sg, "rect")
    assert len(bars) == len(hist) == sum(1 for b in hist if b["count"] > 0)  # no empty bin
    bottom = max(b["y"] + b["height"] for b in bars)
    tallest = max(b["count"] for b in hist)
    for bar, row in zip(sorted(bars, key=lambda b: b["x"]), hist, strict=True):
        assert bar["width"] > 1
        assert bar["y"] + bar["height"] == pytest.approx(bottom)  # on the zero line
        # a bar's height is its count on the axis (a flat dash has a few pixels)
        assert bar["height"] == pytest.approx(bottom * row["count"] / max(tallest, 1),
                                              rel=0.15)
    counts = numbers([t["text"] for t in axis_labels(sg, "y")])
    assert min(counts) == 0 and len(counts) >= 3  # no count axis below zero
    legend = legend_entries(sg)
    assert list(legend) == ["median", "mean", "99%"]
    colours = {s["stroke"] for s in legend.values()}
    assert len(colours) == 3 and bars[0]["fill"] not in colours  # apart from the bars
    rules = items(sg, "rule")
    assert {r["stroke"] for r in rules} == colours  # each entry is drawn


def test_pairs_accuracy_is_horizontal_bars_with_level_labels():
    groups_ = ["subject-verb agreement", "anaphor agreement", "negative polarity items",
               "filler-gap dependencies"]
    df = pd.DataFrame({"phenomenon": groups_ * 2, "correct": [1, 1, 0, 1, 1, 0, 0, 1],
                       "correct_mean": [1] * 8, "good_nll": [1.0] * 8, "bad_nll": [2.0] * 8})
    sg = scene(pairs_accuracy_chart(df))
    bars = sorted(items(sg, "rect"), key=lambda b: b["y"])
    plot_width = max(b["x"] + b["width"] for b in bars)  # two groups are right every time
    # groups in alphabetical order: anaphor 1/2, filler-gap 2/2, negative 0/2, subject 2/2
    assert [round(b["width"] / plot_width, 3) for b in bars] == [0.5, 1.0, 0.0, 1.0]
    assert all(b["height"] >= 15 for b in bars)  # a bar as tall as its label
    level = [t["text"] for t in axis_labels(sg, "y") if not t.get("angle")]
    assert set(groups_) <= set(level)  # whole, not cut with an ellipsis, not turned
    assert len(items(sg, "rule")) == 1  # chance


@pytest.fixture(scope="module")
def protocol_runs(tiny_gpt2) -> dict:
    text = " ".join([TEXT] * 3)
    return {"exact": ppl_widget.score(text, tiny_gpt2, max_length=16, stride=8),
            "llama.cpp": ppl_widget.score(text, tiny_gpt2, max_length=16,
                                          protocol="llama.cpp"),
            "lm-eval": ppl_widget.score(text, tiny_gpt2, max_length=16, protocol="lm-eval"),
            "hf-guide": ppl_widget.score(text, tiny_gpt2, max_length=16, stride=8,
                                         protocol="hf-guide")}


def test_protocol_context_breaks_where_unscored_and_shows_every_line(protocol_runs):
    sg = scene(protocol_context_chart(protocol_runs))
    legend = legend_entries(sg)
    assert list(legend) == list(protocol_runs)
    drawn = lines(sg)
    by_colour: dict[str, list[dict]] = {}
    for line in drawn:
        by_colour.setdefault(line["stroke"], []).append(line)
    colours = [s["stroke"] for s in legend.values()]
    assert set(by_colour) == set(colours)  # every legend entry is drawn
    # llama.cpp scores the second half of each chunk: one segment per chunk, and no
    # segment runs across the half it leaves out (no diagonal from one chunk to the next)
    llama = by_colour[colours[1]]
    n_chunks = len(protocol_runs["llama.cpp"].protocol_report()["chunk_ppl"])
    assert len(llama) == n_chunks >= 2
    xs = sorted((seg["points"][0][0], seg["points"][-1][0]) for seg in llama)
    step = np.diff([x for seg in llama for x, _ in seg["points"]][:2])[0]
    for (_, end), (start, _) in zip(xs, xs[1:], strict=False):
        assert start - end > 4 * step  # a gap of unscored tokens between segments
    # each line is narrower than the one before and drawn after it: none hides another
    order = [colours.index(line["stroke"]) for line in drawn]
    assert order == sorted(order)
    widths = [by_colour[c][0]["width"] for c in colours]
    assert widths == sorted(widths, reverse=True) and len(set(widths)) == len(widths)
    # the x axis: round ticks, none running into the next
    positions = sorted(t["x"] for t in axis_labels(sg, "x"))
    assert len(positions) >= 4 and min(np.diff(positions)) > 30


def test_equal_series_are_one_entry_not_a_hidden_line(tiny_gpt2):
    frame = charts.stride_sweep_frame(TEXT, tiny_gpt2, max_length=16, strides=[16, 8, 4])
    assert np.allclose(frame["char_ppl"], frame["byte_ppl"])  # ASCII: the same numbers
    sg = scene(charts.stride_sweep(TEXT, tiny_gpt2, max_length=16, strides=[16, 8, 4],
                                   data=frame))
    legend = legend_entries(sg)
    assert "per char = per byte" in legend and "per char" not in legend
    drawn = [line for line in lines(sg) if line["stroke"] in
             {s["stroke"] for s in legend.values()}]
    assert len(drawn) == len(legend)
    points = [tuple(line["points"]) for line in drawn]
    assert len(set(points)) == len(points)  # no line lies on another's points
    result = ppl_widget.score(TEXT, tiny_gpt2, max_length=16)
    legend = legend_entries(scene(charts.running_perplexity(result)))
    assert list(legend) == ["per token", "per word", "per char = per byte"]


def test_every_chart_fits_a_notebook_and_draws_something(divergence_result, protocol_runs,
                                                         tiny_gpt2, tiny_llama):
    r = fake_result(300)
    cmp = ppl_widget.compare(TEXT, [tiny_gpt2, tiny_llama], labels=["gpt2", "llama"],
                             max_length=32, stride=16)
    built = {"surprisal": charts.surprisal(r), "running": charts.running_perplexity(r),
             "distributions": charts.distributions(r), "divergence": divergence_result.chart(),
             "context": protocol_context_chart(protocol_runs), "comparison": cmp.chart(),
             "sweep": charts.stride_sweep(TEXT, tiny_gpt2, max_length=16, strides=[16, 8])}
    for name, chart in built.items():
        sg = scene(chart)
        assert sg["width"] <= NOTEBOOK_WIDTH, f"{name}: {sg['width']} px wide"
        marks = [g for g in groups(sg) if g.get("role") == "mark" and g.get("items")]
        assert marks, f"{name} draws no mark"


# ---- the page's theme ------------------------------------------------------------------
def test_the_live_chart_takes_the_page_colours_the_static_copy_stays_light(
        divergence_result):
    bundle, metadata = chart_renderer.render(divergence_result.chart().to_dict())
    live = bundle[chart_renderer.VEGALITE_MIME]
    # JupyterLab draws it with SVG, where currentColor follows the output's CSS colour
    assert metadata[chart_renderer.VEGALITE_MIME]["embed_options"]["renderer"] == "svg"
    # drawn as JupyterLab draws it on a dark page (vega-embed's dark theme) and on a
    # light one: no painted background, every text and axis in the page's colour
    for theme in (None, "dark"):
        sg = scene(live, theme)
        assert sg["scenegraph"]["items"][0].get("fill") in (None, "transparent")
        for role in ("axis-label", "axis-title", "legend-label", "title-text",
                     "title-subtitle"):
            fills = {i.get("fill") for i in items(sg, "text", role)}
            assert fills == {"currentColor"}, (theme, role, fills)
        assert {i["stroke"] for i in items(sg, "rule", "axis-domain")} == {"currentColor"}
    # the chart's own colours stay its own (bars, rules)
    assert items(scene(live), "rect")[0]["fill"] == "#4c78a8"
    # the static SVG copy (nbconvert, previews: an <img>, no page colour) stays light
    svg = bundle["image/svg+xml"]
    assert "currentColor" not in svg and 'fill="#000"' in svg or "#000" in svg


def test_a_user_config_wins_over_the_page_colours():
    chart = alt.Chart(pd.DataFrame({"x": [1, 2]})).mark_point().encode(x="x:Q")
    chart = chart.configure(background="#fafafa", axis=alt.AxisConfig(labelColor="red"))
    live = chart_renderer.follow_page_theme(chart.to_dict())
    assert live["config"]["axis"]["labelColor"] == "red"
    assert live["config"]["axis"]["titleColor"] == "currentColor"
    assert live["config"]["background"] == "#fafafa"
    json.dumps(live)  # still a plain spec
