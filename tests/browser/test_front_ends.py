"""The widget in each live notebook front end that runs here, in Chromium
(docs/front-ends.md): Notebook 7, Voilà, marimo (``mo.ui.anywidget``), a kernel behind the
page -- colours, metrics panel, tooltip, several chunks arriving while scoring, Cancel,
editing and the comparison view.  A front end whose package is missing is skipped with the
reason.  Tiny random models (tests/conftest.py).  Executed notebooks read offline:
test_front_ends_static.py.  Screenshots: test-artifacts/fe-*.png.
"""

from __future__ import annotations

import secrets
import sys
import time
from pathlib import Path

import pytest

from .conftest import _free_port
from .front_end_pages import (
    COMPARE,
    GATE,
    LIVE,
    LONG,
    SETUP,
    STREAMED,
    TEXT,
    TYPED,
    WIDGET,
    check_coloured_panel_tooltip,
    check_compare,
    expected,
    needs,
    serve,
    shot,
    stop,
)
from .lab_notebooks import write_notebook

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api").expect


@pytest.fixture
def fe_page(browser, request):
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    pg = context.new_page()
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    shot(pg, f"{request.node.name}-final")
    context.close()


def _watch_stream(page, root, n_tokens: int, work: Path) -> list[int]:
    """Token spans on screen, sampled every 50 ms until the run is done (the run goes on
    past its first chunk once that is on the page: ``GATE``)."""
    root.locator(".pplw-tok").first.wait_for(timeout=120_000)
    (work / GATE).write_text("go")
    counts, deadline = [], time.time() + 180
    while not root.locator(".pplw-status-done").count() and time.time() < deadline:
        counts.append(root.locator(".pplw-tok").count())
        page.wait_for_timeout(50)
    return [c for c in counts if 0 < c < n_tokens]


def _check_live(page, roots, compare, tiny_gpt2, name: str, work: Path) -> None:
    """The four live widgets (``LIVE``) in one front end's page (``work``: the kernel's
    folder)."""
    stream, cancel, edit = roots.nth(0), roots.nth(1), roots.nth(2)
    streamed = expected(tiny_gpt2, STREAMED)
    partial = _watch_stream(page, stream, len(streamed), work)
    shot(page, f"{name}-streaming")
    # several chunks arrived while it scored, each drawn as it came
    assert len(set(partial)) >= 3, partial
    expect(stream.locator(".pplw-status-done")).to_be_visible(timeout=120_000)
    expect(stream.locator(".pplw-tok")).to_have_count(len(streamed))
    check_coloured_panel_tooltip(page, stream, streamed, name)

    # Cancel, from the page: the kernel stops and keeps what was scored (the view may be
    # drawn anew when a run ends: locators and retrying waits, not element handles)
    expect(cancel.locator(".pplw-tok").nth(40)).to_be_attached(timeout=120_000)
    cancel.locator(".pplw-progress .pplw-btn").click()
    expect(cancel.locator(".pplw-status-cancelled")).to_be_visible(timeout=60_000)
    expect(cancel.locator(".pplw-badge").first).to_contain_text("partial", ignore_case=True)
    expect(cancel.locator(".pplw-tok").nth(40)).to_be_attached()
    kept = cancel.locator(".pplw-tok").count()
    assert 40 < kept < len(tiny_gpt2.tokenizer(LONG)["input_ids"]) / 2
    cancel.scroll_into_view_if_needed()
    shot(page, f"{name}-cancelled")

    # editing: typing re-scores the windows after the edit
    expect(edit.locator(".pplw-status-done")).to_be_visible(timeout=120_000)
    box = edit.locator(".pplw-editor")
    box.click()
    box.press("End")
    box.type(TYPED, delay=15)
    expect(edit.locator(".pplw-editor-note")).to_contain_text("tokens scored again",
                                                              timeout=120_000)
    expect(edit.locator(".pplw-status-done")).to_be_visible(timeout=120_000)
    expect(edit.locator(".pplw-tok")).to_have_count(len(expected(tiny_gpt2, TEXT + TYPED)))
    edit.scroll_into_view_if_needed()
    shot(page, f"{name}-edited")

    check_compare(page, compare, name)


