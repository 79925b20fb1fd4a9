"""A continuation scored after a context, as a person sees it in JupyterLab.

Three widgets in one notebook: a string context, a chat context (a Jinja template set
on the tiny tokenizer) and a context holding markup. The page is checked against what
the kernel computed (dumped to JSON); screenshots land in test-artifacts/.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .conftest import ARTIFACTS
from .lab_notebooks import contrast, open_notebook, run_all, shot, wait_for_json, write_notebook
from .lab_waits import switch_theme

pytestmark = pytest.mark.browser

WIDGET = ".pplw-root"
MARKUP = '<img src=x onerror="window.__pwned=1;alert(1)"><b id="injected">bold</b> & more'
CHAT = [{"role": "system", "content": "You answer briefly."},
        {"role": "user", "content": "What does the fox do?"}]
TEMPLATE = ("{% for m in messages %}<|endoftext|>{{ m['role'] }}\n{{ m['content'] }}"
            "<|endoftext|>\n{% endfor %}{% if add_generation_prompt %}<|endoftext|>assistant\n"
            "{% endif %}")

SETUP = """\
import copy
from tests.conftest import _tiny  # the repository is on the kernel's PYTHONPATH
from ppl_widget import PerplexityWidget
lm = _tiny("gpt2")
chat_lm = copy.copy(lm)
chat_lm.tokenizer = copy.deepcopy(lm.tokenizer)
chat_lm.tokenizer.chat_template = {template!r}
"""
CELLS = [
    "w_str = PerplexityWidget('jumps over the lazy dog.', lm, "
    "context='The quick brown fox ', prefix_every_window=True, max_length=16, stride=8)\nw_str",
    f"w_chat = PerplexityWidget('It jumps over the dog.', chat_lm, context={CHAT!r})\nw_chat",
    f"w_markup = PerplexityWidget('The quick brown fox.', lm, context={MARKUP!r})\nw_markup",
]
DUMP = """\
import json
_out = {}
for _name, _w in [("str", w_str), ("chat", w_chat), ("markup", w_markup)]:
    _r = _w.wait()
    _out[_name] = {"n_tokens": len(_r), "settings": {k: v for k, v in _r.settings.items()
                   if isinstance(v, (str, int, float, bool, list, type(None)))},
                   "context": _r.context, "text": _r.text}
