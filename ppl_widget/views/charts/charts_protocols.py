"""Altair chart of the context each protocol gives each token (``protocol_context_chart``):
the same text scored under several protocols (``score(..., protocol=...)``), lined up by
each token's character span.

Three things a reader must see, and why the chart is drawn as it is:

* a protocol that leaves tokens unscored (llama.cpp scores only the second half of each
  chunk) has a line that *stops* there: the tokens it does not score are gaps (null
  context breaks the line), not diagonals joining one scored half to the next;
* protocols with (almost) the same context (exact and hf-guide, one token apart;
  llama.cpp and lm-eval on the second half of each chunk) are all visible: each line is
  narrower than the one before and drawn over it, the first a translucent band, the
  later ones dashed;
* the x axis has a few round ticks, never labels that run into each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...core.result import ScoreResult
from .charts import _alt, _title

#: The first protocol's line is the widest and each next one narrower, drawn in that
#: order: a line that runs on another's points stays visible around it.
WIDEST, NARROWEST = 7.0, 2.0
OPACITIES = (0.5, 0.8)  # the first line's (a band), the others'
DASHES = ([1, 0], [1, 0], [6, 3], [2, 2], [8, 3, 2, 3])


def _token_starts(runs: Mapping[str, ScoreResult]) -> np.ndarray:
    """The start character of every token of the text, scored or not by any run."""
    return np.unique(np.concatenate([np.asarray(r.offsets)[:, 0] for r in runs.values()]
                                    + [np.asarray(r.unscored_offsets)[:, 0]
                                       for r in runs.values()]))


def context_frame(runs: Mapping[str, ScoreResult]) -> pd.DataFrame:
    """One row per token a protocol scores: ``token`` (its position among the tokens of
    the text, ordered by character span), ``protocol``, ``context`` and ``segment`` (the
    run of consecutive scored tokens it belongs to: a line is drawn per segment, so it
    breaks where the protocol scores nothing)."""
    if not runs:
        raise ValueError("runs must map at least one protocol name to its ScoreResult")
    for name, res in runs.items():
        if not isinstance(res, ScoreResult):
            raise TypeError(f"runs[{name!r}] must be a ScoreResult, got {type(res).__name__}")
    starts = _token_starts(runs)
    frames = []
    for name, res in runs.items():
        context = pd.Series(res.context_length.astype(np.float64),
                            index=np.asarray(res.offsets)[:, 0])
        context = context[~context.index.duplicated()].reindex(starts)
        values = context.to_numpy()
        scored = ~np.isnan(values)
        # a new segment starts at every scored token after an unscored one
        segment = np.cumsum(scored & ~np.r_[False, scored[:-1]])
        frames.append(pd.DataFrame({"token": np.arange(len(starts)), "protocol": name,
                                    "context": values, "segment": segment})[scored])
    return pd.concat(frames, ignore_index=True)


def protocol_context_chart(runs: Mapping[str, ScoreResult], *, width: int = 640,
                           height: int = 240) -> Any:
    """The tokens of context each protocol gives each token of the text, one line per
    protocol (``runs``: name -> ``ScoreResult``, in legend order), broken where the
    protocol scores nothing."""
    alt = _alt()
    data = context_frame(runs)
    names = list(runs)
    n_tokens = len(_token_starts(runs))
    widths = [float(w) for w in np.linspace(WIDEST, NARROWEST, len(names))]
    opacities = [OPACITIES[0]] + [OPACITIES[1]] * (len(names) - 1)
    dashes = [DASHES[k % len(DASHES)] for k in range(len(names))]
    legend = alt.Legend(title=None, symbolStrokeWidth=3, symbolSize=300)
    lines = alt.Chart(data).mark_line().encode(
        x=alt.X("token:Q", title="token position",
                scale=alt.Scale(domain=[0, max(n_tokens - 1, 1)], nice=False),
                axis=alt.Axis(tickCount=8, labelOverlap=True, labelFlush=True)),
        y=alt.Y("context:Q", title="tokens of context", scale=alt.Scale(domainMin=0)),
        color=alt.Color("protocol:N", sort=names, scale=alt.Scale(domain=names),
                        legend=legend),
        strokeWidth=alt.StrokeWidth("protocol:N", sort=names, legend=None,
                                    scale=alt.Scale(type="ordinal", domain=names,
                                                    range=widths)),
        opacity=alt.Opacity("protocol:N", sort=names, legend=None,
                            scale=alt.Scale(type="ordinal", domain=names, range=opacities)),
        strokeDash=alt.StrokeDash("protocol:N", sort=names,
                                  scale=alt.Scale(domain=names, range=dashes), legend=legend),
        detail="segment:N", order=alt.Order("token:Q"),
        tooltip=[alt.Tooltip("protocol:N"), alt.Tooltip("token:Q"),
                 alt.Tooltip("context:Q", title="tokens of context")])
    note = (f"{n_tokens:,} tokens; a gap: the protocol scores none of those tokens; "
            "each line narrower than the one before, drawn over it")
    return lines.properties(width=width, height=height, title=_title(
        "Context of each scored token, by protocol", [note]))
