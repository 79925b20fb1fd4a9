"""Self-contained HTML: the widget's own front end, fed from a result, with no kernel.

One renderer, two hosts.  The page inlines the bundle the widget runs
(``static/widget.js`` and ``widget.css``) and a small static host
(``static/static.js``, from ``js/src/static.js``) that stands in for the
anywidget model: it holds the same synced traits the widget has (``text``,
``settings``, ``result_data``, ...) and calls the bundle's ``render()``.

Safety: every value travels as JSON inside ``<script type="application/json">``
with ``<``, ``>``, ``&``, U+2028 and U+2029 written as ``\\uXXXX`` escapes, so no
character of the input can end the element or open a comment; binary arrays
are base64.  The view inserts text only as text.
"""

from __future__ import annotations

import base64
import html
import json
import pathlib
import secrets
from typing import Any

from ..core.jsonable import json_safe
from ..core.metrics import objective_labels
from ..core.result import ScoreResult
from .assets import bundle_text
from .protocol import explanation_data, result_data, result_settings

_TERMINAL = ("done", "cancelled", "error")

# Controls that need a kernel (re-scoring, cancel) are hidden in a static page;
# the "Scored with" list stays.  The page's own background follows the OS theme,
# which the view's theme detection then reads.
_HOST_CSS = """\
.pplw-static .pplw-form, .pplw-static .pplw-progress .pplw-btn,
.pplw-static .pplc-cancel, .pplw-static .pplw-editor-wrap { display: none !important; }
.pplw-static-ready > .pplw-static-summary { display: none; }
.pplw-static-summary, .pplw-static-error { font: 13px/1.4 system-ui, sans-serif; margin: 4px 0; }
.pplw-static-error { color: #b00020; }
"""
_PAGE_CSS = """\
body { margin: 16px; background: #ffffff; color: #1f1f1f; }
@media (prefers-color-scheme: dark) { body { background: #1e1e1e; color: #e0e0e0; } }
"""


