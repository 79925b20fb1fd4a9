"""Why is this token surprising, as a person meets it in JupyterLab (Chromium): a click
on a token colours the text before it by attribution and opens the panel (surprisal,
helped / hurt most, the context curve, the method); `e` on the focused token does the
same from the keyboard; Escape closes it (and the kernel forgets it); an explanation
computed in the notebook travels with the exported page.  Markup in the text stays
text.  Screenshots in both themes land in test-artifacts/ (explain-*.png).

The delay the view adds, from the click to the first coloured unit less the kernel's
own time to that unit, is printed (a measurement, not an assertion).
"""

from __future__ import annotations

import pytest

from .conftest import ARTIFACTS, offline_context
from .test_jupyterlab import open_notebook, run_cell, shot, wait_for_json, write_notebook
from .test_views_browser import _theme

pytestmark = pytest.mark.browser

TEXT = ("In the winter <b>the</b> river froze, and the cold held for weeks; when spring "
        "came at last the ice broke and the valley had floods.")
SETUP = f"""\
import json
from tests.conftest import _tiny  # the repository is on the kernel's PYTHONPATH
from ppl_widget import PerplexityWidget
w = PerplexityWidget({TEXT!r}, _tiny("gpt2"))
w
"""
DUMP = """\
_r = w.wait()
json.dump({"n_tokens": len(_r), "tokens": _r.tokens}, open("explain.json", "w"))
"""
# the kernel's side after Escape, then an explanation computed in the notebook, exported
KERNEL = """\
json.dump({"cleared": w.explanation is None}, open("cleared.json", "w"))
_e = w.explain(word=8)
w.to_html("explained.html")
json.dump({"units": _e.frame["unit"].tolist(), "target": _e.target["text"],
           "delta": _e.frame["delta_nats"].tolist()}, open("exported.json", "w"))
"""
ROOT = ".pplw-root"
PANEL = f"{ROOT} .pplw-ex"
COLOURED = f"{ROOT} .pplw-tok[class*='pplw-c']:not(.pplw-cna)"
DONE = f"{PANEL} .pplw-ex-bar:not(.pplw-ex-running)"


def _explained(page) -> dict:
    """What the view shows of its explanation: the target, the coloured context, the panel."""
    return page.evaluate("""(root) => {
      const r = document.querySelector(root);
      const toks = [...r.querySelectorAll('.pplw-tok')];
      const target = toks.filter(e => e.classList.contains('pplw-ex-target'));
      const coloured = toks.filter(e => /pplw-c\\d/.test(e.className));
      return {
        explaining: r.classList.contains('pplw-explaining'),
        target: target.map(e => Number(e.dataset.i)),
        coloured: coloured.map(e => Number(e.dataset.i)),
        backgrounds: [...new Set(coloured.map(e => getComputedStyle(e).backgroundColor))],
        helped: [...r.querySelectorAll('.pplw-ex-col:first-child li')].map(e => e.textContent),
        hurt: [...r.querySelectorAll('.pplw-ex-col:last-child li')].map(e => e.textContent),
        curve: r.querySelectorAll('.pplw-ex-curve circle').length,
        method: (r.querySelector('.pplw-ex-method') || {}).textContent,
        firstMs: r.dataset.explainFirstMs, kernelMs: r.dataset.explainKernelFirstMs,
        toKernelMs: r.dataset.explainToKernelMs, fromKernelMs: r.dataset.explainFromKernelMs,
      }; }""", ROOT)


