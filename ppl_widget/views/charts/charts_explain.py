"""Altair chart of an ``Explanation`` (``Explanation.chart()``): a bar per context unit
in text order, its height the unit's delta (how much more surprising the target is
without it), coloured by sign with the explanation's one colour rule
(``attribution_colours.py``: orange helped, blue hurt, as in the widget), in its mid-tones
that read on a light and a dark page; the live chart follows JupyterLab's theme
(chart_renderer.py) like the others."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...core.explain.explanation import Explanation
from ..attribution_colours import CHART_COLOURS, HELPED, HURT, NO_EFFECT, colour_key
from .charts import _alt, _title, check_unit

#: Effect -> colour: helped (the unit made the target more predictable), hurt, and a
#: unit not computed yet (a streamed explanation) or with no effect
EFFECTS = (HELPED, HURT, NO_EFFECT)
EFFECT_COLOURS = tuple(CHART_COLOURS[e] for e in EFFECTS)
#: A rule at zero: a grey both themes show.
ZERO_RULE = "#888888"


def explanation_chart(explanation: Explanation, *, unit: str = "bits", width: int = 640,
                      height: int = 220) -> Any:
    """Bars of ``delta`` per unit, in text order (the x axis labels the units' text);
    the target, its surprisal and the method in the title."""
    if not isinstance(explanation, Explanation):
        raise TypeError(f"explanation must be an Explanation, got {type(explanation).__name__}")
    factor = check_unit(unit)
    alt = _alt()
    delta = explanation.delta_nats * factor
    effect = np.where(delta > 0, EFFECTS[0], np.where(delta < 0, EFFECTS[1], EFFECTS[2]))
    data = pd.DataFrame({"order": np.arange(len(delta)), "unit": explanation.units,
                         "start": explanation.starts, "delta": delta, "effect": effect,
                         "tokens": explanation.tokens})
    labels = {int(i): u.strip() or repr(u) for i, u in enumerate(explanation.units)}
    label_expr = " ".join(f"datum.value == {i} ? {_js(t)} :" for i, t in labels.items()) + " ''"
    x = alt.X("order:O", title=f"context {explanation.settings.get('unit', 'unit')}s, in "
                                "text order",
              axis=alt.Axis(labelExpr=label_expr, labelAngle=-60, labelOverlap=True))
    bars = alt.Chart(data).mark_bar().encode(
        x=x, y=alt.Y("delta:Q", title=f"Δ surprisal without the unit ({unit})"),
        color=alt.Color("effect:N", title=None, sort=list(EFFECTS),
                        scale=alt.Scale(domain=list(EFFECTS), range=list(EFFECT_COLOURS))),
        tooltip=[alt.Tooltip("unit:N"), alt.Tooltip("start:Q", title="character"),
                 alt.Tooltip("tokens:Q"), alt.Tooltip("delta:Q", format="+.4g", title=unit)])
    zero = alt.Chart(pd.DataFrame({"y": [0.0]})).mark_rule(color=ZERO_RULE).encode(y="y:Q")
    t = explanation.target
    kind = "exact occlusion" if explanation.exact else "gradient × input (an approximation)"
    notes = [f"{kind}; target surprisal {explanation.target_surprisal_nats * factor:.3g} "
             f"{unit}; {colour_key()} (positive: the unit made the target more predictable)",
             f"{explanation.settings.get('model', '?')} · {explanation.context_tokens} "
             f"context tokens" + (f" · {explanation.done}/{len(delta)} computed"
                                  if explanation.partial else "")]
    title = _title(f"Why is {t['kind']} {t['text']!r} surprising?", notes)
    return alt.layer(bars, zero).properties(title=title, width=width, height=height)


def _js(text: str) -> str:
    """A JavaScript string literal for a Vega expression (JSON's escaping is JS's)."""
    import json

    return json.dumps(text)
