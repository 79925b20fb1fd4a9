"""Altair chart of a ``DivergenceResult``: the distribution of per-token KL(base ‖ other)
(``DivergenceResult.chart()``).  The histogram is
binned here (numpy), on a log axis, since per-token KL spans decades; the mean, median
and 99th percentile are marked.  Drawn offline like the other charts (chart_renderer)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...core.divergence import DivergenceResult
from .charts import _alt, _title, check_unit

#: KL below this (nats) counts in the lowest bin: the log axis needs a floor
KL_FLOOR_NATS = 1e-6
#: The marked statistics, in legend order, and their colours: apart from the bars' blue
#: and from each other, readable on a light and a dark page.
STATISTICS = ("median", "mean", "99%")
STATISTIC_COLOURS = ("#e45756", "#f58518", "#9d755d")


def kl_histogram(kl: np.ndarray, bins: int, factor: float = 1.0) -> pd.DataFrame:
    """Counts of ``kl * factor`` over ``bins`` log-spaced bins from the floor (or the
    smallest value) to the largest: columns lo, hi, count, share."""
    values = np.maximum(np.asarray(kl, np.float64), KL_FLOOR_NATS) * factor
    if not len(values):
        return pd.DataFrame({"lo": [], "hi": [], "count": [], "share": []})
    lo, hi = float(values.min()), float(values.max())
    hi = hi if hi > lo else lo * 10
    edges = np.geomspace(lo, hi, bins + 1)
    counts, _ = np.histogram(values, edges)
    return pd.DataFrame({"lo": edges[:-1], "hi": edges[1:], "count": counts,
                         "share": counts / len(values)})


def divergence(result: DivergenceResult, *, unit: str = "nats", bins: int = 40,
               width: int = 560, height: int = 220) -> Any:
    """A histogram of per-token KL(base ‖ other) on a log axis, with the mean, the
    median and the 99th percentile as rules; the share of tokens whose top token
    agrees in the subtitle.  ``unit``: ``"nats"`` (llama.cpp's) or ``"bits"``."""
    if not isinstance(result, DivergenceResult):
        raise TypeError(f"result must be a DivergenceResult, got {type(result).__name__}")
    if not isinstance(bins, int) or isinstance(bins, bool) or bins < 1:
        raise ValueError(f"bins must be a positive integer, got {bins!r}")
    factor = check_unit(unit)
    alt = _alt()
    base_label, other_label = result.labels
    hist = kl_histogram(result.kl, bins, factor)
    x = alt.X("lo:Q", scale=alt.Scale(type="log"),
              title=f"KL({base_label} ‖ {other_label}) per token ({unit}, log scale)")
    # each bar spans its bin and stands on zero (y2): without y2 Vega-Lite draws a ranged
    # bar as a flat dash at its count; empty bins draw nothing
    bars = alt.Chart(hist[hist["count"] > 0]).mark_bar(opacity=0.85).encode(
        x=x, x2="hi:Q", y=alt.Y("count:Q", title="tokens", scale=alt.Scale(domainMin=0, nice=True)),
        y2=alt.datum(0),
        tooltip=[alt.Tooltip("lo:Q", format=".3g", title="from"),
                 alt.Tooltip("hi:Q", format=".3g", title="to"),
                 alt.Tooltip("count:Q"), alt.Tooltip("share:Q", format=".1%")])
    notes = [f"{len(result)} tokens; values below {KL_FLOOR_NATS * factor:.2g} {unit} "
             "in the first bin"]
    layers = [bars]
    if len(result):
        s = result.summary()
        marks = pd.DataFrame({
            "statistic": list(STATISTICS),
            "value": [max(s[key], KL_FLOOR_NATS) * factor
                      for key in ("kld_median", "mean_kld", "kld_p99")]})
        rules = alt.Chart(marks).mark_rule(strokeDash=[4, 3], strokeWidth=2).encode(
            x=alt.X("value:Q", scale=alt.Scale(type="log")),
            color=alt.Color("statistic:N", title=None, sort=list(STATISTICS),
                            scale=alt.Scale(domain=list(STATISTICS),
                                            range=list(STATISTIC_COLOURS))),
            tooltip=[alt.Tooltip("statistic:N"), alt.Tooltip("value:Q", format=".4g")])
        layers.append(rules)
        notes.insert(0, f"mean {s['mean_kld'] * factor:.4g} ± {s['mean_kld_se'] * factor:.2g} "
                        f"{unit}, median {s['kld_median'] * factor:.3g}; same top token "
                        f"{100 * s['same_top_p']:.1f}%; PPL({other_label})/PPL({base_label}) "
                        f"{s['ppl_ratio']:.4f}")
    title = _title(f"KL divergence of {other_label} from {base_label}", notes)
    return alt.layer(*layers).properties(title=title, width=width, height=height)
