"""Where no front end draws the widget (views/headless.py): the display waits for the
result and shows the static page; where one does, the live widget view stays."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from ppl_widget import PerplexityWidget
from ppl_widget.views import headless
from ppl_widget.views.export import display_widget
from ppl_widget.views.offline_notebook import use_static_pages

ROOT = Path(__file__).resolve().parents[1]
TEXT = "The quick brown fox jumps over the lazy dog. Surprisal is minus the log probability."


def _kernel_running(monkeypatch, content: dict | None, msg_type: str = "execute_request"):
    """As if an IPython kernel were running a request with ``content``."""
    parent = {"header": {"msg_type": msg_type}, "content": content or {}}
    shell = SimpleNamespace(kernel=SimpleNamespace(get_parent=lambda: parent))
    monkeypatch.setattr("IPython.get_ipython", lambda: shell)
    for name in ("VOILA_BASE_URL", "SERVER_SOFTWARE", headless.DISPLAY_ENV):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(("content", "msg_type", "env", "static"), [
    ({"allow_stdin": False}, "execute_request", {}, True),      # nbclient, mystmd
    ({"allow_stdin": True}, "execute_request", {}, False),      # JupyterLab, Notebook 7, VS Code
    ({}, "execute_request", {}, False),                         # not said: not assumed headless
    ({"allow_stdin": False}, "comm_msg", {}, False),            # a callback from a live view
    ({"allow_stdin": False}, "execute_request", {"VOILA_BASE_URL": "/"}, False),
    ({"allow_stdin": False}, "execute_request", {"SERVER_SOFTWARE": "voila/0.5.13"}, False),
    ({"allow_stdin": True}, "execute_request", {headless.DISPLAY_ENV: "static"}, True),
    ({"allow_stdin": False}, "execute_request", {headless.DISPLAY_ENV: "live"}, False),
])
def test_which_runs_have_no_front_end(monkeypatch, content, msg_type, env, static):
    _kernel_running(monkeypatch, content, msg_type)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert headless.no_front_end() is static


def test_no_kernel_is_never_headless(monkeypatch):
    monkeypatch.setattr("IPython.get_ipython", lambda: None)
    monkeypatch.delenv(headless.DISPLAY_ENV, raising=False)
    assert headless.no_front_end() is False


def test_a_bad_override_names_the_variable(monkeypatch):
    _kernel_running(monkeypatch, {"allow_stdin": False})
    monkeypatch.setenv(headless.DISPLAY_ENV, "sometimes")
    with pytest.raises(ValueError, match="PPL_WIDGET_DISPLAY must be one of auto, static, live"):
        headless.no_front_end()


def _captured_displays(monkeypatch) -> list:
    shown: list = []
    monkeypatch.setattr("IPython.display.display",
                        lambda data, **kw: shown.append((data, kw.get("metadata") or {})))
    return shown


def test_headless_display_waits_and_shows_only_the_final_page(monkeypatch, tiny_gpt2):
    _kernel_running(monkeypatch, {"allow_stdin": False})
    shown = _captured_displays(monkeypatch)
    w = PerplexityWidget(TEXT * 20, tiny_gpt2, max_length=24, stride=4, batch_size=1)
    display_widget(w)
    assert w.status == "done"  # the display came after the run ended
    (data, metadata), = shown
    assert headless.WIDGET_VIEW not in data
    assert '"status":"done"' in data["text/html"]
    assert metadata[headless.STATIC_OUTPUT] == {"model_id": w.model_id}
    w.close()


def test_headless_display_of_the_pairs_view_shows_its_page(monkeypatch, tiny_gpt2):
    """show_pairs' widget is built whole (no run to wait for): nbconvert shows its page."""
    from ppl_widget import show_pairs

    _kernel_running(monkeypatch, {"allow_stdin": False})
    shown = _captured_displays(monkeypatch)
    w = show_pairs([("The cat sat.", "The cat sit.")], tiny_gpt2)
    display_widget(w)
    (data, metadata), = shown
    assert headless.WIDGET_VIEW not in data and "minimal pairs" in data["text/html"]
    assert metadata[headless.STATIC_OUTPUT] == {"model_id": w.model_id}
    w.close()


def test_live_display_keeps_the_widget_view(monkeypatch, tiny_gpt2):
    _kernel_running(monkeypatch, {"allow_stdin": True})
    shown = _captured_displays(monkeypatch)
    w = PerplexityWidget(TEXT, tiny_gpt2, max_length=24, stride=8)
    display_widget(w)
    (data, metadata), = shown
    assert data[headless.WIDGET_VIEW]["model_id"] == w.model_id
    assert headless.STATIC_OUTPUT not in metadata
    w.wait()
    w.close()


CELLS = [f"import sys\nsys.path[:0] = [{str(ROOT / 'tests')!r}, {str(ROOT)!r}]\n"
         "from conftest import _tiny\nfrom ppl_widget import PerplexityWidget\nlm = _tiny('gpt2')",
         f"PerplexityWidget({TEXT * 10!r}, lm, max_length=24, stride=4, batch_size=1)"]


def _executed(env: dict | None = None):
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    client = NotebookClient(nb, timeout=600, kernel_name="python3")
    old = dict(os.environ)
    os.environ.update(env or {})
    try:  # the kernel inherits this environment
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    (output,) = nb.cells[1].outputs
    return nb, output


def test_a_notebook_run_by_nbclient_holds_the_finished_page():
    """nbclient sends cells with allow_stdin false: the widget's output is the final static
    page with no widget view, so nbconvert shows it even with the saved widget state; the
    preprocessor then drops that state."""
    nb, output = _executed()
    assert headless.WIDGET_VIEW not in output["data"]
    assert '"status":"done"' in output["data"]["text/html"]
    model_id = output["metadata"][headless.STATIC_OUTPUT]["model_id"]
    assert model_id in nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"][
        "state"]
    use_static_pages(nb)
    assert "widgets" not in nb.metadata
    # the override brings the live widget back (for a runner that attaches a front end)
    _, live = _executed({headless.DISPLAY_ENV: "live"})
    assert headless.WIDGET_VIEW in live["data"]
