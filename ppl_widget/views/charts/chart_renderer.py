"""An Altair renderer that draws charts with no network.

Altair's default renderer writes HTML that loads Vega from a CDN: offline (a lab
server with no internet, an exported course notebook) the chart is blank.  This
renderer emits instead:

* ``application/vnd.vegalite.v5+json``, which JupyterLab 4 draws with its own
  built-in Vega renderer (interactive, tooltips included).  JupyterLab 4 ships
  Vega-Lite 5, so the spec's ``$schema`` is set to v5; the charts of
  ``ppl_widget.charts`` use nothing newer;
* ``image/svg+xml`` drawn here by vl-convert: what nbconvert's HTML, a Jupyter
  Book or a notebook preview shows where no Vega renderer runs;
* ``text/plain``.

The live chart follows JupyterLab's theme as the widgets do, switch after switch: its
background is transparent and its text, axes and grid are drawn in ``currentColor``
(``PAGE_THEME_CONFIG``) by Vega's SVG renderer (asked for in the output's metadata), so
they take the output area's text colour, which JupyterLab's theme sets.  The static SVG
copy keeps Vega's light defaults (an ``<img>`` has no page colour to follow).

``ppl_widget.charts`` turns it on when it is first imported, unless the user has
already chosen a renderer other than Altair's default (``alt.renderers.enable``
keeps working either way).  A chart the user builds with Altair directly is drawn
offline too: importing ``ppl_widget`` in an IPython kernel registers, by name (Altair
is not imported for it), a display formatter for Altair's chart classes that turns
the renderer on at the chart's first display (``draw_altair_charts_offline``).
"""

from __future__ import annotations

import logging
from typing import Any

from ...core.extras import MissingExtraError, require

log = logging.getLogger(__name__)
_MISSING_TOLD: list[bool] = []  # vl-convert's absence, once per process

NAME = "ppl_widget"
VEGALITE_MIME = "application/vnd.vegalite.v5+json"
SCHEMA_V5 = "https://vega.github.io/schema/vega-lite/v5.json"
VL_VERSION = "5.20"  # vl-convert's compiler closest to JupyterLab 4's Vega-Lite 5


#: Vega-Lite config of the live chart: nothing painted in a fixed colour the page theme
#: could hide (a white box on a dark page, black text on it): the background is the
#: page's, text and lines the page's text colour (grid and frame faint).
_PAGE = "currentColor"
PAGE_THEME_CONFIG: dict[str, Any] = {
    "background": "transparent",
    "title": {"color": _PAGE, "subtitleColor": _PAGE},
    "axis": {"labelColor": _PAGE, "titleColor": _PAGE, "domainColor": _PAGE,
             "tickColor": _PAGE, "gridColor": _PAGE, "gridOpacity": 0.15,
             "domainOpacity": 0.6, "tickOpacity": 0.6},
    "legend": {"labelColor": _PAGE, "titleColor": _PAGE},
    "header": {"labelColor": _PAGE, "titleColor": _PAGE},
    "view": {"stroke": _PAGE, "strokeOpacity": 0.2},
    "text": {"color": _PAGE},
}
#: vega-embed options JupyterLab reads from the output's metadata: SVG, where a
#: ``currentColor`` follows CSS (a canvas would paint it once)
EMBED_OPTIONS = {"renderer": "svg"}


def follow_page_theme(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` with ``PAGE_THEME_CONFIG`` under its own config (the chart's own
    settings win)."""
    return {**spec, "config": _merged(PAGE_THEME_CONFIG, spec.get("config") or {})}


def _merged(under: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(under)
    for key, value in over.items():
        both_dicts = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = _merged(out[key], value) if both_dicts else value
    return out


def render(spec: dict[str, Any], **metadata: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The mime bundle of one chart spec and its metadata (Altair calls this to display
    a chart)."""
    spec = {**spec, "$schema": SCHEMA_V5}
    bundle: dict[str, Any] = {VEGALITE_MIME: follow_page_theme(spec),
                              "text/plain": "<Altair chart: drawn offline by ppl_widget>"}
    try:
        vlc = require("vl_convert", "the chart's static SVG copy (nbconvert, HTML previews)")
        bundle["image/svg+xml"] = vlc.vegalite_to_svg(spec, vl_version=VL_VERSION)
    except MissingExtraError as exc:  # said once: every chart would say it again
        if not _MISSING_TOLD:
            _MISSING_TOLD.append(True)
            log.warning("ppl-widget: charts draw live; %s", exc)
    except Exception as exc:  # the live view still draws; only the static copy is missing
        log.warning("ppl-widget: no static SVG copy of the chart (%s)", exc)
    return bundle, {VEGALITE_MIME: {"embed_options": dict(EMBED_OPTIONS)}}


#: Altair's top-level chart class (Chart, LayerChart, ...: all subclass it), by the
#: module that defines it in Altair 5 and in Altair 6.
ALTAIR_CHART_CLASSES = (("altair.vegalite.v5.api", "TopLevelMixin"),
                        ("altair.vegalite.v6.api", "TopLevelMixin"))


def draw_altair_charts_offline(shell: Any) -> None:
    """Every Altair chart ``shell`` displays goes through this renderer, unless the user
    chose another one: IPython looks the chart's class up by name, so Altair is imported
    only when the user's code imports it (``import ppl_widget`` stays light)."""
    formatter = shell.display_formatter.mimebundle_formatter
    for module, name in ALTAIR_CHART_CLASSES:
        formatter.for_type_by_name(module, name, _display_offline)


def _display_offline(chart: Any) -> Any:
    enable_if_default()
    return chart._repr_mimebundle_()  # Altair's own display, through the active renderer


def enable_if_default() -> None:
    """Register the renderer and make it the active one if the user chose none."""
    import altair as alt

    if NAME not in alt.renderers.names():
        alt.renderers.register(NAME, render)
    if alt.renderers.active == "default":
        alt.renderers.enable(NAME)
