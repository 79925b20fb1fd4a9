"""Altair chart of minimal-pair accuracy by group (``pairs_accuracy_chart``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ...core.pairs import PairsInputError
from ..pairs_view import accuracy_table

CRITERIA = {"total": ("accuracy", "total NLL"), "mean": ("accuracy_mean", "NLL per token")}


def pairs_accuracy_chart(df: pd.DataFrame, by: str = "phenomenon", *,
                         criterion: str = "total") -> Any:
    """Horizontal bars of accuracy per group of ``by`` (any column of ``score_pairs``'s
    frame): the group names, often long, read level beside their bars; the pair count in
    the tooltip and chance (0.5) as a rule.  ``criterion``:
    ``"total"`` (``correct``: bad_nll > good_nll) or ``"mean"`` (per token)."""
    from .charts import _alt

    if criterion not in CRITERIA:
        raise PairsInputError(f"criterion must be 'total' or 'mean', got {criterion!r}")
    column, label = CRITERIA[criterion]
    table = accuracy_table(df, by)
    table[by] = table[by].astype(str)
    alt = _alt()
    base = alt.Chart(table)
    bars = base.mark_bar().encode(
        y=alt.Y(f"{by}:N", sort=None, title=by, axis=alt.Axis(labelLimit=320)),
        x=alt.X(f"{column}:Q", scale=alt.Scale(domain=[0, 1]), title=f"accuracy ({label})"),
        tooltip=[alt.Tooltip(f"{by}:N"), alt.Tooltip(f"{column}:Q", format=".3f"),
                 alt.Tooltip("n_pairs:Q", title="pairs")])
    chance = alt.Chart(pd.DataFrame({"chance": [0.5]})).mark_rule(
        strokeDash=[5, 3], strokeWidth=2, color="#f58518").encode(
        x="chance:Q")
    overall = float(df["correct" if criterion == "total" else "correct_mean"].mean())
    subtitle = [f"{len(df)} pairs, overall {overall:.3f}; correct: the bad sentence has "
                f"the higher {label}; dashed: chance (0.5)"]
    return (bars + chance).properties(
        width=360, height=alt.Step(28),
        title=alt.TitleParams(f"Minimal pairs: accuracy by {by}", anchor="start",
                              subtitle=subtitle))
