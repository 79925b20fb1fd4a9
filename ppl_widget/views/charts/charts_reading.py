"""Altair charts of reading times and surprisal: the linking function
(``linking_chart``: reading time against surprisal) and the quality-power chart
(``quality_power_chart``: ΔLL against each model's mean surprisal, as in Wilcox et al.
2023's figure).  Colours are mid-tones that read on a white and on a dark background:
JupyterLab's dark theme draws these charts with Vega's dark theme."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...core.reading.languages import language_name
from ..reading_view import pick, surprisal_factor
from .chart_data import check_columns, check_positive, quantile_bin_means
from .charts import _alt, _title, check_unit

#: The fitted line's colour when there is one series (reads on light and dark).
LINE = "#d24a63"
#: A rule at zero, the words' histogram: a grey that both themes show.
GREY = "#8c8c8c"
Z95 = 1.96
#: which words the linking chart draws
LINKING_ROWS = ("all", "regression")


def linking_chart(per_word: pd.DataFrame, *, rt: str = "rt_value",
                  surprisal: str | None = None, surprisal_in: str | None = None,
                  measure: str | None = None, series: str | None = None,
                  unit: str = "bits", bins: int = 20, rows: str = "all",
                  width: int = 520, height: int = 280) -> Any:
    """Reading time against surprisal: the mean reading time of the words in each of
    ``bins`` surprisal bins (about equal counts; a 95% interval of the mean: mean +/-
    1.96 SE) and the least-squares line of reading time on surprisal over the same words,
    above a histogram of the words' surprisal.

    ``per_word``: ``predictive_power(...).attrs["per_word"]`` (``measure`` picks an RT
    measure, default the first; one series per model) or any frame of one row per word
    (``rt`` and ``surprisal`` name its columns; ``surprisal_in`` its unit, as
    ``show_reading`` takes it).  ``series``: a column to draw one series per value of.
    ``rows``: ``"all"`` (every word with a finite reading time and surprisal) or
    ``"regression"`` (only the words ΔLL's regression used: those with a ``delta_ll``;
    the first words of each text, without predecessors, are not); the subtitle says
    which, and how many words each uses.
    """
    alt = _alt()
    f = check_unit(unit)
    bins = check_positive("bins", bins)
    if rows not in LINKING_ROWS:
        raise ValueError(f"linking_chart: rows must be one of {list(LINKING_ROWS)}, not "
                         f"{rows!r}")
    frame, chosen = pick(per_word, "rt", measure)
    in_regression = None
    if "delta_ll" in frame.columns:
        in_regression = pd.to_numeric(frame["delta_ll"]).notna().to_numpy()
    elif rows == "regression":
        raise ValueError("linking_chart: rows='regression' needs the frame's delta_ll "
                         "column (predictive_power's per-word frame has it): it marks the "
                         "words the regression used")
    if surprisal is None:
        surprisal = "surprisal_bits" if "surprisal_bits" in frame.columns else "surprisal"
    if series is None and "model" in frame.columns:
        series = "model"
    check_columns("linking_chart", frame, [c for c in (rt, surprisal, series) if c is not None])
    to_unit = surprisal_factor(surprisal, surprisal_in) * f
    x = pd.to_numeric(frame[surprisal]).to_numpy(dtype=float) * to_unit
    y = pd.to_numeric(frame[rt]).to_numpy(dtype=float)
    keys = frame[series].astype(str).to_numpy() if series else np.full(len(frame), "words")
    ok = np.isfinite(x) & np.isfinite(y)
    if rows == "regression":
        ok &= in_regression
    if not ok.any():
        raise ValueError(f"linking_chart: no word has both a finite {rt!r} and {surprisal!r}")
    means, lines, hists, notes = [], [], [], []
    # the histogram stops at the 99th percentile: a few extreme words would squeeze the rest
    hist_end = float(np.quantile(x[ok], 0.99))
    edges = np.histogram_bin_edges(x[ok], bins=30, range=(float(x[ok].min()), hist_end))
    for key in pd.unique(keys[ok]):
        sel = ok & (keys == key)
        m = pd.DataFrame(quantile_bin_means(x[sel], y[sel], bins, Z95)).assign(series=key)
        means.append(m)
        slope, intercept = np.polyfit(x[sel], y[sel], 1) if sel.sum() > 1 else (0.0, y[sel][0])
        span = m["x"].to_numpy()[[0, -1]]  # the line spans the bins it summarises
        lines.append(pd.DataFrame({"x": span, "fit": intercept + slope * span, "series": key}))
        counts, _ = np.histogram(x[sel], bins=edges)
        hists.append(pd.DataFrame({"lo": edges[:-1], "hi": edges[1:], "words": counts,
                                   "series": key}))
        used = "" if in_regression is None or rows == "regression" else \
            f" (ΔLL's regression: {int((in_regression & (keys == key)).sum()):,})"
        notes.append(f"{key}: {slope:+.1f} ms per {unit[:-1]}, {int(sel.sum()):,} words{used}")
    n_above = int((x[ok] > hist_end).sum())
    rt_title = f"{chosen or rt} (ms)"
    xlab = f"surprisal ({unit})"
    one = len(means) == 1
    order = [str(m["series"].iloc[0]) for m in means]  # the frame's order, not sorted
    color = (alt.value(LINE) if one else
             alt.Color("series:N", title=series, sort=order, legend=alt.Legend(orient="top")))
    xs = alt.X("x:Q", title=xlab, scale=alt.Scale(zero=False))
    tip = [alt.Tooltip("series:N", title=series or "words"),
           alt.Tooltip("x:Q", format=".2f", title=f"mean {xlab}"),
           alt.Tooltip("mean:Q", format=".1f", title=f"mean {rt_title}"),
           alt.Tooltip("low:Q", format=".1f", title="95% interval, low"),
           alt.Tooltip("high:Q", format=".1f", title="95% interval, high"),
           alt.Tooltip("n:Q", title="words in the bin")]
    base = alt.Chart(pd.concat(means, ignore_index=True)).encode(x=xs, color=color)
    bars = base.mark_rule(strokeWidth=2).encode(
        y=alt.Y("low:Q", title=f"mean {rt_title}", scale=alt.Scale(zero=False)),
        y2="high:Q", tooltip=tip)
    points = base.mark_point(filled=True, size=45, opacity=1).encode(y="mean:Q", tooltip=tip)
    fit = alt.Chart(pd.concat(lines, ignore_index=True)).mark_line(
        strokeWidth=2, strokeDash=[6, 3]).encode(x="x:Q", y="fit:Q", color=color)
    top = (bars + points + fit).properties(width=width, height=height)
    hist = alt.Chart(pd.concat(hists, ignore_index=True))
    words = alt.Y("words:Q", title="words", stack=None, scale=alt.Scale(domainMin=0))
    hist_tip = [alt.Tooltip("series:N", title=series or "words"),
                alt.Tooltip("lo:Q", format=".2f"), alt.Tooltip("hi:Q", format=".2f"),
                alt.Tooltip("words:Q")]
    if one:
        bottom = hist.mark_bar(color=GREY, binSpacing=0).encode(
            x=alt.X("lo:Q", bin="binned", title=xlab), x2="hi:Q", y=words, tooltip=hist_tip)
    else:  # several series: outlines, which stay readable where they overlap
        bottom = hist.mark_line(interpolate="step-after", strokeWidth=1.5).encode(
            x=alt.X("lo:Q", title=xlab), y=words, color=color, tooltip=hist_tip)
    bottom = bottom.properties(width=width, height=70)
    return alt.vconcat(top, bottom, spacing=6).resolve_scale(x="shared").properties(
        title=_title("Reading time against surprisal (the linking function)",
                     [f"points: mean {rt_title} per surprisal bin ({bins} bins of about "
                      "equal counts), bars: 95% interval; dashed: least-squares line",
                      ("words: those ΔLL's regression used (each with two words before "
                       "it in its text and every value)" if rows == "regression" else
                       "words: every word with a reading time and a surprisal"),
                      "; ".join(notes), "below: how many words fall at each surprisal"
                      + (f" ({n_above:,} words above {hist_end:.1f} {unit} not drawn)"
                         if n_above else "")]))


def quality_power_chart(results: Any, *, x: str | None = None, y: str = "delta_ll",
                        low: str = "ci_low", high: str = "ci_high",
                        color: str | None = None, facet: str | None = None,
                        label: str | None = None, line: bool | None = None,
                        width: int | None = None, height: int = 220) -> Any:
    """ΔLL (the mean per-word gain in held-out log-likelihood) against each model's mean
    surprisal, with its interval (``low`` to ``high``), one line per value of ``color``
    (a language, a model family) and one panel per value of ``facet``. ``line``: join the
    points of each ``color`` series (default: when there is a ``color``, whose points are
    one family of models; unrelated models are not joined: nothing lies between them).
    MECO language codes in a ``lang`` column are named (``ee`` -> Estonian).

    ``results``: ``predictive_power``'s table, any frame or list of rows with these
    columns, or ``published.json`` itself (its ``model_size_study`` points).  Defaults:
    ``x`` the first of ``mean_surprisal_bits`` / ``avg_surp``; ``color`` ``lang`` when
    there is one; ``facet`` ``target`` when it has several values; ``label`` (a point's
    name: in the tooltip, and a colour and legend entry per point when there is no
    ``color`` and at most 12 points) ``model``."""
    alt = _alt()
    if isinstance(results, Mapping) and "model_size_study" in results:
        results = results["model_size_study"]
    frame = results if isinstance(results, pd.DataFrame) else pd.DataFrame(list(results))
    if x is None:
        x = next((c for c in ("mean_surprisal_bits", "avg_surp") if c in frame.columns),
                 "mean_surprisal_bits")
    if color is None and "lang" in frame.columns:
        color = "lang"
    if facet is None and "target" in frame.columns and frame["target"].nunique() > 1:
        facet = "target"
    if label is None and "model" in frame.columns:
        label = "model"
    if width is None:
        width = 240 if facet else 440
    used = [c for c in (x, y, low, high, color, facet, label) if c is not None]
    check_columns("quality_power_chart", frame, used)
    data = frame[list(dict.fromkeys(used))].copy()
    for c in (x, y, low, high):
        data[c] = pd.to_numeric(data[c])
    panels = list(pd.unique(data[facet])) if facet else []  # the input's order
    data = data.sort_values([c for c in (color, x) if c is not None], kind="stable")
    if label is not None:
        data[label] = data[label].astype(str)
    for c in {color, facet, label} & {"lang"}:
        data[c] = data[c].map(language_name)
    if line is None:
        line = color is not None
    named = bool(label and not color and len(data) <= 12)  # few points, each named
    point_color = (alt.Color(f"{color}:N", title="language" if color == "lang" else color,
                             legend=alt.Legend(orient="right"))
                   if color else
                   alt.Color(f"{label}:N", title=label, sort=list(data[label]),
                             legend=alt.Legend(orient="right")) if named else alt.value(LINE))
    xs = alt.X(f"{x}:Q", title="mean surprisal (bits per word)",
               scale=alt.Scale(zero=False))
    tip = [alt.Tooltip(f"{c}:N") for c in (facet, color, label) if c] + [
        alt.Tooltip(f"{x}:Q", format=".3f"), alt.Tooltip(f"{y}:Q", format=".5f", title="ΔLL"),
        alt.Tooltip(f"{low}:Q", format=".5f"), alt.Tooltip(f"{high}:Q", format=".5f")]
    base = alt.Chart().encode(x=xs, color=point_color)
    # the line: one per color value; a single grey line when the points carry the colours
    line_color = {"color": point_color, "detail": f"{color}:N"} if color else {
        "color": alt.value(GREY if named else LINE)}
    joined = [alt.Chart().mark_line(strokeWidth=2).encode(x=xs, y=f"{y}:Q", **line_color)] \
        if line else []
    layers = [
        # one rule per panel (the aggregate), not one per row
        alt.Chart().mark_rule(color=GREY, strokeDash=[4, 4]).encode(y=alt.datum(0))
        .transform_aggregate(rows="count()"),
        *joined,
        base.mark_rule(strokeWidth=1.5, opacity=0.7).encode(
            y=alt.Y(f"{low}:Q", title="ΔLL (nats per word)"), y2=f"{high}:Q", tooltip=tip),
        base.mark_point(filled=True, size=50, opacity=1).encode(y=f"{y}:Q", tooltip=tip),
    ]
    chart = alt.layer(*layers, data=data).properties(width=width, height=height)
    if facet:
        chart = chart.facet(column=alt.Column(f"{facet}:N", title=None,
                                              sort=panels))
    n = len(data)
    return chart.properties(title=_title(
        "Psychometric predictive power against model quality",
        [f"{n} points: ΔLL with its 95% interval"
         + (f"; one line per {color}, through its models" if line and color else "")
         + ("; the line joins them in order of mean surprisal" if line and not color else ""),
         "left: a better language model (lower mean surprisal); above the dashed line "
         "(ΔLL > 0) the model's predictors improve the regression of reading times"]))