def script_json(value: Any) -> str:
    """JSON that is inert inside any HTML element: no ``<``, ``>``, ``&``, U+2028/9."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                    ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text


def split_buffers(state: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Move every binary value out of ``state``: (state without them, [{path, data}])."""
    buffers: list[dict[str, Any]] = []

    def walk(obj: Any, path: list[Any]) -> Any:
        if isinstance(obj, (bytes, bytearray, memoryview)):
            buffers.append({"path": path, "data": base64.b64encode(bytes(obj)).decode("ascii")})
            return None
        if isinstance(obj, dict):
            return {k: walk(v, [*path, k]) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [walk(v, [*path, i]) for i, v in enumerate(obj)]
        return obj

    return walk(state, []), buffers


# ---- the synced state, from a result or a widget -------------------------------
def _view_traits() -> dict[str, Any]:
    """The widget's own synced traits with their defaults (whatever the widget has now)."""
    import ipywidgets

    from .widget_traits import PerplexityTraits

    base = set(ipywidgets.DOMWidget.class_traits(sync=True))
    traits = PerplexityTraits.class_traits(sync=True)
    return {name: trait.default() for name, trait in traits.items()
            if name not in base and not name.startswith("_")}


def result_state(result: ScoreResult, **view: Any) -> dict[str, Any]:
    """The widget's synced state showing ``result``; ``view`` sets display traits
    (``color_mode``, ``show_boundaries``, ...) and ``explanation``: an ``Explanation`` of
    this text (``ppl_widget.explain``), shown as a click in the widget shows it."""
    if not isinstance(result, ScoreResult):
        raise TypeError(f"result must be a ScoreResult, got {type(result).__name__}")
    state = _view_traits()
    unknown = set(view) - set(state)
    if unknown:
        raise TypeError(f"unknown widget setting(s) {sorted(unknown)}; "
                        f"the widget has {sorted(state)}")
    s = result.settings
    state.update(text=result.text, status="partial" if result.partial else "done", error="",
                 settings=result_settings(result), max_length=s.get("max_length"),
                 stride=s.get("stride"),
                 prefix="bos" if s.get("prefix", "bos") == "bos" else "none",
                 result_data=result_data(result))
    expl = view.get("explanation")
    if expl is not None and not isinstance(expl, dict):
        if getattr(expl, "text", None) != result.text:
            raise ValueError("explanation= must explain the result's own text")
        view["explanation"] = explanation_data(expl)
    state.update(view)
    return state


def widget_state(widget: Any) -> dict[str, Any]:
    """The widget's synced state now, finished for a page with no kernel: a run still
    going is shown as what it has scored so far, marked partial."""
    names = list(_view_traits())
    state = widget.get_state(names)
    result = widget.result
    status = state.get("status")
    if status not in _TERMINAL or not state.get("result_data"):
        if result is not None:  # mid-run: what is scored so far
            state["result_data"] = result_data(result)
            state["settings"] = state.get("settings") or result_settings(result)
        state["status"] = status if status in _TERMINAL else "partial"
    return state


# ---- the page ---------------------------------------------------------------------
def fragment(state: dict[str, Any], *, esm: str = "widget.js",
             css: tuple[str, ...] = ("widget.css",), summary: str | None = None) -> str:
    """One container element that draws a widget from ``state`` (a text/html output):
    by default the single-model view; ``esm``/``css`` name another view's bundle."""
    clean, buffers = split_buffers(state)
    summary = _summary(clean) if summary is None else summary
    styles = "\n".join(_safe_css(bundle_text(name)) for name in css)
    # a random class per fragment: several outputs on one page never share styles
    uid = secrets.token_hex(4)
    return (
        f'<div class="pplw-static pplw-static-{uid}">'
        f"<style>{styles}\n{_HOST_CSS}</style>"
        f'<div class="pplw-static-summary">{html.escape(summary)}</div>'
        '<div class="pplw-mount"></div>'
        f'<script type="application/json" class="pplw-esm">{script_json(bundle_text(esm))}'
        "</script>"
        '<script type="application/json" class="pplw-state">'
        f'{script_json({"state": json_safe(clean), "buffers": buffers})}</script>'
        f"<script>{_safe_script(bundle_text('static.js'))}</script>"
        "</div>")


def page(state: dict[str, Any], title: str = "ppl-widget", **view: Any) -> str:
    """A whole HTML document around :func:`fragment` (``view``: its keywords)."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title><style>{_PAGE_CSS}</style></head>"
            f"<body>{fragment(state, **view)}</body></html>\n")


def _summary(state: dict[str, Any]) -> str:
    """One line of text shown until (or unless) the script draws the widget."""
    data = state.get("result_data") or {}
    m = data.get("metrics") or {}
    model = (state.get("settings") or {}).get("model", "?")
    labels = objective_labels(state.get("settings"))
    metric = f" ({labels['metric']})" if labels["metric"] else ""

    def num(key: str) -> str:
        return summary_number(m.get(key))

    return (f"ppl-widget · {model} · {data.get('count', 0)} tokens · {labels['perplexity']}"
            f"{metric} per token "
            f"{num('token_ppl')}, per word {num('word_ppl')}, per char {num('char_ppl')}, "
            f"per byte {num('byte_ppl')} (the coloured view needs JavaScript)")


def summary_number(value: Any) -> str:
    """A metric for a page's one-line summary: null (NaN) is a dash, "Infinity" is inf."""
    return "—" if value is None else f"{float(value):.4g}"


def _safe_css(css: str) -> str:
    if "</" in css or "<!--" in css:
        raise ValueError("widget.css contains '</' or '<!--', which would end its <style>")
    return css


def _safe_script(js: str) -> str:
    if "</script" in js.lower() or "<!--" in js:
        raise ValueError("static.js contains '</script' or '<!--', which would end its <script>")
    return js


def _write(text: str, path: str | pathlib.Path | None) -> str:
    if path is not None:
        pathlib.Path(path).write_text(text, encoding="utf-8")
    return text


def result_to_html(result: ScoreResult, path: str | pathlib.Path | None = None, *,
                   title: str | None = None, **view: Any) -> str:
    """A self-contained HTML page showing ``result`` as the widget does; written to
    ``path`` when given.  ``view``: display traits such as ``color_mode="rank"``."""
    state = result_state(result, **view)
    return _write(page(state, title or _title(result.settings)), path)


def _title(settings: dict[str, Any]) -> str:
    model = settings.get("model")
    labels = objective_labels(settings)  # a PLL page says so in its title
    pseudo = f" · {labels['perplexity']} ({labels['metric']})" if labels["pseudo"] else ""
    return f"ppl-widget · {model}{pseudo}" if model else f"ppl-widget{pseudo}"


# ---- the widgets' own pages and notebook output -------------------------------------
class StaticPageOutput:
    """For a widget class: ``to_html``, and its static page as ``text/html`` beside the
    live view in a notebook.

    Front ends that run widgets (JupyterLab, Notebook 7, VS Code) rank the widget view
    first and show only it; nbconvert, Jupyter Book and previews with no widget manager
    fall back to the text/html.  The widget gives ``_page_state()`` (its synced state
    for a page with no kernel), ``_page_title(state)`` and ``_page_view()`` (the
    keywords of :func:`fragment`: which bundle, the summary line)."""

    def _page_state(self) -> dict[str, Any]:
        raise NotImplementedError

    def _page_title(self, state: dict[str, Any]) -> str:
        return _title(state.get("settings") or {})

    def _page_view(self) -> dict[str, Any]:
        return {}

    def to_html(self, path: str | pathlib.Path | None = None, *,
                title: str | None = None) -> str:
        """What the widget shows now, as one self-contained HTML page (no kernel, no
        network); written to ``path`` when given.  A run still going is exported as
        what it has so far, marked partial."""
        state = self._page_state()
        return _write(page(state, title or self._page_title(state), **self._page_view()), path)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, None)
        data = dict(data)
        try:
            data["text/html"] = fragment(self._page_state(), **self._page_view())
        except FileNotFoundError:  # front end not built: the live widget fails the same way
            pass
        return data if metadata is None else (data, metadata)

    def _ipython_display_(self) -> None:
        # shown with a display id, so the text/html is brought up to date when a run ends
        display_widget(self)


