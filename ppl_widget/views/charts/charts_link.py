"""Altair charts of the shape of the link between surprisal and reading time (Wilcox et
al., TACL 2023): ``link_chart`` (the fitted effect of surprisal, as a line and as a smooth,
with their intervals, one panel per language: ``link_effects``' frame) and
``link_dll_chart`` (per language, the linear and the non-linear model's ΔLL with their
intervals and the paired test of their difference: ``LinkShape.row()`` rows). Colours
are mid-tones that read on a white and on a dark background (Vega's dark theme)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ...core.reading.languages import language_name
from .chart_data import check_columns
from .charts import _alt, _title
from .charts_reading import GREY, Z95

#: the linear fit and the smooth (the paper's blue and green, mid-tones for both themes)
FIT_COLOURS = {"linear": "#6488d6", "non-linear": "#29bc8b"}


def _fit_scale(alt: Any) -> Any:
    return alt.Scale(domain=list(FIT_COLOURS), range=list(FIT_COLOURS.values()))


def _methods(frame: pd.DataFrame) -> list[str]:
    """The smoothness selection methods in a frame's ``method`` column when it holds more
    than one (then each panel or group is one language under one method)."""
    if "method" not in frame.columns:
        return []
    methods = list(pd.unique(frame["method"].astype(str)))
    return methods if len(methods) > 1 else []


def _group_label(frame: pd.DataFrame, by: str | None, methods: list[str]) -> pd.Series:
    """A panel's or group's name: the language (MECO codes named), then the method when
    the frame compares methods (``English · REML``)."""
    name = frame[by].map(language_name) if by else pd.Series("", index=frame.index)
    if not methods:
        return name
    method = frame["method"].astype(str)
    return method if not by else name + " · " + method


def _check(frame: Any, needed: list[str], chart: str) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{chart}: needs a DataFrame, not {type(frame).__name__}")
    check_columns(chart, frame, needed)
    return frame


def link_chart(effects: pd.DataFrame, *, by: str | None = None, unit: str = "bits",
               columns: int = 4, width: int = 180, height: int = 150) -> Any:
    """The fitted effect of surprisal on reading time: the linear model's line and the
    non-linear model's smooth, each with its interval band (``link_effects``: effect -/+
    2 standard errors), one panel per value of ``by`` (default ``lang`` when the frame
    has it; MECO codes named). ``effects``: ``link_effects``' frame, or several
    concatenated with a ``by`` column. ``unit``: the surprisal's unit, for the axis. When
    its ``method`` column holds several smoothness selection methods (``link_effects(...,
    methods=("GCV.Cp", "REML"))``), each language gets a row with one panel per method."""
    alt = _alt()
    frame = _check(effects, ["fit", "x", "effect", "lower", "upper"], "link_chart")
    if by is None and "lang" in frame.columns:
        by = "lang"
    if by is not None:
        _check(frame, [by], "link_chart")
    unknown = sorted(set(frame["fit"]) - set(FIT_COLOURS))
    if unknown:
        raise ValueError(f"link_chart: fit must be one of {list(FIT_COLOURS)}, not {unknown}")
    methods = _methods(frame)
    data = frame[["fit", "x", "effect", "lower", "upper"] + ([by] if by else [])].copy()
    if by or methods:
        data["panel"] = _group_label(frame, by, methods)
        if methods:
            columns = len(methods)
    faceted = bool(by or methods)
    panels = list(pd.unique(data["panel"])) if faceted else []
    colour = alt.Color("fit:N", title="model", scale=_fit_scale(alt),
                       legend=alt.Legend(orient="top"))
    x = alt.X("x:Q", title=f"surprisal of the word ({unit})")
    tip = [alt.Tooltip("fit:N", title="model"), alt.Tooltip("x:Q", format=".2f",
                                                             title=f"surprisal ({unit})"),
           alt.Tooltip("effect:Q", format=".1f", title="effect (ms)"),
           alt.Tooltip("lower:Q", format=".1f", title="interval, low"),
           alt.Tooltip("upper:Q", format=".1f", title="interval, high")]
    if faceted:
        tip.insert(0, alt.Tooltip("panel:N", title=by or "method"))
    # the legend is the lines' (colour and dash merged), not the faint bands'
    bands = [alt.Chart().transform_filter(alt.datum.fit == fit).mark_area(
        opacity=0.25, color=hue).encode(
        x=x, y=alt.Y("lower:Q", title="slowdown due to surprisal (ms)"), y2="upper:Q")
        for fit, hue in FIT_COLOURS.items()]
    line = alt.Chart().mark_line(strokeWidth=2).encode(
        x=x, y="effect:Q", color=colour, tooltip=tip,
        strokeDash=alt.StrokeDash("fit:N", title="model", legend=alt.Legend(orient="top"),
                                  scale=alt.Scale(domain=list(FIT_COLOURS),
                                                  range=[[1, 0], [6, 3]])))
    chart = alt.layer(*bands, line, data=data).properties(width=width, height=height)
    if faceted:
        chart = chart.facet(facet=alt.Facet("panel:N", title=None, sort=panels),
                            columns=columns)
    anchored = effects.attrs.get("anchored", True)
    return chart.properties(title=_title(
        "The effect of surprisal on reading time: a line or a curve?",
        ["solid: the linear model's surprisal term; dashed: the non-linear model's smooth "
         "(cubic regression spline); bands: -/+ 2 standard errors",
         "each model fitted on every usable word over the baseline of frequency and length"
         + ("; both curves start at 0 ms" if anchored else "")]
        + ([f"smoothness chosen by {' and by '.join(methods)} (mgcv's method), one panel "
            "each"] if methods else [])))


def link_dll_chart(rows: pd.DataFrame, *, by: str = "lang", width: int | None = None,
                   height: int = 220) -> Any:
    """Per value of ``by`` (a language), the linear and the non-linear model's ΔLL (nats
    per word) with their 95% intervals (1.96 SE), side by side; the tooltip gives the
    difference and its p-value. ``rows``: ``LinkShape.row()`` dicts (or a frame of
    them) with a ``by`` column; with rows of several methods (``LinkMethods.rows()``), one
    group per language and method, a flagged conclusion named in the tooltip."""
    alt = _alt()
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    needed = [by, "dll_linear", "se_linear", "dll_nonlinear", "se_nonlinear", "difference",
              "p_value", "test"]
    _check(frame, needed, "link_dll_chart")
    methods = _methods(frame)
    group = _group_label(frame, by, methods)
    conclusion = frame["conclusion"].astype(str) if "conclusion" in frame.columns else ""
    if methods and "conclusion_differs" in frame.columns:
        conclusion = conclusion + frame["conclusion_differs"].map(
            lambda d: " (DIFFERS between methods)" if d else "")
    long = []
    for fit, mean, se in (("linear", "dll_linear", "se_linear"),
                          ("non-linear", "dll_nonlinear", "se_nonlinear")):
        part = pd.DataFrame({"group": group, "fit": fit, "conclusion": conclusion,
                             "dll": pd.to_numeric(frame[mean]),
                             "difference": pd.to_numeric(frame["difference"]),
                             "p_value": pd.to_numeric(frame["p_value"]),
                             "test": frame["test"].astype(str)})
        half = Z95 * pd.to_numeric(frame[se])
        part["low"], part["high"] = part["dll"] - half, part["dll"] + half
        long.append(part)
    data = pd.concat(long, ignore_index=True)
    order = list(pd.unique(data["group"]))
    if width is None:
        width = max(200, 60 * len(order))
    x = alt.X("group:N", title=None, sort=order, axis=alt.Axis(labelAngle=0))
    colour = alt.Color("fit:N", title="model", scale=_fit_scale(alt),
                       legend=alt.Legend(orient="top"))
    tip = [alt.Tooltip("group:N", title=by), alt.Tooltip("fit:N", title="model"),
           alt.Tooltip("dll:Q", format=".5f", title="ΔLL"),
           alt.Tooltip("low:Q", format=".5f", title="95% interval, low"),
           alt.Tooltip("high:Q", format=".5f", title="95% interval, high"),
           alt.Tooltip("difference:Q", format=".5f", title="non-linear - linear"),
           alt.Tooltip("p_value:Q", format=".4f", title="p-value"),
           alt.Tooltip("test:N", title="test"), alt.Tooltip("conclusion:N", title="conclusion")]
    base = alt.Chart().encode(x=x, xOffset=alt.XOffset("fit:N", sort=list(FIT_COLOURS)),
                              color=colour)
    zero = alt.Chart().mark_rule(color=GREY, strokeDash=[4, 4]).encode(
        y=alt.datum(0)).transform_aggregate(rows="count()")
    bars = base.mark_rule(strokeWidth=2).encode(
        y=alt.Y("low:Q", title="ΔLL (nats per word)"), y2="high:Q", tooltip=tip)
    points = base.mark_point(filled=True, size=60, opacity=1).encode(
        y="dll:Q", shape=alt.Shape("fit:N", title="model", legend=alt.Legend(orient="top"),
                                   scale=alt.Scale(domain=list(FIT_COLOURS))),
        tooltip=tip)
    tests = sorted(set(data["test"]))
    firsts = data.drop_duplicates("group")
    p_line = "; ".join(f"{g}: p = {p:.3g}" for g, p in
                       firsts[["group", "p_value"]].itertuples(index=False)) \
        if len(firsts) <= 6 else "p-values in the tooltip"
    return alt.layer(zero, bars, points, data=data).properties(
        width=width, height=height, title=_title(
            "Linear against non-linear: ΔLL of surprisal over the baseline",
            ["points: mean ΔLL over the held-out words, bars: 95% interval",
             f"the per-word difference (non-linear - linear) by a paired {'/'.join(tests)} "
             f"test: {p_line}"]))
