"""Security battery (issue 11, item 6): script-injection payload families through the
widget's text, its tooltips (hover and keyboard focus), the model name and the error
box, in one JupyterLab session; the same widgets again after the notebook is saved with
its widget state, the kernel shut down and the page reloaded (the widgets rebuilt from the
saved state alone); and through the static HTML export (``result.to_html()``,
``widget.to_html()``) and an nbclient-executed notebook converted by nbconvert, both
opened in Chromium with every non-file request aborted.

Each asserts: no dialog, no global set by a payload, no element created from the
input, and the displayed text equal to the input.
"""

from __future__ import annotations

import dataclasses
import json
import time
import urllib.request

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .conftest import ARTIFACTS, ROOT, offline_context, record_dialogs
from .lab_notebooks import (
    WIDGET,
    new_notebook,
    open_notebook,
    run_all,
    shot,
    wait_for_json,
    write_notebook,
)

pytestmark = pytest.mark.browser

# one per family; every one would set window.__pwned or open a dialog if it ran
PAYLOADS = {
    "event_handler": '<img src=x onerror="window.__pwned=1;alert(1)"><body onload=alert(1)>'
                     '<div onmouseover="alert(1)" id="inj-div">hover</div>',
    "javascript_url": '<a id="inj-a" href="javascript:alert(1)">click</a> javascript:alert(1)'
                      ' <iframe src="javascript:alert(1)"></iframe>',
    "svg_mathml": '<svg onload=alert(1)><script>alert(1)</script></svg><math><mtext>'
                  '<table><mglyph><style><img src=x onerror=alert(1)></style></mtext></math>',
    "style": '<style>*{display:none!important}</style><div style="position:fixed;inset:0;'
             'background:red" id="inj-style">x</div><link rel=stylesheet href=data:,*{color:red}>',
    "template_entity": "${alert(1)} `${window.__pwned=1}` {{constructor.constructor('alert(1)')()}}"
                       " &lt;script&gt;alert(1)&lt;/script&gt; &#60;img src=x onerror=alert(1)&#62;"
                       " \\u003cscript\\u003e",
    "comment_wrapped": "<!--<script>alert(1)</script>--> <!--><img src=x onerror=alert(1)>-->"
                       " <![CDATA[<script>alert(1)</script>]]> /*</script><script>alert(1)//*/",
    "base_form": '<base href="javascript:alert(1)//"><form id="inj-form" action="javascript:'
                 'alert(1)"><input autofocus onfocus=alert(1) name=q><button>go</button></form>',
}
# elements the widget itself never makes (it does make forms, inputs and buttons: those
# are matched by what only the payload would give them)
FOREIGN = ("img", "script", "svg", "math", "style", "link", "a", "iframe", "base", "body",
           "table", "mglyph", "form[action]", "input[name='q']", "input[autofocus]",
           "[id^='inj-']", "[onerror]", "[onload]", "[onmouseover]", "[onfocus]")

NOTEBOOK = """\
import json, dataclasses
from ppl_widget import PerplexityWidget, load_model
lm = load_model(None, device="cpu")
payloads = json.loads({payloads!r})
widgets = {{}}
for name, text in payloads.items():
    named = dataclasses.replace(lm, name=text[:80])  # the model name carries a payload too
    widgets[name] = PerplexityWidget(text, named, max_length=64, stride=32)
for w in widgets.values():
    w.wait()
from IPython.display import display
for w in widgets.values():
    display(w)
"""

DONE = """\
widgets["errors"] = PerplexityWidget("ok", lm, max_length=64, stride=32)
display(widgets["errors"])
widgets["errors"].wait()
widgets["errors"].error = payloads["event_handler"] + payloads["svg_mathml"]
json.dump({n: len(w.result) for n, w in widgets.items()}, open("security.json", "w"))
"""


def _no_effect(page, where: str) -> None:
    assert page.dialogs == [], page.dialogs
    assert page.evaluate("() => window.__pwned") is None
    for sel in FOREIGN:
        n = page.locator(f"{where} {sel}").count()
        assert n == 0, f"{sel} inside {where}: created from the input"


@pytest.fixture(scope="module")
def battery(lab, browser):
    """One notebook, one kernel, one page for the whole battery."""
    _, _, notebooks = lab
    name = write_notebook(notebooks, "security.ipynb", [
        NOTEBOOK.format(payloads=json.dumps(PAYLOADS)), DONE])
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    record_dialogs(page)
    open_notebook(page, lab, name)
    run_all(page)
    counts = wait_for_json(notebooks / "security.json", timeout=600)
    page.wait_for_function(
        f"n => document.querySelectorAll('{WIDGET} .pplw-status-done').length >= n",
        arg=len(PAYLOADS) + 1, timeout=120_000)
    yield page, counts
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "security-final.png"))
    context.close()


