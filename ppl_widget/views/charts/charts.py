"""Altair charts of scored texts and comparisons (``ppl_widget.charts``).

Every chart is built from data prepared here with numpy/pandas, so a chart never
holds more than ``max_points`` rows (Altair refuses more than 5,000 by default
and a browser slows down long before 100,000 marks): long texts are aggregated
(mean per bin of consecutive tokens) or sampled, and the chart's subtitle says so.
Data is inlined in the spec: charts render offline in JupyterLab's built-in Vega
renderer, and ``chart.save("x.svg")`` / ``"x.png"`` goes through vl-convert.

``unit="bits"`` (default) or ``"nats"``: the same switch as the widget's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.metrics import LN2, objective_labels
from ...core.result import ScoreResult
from .chart_data import (
    RANK_BUCKETS,
    bin_means,
    bin_size,
    check_positive,
    merge_equal_series,
    rank_bucket_fractions,
    rolling_mean,
)

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd

    from ...scoring.analyses.compare import Comparison

UNITS = ("bits", "nats")
#: Rows a chart holds at most (below Altair's 5,000-row limit).
MAX_POINTS = 4000
PPL_UNITS = ("token", "word", "char", "byte")
KINDS = ("surprisal", "running_perplexity", "distributions")
#: The per-token panel's head: short, so four panels fit a notebook; the subtitle says why
TOKEN_HEAD = "per token †"


def check_unit(unit: str) -> float:
    """Factor from nats to ``unit``."""
    if unit not in UNITS:
        raise ValueError(f"unit must be 'bits' or 'nats', got {unit!r}")
    return 1 / LN2 if unit == "bits" else 1.0


# ---- charts of one result ---------------------------------------------------
def _alt() -> Any:
    import altair as alt

    from .chart_renderer import enable_if_default

    enable_if_default()  # offline drawing in JupyterLab and nbconvert (chart_renderer.py)
    return alt


def _title(text: str, notes: Sequence[str]) -> Any:
    alt = _alt()
    notes = [n for n in notes if n]
    return alt.TitleParams(text, subtitle=notes, anchor="start") if notes else text


def _model_note(result: ScoreResult) -> str:
    s = result.settings
    part = " (partial: scoring was still running)" if result.partial else ""
    metric = objective_labels(s)["metric"]  # a PLL result names its metric
    return (f"{s.get('model', '?')} · max_length {s.get('max_length')} · "
            f"stride {s.get('stride')}{f' · {metric}' if metric else ''}{part}")


def _names(result: ScoreResult) -> tuple[str, str]:
    """What the chart calls the values: (surprisal, perplexity), pseudo- for a PLL result."""
    labels = objective_labels(result.settings)
    return labels["surprisal"], labels["perplexity"]


def _cap(words: str) -> str:
    return words[:1].upper() + words[1:]


def surprisal(result: ScoreResult, *, unit: str = "bits", window: int = 20,
              max_points: int = MAX_POINTS, width: int = 640, height: int = 220) -> alt.Chart:
    """Surprisal of every token by position, with a trailing rolling mean over
    ``window`` tokens; the token text, rank and probability in the tooltip.  Texts
    longer than ``max_points`` tokens are shown as means over bins of consecutive
    tokens (said in the subtitle)."""
    import pandas as pd

    alt = _alt()
    f = check_unit(unit)
    max_points = check_positive("max_points", max_points)
    s = result.surprisal * f
    n = len(s)
    size = bin_size(n, max_points)
    if size > 1:  # binned: a rolling mean shorter than a few bins would hide the points
        window = max(check_positive("window", window), 10 * size)
    roll = rolling_mean(s, window)
    tokens = result.tokens  # built per access: once
    name = _names(result)[0]
    ylab = f"{name} ({unit})"
    notes = [_model_note(result)]
    if size == 1:
        data = pd.DataFrame({"position": np.arange(n), "surprisal": s, "rolling": roll,
                             "token": tokens, "rank": result.rank,
                             "probability": result.probability})
        tip = [alt.Tooltip("position:Q"), alt.Tooltip("token:N"),
               alt.Tooltip("surprisal:Q", format=".3f", title=ylab),
               alt.Tooltip("rank:Q"), alt.Tooltip("probability:Q", format=".4f")]
    else:
        first, last, mean = bin_means(s, size)
        data = pd.DataFrame({"position": first, "last": last, "surprisal": mean,
                             "rolling": roll[last]})
        tip = [alt.Tooltip("position:Q", title="first token"), alt.Tooltip("last:Q",
                                                                           title="last token"),
               alt.Tooltip("surprisal:Q", format=".3f", title=f"mean {ylab}")]
        notes.append(f"{n:,} tokens shown as {len(first):,} bins of {size} consecutive tokens "
                     f"(mean per bin); the rolling mean is over {window} tokens")
    base = alt.Chart(data).encode(x=alt.X("position:Q", title="token position"))
    points = base.mark_circle(size=14, opacity=0.55).encode(
        y=alt.Y("surprisal:Q", title=ylab), tooltip=tip)
    line = base.mark_line(color="#d24a63", strokeWidth=2).encode(
        y="rolling:Q", tooltip=[alt.Tooltip("position:Q"),
                                alt.Tooltip("rolling:Q", format=".3f",
                                            title=f"rolling mean ({window} tokens)")])
    return (points + line).properties(
        width=width, height=height,
        title=_title(f"{_cap(name)} by position (rolling mean over {window} tokens, red)",
                     notes))


def running_perplexity(result: ScoreResult, *, unit: str = "bits",
                       units: Sequence[str] = PPL_UNITS, max_points: int = MAX_POINTS,
                       width: int = 560, height: int = 240) -> alt.Chart:
    """Perplexity per token, word, character and byte after each scored token, on one
    chart (log scale); the tooltip adds the running cross-entropy in ``unit`` per unit.
    Long texts: every k-th token is shown (the curves are cumulative, so sampling
    loses no trend), said in the subtitle."""
    import pandas as pd

    alt = _alt()
    f = check_unit(unit)
    max_points = check_positive("max_points", max_points)
    for u in units:
        if u not in PPL_UNITS:
            raise ValueError(f"units must be among {', '.join(PPL_UNITS)}; got {u!r}")
    n = len(result)
    step = bin_size(n * len(units), max_points)
    idx = np.arange(0, n, step)
    if n and idx[-1] != n - 1:
        idx = np.append(idx, n - 1)
    series = merge_equal_series({f"per {u}": result.running_perplexity(u)[idx] for u in units})
    frames = [pd.DataFrame({"tokens_scored": idx + 1, "unit": label, "perplexity": ppl,
                            "cross_entropy": np.log(ppl) * f})
              for label, ppl in series.items()]
    data = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    data = data[np.isfinite(data["perplexity"])] if len(data) else data
    ppl_name = _names(result)[1]
    notes = [_model_note(result), f"per-token {ppl_name} depends on the tokenizer; "
             "per word, character and byte compare across models"]
    if step > 1:
        notes.append(f"{n:,} tokens: every {step}th point shown (the values are cumulative)")
    chart = alt.Chart(data).mark_line(point=n <= 200).encode(
        x=alt.X("tokens_scored:Q", title="tokens scored"),
        y=alt.Y("perplexity:Q", title=f"running {ppl_name} (log scale)",
                scale=alt.Scale(type="log")),
        color=alt.Color("unit:N", sort=list(series), title=None),
        tooltip=[alt.Tooltip("unit:N"), alt.Tooltip("tokens_scored:Q"),
                 alt.Tooltip("perplexity:Q", format=".4g"),
                 alt.Tooltip("cross_entropy:Q", format=".4f", title=f"{unit} per unit")])
    return chart.properties(width=width, height=height,
                            title=_title(f"Running {ppl_name}", notes))


def distributions(result: ScoreResult, *, unit: str = "bits", bins: int = 40,
                  max_points: int = MAX_POINTS) -> alt.HConcatChart:
    """Three panels: the surprisal histogram, the GLTR rank buckets (fraction of tokens
    in the top 10 / 100 / 1000 / rest) and entropy against surprisal (a binned heat map
    instead of points beyond ``max_points`` tokens, said in the subtitle).  The three
    fit a notebook's width (about 800 pixels) side by side."""
    import pandas as pd

    alt = _alt()
    f = check_unit(unit)
    bins = check_positive("bins", bins)
    max_points = check_positive("max_points", max_points)
    s, e = result.surprisal * f, result.entropy * f
    n = len(s)
    name = _names(result)[0]
    counts, edges = np.histogram(s, bins=bins) if n else (np.zeros(0), np.zeros(1))
    hist = pd.DataFrame({"lo": edges[:-1], "hi": edges[1:], "tokens": counts,
                         "fraction": counts / max(n, 1)})
    h = alt.Chart(hist).mark_bar().encode(
        x=alt.X("lo:Q", bin="binned", title=f"{name} ({unit})"), x2="hi:Q",
        y=alt.Y("tokens:Q", title="tokens"),
        tooltip=[alt.Tooltip("lo:Q", format=".2f"), alt.Tooltip("hi:Q", format=".2f"),
                 "tokens:Q", alt.Tooltip("fraction:Q", format=".1%")],
    ).properties(width=220, height=200, title=_title(f"{_cap(name)} histogram",
                                                     [f"{n:,} tokens, {bins} bins"]))
    fr = rank_bucket_fractions(result.rank)
    buckets = pd.DataFrame({"bucket": list(fr), "fraction": list(fr.values())})
    order = [b for b, _ in RANK_BUCKETS]
    r = alt.Chart(buckets).mark_bar().encode(
        x=alt.X("bucket:N", sort=order, title="rank of the actual token",
                axis=alt.Axis(labelAngle=0)),
        y=alt.Y("fraction:Q", title="fraction of tokens", axis=alt.Axis(format="%")),
        color=alt.Color("bucket:N", sort=order, legend=None,
                        scale=alt.Scale(domain=order,
                                        range=["#e8b53a", "#f28e2b", "#d24a63", "#8f4e9f"])),
        tooltip=["bucket:N", alt.Tooltip("fraction:Q", format=".1%")],
    ).properties(width=150, height=200, title=_title("Rank buckets (GLTR)",
                                                     ["1 = the model's top choice"]))
    lab_s, lab_e = f"{name} ({unit})", f"entropy ({unit})"
    if n <= max_points:
        pts = pd.DataFrame({"surprisal": s, "entropy": e, "token": result.tokens})
        sc = alt.Chart(pts).mark_circle(size=14, opacity=0.5).encode(
            x=alt.X("entropy:Q", title=lab_e), y=alt.Y("surprisal:Q", title=lab_s),
            tooltip=["token:N", alt.Tooltip("surprisal:Q", format=".3f"),
                     alt.Tooltip("entropy:Q", format=".3f")])
        note = [f"{n:,} tokens", "above the diagonal: more surprising than expected"]
    else:
        grid, xe, ye = np.histogram2d(e, s, bins=40)
        xi, yi = np.nonzero(grid)
        cells = pd.DataFrame({"e0": xe[xi], "e1": xe[xi + 1], "s0": ye[yi], "s1": ye[yi + 1],
                              "tokens": grid[xi, yi].astype(int)})
        sc = alt.Chart(cells).mark_rect().encode(
            x=alt.X("e0:Q", bin="binned", title=lab_e), x2="e1:Q",
            y=alt.Y("s0:Q", bin="binned", title=lab_s), y2="s1:Q",
            color=alt.Color("tokens:Q", scale=alt.Scale(type="log", scheme="magma",
                                                        reverse=True)),
            tooltip=["tokens:Q"])
        note = [f"{n:,} tokens in a 40x40 grid", "above the diagonal: more surprising "
                "than expected"]
    top = float(max(s.max(), e.max())) if n else 1.0
    diag = alt.Chart(pd.DataFrame({"x": [0.0, top], "y": [0.0, top]})).mark_line(
        color="#888", strokeDash=[4, 3]).encode(x="x:Q", y="y:Q")
    ent = (sc + diag).properties(width=220, height=200,
                                 title=_title(f"Entropy against {name}", note))
    return alt.hconcat(h, r, ent).properties(
        title=_title("Distributions", [_model_note(result)]))


