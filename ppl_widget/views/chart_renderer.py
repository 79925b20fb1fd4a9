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

from ..core.extras import MissingExtraError, require

log = logging.getLogger(__name__)
_MISSING_TOLD: list[bool] = []  # vl-convert's absence, once per process

NAME = "ppl_widget"
VEGALITE_MIME = "application/vnd.vegalite.v5+json"
SCHEMA_V5 = "https://vega.github.io/schema/vega-lite/v5.json"
VL_VERSION = "5.20"  # vl-convert's compiler closest to JupyterLab 4's Vega-Lite 5


def render(spec: dict[str, Any], **metadata: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The mime bundle of one chart spec (Altair calls this to display a chart)."""
    spec = {**spec, "$schema": SCHEMA_V5}
    bundle: dict[str, Any] = {VEGALITE_MIME: spec,
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
    return bundle, {}


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