def check_widget(page, root, payload: str, n_tokens: int, name: str) -> None:
    """One widget showing ``payload``: text equal to it, tooltips by hover (first and last
    token) and keyboard focus, the model name as text, nothing created or run."""
    root.scroll_into_view_if_needed()
    # the text: equal to the input, one span per scored token
    shown = root.locator(".pplw-main").inner_text().replace("\u00a0", " ")
    assert payload in shown, shown
    assert root.locator(".pplw-tok").count() == n_tokens
    tip = root.locator(".pplw-tooltip")
    for i in (0, n_tokens - 1):
        root.locator(f".pplw-tok[data-i='{i}']").hover()
        tip.wait_for(state="visible")
    page.mouse.move(0, 0)
    root.locator(".pplw-scroller").focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("End")
    tip.wait_for(state="visible")
    # the model name (first 80 characters of the payload) shown as text in the panel
    assert payload[:80] in root.inner_text().replace("\u00a0", " ")
    shot(page, name)
    _no_effect(page, WIDGET)
    # the page around the widget is untouched (style injection would hide or redden it)
    assert page.evaluate("() => getComputedStyle(document.body).display") != "none"
    assert page.locator("#inj-style, #inj-div, #inj-form, #inj-a").count() == 0


@pytest.mark.parametrize("index, family", list(enumerate(PAYLOADS)))
def test_payload_is_inert_text_in_text_tooltips_and_model_name(battery, index, family):
    page, counts = battery
    check_widget(page, page.locator(WIDGET).nth(index), PAYLOADS[family], counts[family],
                 f"security-{family}")


def test_error_message_is_inert_text(battery):
    page, _ = battery
    box = page.locator(f"{WIDGET} .pplw-error:not([hidden])")
    box.wait_for(state="visible", timeout=30_000)
    assert box.inner_text() == PAYLOADS["event_handler"] + PAYLOADS["svg_mathml"]
    box.scroll_into_view_if_needed()
    shot(page, "security-error")
    _no_effect(page, WIDGET)


SAVE_STATE = "@jupyter-widgets/jupyterlab-manager:saveWidgetState"


def _set_save_state(page, on: bool) -> None:
    """JupyterLab's "Save Widget State Automatically" (off by default)."""
    page.evaluate("""async ([id, on]) => { const c = window.jupyterapp.commands;
        if (c.isToggled(id) !== on) await c.execute(id); }""", [SAVE_STATE, on])
    page.wait_for_function("([id, on]) => window.jupyterapp.commands.isToggled(id) === on",
                           arg=[SAVE_STATE, on], timeout=10_000)


def _sessions_of(lab, path: str) -> list[dict]:
    base, token, _ = lab
    with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=10) as r:
        return [s for s in json.load(r) if s.get("path") == path]


def _saved_models(path) -> int:
    widgets = json.loads(path.read_text())["metadata"].get("widgets", {})
    return len(widgets.get("application/vnd.jupyter.widget-state+json", {}).get("state", {}))


def test_reload_from_saved_widget_state_keeps_payloads_inert(battery, lab):
    """Saved with widget state, kernel shut down, page reloaded: every widget is rebuilt
    from the notebook's saved state alone, and every payload is still inert text."""
    page, counts = battery
    _, _, notebooks = lab
    path = notebooks / "security.ipynb"
    _set_save_state(page, True)
    try:
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        deadline = time.time() + 30
        while "application/vnd.jupyter.widget-state+json" not in path.read_text():
            assert time.time() < deadline, "the saved notebook holds no widget state"
            time.sleep(0.25)
        saved = json.loads(path.read_text())["metadata"]["widgets"][
            "application/vnd.jupyter.widget-state+json"]["state"]
        assert sum(m["model_name"] == "AnyModel" for m in saved.values()) == len(PAYLOADS) + 1
    finally:
        # off before the reload: with it on, a save of the reopened notebook (JupyterLab
        # autosaves it, the rebuild marks it changed) keeps only widgets a kernel holds,
        # none here, and the next opening says "model not found" for every widget
        # (jupyter-widgets/ipywidgets#3270; docs/widget.md)
        _set_save_state(page, False)
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
    deadline = time.time() + 60
    while _sessions_of(lab, "security.ipynb"):  # the server forgot it: the reload starts anew
        assert time.time() < deadline, "the notebook's session outlived its shutdown"
        time.sleep(0.25)
    errors: list[str] = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text[:300]))
    page.reload()
    rebuilt = f"n => document.querySelectorAll('{WIDGET} .pplw-status-done').length >= n"
    try:
        # (120 s: a fresh-clone CI run once took over 60 s to rebuild them, beside a busy
        # kernel of an earlier test; alone it takes seconds)
        page.wait_for_function(rebuilt, arg=len(PAYLOADS) + 1, timeout=120_000)
    except PlaywrightTimeout:
        shot(page, "security-reload-failed")
        raise AssertionError(
            f"not rebuilt: {page.get_by_text('model not found').count()} 'model not found', "
            f"{_saved_models(path)} models saved in the file, sessions "
            f"{_sessions_of(lab, 'security.ipynb')}, console errors {errors[:5]}") from None
    # the widget views (not the static text/html fallback) drew them, with no kernel
    # that ever held these widgets
    assert page.locator(".pplw-static").count() == 0
    for index, (family, payload) in enumerate(PAYLOADS.items()):
        check_widget(page, page.locator(WIDGET).nth(index), payload, counts[family],
                     f"security-reload-{family}")
    box = page.locator(f"{WIDGET} .pplw-error:not([hidden])")
    assert box.inner_text() == PAYLOADS["event_handler"] + PAYLOADS["svg_mathml"]
    _no_effect(page, WIDGET)
    # nothing since has rewritten the saved state (the setting is off)
    assert _saved_models(path) == len(saved)


