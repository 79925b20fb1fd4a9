"""Every view in one notebook, as a person sees it in JupyterLab (Chromium): the main
widget on a short text, the minimal-pairs view, the word-list view, the comparison
view and the reading view.  The theme is switched to dark AFTER they are drawn: each view's computed
colours must follow (one scale for all of them); tooltips are the rich, keyboard-
reachable one in every view; heights fit a short text; no number is cut.  Screenshots
of each view in both themes land in test-artifacts/ (views-<view>-<theme>.png).
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .conftest import ARTIFACTS
from .lab_notebooks import contrast, open_notebook, run_all, shot, wait_for_json, write_notebook
from .lab_waits import switch_theme

pytestmark = pytest.mark.browser

SETUP = """\
import json
import pandas as pd
from tests.conftest import _tiny  # the repository is on the kernel's PYTHONPATH
from ppl_widget import (ComparisonWidget, PerplexityWidget, score_pairs, show_pairs,
                        show_reading, show_words)
lm, lm2 = _tiny("gpt2"), _tiny("llama")
pairs = score_pairs(pd.DataFrame({"good": ["The dog sleeps.", "These dogs run."],
                                 "bad": ["The dog sleep.", "This dogs run."]}), lm)
"""
CELLS = [
    "w_main = PerplexityWidget('The quick brown fox.', lm)\nw_main",
    "w_pairs = show_pairs(pairs, lm)\nw_pairs",
    "w_words = show_words(['dog', 'cat', 'river', 'Perplexity'], lm)\nw_words",
    "w_cmp = ComparisonWidget('The quick brown fox jumps.', [lm, lm2], labels=['gpt2', 'llama'])"
    "\nw_cmp",
    "w_reading = show_reading(pd.DataFrame({'word': ['The', 'old', 'man', 'the', 'boat.'],"
    " 'rt_value': [210, 250, 330, 240, 410], 'surprisal_bits': [3.0, 9.5, 6.0, 2.0, 12.0],"
    " 'rt_predicted': [None, 260, 300, 230, 350]}))\nw_reading",
]
DUMP = """\
for _w in (w_main, w_words):
    _w.wait()
w_cmp.wait()
json.dump({"pairs_delta": pairs["delta"].tolist(), "main": w_main.result.metrics()},
          open("views.json", "w"), default=str)
