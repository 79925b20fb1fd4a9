"""Executed notebooks that show ppl-widget's outputs offline after nbconvert.

nbconvert (and its HTML templates) draw a widget through its own view whenever the
notebook's metadata holds the widget's saved state, and that view needs ipywidgets'
HTML manager from a CDN: offline it is blank.  ``nbconvert --execute`` saves widget
state by default.  Every ppl-widget output also carries its static page as text/html;
this drops the widget view from those outputs (and the state only they used), so the
static page is what nbconvert shows.  Outputs that ``--execute`` already made static
(views/headless.py) lose their unused saved state too.  Other widgets are left as they are.

    jupyter nbconvert --execute --to html \\
        --HTMLExporter.preprocessors=ppl_widget.StaticWidgetOutputs lesson.ipynb
"""

from __future__ import annotations

import re
from typing import Any

from .headless import STATIC_OUTPUT, WIDGET_VIEW

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
# the opening of export.fragment's page: only our static pages start this way
_STATIC_PAGE = re.compile(r'^\s*<div class="pplw-static pplw-static-[0-9a-f]+">')
_MODEL_REF = re.compile(r"IPY_MODEL_([0-9a-zA-Z_-]+)")


def _html_of(output: dict) -> str:
    html = output.get("data", {}).get("text/html", "")
    return "".join(html) if isinstance(html, list) else html


def _referenced(state: dict, roots: set[str]) -> set[str]:
    """``roots`` and every model their saved state refers to (layouts, styles, children)."""
    seen, todo = set(), list(roots)
    while todo:
        model_id = todo.pop()
        if model_id in seen:
            continue
        seen.add(model_id)
        todo.extend(_MODEL_REF.findall(repr(state.get(model_id, {}).get("state", {}))))
    return seen


def use_static_pages(nb: Any) -> int:
    """Drop the widget view from every ppl-widget output of ``nb`` (a notebook node or
    dict, changed in place) so its static page is shown; return how many were changed.

    Saved widget state used only by those outputs is removed too, and the notebook's
    widget metadata with it when nothing is left, so the exported page does not try
    to fetch the widget manager at all."""
    ours, others, changed = set(), set(), 0
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            static = output.get("metadata", {}).get(STATIC_OUTPUT)
            if isinstance(static, dict):  # shown static already (views/headless.py)
                ours.add(static.get("model_id"))
            if WIDGET_VIEW not in data:
                continue
            model_id = data[WIDGET_VIEW].get("model_id")
            if _STATIC_PAGE.match(_html_of(output)):
                del data[WIDGET_VIEW]
                ours.add(model_id)
                changed += 1
            else:
                others.add(model_id)
    widgets = nb.get("metadata", {}).get("widgets", {})
    state = widgets.get(WIDGET_STATE, {}).get("state")
    if ours and isinstance(state, dict):
        keep = _referenced(state, others)
        for model_id in _referenced(state, ours) - keep:
            state.pop(model_id, None)
        if not state:
            del nb["metadata"]["widgets"]
    return changed


class StaticWidgetOutputs:
    """nbconvert preprocessor: ppl-widget outputs shown as their static pages (see
    :func:`use_static_pages`).  Give it as
    ``--HTMLExporter.preprocessors=ppl_widget.StaticWidgetOutputs``; nbconvert runs it
    after ``--execute``'s execution.  A plain callable, as nbconvert accepts, so this
    module needs no nbconvert import."""

    enabled = True

    def __call__(self, nb: Any, resources: dict) -> tuple[Any, dict]:
        use_static_pages(nb)
        return nb, resources