def _bundle_of(widget: Any) -> tuple[dict, dict]:
    bundle = widget._repr_mimebundle_()
    data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
    if getattr(widget, "_pplw_static", False):  # shown where no front end draws it
        from .headless import static_bundle

        data, metadata = static_bundle(data, metadata)
    return data, metadata


def _display_id(widget: Any) -> str:
    return f"ppl-widget-{widget.model_id}"


def display_widget(widget: Any) -> None:
    """Show the widget with a display id; when a run ends, the output is updated so a
    notebook saved afterwards holds the final page as its text/html.

    The update goes to every output of this widget (all share the id); in a live
    front end it redraws the widget view once, from its synced final state.  Where no
    front end will draw it (views/headless.py: nbconvert, Jupyter Book) the display
    waits for the result and shows only the static page."""
    from IPython.display import display

    from .headless import no_front_end

    if no_front_end():
        if hasattr(widget, "wait"):  # a view built whole (PairsWidget) has no run to wait for
            widget.wait(raise_error=False)
        widget._pplw_static = True
    data, metadata = _bundle_of(widget)
    display(data, metadata=metadata, raw=True, display_id=_display_id(widget))
    if not getattr(widget, "_pplw_fallback_watched", False):
        widget._pplw_fallback_watched = True
        widget.observe(lambda change: _refresh_display(widget, change), names=["status"])


def _refresh_display(widget: Any, change: dict) -> None:
    if change["new"] not in _TERMINAL or change["old"] == change["new"]:
        return
    from IPython.display import update_display

    data, metadata = _bundle_of(widget)
    update_display(data, metadata=metadata, raw=True, display_id=_display_id(widget))