def stride_sweep_frame(text: str, lm: Any = None, *, max_length: int,
                       strides: Sequence[int], warmup: bool = True,
                       **score_options: Any) -> pd.DataFrame:
    """Score ``text`` once per stride at one ``max_length``: perplexity per unit,
    seconds, and the mean context each token saw.  The model is loaded once; a short
    warm-up run keeps the first stride's timing honest."""
    import pandas as pd

    from ...scoring.kinds.models import as_loaded
    from ...scoring.runner.scorer import score

    if not strides:
        raise ValueError("strides must list at least one stride (1 <= stride <= max_length)")
    lm = as_loaded(lm)
    if warmup:
        score(text[:200], lm, max_length=max_length, stride=max(strides), **score_options)
    rows = []
    for stride in strides:
        t0 = time.perf_counter()
        res = score(text, lm, max_length=max_length, stride=stride, **score_options)
        seconds = time.perf_counter() - t0
        m = res.metrics()
        rows.append({"stride": int(stride), "max_length": int(max_length), "seconds": seconds,
                     "n_windows": res.settings.get("n_windows"),
                     "mean_context": float(res.context_length.mean()) if len(res) else math.nan,
                     **{f"{u}_ppl": m[f"{u}_ppl"] for u in PPL_UNITS},
                     "bits_per_byte": m["bits_per_byte"], "total_nll": m["total_nll"]})
    return pd.DataFrame(rows)


