"""Displaying a widget where no front end will ever draw it (nbconvert, Jupyter Book).

A notebook executed by nbclient (``jupyter nbconvert --execute``, papermill, ``jupyter
execute``) or by Jupyter Book 2 (mystmd) has no widget manager: what it keeps is the
output as it was displayed.  nbconvert then draws the widget view from the saved widget
state, which needs a CDN (blank offline); mystmd keeps the output from display time and
does not apply the display update that carries the final page.  So there a widget is
shown *static*: the display waits until scoring ends and shows the finished static page
(``text/html``) without the widget view.

How it is told apart: those runners send every cell with ``allow_stdin: false`` (they
cannot answer ``input()``); JupyterLab, Notebook 7 and VS Code send ``true``.  Voilà runs
its notebook through nbclient too, but then attaches a widget manager to the kernel, so
it keeps the live widget (its kernel has ``VOILA_*`` variables).  A display from a
callback (a comm message, not a cell) is always live.  ``PPL_WIDGET_DISPLAY=static`` or
``=live`` overrides the choice.
"""

from __future__ import annotations

import os

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: output metadata key of a static-only output (views/offline_notebook.py reads it)
STATIC_OUTPUT = "ppl_widget/static_output"
#: ``auto`` (the default), ``static`` (always wait, then the static page) or ``live``.
DISPLAY_ENV = "PPL_WIDGET_DISPLAY"
_CHOICES = ("auto", "static", "live")


def _execute_request() -> dict | None:
    """The request the kernel is running now, if it is a cell's ``execute_request``."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    kernel = getattr(get_ipython(), "kernel", None)
    if kernel is None:  # plain IPython or no IPython: nothing displays widgets anyway
        return None
    try:
        parent = kernel.get_parent() if hasattr(kernel, "get_parent") else kernel._parent_header
    except Exception:  # a kernel of another shape: assume a live front end
        return None
    if not isinstance(parent, dict) or parent.get("header", {}).get("msg_type") != \
            "execute_request":
        return None
    return parent


def no_front_end() -> bool:
    """True where nothing will draw the widget view: the display should wait for the
    result and show the static page (see the module's docstring for the rule)."""
    choice = os.environ.get(DISPLAY_ENV, "auto").strip().lower() or "auto"
    if choice not in _CHOICES:
        raise ValueError(f"{DISPLAY_ENV} must be one of {', '.join(_CHOICES)}, got {choice!r}")
    if choice != "auto":
        return choice == "static"
    if "VOILA_BASE_URL" in os.environ or os.environ.get("SERVER_SOFTWARE", "").startswith(
            "voila"):
        return False
    request = _execute_request()
    # only an explicit False: a client that leaves the field out is not assumed headless
    return request is not None and request.get("content", {}).get("allow_stdin") is False


def static_bundle(data: dict, metadata: dict) -> tuple[dict, dict]:
    """The widget's mime bundle without the widget view, so every renderer shows its
    static page (``text/html``).  The output's metadata names the widget's model
    (``STATIC_OUTPUT``), so ``StaticWidgetOutputs`` can drop its saved state."""
    view = data.get(WIDGET_VIEW) or {}
    data = {k: v for k, v in data.items() if k != WIDGET_VIEW}
    return data, {**metadata, STATIC_OUTPUT: {"model_id": view.get("model_id")}}
