"""The widget in each notebook front end that runs here, in Chromium (docs/front-ends.md).

Live, a kernel behind the page: Notebook 7, Voilà, marimo (``mo.ui.anywidget``) -- colours,
metrics panel, tooltip, several chunks arriving while scoring, Cancel, editing and the
comparison view.  Executed, then opened with every request outside the page blocked:
``jupyter nbconvert --execute`` (the default route, no preprocessor) and Jupyter Book 2's
static build -- the finished result, shown by the static page.  A front end whose package
is missing is skipped with the reason.  Tiny random models (tests/conftest.py), and the
default model once, for a newcomer's nbconvert run.  Screenshots: test-artifacts/fe-*.png.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ppl_widget import score

from .conftest import ARTIFACTS, CHROMIUM, ROOT, _free_port, _lab_settings, offline_context
from .lab_notebooks import write_notebook

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api").expect

WIDGET, COMPARE = ".pplw-root:not(.pplc-root)", ".pplc-root"  # the comparison root is both
TEXT = ("The quick brown fox jumps over the lazy dog. Perplexity is the exponential of the "
        "average negative log-likelihood. Sliding windows score every token exactly once, "
        "with as much context as fits. Surprisal is minus the log probability of a token "
        "given its context.")   # 88 tokens with the tiny GPT-2
STREAMED = TEXT * 12                # ~1,000 tokens, ~130 chunks at 30 ms: long enough to watch
GATE = "stream-go.flag"  # in the kernel's folder: the streamed run goes on once it exists
LONG = TEXT * 60                    # cancelled early
TYPED = " The end."
CMP_TEXT = "The cat sat on the mat. The dog sat on the log."
WINDOW = "max_length=32, stride=8"
PPL_KEYS = ("token_ppl", "word_ppl", "char_ppl", "byte_ppl")

SETUP = f"""\
import sys, time
sys.path[:0] = [{str(ROOT / 'tests')!r}, {str(ROOT)!r}]
from conftest import _tiny
from ppl_widget import PerplexityWidget, ComparisonWidget
lm = _tiny("gpt2")
slow = _tiny("gpt2")  # the same model, 30 ms a batch: the chunks arrive one by one
slow2 = _tiny("gpt2")
_hook = slow2.model.base_model.register_forward_pre_hook(lambda *_: time.sleep(0.03))
import os
_calls = [0]
def _gate(*_):
    # the streamed run's first chunk is drawn, the rest wait until the test has seen it
    # on the page (it writes {GATE}): however loaded the machine, the page watches the
    # run, not its end
    _calls[0] += 1
    _t = time.time()
    while _calls[0] > 1 and not os.path.exists({GATE!r}) and time.time() - _t < 120:
        time.sleep(0.05)
    time.sleep(0.03)