def stride_sweep(text: str, lm: Any = None, *, max_length: int, strides: Sequence[int],
                 unit: str = "bits", data: pd.DataFrame | None = None,
                 **score_options: Any) -> alt.HConcatChart:
    """Perplexity and seconds for several strides at one ``max_length`` on the same
    text: how more context (a smaller stride) lowers perplexity, and what it costs.
    ``data``: a frame from ``stride_sweep_frame`` (nothing is scored then)."""
    import pandas as pd

    alt = _alt()
    f = check_unit(unit)
    if data is None:
        data = stride_sweep_frame(text, lm, max_length=max_length, strides=strides,
                                  **score_options)
    series = merge_equal_series({f"per {u}": data[f"{u}_ppl"].to_numpy(np.float64)
                                 for u in PPL_UNITS})
    long = pd.concat([pd.DataFrame({"stride": data["stride"], "unit": label,
                                    "perplexity": ppl, "cross_entropy": np.log(ppl) * f,
                                    "mean_context": data["mean_context"]})
                      for label, ppl in series.items()], ignore_index=True)
    x = alt.X("stride:Q", title="stride (smaller: more context per token)",
              scale=alt.Scale(type="log", base=2))
    ppl = alt.Chart(long).mark_line(point=True).encode(
        x=x, y=alt.Y("perplexity:Q", title="perplexity (log scale)",
                     scale=alt.Scale(type="log")),
        color=alt.Color("unit:N", sort=list(series), title=None),
        tooltip=["unit:N", "stride:Q", alt.Tooltip("perplexity:Q", format=".4g"),
                 alt.Tooltip("cross_entropy:Q", format=".4f", title=f"{unit} per unit"),
                 alt.Tooltip("mean_context:Q", format=".1f")],
    ).properties(width=250, height=220, title="Perplexity")
    cost = alt.Chart(data).mark_line(point=True, color="#b279a2").encode(
        x=x, y=alt.Y("seconds:Q", title="seconds"),
        tooltip=["stride:Q", alt.Tooltip("seconds:Q", format=".2f"), "n_windows:Q"],
    ).properties(width=250, height=220, title="Cost")
    max_len = int(data["max_length"].iloc[0]) if len(data) else max_length
    return alt.hconcat(ppl, cost).properties(title=_title(
        f"Stride sweep at max_length {max_len}",
        ["each token sees at least max_length - stride + 1 tokens of context"]))


