"""A masked LM's widget as a person sees it: real JupyterLab, a tiny random BERT (built
from a config, its WordPiece tokenizer trained on the test's text), light and dark
themes, and its exported page offline.  The panel says pseudo-perplexity and the PLL
metric, the tooltip pseudo-surprisal and the masked position's predictions.
Screenshots land in test-artifacts/ (masked-*.png)."""

from __future__ import annotations

import sys

import pytest

from .conftest import ARTIFACTS, ROOT, offline_context
from .lab_notebooks import open_notebook, run_all, shot, wait_for_json, write_notebook
from .lab_waits import switch_theme

pytestmark = pytest.mark.browser

WIDGET = ".pplw-root"
TEXT = ("The quick brown fox jumps over the lazy dog. Unbelievably, the dogs were sleeping "
        "peacefully under the old oak tree.")


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    sys.path.insert(0, str(ROOT / "tests"))
    from masked_models import build_masked

    return build_masked("bert", tmp_path_factory.mktemp("masked_browser") / "bert")


def _check_panel_and_tooltip(page, root: str, metric: str) -> None:
    titles = page.locator(f"{root} >> .pplw-sec-title").all_text_contents()
    assert "Pseudo-perplexity" in titles and "Perplexity" not in titles, titles
    settings = page.locator(f"{root} >> .pplw-settings").inner_text()
    assert "PLL metric" in settings and metric in settings
    assert "prefix" not in settings.split("PLL metric")[1].split("\n")[0]
    page.locator(f"{root} >> .pplw-tok[data-i='4']").hover()
    tip = page.locator(f"{root} >> .pplw-tooltip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    assert "pseudo-surprisal" in text and "predicted at the masked position" in text
    assert "context (both sides)" in text and "BOS" not in text  # no BOS in a masked LM


def test_a_masked_models_widget_in_both_themes_and_exported(lab, page, browser, bert_dir):
    _, _, notebooks = lab
    name = write_notebook(notebooks, "masked.ipynb", [
        "from ppl_widget import PerplexityWidget, load_model\n"
        f"lm = load_model({str(bert_dir)!r}, device='cpu')\n"
        f"w = PerplexityWidget({TEXT!r}, lm, pll_metric='original', top_k=3)\nw",
        "import json\n_r = w.wait()\n"
        "w.to_html('masked_export.html')\n"
        "json.dump({'n': len(_r), 'metrics': _r.metrics()}, open('masked.json', 'w'))",
    ])
    open_notebook(page, lab, name)
    run_all(page)
    data = wait_for_json(notebooks / "masked.json")
    assert data["metrics"]["objective"] == "pll"
    root = f"{WIDGET} >> nth=0"
    page.wait_for_selector(f"{root} >> .pplw-status-done", timeout=120_000)
    assert page.locator(f"{root} >> .pplw-tok").count() == data["n"]
    page.locator(root).scroll_into_view_if_needed()
    _check_panel_and_tooltip(page, root, "original (Salazar et al. 2020)")
    shot(page, "masked-light")
    page.locator(root).screenshot(path=str(ARTIFACTS / "masked-widget-light.png"))

    # the word level: a word's tooltip sums its tokens' pseudo-surprisal
    page.locator(f"{root} >> select").first.select_option("word")
    page.locator(f"{root} >> .pplw-tok[data-i='3']").hover()
    tip = page.locator(f"{root} >> .pplw-tooltip")
    tip.wait_for(state="visible")
    assert "pseudo-surprisal (sum)" in tip.inner_text()
    assert page.locator(f"{root} >> .pplw-check:has-text('BOW-corrected')").is_hidden()
    shot(page, "masked-word-level")
    page.locator(f"{root} >> select").first.select_option("token")

    switch_theme(page, "JupyterLab Dark", light=False)
    page.locator(f"{root} >> .pplw-tok[data-i='7']").hover()
    page.locator(f"{root} >> .pplw-tooltip").wait_for(state="visible")
    shot(page, "masked-dark")
    page.locator(root).screenshot(path=str(ARTIFACTS / "masked-widget-dark.png"))
    switch_theme(page, "JupyterLab Light", light=True)

    # the exported page: the same renderer, offline, the same words
    context, pg = offline_context(browser)
    try:
        pg.goto((notebooks / "masked_export.html").as_uri())
        pg.wait_for_selector(f"{WIDGET} .pplw-tok", timeout=30_000)
        assert "pseudo-perplexity" in pg.title()
        _check_panel_and_tooltip(pg, f"{WIDGET} >> nth=0", "original (Salazar et al. 2020)")
        pg.screenshot(path=str(ARTIFACTS / "masked-export.png"))
        assert pg.attempted == [] and pg.errors == [] and pg.dialogs == []
    finally:
        context.close()
