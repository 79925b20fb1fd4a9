"""Security battery (issue 11, item 6): script-injection payload families through the
widget's text, its tooltips (hover and keyboard focus), the model name and the error
box, in one JupyterLab session; and through the static HTML export in Chromium.

Each asserts: no dialog, no global set by a payload, no element created from the
input, and the displayed text equal to the input.
"""

from __future__ import annotations

import json

import pytest

from .conftest import ARTIFACTS
from .test_jupyterlab import (
    WIDGET,
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
    page.dialogs = []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
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


def _widget(page, index: int) -> str:
    return f":nth-match({WIDGET}, {index + 1})"


@pytest.mark.parametrize("index, family", list(enumerate(PAYLOADS)))
def test_payload_is_inert_text_in_text_tooltips_and_model_name(battery, index, family):
    page, counts = battery
    payload = PAYLOADS[family]
    root = page.locator(WIDGET).nth(index)
    root.scroll_into_view_if_needed()
    # the text: equal to the input, one span per scored token
    shown = root.locator(".pplw-main").inner_text().replace("\u00a0", " ")
    assert payload in shown, shown
    assert root.locator(".pplw-tok").count() == counts[family]
    # tooltips by hover, then by keyboard focus, on the first and last tokens
    tip = root.locator(".pplw-tooltip")
    for i in (0, counts[family] - 1):
        root.locator(f".pplw-tok[data-i='{i}']").hover()
        tip.wait_for(state="visible")
    page.mouse.move(0, 0)
    root.locator(".pplw-scroller").focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("End")
    tip.wait_for(state="visible")
    # the model name (first 80 characters of the payload) shown as text in the panel
    assert payload[:80] in root.inner_text().replace("\u00a0", " ")
    shot(page, f"security-{family}")
    _no_effect(page, WIDGET)
    # the page around the widget is untouched (style injection would hide or redden it)
    assert page.evaluate("() => getComputedStyle(document.body).display") != "none"
    assert page.locator("#inj-style, #inj-div, #inj-form, #inj-a").count() == 0


def test_error_message_is_inert_text(battery):
    page, _ = battery
    box = page.locator(f"{WIDGET} .pplw-error:not([hidden])")
    box.wait_for(state="visible", timeout=30_000)
    assert box.inner_text() == PAYLOADS["event_handler"] + PAYLOADS["svg_mathml"]
    box.scroll_into_view_if_needed()
    shot(page, "security-error")
    _no_effect(page, WIDGET)


def test_static_export_keeps_payloads_inert(tmp_path, browser, tiny_gpt2):
    """result.to_html(): a file opened straight in Chromium, no server."""
    from ppl_widget import score

    for family, payload in PAYLOADS.items():
        res = score(payload, tiny_gpt2, max_length=32, stride=16)
        path = tmp_path / f"{family}.html"
        res.to_html(str(path))
        context = browser.new_context()
        page = context.new_page()
        page.dialogs = []
        page.on("dialog", lambda d, p=page: (p.dialogs.append(d.message), d.dismiss()))
        page.goto(path.as_uri())
        page.wait_for_selector(f"{WIDGET} .pplw-tok", timeout=30_000)
        shown = page.locator(f"{WIDGET} .pplw-main").inner_text().replace("\u00a0", " ")
        assert payload in shown, family
        page.locator(f"{WIDGET} .pplw-tok").first.hover()
        _no_effect(page, WIDGET)
        context.close()
