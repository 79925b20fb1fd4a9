"""Editable mode in JupyterLab (Chromium): typing in the widget's text box re-scores
only the windows after the edit, and the page ends equal to the kernel's result."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .lab_notebooks import (
    DUMP_CELL,
    WIDGET,
    open_notebook,
    panel_values,
    run_cell,
    shot,
    wait_for_json,
    write_notebook,
)

pytestmark = pytest.mark.browser

TEXT = ("Perplexity measures how surprised a model is by a text. " * 6).strip()
TYPED = ' And <img src=x onerror="alert(1)"> stays text.'


def test_typing_rescores_the_changed_windows(lab, page):
    _, _, notebooks = lab
    dump = DUMP_CELL.format(name="w", out="edited.json").replace(
        '"total_tokens": _r.total_tokens}',
        '"total_tokens": _r.total_tokens, "text": w.text,\n'
        '           "reused": _r.settings.get("reused_tokens")}')
    name = write_notebook(notebooks, "editable.ipynb", [
        "from ppl_widget import PerplexityWidget\n"
        f"w = PerplexityWidget({TEXT!r}, max_length=32, stride=16, editable=True)\nw",
        dump,
    ])
    open_notebook(page, lab, name)
    run_cell(page, 0)
    page.wait_for_selector(f"{WIDGET} .pplw-status-done", timeout=120_000)
    box = page.locator(f"{WIDGET} .pplw-editor")
    assert box.input_value() == TEXT
    box.click()
    box.press("End")
    box.type(TYPED, delay=15)  # a person typing: one re-score after the pause
    # the note names the re-score as it starts (the last run's "done" may still be shown
    # then: run M, docs/testing.md); the kernel's wait() in the next cell is its end
    page.wait_for_function(
        "() => /tokens scored again/.test(document.querySelector('.pplw-editor-note').textContent)",
        timeout=120_000)
    run_cell(page, 1)
    data = wait_for_json(notebooks / "edited.json")
    assert data["text"] == TEXT + TYPED
    assert 0 < data["reused"] < data["n_tokens"]
    # the page catches up with the kernel: retrying waits, as the view may be drawn anew
    # when a run ends
    expect(page.locator(f"{WIDGET} .pplw-status-done")).to_be_visible(timeout=60_000)
    expect(page.locator(f"{WIDGET} .pplw-editor-note")).to_contain_text(
        f"{data['n_tokens'] - data['reused']:,} of {data['n_tokens']:,} tokens")
    expect(page.locator(f"{WIDGET} .pplw-tok")).to_have_count(data["n_tokens"])
    m = data["metrics"]
    want = [repr(m[k]) for k in ("token_ppl", "word_ppl", "char_ppl", "byte_ppl")]
    shown = page.locator(f"{WIDGET} .pplw-ppl-v")  # what panel_values reads, waited for
    for i, value in enumerate(want):
        expect(shown.nth(i)).to_have_attribute("title", value)
    assert panel_values(page) == want
    shot(page, "editable-typed")
    assert page.dialogs == []
    assert page.locator(f"{WIDGET} .pplw-main img").count() == 0
    page.locator(WIDGET).screenshot(path=str(__import__("pathlib").Path("test-artifacts")
                                             / "editable.png"))


def test_an_editable_widget_that_starts_empty_waits_for_text(lab, page):
    """PerplexityWidget("", editable=True): no error, an empty box that says what it is
    for; what is typed is scored."""
    _, _, notebooks = lab
    name = write_notebook(notebooks, "editable_empty.ipynb", [
        "from ppl_widget import PerplexityWidget\n"
        "w = PerplexityWidget('', max_length=32, stride=16, editable=True)\nw",
    ])
    open_notebook(page, lab, name)
    run_cell(page, 0)
    page.wait_for_selector(f"{WIDGET} .pplw-status-done", timeout=120_000)
    box = page.locator(f"{WIDGET} .pplw-editor")
    assert box.input_value() == "" and box.get_attribute("placeholder")
    assert page.locator(f"{WIDGET} .pplw-error").is_hidden()
    shot(page, "editable-empty")
    box.click()
    box.type("The cat sat.", delay=15)
    page.wait_for_function(
        f"() => document.querySelectorAll('{WIDGET} .pplw-tok').length > 0", timeout=120_000)
    assert page.locator(f"{WIDGET} .pplw-error").is_hidden()