@pytest.fixture
def offline(browser):
    """A page whose every request other than file: is aborted and recorded."""
    context, pg = offline_context(browser, height=900)
    yield pg
    context.close()


def test_static_export_keeps_payloads_inert(tmp_path, offline, tiny_gpt2):
    """``widget.to_html()`` and ``result.to_html()``: files opened offline in Chromium."""
    from ppl_widget import PerplexityWidget

    for family, payload in PAYLOADS.items():
        lm = dataclasses.replace(tiny_gpt2, name=payload[:80])
        w = PerplexityWidget(payload, lm, max_length=32, stride=16)
        res = w.wait()
        for kind, export in (("widget", w.to_html), ("result", res.to_html)):
            path = tmp_path / f"{kind}-{family}.html"
            export(str(path))
            offline.goto(path.as_uri())
            root = offline.locator(WIDGET)
            root.locator(".pplw-tok").first.wait_for(timeout=30_000)
            check_widget(offline, root, payload, len(res), f"security-export-{kind}-{family}")
    w = PerplexityWidget("ok", tiny_gpt2, max_length=32, stride=16)
    w.wait()
    w.error = PAYLOADS["event_handler"] + PAYLOADS["svg_mathml"]
    path = tmp_path / "widget-error.html"
    w.to_html(str(path))
    offline.goto(path.as_uri())
    box = offline.locator(f"{WIDGET} .pplw-error:not([hidden])")
    box.wait_for(state="visible", timeout=30_000)
    assert box.inner_text() == w.error
    _no_effect(offline, WIDGET)
    assert offline.attempted == []


NBCONVERT_CELLS = [
    f"import sys\nsys.path[:0] = [{str(ROOT / 'tests')!r}, {str(ROOT)!r}]\n"
    "import dataclasses, json\nfrom conftest import _tiny\n"
    "from ppl_widget import PerplexityWidget\nlm = _tiny('gpt2')",
    "payloads = json.loads({payloads!r})\nws = []\n"
    "for text in payloads.values():\n"
    "    ws.append(PerplexityWidget(text, dataclasses.replace(lm, name=text[:80]),"
    " max_length=32, stride=16))\n"
    "    display(ws[-1])\n"
    "ws.append(PerplexityWidget('ok', lm, max_length=32, stride=16))\ndisplay(ws[-1])",
    "for w in ws:\n    w.wait()\n"
    "ws[-1].error = payloads['event_handler'] + payloads['svg_mathml']\n"
    "ws[-1].status = 'cancelled'  # a terminal status change: the output is redrawn\n"
    "print(json.dumps([len(w.result) for w in ws]))",
]


def test_nbconvert_html_keeps_payloads_inert(tmp_path, offline):
    """A notebook run by nbclient, converted by nbconvert, opened offline: the widgets'
    text/html outputs show every payload as text."""
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    nb = new_notebook([c.replace("{payloads!r}", repr(json.dumps(PAYLOADS)))
                       for c in NBCONVERT_CELLS])
    NotebookClient(nb, timeout=600, kernel_name="python3", store_widget_state=False,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    counts = json.loads("".join(o.get("text", "") for o in nb.cells[2].outputs))
    body, _ = HTMLExporter().from_notebook_node(nb)
    path = tmp_path / "security-nbconvert.html"
    path.write_text(body, encoding="utf-8")
    offline.goto(path.as_uri())
    roots = offline.locator(f".pplw-static {WIDGET}")
    roots.nth(len(PAYLOADS)).wait_for(timeout=30_000)
    assert roots.count() == len(PAYLOADS) + 1
    for index, (family, payload) in enumerate(PAYLOADS.items()):
        check_widget(offline, roots.nth(index), payload, counts[index],
                     f"security-nbconvert-{family}")
    box = roots.nth(len(PAYLOADS)).locator(".pplw-error:not([hidden])")
    assert box.inner_text() == PAYLOADS["event_handler"] + PAYLOADS["svg_mathml"]
    _no_effect(offline, WIDGET)