_hook = slow.model.base_model.register_forward_pre_hook(_gate)"""
# one expression each: the widget a front end shows (marimo wraps it in mo.ui.anywidget)
STREAM = f"PerplexityWidget({STREAMED!r}, slow, {WINDOW}, batch_size=1)"
CANCEL = f"PerplexityWidget({LONG!r}, slow2, {WINDOW}, batch_size=1)"
EDIT = f"PerplexityWidget({TEXT!r}, lm, {WINDOW}, editable=True)"
COMPARE_W = (f"ComparisonWidget({CMP_TEXT!r}, [lm, _tiny('llama')], "
             f"labels=['gpt2-tiny', 'llama-tiny'], {WINDOW})")
LIVE = [STREAM, CANCEL, EDIT, COMPARE_W]


# ---- servers and pages ---------------------------------------------------------------
def _needs(module: str, what: str) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}")
    try:
        __import__(module)
    except ImportError:
        pytest.skip(f"{what} is not installed (pip install {module.replace('_', '-')})")


def _env(work: Path) -> dict:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "JUPYTER_CONFIG_DIR": str(work / "config"),
            "JUPYTERLAB_SETTINGS_DIR": str(work / "settings"),
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def _serve(cmd: list[str], ready: str, work: Path, name: str):
    """Start ``cmd`` in ``work``; return the process once ``ready`` answers."""
    _lab_settings(work / "settings")
    log = open(work / f"{name}.log", "w")
    proc = subprocess.Popen(cmd, cwd=work, env=_env(work), stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    while True:
        try:
            urllib.request.urlopen(ready, timeout=2)
            return proc
        except urllib.error.HTTPError:  # it answered
            return proc
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                raise RuntimeError(f"{name} did not start:\n"
                                   + (work / f"{name}.log").read_text()) from None
            time.sleep(0.5)


def _stop(proc, work: Path, name: str) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(work / f"{name}.log", ARTIFACTS / f"fe-{name}.log")


def _shot(page, name: str, **kw) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"fe-{name}.png"), **kw)


@pytest.fixture
def fe_page(browser, request):
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    pg = context.new_page()
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    _shot(pg, f"{request.node.name}-final")
    context.close()


# ---- what a reader sees ------------------------------------------------------------
def _expected(tiny_gpt2, text: str):
    return score(text, tiny_gpt2, max_length=32, stride=8)


def _check_coloured_panel_tooltip(page, root, res, name: str) -> None:
    """Every token a coloured span, the panel's numbers the result's, a tooltip on hover."""
    spans = root.locator(".pplw-tok")
    assert spans.count() == len(res)
    colours = spans.evaluate_all("els => els.map(e => getComputedStyle(e).backgroundColor)")
    assert "rgba(0, 0, 0, 0)" not in colours
    titles = root.locator(".pplw-ppl-v").evaluate_all("els => els.map(e => e.title)")[:4]
    m = res.metrics()
    assert [float(t) for t in titles] == pytest.approx([m[k] for k in PPL_KEYS], rel=1e-4)
    root.locator(".pplw-tok[data-i='3']").hover()
    tip = root.locator(".pplw-tooltip")
    tip.wait_for(state="visible")
    assert "bits" in tip.inner_text() and tip.locator(".pplw-tt-alt").count() == 5
    _shot(page, f"{name}-tooltip")


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
    streamed = _expected(tiny_gpt2, STREAMED)
    partial = _watch_stream(page, stream, len(streamed), work)
    _shot(page, f"{name}-streaming")
    # several chunks arrived while it scored, each drawn as it came
    assert len(set(partial)) >= 3, partial
    expect(stream.locator(".pplw-status-done")).to_be_visible(timeout=120_000)
    expect(stream.locator(".pplw-tok")).to_have_count(len(streamed))
    _check_coloured_panel_tooltip(page, stream, streamed, name)

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
    _shot(page, f"{name}-cancelled")

    # editing: typing re-scores the windows after the edit
    expect(edit.locator(".pplw-status-done")).to_be_visible(timeout=120_000)
    box = edit.locator(".pplw-editor")
    box.click()
    box.press("End")
    box.type(TYPED, delay=15)
    expect(edit.locator(".pplw-editor-note")).to_contain_text("tokens scored again",
                                                              timeout=120_000)
    expect(edit.locator(".pplw-status-done")).to_be_visible(timeout=120_000)
    expect(edit.locator(".pplw-tok")).to_have_count(len(_expected(tiny_gpt2, TEXT + TYPED)))
    edit.scroll_into_view_if_needed()
    _shot(page, f"{name}-edited")

    _check_compare(page, compare, name)


def _check_compare(page, compare, name: str) -> None:
    compare.locator(".pplc-chip.pplc-done").nth(1).wait_for(timeout=120_000)
    words = compare.locator(".pplc-word")
    assert words.count() == len(CMP_TEXT.split())
    colours = words.evaluate_all("els => els.map(e => getComputedStyle(e).backgroundColor)")
    assert "rgba(0, 0, 0, 0)" not in colours and len(set(colours)) > 1
    assert compare.locator(".pplc-table tbody tr").count() == 2
    compare.scroll_into_view_if_needed()
    _shot(page, f"{name}-compare")


# ---- live front ends ---------------------------------------------------------------
@pytest.fixture(scope="module")
def notebook7(tmp_path_factory):
    _needs("notebook", "Notebook 7")
    work = tmp_path_factory.mktemp("notebook7")
    write_notebook(work, "fe.ipynb", [SETUP, *LIVE])
    port, token = _free_port(), secrets.token_hex(16)
    proc = _serve([sys.executable, "-m", "notebook", "--no-browser", "--allow-root",
                   f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1",
                   f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
                   "--JupyterNotebookApp.expose_app_in_browser=True",
                   "--ServerApp.port_retries=0"],
                  f"http://127.0.0.1:{port}/api/status?token={token}", work, "notebook7")
    yield f"http://127.0.0.1:{port}/notebooks/fe.ipynb?token={token}", work
    _stop(proc, work, "notebook7")


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
    _needs("voila", "Voilà")
    work = tmp_path_factory.mktemp("voila")
    write_notebook(work, "fe.ipynb", [SETUP, *LIVE])
    port = _free_port()
    proc = _serve([sys.executable, "-m", "voila", "fe.ipynb", "--no-browser",
                   f"--port={port}", "--Voila.ip=127.0.0.1"],
                  f"http://127.0.0.1:{port}/voila/static/", work, "voila")
    yield f"http://127.0.0.1:{port}/", work
    _stop(proc, work, "voila")


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
    _needs("marimo", "marimo")
    work = tmp_path_factory.mktemp("marimo")
    setup = SETUP.replace("import _tiny", "import _tiny as tiny").replace("_tiny(", "tiny(")
    cells = "".join(MARIMO_CELL.format(expr=e.replace("_tiny(", "tiny(")) for e in LIVE)
    (work / "app.py").write_text(MARIMO_APP.format(
        setup="\n".join("    " + line for line in setup.splitlines()), cells=cells))
    port = _free_port()
    proc = _serve([sys.executable, "-m", "marimo", "run", "app.py", "--headless",
                   "--host", "127.0.0.1", "--port", str(port)],
                  f"http://127.0.0.1:{port}/health", work, "marimo")
    yield f"http://127.0.0.1:{port}/", work
    _stop(proc, work, "marimo")


def test_marimo_live_widget(marimo_app, fe_page, tiny_gpt2):
    """``mo.ui.anywidget(PerplexityWidget(...))``: marimo's own anywidget host, no comm."""
    url, work = marimo_app
    fe_page.goto(url, timeout=180_000)
    _check_live(fe_page, fe_page.locator(WIDGET), fe_page.locator(COMPARE), tiny_gpt2,
                "marimo", work)