# ---- comparisons -------------------------------------------------------------
def comparison(cmp: Comparison, *, a: int | str = 0, b: int | str = 1, unit: str = "bits",
               max_points: int = MAX_POINTS) -> alt.VConcatChart:
    """Two panels: each model's perplexity per token, word, character and byte side
    by side (the per-token panel marked as not comparable across tokenizers), and
    the surprisal of every word under model ``a`` against model ``b`` (a sample of
    ``max_points`` words for longer texts, said in the subtitle)."""
    import pandas as pd

    alt = _alt()
    f = check_unit(unit)
    table = pd.DataFrame(cmp.table())
    rows = []
    for u in PPL_UNITS:
        head = TOKEN_HEAD if u == "token" else f"per {u}"
        for _, r in table.iterrows():
            rows.append({"label": r["label"], "unit": head, "perplexity": r[f"{u}_ppl"],
                         "comparable": "yes" if u != "token" else "no",
                         "units": int(r[f"n_{u}s"])})
    bars_data = pd.DataFrame(rows)
    heads = [TOKEN_HEAD if u == "token" else f"per {u}" for u in PPL_UNITS]
    bars = alt.Chart(bars_data).mark_bar().encode(
        x=alt.X("label:N", title=None, sort=list(cmp.labels), axis=alt.Axis(labelAngle=-30)),
        y=alt.Y("perplexity:Q", title=None),  # the chart's title says it: room for four
        color=alt.Color("label:N", sort=list(cmp.labels), title="model"),
        opacity=alt.Opacity("comparable:N", scale=alt.Scale(domain=["yes", "no"],
                                                            range=[1.0, 0.3]), legend=None),
        tooltip=["label:N", "unit:N", alt.Tooltip("perplexity:Q", format=".4g"), "units:Q"],
    ).properties(width=110, height=180).facet(
        column=alt.Column("unit:N", sort=heads, title=None,
                          header=alt.Header(labelFontWeight="bold")),
    ).resolve_scale(y="independent")
    bars = bars.properties(title=_title("Perplexity per unit", [
        "the total NLL is each model's, the denominator the text's: compare per word, "
        "character or byte", f"{TOKEN_HEAD}: NOT comparable across tokenizers (faded bars): "
        "each model divides by its own token count"]))

    w = cmp.words(a, b)
    la, lb = w.attrs["a"], w.attrs["b"]
    pts = pd.DataFrame({"word": w["text"], "position": w.index,
                        "A": w[f"surprisal:{la}"] * f, "B": w[f"surprisal:{lb}"] * f,
                        "tokens_A": w[f"n_tokens:{la}"], "tokens_B": w[f"n_tokens:{lb}"]})
    pts["diff"] = pts["A"] - pts["B"]
    pts["better"] = np.where(pts["diff"] > 0, f"{lb} better",
                             np.where(pts["diff"] < 0, f"{la} better", "tie"))
    notes = [f"{len(pts):,} words; below the diagonal: {lb} more surprised, above: {la}"]
    if len(pts) > max_points:
        pts = pts.sample(n=max_points, random_state=0).sort_index()
        notes.append(f"a random sample of {max_points:,} words is shown (seed 0)")
    top = float(max(pts["A"].max(), pts["B"].max(), 1.0)) if len(pts) else 1.0
    scatter = alt.Chart(pts).mark_circle(size=30, opacity=0.7).encode(
        x=alt.X("A:Q", title=f"{la}: word surprisal ({unit})"),
        y=alt.Y("B:Q", title=f"{lb}: word surprisal ({unit})"),
        color=alt.Color("better:N", title=None,
                        scale=alt.Scale(domain=[f"{la} better", "tie", f"{lb} better"],
                                        range=["#5e3c99", "#999999", "#e66101"])),
        tooltip=["word:N", "position:Q", alt.Tooltip("A:Q", format=".3f", title=la),
                 alt.Tooltip("B:Q", format=".3f", title=lb),
                 alt.Tooltip("diff:Q", format=".3f", title=f"{la} - {lb} ({unit})"),
                 alt.Tooltip("tokens_A:Q", title=f"tokens ({la})"),
                 alt.Tooltip("tokens_B:Q", title=f"tokens ({lb})")])
    diag = alt.Chart(pd.DataFrame({"x": [0.0, top], "y": [0.0, top]})).mark_line(
        color="#888", strokeDash=[4, 3]).encode(x="x:Q", y="y:Q")
    words = (scatter + diag).properties(width=320, height=320, title=_title(
        f"Word surprisal: {la} against {lb}", notes))
    return alt.vconcat(bars, words).resolve_scale(color="independent")


def for_result(result: ScoreResult | None, kind: str, **options: Any) -> Any:
    """The chart ``kind`` (surprisal, running_perplexity, distributions) of a result."""
    if result is None:
        raise ValueError("nothing scored yet: wait for the first batch (widget.wait())")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
    return {"surprisal": surprisal, "running_perplexity": running_perplexity,
            "distributions": distributions}[kind](result, **options)
