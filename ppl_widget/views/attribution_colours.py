"""Helped and hurt: the one colour rule of an explanation, wherever it is drawn (the
widget's text and panel, its exported page, ``Explanation.chart()``).

Orange: the unit helped (without it the target is more surprising); blue: it hurt.  Blue
and orange stay apart for red-green colour blindness, and are the sides of the context-gain
scale too ("blue = context hurt, orange = helped").  Per theme, the strongest colour of
each side: the ends of the widget's diverging ramp.  A chart is drawn once for either page
(its text follows the page, its marks do not: ``chart_renderer.py``), so it takes
mid-tones that read on both.

The front end holds a copy (``js/src/colors.js``: ``ATTRIBUTION_COLOURS``); the shared
case ``tests/cases/attribution_colours.json`` is written from this module and both test
suites check their side against it.
"""

from __future__ import annotations

HELPED, HURT, NO_EFFECT = "helped", "hurt", "no effect"
#: what each side is called in words (legends, the panel's key)
COLOUR_NAMES = {HELPED: "orange", HURT: "blue"}
#: the strongest colour of each side on a light and on a dark page
ATTRIBUTION_COLOURS = {
    "light": {HELPED: "#a8520a", HURT: "#1f5fa8"},
    "dark": {HELPED: "#f7a24a", HURT: "#6fb4f0"},
}
#: a chart's bars on either page (contrast of 3:1 or more on white and on JupyterLab's
#: dark background, #111111); a unit not computed yet is grey
CHART_COLOURS = {HELPED: "#d9730d", HURT: "#3d85c6", NO_EFFECT: "#9a9a9a"}
#: the backgrounds a chart's colours must read on
PAGE_BACKGROUNDS = {"light": "#ffffff", "dark": "#111111"}


def colour_key() -> str:
    """"orange = helped, blue = hurt": the words every legend of an explanation uses."""
    return f"{COLOUR_NAMES[HELPED]} = {HELPED}, {COLOUR_NAMES[HURT]} = {HURT}"


def rule() -> dict:
    """The rule as the shared case file holds it."""
    return {"names": COLOUR_NAMES, "themes": ATTRIBUTION_COLOURS, "chart": CHART_COLOURS,
            "pages": PAGE_BACKGROUNDS, "key": colour_key()}