"""
SINGLE = ".pplw-root:not(.pplp-root):not(.pplc-root):not(.pplr-root)"
VIEWS = {"main": f"{SINGLE} >> nth=0", "pairs": ".pplp-root", "words": f"{SINGLE} >> nth=1",
         "compare": ".pplc-root", "reading": ".pplr-root"}
COLOURED = {"main": ".pplw-tok", "pairs": ".pplw-tok", "words": ".pplw-tok",
            "compare": ".pplc-word", "reading": ".pplr-w"}
BACKGROUNDS = "els => els.map(e => getComputedStyle(e).backgroundColor)"


def _theme(page, name: str) -> None:
    switch_theme(page, f"JupyterLab {name.title()}", name == "light")


def _wait_drawn(page) -> None:
    """Every view drawn: the two widgets' runs done, each view's coloured items shown."""
    for name in ("main", "words"):
        expect(page.locator(VIEWS[name]).locator(".pplw-status-done")).to_have_count(1)
    for name, sel in VIEWS.items():
        expect(page.locator(sel).locator(COLOURED[name]).first).to_be_visible()


def _shots(page, theme: str) -> dict[str, list[str]]:
    colours = {}
    ARTIFACTS.mkdir(exist_ok=True)
    for name, sel in VIEWS.items():
        root = page.locator(sel)
        root.scroll_into_view_if_needed()
        root.screenshot(path=str(ARTIFACTS / f"views-{name}-{theme}.png"))
        colours[name] = root.locator(COLOURED[name]).evaluate_all(BACKGROUNDS)
    return colours


def _check_heights_and_numbers(page) -> None:
    """A short text: the panel under the text, no tall empty area; no number cut."""
    for name in ("main", "words"):
        root = page.locator(VIEWS[name])
        text = root.locator(".pplw-textcol").bounding_box()
        panel = root.locator(".pplw-panel").bounding_box()
        whole = root.bounding_box()
        assert panel["y"] >= text["y"] + text["height"] - 1, f"{name}: panel beside a short text"
        assert whole["height"] < 560, f"{name}: {whole['height']:.0f} px tall for one line"
        cells = root.locator(".pplw-ppl-v, .pplw-kv-v, .pplw-count b").evaluate_all(
            "els => els.filter(e => e.offsetParent).map(e => [e.textContent,"
            " e.scrollWidth <= e.clientWidth + 1])")
        for text_shown, fits in cells:
            assert "\u2026" not in text_shown and fits, (name, text_shown)
    ppl = page.locator(VIEWS["main"]).locator(".pplw-ppl-v").first
    assert "e+" in ppl.inner_text() and float(ppl.get_attribute("title")) > 1e6  # exact value


def _check_tooltips(page, data) -> None:
    """The rich tooltip, by mouse and by keyboard, in the pairs and comparison views."""
    pairs = page.locator(VIEWS["pairs"])
    assert pairs.locator(".pplp-tok[title]").count() == 0  # not the browser's plain title
    page.mouse.move(0, 0)  # a pointer left over a token would show that token's tooltip
    pairs.locator(".pplp-list").focus()
    page.keyboard.press("Home")  # (an arrow would enter at the token focused last time)
    page.keyboard.press("ArrowRight")
    tip = pairs.locator(".pplw-tooltip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    assert "token 2 of" in text and "surprisal" in text and "bits" in text, text
    focused = page.evaluate("() => document.activeElement.getAttribute('aria-describedby')")
    assert focused == tip.get_attribute("id")
    page.keyboard.press("Escape")
    tip.wait_for(state="hidden")
    pairs.locator(".pplp-tok").nth(5).hover()
    tip.wait_for(state="visible")
    # the units switch: the deltas in nats are the frame's own numbers
    pairs.locator(".pplp-unit").select_option("nats")
    deltas = pairs.locator(".pplp-delta").all_inner_texts()
    for shown, delta in zip(deltas, data["pairs_delta"], strict=True):
        assert shown == f"Δ {delta:+.2f} nats".replace("-", "\u2212"), shown
    pairs.locator(".pplp-unit").select_option("bits")
    cmp = page.locator(VIEWS["compare"])
    page.mouse.move(0, 0)
    cmp.locator(".pplc-text").focus()
    page.keyboard.press("End")
    tip = cmp.locator(".pplw-tooltip")
    tip.wait_for(state="visible")
    assert "word 5 of 5" in tip.inner_text()
    page.keyboard.press("Escape")
    reading = page.locator(VIEWS["reading"])
    reading.locator(".pplr-list").focus()
    page.keyboard.press("End")
    tip = reading.locator(".pplw-tooltip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    assert "boat." in text and "410 ms" in text and "+60 ms" in text, text  # 410 - 350
    page.keyboard.press("Escape")


def _verdictcontrast(page) -> float:
    pair = page.locator(VIEWS["pairs"])
    fg = pair.locator(".pplp-verdict").first.evaluate("e => getComputedStyle(e).color")
    bg = pair.locator(".pplp-list").evaluate("e => getComputedStyle(e).backgroundColor")
    return contrast(fg, bg)


def test_every_view_follows_the_theme_switch(lab, page):
    _, _, notebooks = lab
    name = write_notebook(notebooks, "views.ipynb", [SETUP, *CELLS, DUMP])
    open_notebook(page, lab, name)
    run_all(page)
    data = wait_for_json(notebooks / "views.json", timeout=150)
    page.wait_for_function(
        "() => document.querySelectorAll('.pplc-chip.pplc-done').length === 2", timeout=120_000)
    _wait_drawn(page)
    light = _shots(page, "light")
    shot(page, "views-light")
    _check_heights_and_numbers(page)
    _check_tooltips(page, data)
    assert _verdictcontrast(page) >= 4.5
    try:
        _theme(page, "dark")
        dark = _shots(page, "dark")
        shot(page, "views-dark")
        assert _verdictcontrast(page) >= 4.5  # "✓ prefers good" readable on black
        _check_tooltips(page, data)
    finally:
        _theme(page, "light")
    for name in VIEWS:
        assert light[name] and dark[name], name
        assert light[name] != dark[name], f"{name}: colours did not follow the theme"
