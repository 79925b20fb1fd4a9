"""Helped and hurt, one colour rule (issue 48): ``Explanation.chart()`` draws helped orange
and hurt blue as the widget does, with colours that read on a light and a dark page; the
shared case file is the rule's (the front end checks its copy against it:
js/test/shared_cases.test.js)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ppl_widget.core.explain.explanation import Explanation
from ppl_widget.views import attribution_colours as AC

CASE = Path(__file__).parent / "cases" / "attribution_colours.json"


def _contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two #rrggbb colours."""
    def lum(h: str) -> float:
        c = [int(h[k:k + 2], 16) / 255 for k in (1, 3, 5)]
        lin = [v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4 for v in c]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    x, y = sorted((lum(a), lum(b)), reverse=True)
    return (x + 0.05) / (y + 0.05)


def test_the_shared_case_is_the_rule():
    assert json.loads(CASE.read_text(encoding="utf-8")) == [json.loads(json.dumps(AC.rule()))]


def test_the_colours_read_on_their_pages():
    for theme, page in AC.PAGE_BACKGROUNDS.items():
        for effect in (AC.HELPED, AC.HURT):
            # the chart's mid-tones on both pages; each theme's own on its page
            assert _contrast(AC.CHART_COLOURS[effect], page) >= 3.0, (effect, theme)
            assert _contrast(AC.ATTRIBUTION_COLOURS[theme][effect], page) >= 2.9, (effect, theme)


def _explanation() -> Explanation:
    return Explanation(
        text="the cold the river floods", target={"kind": "word", "index": 4, "start": 19,
                                                  "end": 25, "text": " floods", "tokens": [5]},
        method="occlusion", settings={"unit": "word", "model": "tiny"},
        target_surprisal_nats=3.0, units=["the", "cold", "the", "river"],
        starts=[0, 4, 9, 13], ends=[3, 8, 12, 18], tokens=[1, 1, 1, 1],
        delta_nats=np.array([0.5, -0.2, 0.8, np.nan]))


def test_the_chart_colours_helped_orange_and_hurt_blue_as_the_widget_does():
    pytest.importorskip("altair")
    from ppl_widget.views.charts.charts_explain import explanation_chart

    spec = explanation_chart(_explanation()).to_dict()
    bars = next(layer for layer in spec["layer"]
                if layer.get("mark") in ("bar", {"type": "bar"}))
    scale = bars["encoding"]["color"]["scale"]
    colour = dict(zip(scale["domain"], scale["range"], strict=True))
    assert colour == AC.CHART_COLOURS
    assert colour[AC.HELPED] != colour[AC.HURT]
    # the title says the key in the same words as the widget's legend
    assert AC.colour_key() in json.dumps(spec["title"])
    rows = {r["unit"] + str(r["order"]): r["effect"] for r in next(iter(spec["datasets"].values()))}
    assert rows["the2"] == AC.HELPED and rows["cold1"] == AC.HURT and rows["river3"] == AC.NO_EFFECT
