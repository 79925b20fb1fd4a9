"""The widget in notebooks executed without a front end, then read offline in Chromium
(docs/front-ends.md): ``jupyter nbconvert --execute`` (the default route, no preprocessor)
and Jupyter Book 2's static build show each widget's finished result through its static
page, every request outside the page blocked.  Tiny random models (tests/conftest.py), and
the default model once, for a newcomer's nbconvert run.  The live front ends:
test_front_ends.py.  Screenshots: test-artifacts/fe-*.png.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ppl_widget import score

from .conftest import ARTIFACTS, _free_port, offline_context
from .front_end_pages import (
    COMPARE,
    COMPARE_W,
    SETUP,
    TEXT,
    TYPED,
    WIDGET,
    WINDOW,
    check_coloured_panel_tooltip,
    check_compare,
    expected,
    front_end_env,
    needs,
    serve,
    shot,
    stop,
)
from .lab_notebooks import write_notebook

pytestmark = pytest.mark.browser


STATIC_CELLS = [SETUP.split("slow =")[0],
                f"w = PerplexityWidget({TEXT!r}, lm, {WINDOW})\nw",
                "%load_ext ppl_widget",
                f"%%surprisal --model lm --max-length 32 --stride 8\n{TEXT + TYPED}",
                f"PerplexityWidget({TEXT!r}, lm, {WINDOW}, editable=True)",
                COMPARE_W]


def _check_static(page, tiny_gpt2, name: str, first: int = 0) -> None:
    """What an executed notebook or book shows: every widget finished, drawn offline (the
    lesson's three from the ``first``-th widget on)."""
    roots = page.locator(f".pplw-static {WIDGET}")
    roots.nth(first + 2).wait_for(timeout=30_000)
    assert roots.count() == first + 3
    # the cell magic scores the cell body, which ends with a newline
    for i, text in enumerate([TEXT, TEXT + TYPED + "\n", TEXT]):
        root = roots.nth(first + i)
        assert root.locator(".pplw-status").inner_text().lower() == "done"
        root.scroll_into_view_if_needed()
        check_coloured_panel_tooltip(page, root, expected(tiny_gpt2, text), f"{name}-{i}")
    # the editable widget's text box needs a kernel: a static page hides it
    assert roots.nth(first + 2).locator(".pplw-editor-wrap").is_hidden()
    compare = page.locator(f".pplw-static {COMPARE}")
    check_compare(page, compare, name)
    assert page.errors == []


#: A newcomer's notebook, two lines on the embedded model, as the executed notebook's start.
NEWCOMER_TEXT = ("The committee will meet on Tuesday to discuss the budget. "
                 "Colourless green ideas.")
NEWCOMER_CELLS = ["from ppl_widget import PerplexityWidget",
                  f"PerplexityWidget({NEWCOMER_TEXT!r})"]


@pytest.fixture(scope="module")
def nbconvert_html(tmp_path_factory) -> Path:
    """``jupyter nbconvert --execute --to html``, no preprocessor, run once: a newcomer's
    two cells, then the lesson's (one kernel start and one nbconvert serve both tests)."""
    needs("nbconvert", "nbconvert")
    work = tmp_path_factory.mktemp("nbconvert")
    write_notebook(work, "lesson.ipynb", NEWCOMER_CELLS + STATIC_CELLS)
    subprocess.run([sys.executable, "-m", "nbconvert", "--execute", "--to", "html",
                    "lesson.ipynb"], cwd=work, env=front_end_env(work), check=True,
                   capture_output=True, timeout=600)
    return work / "lesson.html"


def test_nbconvert_execute_default_route_offline(browser, nbconvert_html, tiny_gpt2):
    """nbclient has no front end, so every widget waited for its result and shows its
    static page."""
    body = nbconvert_html.read_text(encoding="utf-8")
    assert '<script type="application/vnd.jupyter.widget-view+json">' not in body
    context, page = offline_context(browser)
    page.goto(nbconvert_html.as_uri())
    _check_static(page, tiny_gpt2, "nbconvert", first=1)  # after the newcomer's widget
    shot(page, "nbconvert-page", full_page=True)
    # only nbconvert's template asks the network (require.js, MathJax, the widget manager)
    assert not [u for u in page.attempted if "ppl" in u.lower()], page.attempted
    context.close()


def test_nbconvert_execute_default_model_for_a_newcomer(browser, nbconvert_html, default_lm):
    """The newcomer's widget on the embedded model, through the default route."""
    context, page = offline_context(browser)
    page.goto(nbconvert_html.as_uri())
    root = page.locator(f".pplw-static {WIDGET}").first
    res = score(NEWCOMER_TEXT, default_lm)
    root.locator(".pplw-tok").first.wait_for(timeout=30_000)
    assert root.locator(".pplw-status").inner_text().lower() == "done"
    colours = root.locator(".pplw-tok").evaluate_all(
        "els => els.map(e => getComputedStyle(e).backgroundColor)")
    assert len(colours) == len(res) and len(set(colours)) >= 5
    root.scroll_into_view_if_needed()
    shot(page, "nbconvert-default-model")
    context.close()


def _myst_theme() -> Path:
    """Jupyter Book 2's book theme, which it downloads on its first build: here it must
    be a local copy (``PPL_WIDGET_MYST_THEME``, see docs/front-ends.md)."""
    theme = os.environ.get("PPL_WIDGET_MYST_THEME")
    if not theme or not (Path(theme) / "template.yml").is_file():
        pytest.skip("Jupyter Book 2 fetches its book theme from the network on the first "
                    "build; set PPL_WIDGET_MYST_THEME to a local build of it to run this")
    return Path(theme)


def test_jupyter_book_executed_offline(browser, tmp_path, tiny_gpt2):
    """``jupyter book build --execute --html``, the static site served on loopback with
    every other request blocked: each widget shows its finished result."""
    needs("jupyter_book", "Jupyter Book 2")
    theme = _myst_theme()
    write_notebook(tmp_path, "lesson.ipynb", STATIC_CELLS)
    (tmp_path / "myst.yml").write_text(
        "version: 1\nproject:\n  title: ppl-widget\n  toc:\n    - file: lesson.ipynb\n"
        f"site:\n  template: {theme}\n")
    # mystmd runs the notebook on our Jupyter server (one it starts outlives the build)
    port, token = _free_port(), secrets.token_hex(16)
    jupyter = serve([sys.executable, "-m", "jupyter_server", "--allow-root",
                      f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1",
                      f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={tmp_path}",
                      "--ServerApp.port_retries=0"],
                     f"http://127.0.0.1:{port}/api/status?token={token}", tmp_path,
                     "jupyter-book-server")
    env = {**front_end_env(tmp_path), "JUPYTER_BASE_URL": f"http://127.0.0.1:{port}",
           "JUPYTER_TOKEN": token}
    try:
        build = subprocess.run([sys.executable, "-m", "jupyter_book", "build", "--execute",
                                "--html"], cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=600)
    finally:
        stop(jupyter, tmp_path, "jupyter-book-server")
    (ARTIFACTS / "fe-jupyter-book.log").write_text(build.stdout + build.stderr)
    assert build.returncode == 0 and "Executing notebook" in build.stdout, build.stdout
    assert "Could not load Jupyter session manager" not in build.stdout, build.stdout
    site = tmp_path / "_build" / "html"
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                               "127.0.0.1", "--directory", str(site)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}/"
        _serve_ready(base, server)
        context, page = offline_context(browser, allowed=base)
        page.goto(base)
        _check_static(page, tiny_gpt2, "jupyter-book")
        shot(page, "jupyter-book-page", full_page=True)
        assert not [u for u in page.attempted if "ppl" in u.lower()], page.attempted
        context.close()
    finally:
        server.terminate()
        server.wait(10)


def _serve_ready(url: str, proc) -> None:
    deadline = time.time() + 30
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                raise
            time.sleep(0.2)