# ---- live front ends ---------------------------------------------------------------
@pytest.fixture(scope="module")
def notebook7(tmp_path_factory):
    needs("notebook", "Notebook 7")
    work = tmp_path_factory.mktemp("notebook7")
    write_notebook(work, "fe.ipynb", [SETUP, *LIVE])
    port, token = _free_port(), secrets.token_hex(16)
    proc = serve([sys.executable, "-m", "notebook", "--no-browser", "--allow-root",
                   f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1",
                   f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
                   "--JupyterNotebookApp.expose_app_in_browser=True",
                   "--ServerApp.port_retries=0"],
                  f"http://127.0.0.1:{port}/api/status?token={token}", work, "notebook7")
    yield f"http://127.0.0.1:{port}/notebooks/fe.ipynb?token={token}", work
    stop(proc, work, "notebook7")


def test_notebook7_live_widget(notebook7, fe_page, tiny_gpt2):
    url, work = notebook7
    fe_page.goto(url)
    fe_page.wait_for_function(
        "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
        " const k = w && w.sessionContext && w.sessionContext.session"
        " && w.sessionContext.session.kernel; return k && k.status === 'idle'; }",
        timeout=90_000)
    fe_page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    _check_live(fe_page, fe_page.locator(WIDGET), fe_page.locator(COMPARE), tiny_gpt2,
                "notebook7", work)
    assert fe_page.locator(".pplw-static").count() == 0  # the live view, not the fallback


@pytest.fixture(scope="module")
def voila(tmp_path_factory):
    needs("voila", "Voilà")
    work = tmp_path_factory.mktemp("voila")
    write_notebook(work, "fe.ipynb", [SETUP, *LIVE])
    port = _free_port()
    proc = serve([sys.executable, "-m", "voila", "fe.ipynb", "--no-browser",
                   f"--port={port}", "--Voila.ip=127.0.0.1"],
                  f"http://127.0.0.1:{port}/voila/static/", work, "voila")
    yield f"http://127.0.0.1:{port}/", work
    stop(proc, work, "voila")


def test_voila_live_widget(voila, fe_page, tiny_gpt2):
    """Voilà runs the notebook through nbclient, then attaches its widget manager: the
    widget stays live there (views/headless.py tells it from nbconvert)."""
    url, work = voila
    fe_page.goto(url, timeout=180_000)
    _check_live(fe_page, fe_page.locator(WIDGET), fe_page.locator(COMPARE), tiny_gpt2, "voila",
                work)
    assert fe_page.locator(".pplw-static").count() == 0


MARIMO_APP = '''\
import marimo

app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo
{setup}
    return ComparisonWidget, PerplexityWidget, lm, mo, slow, slow2, tiny
{cells}

if __name__ == "__main__":
    app.run()
'''
MARIMO_CELL = '''

@app.cell
def _(ComparisonWidget, PerplexityWidget, lm, mo, slow, slow2, tiny):
    _view = mo.ui.anywidget({expr})
    _view
    return
'''


@pytest.fixture(scope="module")
def marimo_app(tmp_path_factory):
    needs("marimo", "marimo")
    work = tmp_path_factory.mktemp("marimo")
    setup = SETUP.replace("import _tiny", "import _tiny as tiny").replace("_tiny(", "tiny(")
    cells = "".join(MARIMO_CELL.format(expr=e.replace("_tiny(", "tiny(")) for e in LIVE)
    (work / "app.py").write_text(MARIMO_APP.format(
        setup="\n".join("    " + line for line in setup.splitlines()), cells=cells))
    port = _free_port()
    proc = serve([sys.executable, "-m", "marimo", "run", "app.py", "--headless",
                   "--host", "127.0.0.1", "--port", str(port)],
                  f"http://127.0.0.1:{port}/health", work, "marimo")
    yield f"http://127.0.0.1:{port}/", work
    stop(proc, work, "marimo")


def test_marimo_live_widget(marimo_app, fe_page, tiny_gpt2):
    """``mo.ui.anywidget(PerplexityWidget(...))``: marimo's own anywidget host, no comm."""
    url, work = marimo_app
    fe_page.goto(url, timeout=180_000)
    _check_live(fe_page, fe_page.locator(WIDGET), fe_page.locator(COMPARE), tiny_gpt2,
                "marimo", work)