json.dump(_out, open("context.json", "w"))
"""
ORDER = ["str", "chat", "markup"]
# [text colour, the first opaque background behind it] of the context's text and roles
CONTEXT_COLOURS = """els => els.map(el => { let bg = 'rgb(255, 255, 255)';
    for (let e = el; e; e = e.parentElement) {
      const c = getComputedStyle(e).backgroundColor;
      if (c && c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') { bg = c; break; } }
    return [getComputedStyle(el).color, bg]; })"""


def _rgba(css: str) -> list[float]:
    parts = [float(p) for p in css[css.index("(") + 1:css.index(")")].split(",")]
    return parts + [1.0] * (4 - len(parts))


def _mincontrast(pairs: list[list[str]]) -> float:
    """The lowest contrast ratio of text over its background, a translucent text colour
    (JupyterLab's secondary font colours) blended over the background first."""
    out = []
    for fg, bg in pairs:
        *f, a = _rgba(fg)
        b = _rgba(bg)[:3]
        blended = [a * x + (1 - a) * y for x, y in zip(f, b, strict=True)]
        out.append(contrast("rgb({}, {}, {})".format(*blended), bg))
    return min(out)


def _nth(i: int) -> str:
    return f"{WIDGET} >> nth={i}"


def test_context_is_shown_uncoloured_before_the_continuation(lab, page):
    _, _, notebooks = lab
    name = write_notebook(notebooks, "context.ipynb",
                          [SETUP.format(template=TEMPLATE), *CELLS, DUMP])
    open_notebook(page, lab, name)
    run_all(page)
    data = wait_for_json(notebooks / "context.json")
    page.wait_for_function(
        "() => document.querySelectorAll('.pplw-root .pplw-status-done').length === 3",
        timeout=120_000)
    assert data["str"]["settings"]["prefix_every_window"] is True

    for i, key in enumerate(ORDER):
        root = page.locator(_nth(i))
        d = data[key]
        ctx = root.locator(".pplw-context")
        # drawn: the context box shown and every scored token, before measuring them
        expect(ctx).to_be_visible()
        expect(root.locator(".pplw-tok")).to_have_count(d["n_tokens"])
        # uncoloured: no scored token inside the context box
        assert ctx.locator(".pplw-tok").count() == 0, key
        # before the continuation, in document order and on the page
        assert root.evaluate(
            "r => { const c = r.querySelector('.pplw-context'), t = r.querySelector('.pplw-tok');"
            " return !!(c.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING); }"), key
        cbox = ctx.bounding_box()
        tbox = root.locator(".pplw-tok").first.bounding_box()
        assert cbox["y"] + cbox["height"] <= tbox["y"] + 1, key  # no overlap
        # visibly distinct from the scored text
        cstyle = ctx.evaluate("e => { const s = getComputedStyle(e);"
                              " return [s.fontStyle, s.borderLeftStyle, s.color]; }")
        tcolour = root.locator(".pplw-scroller").evaluate("e => getComputedStyle(e).color")
        assert cstyle[0] == "italic" and cstyle[1] != "none" and cstyle[2] != tcolour, key
        # one coloured span per scored continuation token
        assert root.locator(".pplw-tok").count() == d["n_tokens"], key
        # the metrics panel names the context's length, as the kernel counted it
        n = d["settings"]["context_tokens"]
        assert isinstance(n, int) and n > 0
        # one count everywhere, the BOS said: the header, the panel, the first token's tooltip
        count = f"{n} token{'s' if n != 1 else ''}, BOS included"
        assert root.locator(".pplw-given").inner_text() == f"given a context of {count}", key
        assert count in root.locator(".pplw-context-label").text_content(), key
        if n < 16:  # the first token's window holds the whole context (max_length >= 16)
            root.locator(".pplw-tok").first.hover()
            tip = root.locator(".pplw-tooltip")
            tip.wait_for(state="visible")
            assert count in tip.inner_text(), (key, tip.inner_text())
            page.mouse.move(0, 0)

    # the string context reads as given (its trailing space moved to the continuation)
    s = page.locator(_nth(0))
    assert data["str"]["context"] == "The quick brown fox"
    assert s.locator(".pplw-context-text").inner_text() == "The quick brown fox"
    settings = s.locator(".pplw-settings").inner_text()
    assert "in every window" in settings, settings
    assert "in every window" not in page.locator(_nth(1)).locator(".pplw-settings").inner_text()

    # the chat: its turns, role then content
    turns = page.locator(_nth(1)).locator(".pplw-context-turn")
    assert turns.count() == len(CHAT)
    for t, m in zip(turns.all(), CHAT, strict=True):
        assert t.locator(".pplw-context-role").inner_text() == m["role"]
        assert t.locator(".pplw-context-text").inner_text() == m["content"]

    # markup is text: no element made, nothing ran
    m = page.locator(_nth(2))
    assert m.locator(".pplw-context-text").inner_text() == MARKUP
    for tag in ("img", "b#injected"):
        assert page.locator(f"{WIDGET} {tag}").count() == 0, tag
    assert page.dialogs == [] and page.evaluate("() => window.__pwned") is None

    selector = f"{WIDGET} .pplw-context-text, {WIDGET} .pplw-context-role, {WIDGET} .pplw-given"
    light = page.eval_on_selector_all(selector, CONTEXT_COLOURS)
    assert _mincontrast(light) >= 4.5, light
    ARTIFACTS.mkdir(exist_ok=True)
    for i, key in enumerate(ORDER):
        page.locator(_nth(i)).scroll_into_view_if_needed()
        page.locator(_nth(i)).screenshot(path=str(ARTIFACTS / f"context-{key}-light.png"))
    shot(page, "context-light")

    # dark theme: the context stays readable on its background
    try:
        switch_theme(page, "JupyterLab Dark", False)
        for i, key in enumerate(ORDER):
            page.locator(_nth(i)).scroll_into_view_if_needed()
            page.locator(_nth(i)).screenshot(path=str(ARTIFACTS / f"context-{key}-dark.png"))
        dark = page.eval_on_selector_all(selector, CONTEXT_COLOURS)
        assert _mincontrast(dark) >= 4.5, dark
    finally:
        page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme',"
                      " {theme: 'JupyterLab Light'})")