def test_click_explains_a_token_escape_closes_and_the_export_keeps_one(lab, page, browser):
    _, _, notebooks = lab
    name = write_notebook(notebooks, "explain.ipynb", [SETUP, DUMP, KERNEL])
    open_notebook(page, lab, name)
    run_cell(page, 0)
    run_cell(page, 1)
    data = wait_for_json(notebooks / "explain.json", timeout=150)
    page.wait_for_selector(f"{ROOT} .pplw-status-done", timeout=120_000)
    last = data["n_tokens"] - 1

    # a click on the last token (the token level: the token is the target)
    page.locator(f"{ROOT} .pplw-tok[data-i='{last}']").click()
    page.wait_for_selector(DONE, timeout=60_000)
    page.wait_for_selector(f"{PANEL} .pplw-ex-curve", timeout=60_000)
    seen = _explained(page)
    # the clicked token took the keyboard focus: the keyboard goes on from there
    assert page.evaluate("() => document.activeElement.dataset.i") == str(last)
    assert seen["explaining"] and seen["target"] == [last]
    assert seen["coloured"] and max(seen["coloured"]) < last  # only the text before it
    assert len(seen["backgrounds"]) >= 2  # a scale, not one colour
    # the attribution palette (blue = hurt at bin 0) replaced the surprisal ramp meanwhile
    assert _palette_start(page) == "rgb(31, 95, 168)"
    assert seen["helped"] or seen["hurt"]
    assert seen["curve"] >= 2 and "occlusion" in seen["method"]
    legend = page.locator(f"{ROOT} .pplw-legend-title").inner_text()
    assert legend.startswith("attribution (bits)"), legend
    region = page.locator(PANEL)
    assert region.get_attribute("role") == "region" and region.get_attribute("aria-label")
    assert page.locator(f"{PANEL} [role=progressbar]").get_attribute("aria-valuenow") == "100"
    # markup in the text stayed text
    assert page.locator(f"{ROOT} .pplw-scroller b, {ROOT} .pplw-ex b").count() == 0
    assert "<b>the</b>" in page.locator(f"{ROOT} .pplw-scroller").inner_text()
    first, kernel = float(seen["firstMs"]), float(seen["kernelMs"])
    print(f"\nclick -> first coloured unit {first:.0f} ms in Chromium; the kernel's own time "
          f"to that unit {kernel:.0f} ms; the view's delay {first - kernel:.0f} ms (click -> "
          f"kernel {seen['toKernelMs']} ms, kernel -> view {seen['fromKernelMs']} ms)")
    page.mouse.move(0, 0)
    page.evaluate("() => document.activeElement.blur()")  # no tooltip over the panel
    region.scroll_into_view_if_needed()
    page.locator(ROOT).screenshot(path=str(_artifact("explain-widget-light.png")))
    try:
        _theme(page, "dark")
        page.locator(ROOT).screenshot(path=str(_artifact("explain-widget-dark.png")))
    finally:
        _theme(page, "light")

    # Escape closes it (from the clicked token, the roving focus's now): the colours give
    # way, the panel goes, the kernel forgets it
    page.locator(f"{ROOT} .pplw-tok[data-i='{last}'][tabindex='0']").focus()
    page.keyboard.press("Escape")
    page.wait_for_selector(PANEL, state="hidden")
    assert not _explained(page)["explaining"]
    assert _palette_start(page) != "rgb(31, 95, 168)"  # the surprisal colours are back
    # `e` on the focused token explains it from the keyboard
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("e")
    page.wait_for_selector(DONE, timeout=60_000)
    assert _explained(page)["target"] == [last - 1]
    page.keyboard.press("Escape")
    page.wait_for_selector(PANEL, state="hidden")

    run_cell(page, 2)
    assert wait_for_json(notebooks / "cleared.json")["cleared"] is True
    exported = wait_for_json(notebooks / "exported.json", timeout=150)
    page.wait_for_selector(DONE, timeout=60_000)  # the notebook's explanation shows live too
    _check_export(browser, notebooks / "explained.html", exported)


def _palette_start(page) -> str:
    return page.locator(ROOT).evaluate(
        "r => getComputedStyle(r).getPropertyValue('--pplw-c0').trim()")


def _artifact(name: str):
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / name


def _check_export(browser, path, exported) -> None:
    """The exported page shows the notebook's explanation with no kernel, in both themes."""
    context, page = offline_context(browser, height=900)
    try:
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            page.goto(path.as_uri())
            page.wait_for_selector(DONE, timeout=20_000)
            seen = _explained(page)
            assert seen["explaining"] and seen["target"], seen
            assert seen["coloured"] and max(seen["coloured"]) < min(seen["target"])
            shown_target = page.locator(f"{PANEL} .pplw-ex-label").inner_text()
            assert shown_target.replace("\u00b7", " ").strip() == exported["target"].strip()
            shown = seen["helped"] + seen["hurt"]
            assert any(u in " ".join(shown) for u in exported["units"]), shown
            assert page.errors == [] and page.dialogs == [] and page.attempted == []
            shot(page, f"explain-export-{scheme}")
    finally:
        context.close()