# ---- executed, then read offline ----------------------------------------------------
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
        _check_coloured_panel_tooltip(page, root, _expected(tiny_gpt2, text), f"{name}-{i}")
    # the editable widget's text box needs a kernel: a static page hides it
    assert roots.nth(first + 2).locator(".pplw-editor-wrap").is_hidden()
    compare = page.locator(f".pplw-static {COMPARE}")
    _check_compare(page, compare, name)
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
    _needs("nbconvert", "nbconvert")
    work = tmp_path_factory.mktemp("nbconvert")
    write_notebook(work, "lesson.ipynb", NEWCOMER_CELLS + STATIC_CELLS)
    subprocess.run([sys.executable, "-m", "nbconvert", "--execute", "--to", "html",
                    "lesson.ipynb"], cwd=work, env=_env(work), check=True,
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
    _shot(page, "nbconvert-page", full_page=True)
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
    _shot(page, "nbconvert-default-model")
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
    _needs("jupyter_book", "Jupyter Book 2")
    theme = _myst_theme()
    write_notebook(tmp_path, "lesson.ipynb", STATIC_CELLS)
    (tmp_path / "myst.yml").write_text(
        "version: 1\nproject:\n  title: ppl-widget\n  toc:\n    - file: lesson.ipynb\n"
        f"site:\n  template: {theme}\n")
    # mystmd runs the notebook on our Jupyter server (one it starts outlives the build)
    port, token = _free_port(), secrets.token_hex(16)
    jupyter = _serve([sys.executable, "-m", "jupyter_server", "--allow-root",
                      f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1",
                      f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={tmp_path}",
                      "--ServerApp.port_retries=0"],
                     f"http://127.0.0.1:{port}/api/status?token={token}", tmp_path,
                     "jupyter-book-server")
    env = {**_env(tmp_path), "JUPYTER_BASE_URL": f"http://127.0.0.1:{port}",
           "JUPYTER_TOKEN": token}
    try:
        build = subprocess.run([sys.executable, "-m", "jupyter_book", "build", "--execute",
                                "--html"], cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=600)
    finally:
        _stop(jupyter, tmp_path, "jupyter-book-server")
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
        _shot(page, "jupyter-book-page", full_page=True)
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
