"""The first load says what it does (issue 23), in a real JupyterLab: while the default
model is prepared into an empty cache the widget's status row shows the note and a
percentage, then the scored text; nothing is printed under the cell."""

from __future__ import annotations

import pytest

from .lab_notebooks import WIDGET, open_notebook, run_cell, shot, write_notebook

pytestmark = pytest.mark.browser


def test_a_cold_first_load_shows_its_progress_in_the_widget(lab, page, default_lm, tmp_path):
    _, _, notebooks = lab
    cache = tmp_path / "empty-cache"  # a first load: the model is prepared here
    name = write_notebook(notebooks, "first_load.ipynb", [
        f"import os\nos.environ['PPL_WIDGET_CACHE'] = {str(cache)!r}\n"
        "from ppl_widget import PerplexityWidget\n"
        "w = PerplexityWidget('The cat sat on the mat.')\nw",
    ])
    # its own kernel: the first load in a process, reading PPL_WIDGET_CACHE as it starts
    open_notebook(page, lab, name, fresh_kernel=True)
    run_cell(page, 0)
    text = f"{WIDGET} .pplw-progress-text"
    page.wait_for_function(
        f"() => {{ const t = document.querySelector('{text}');"
        " return t && /preparing the model, first time only, ~20 s · [1-9][0-9]?%/"
        ".test(t.textContent); }", timeout=300_000)
    assert page.locator(f"{WIDGET} .pplw-status").inner_text().lower() == "loading"
    # the run's bar (an explanation panel has a bar of its own)
    width = page.locator(f"{WIDGET} .pplw-progress .pplw-progress-fill").evaluate(
        "e => e.style.width")
    assert 0 < float(width.rstrip("%")) < 100
    shot(page, "first_load_preparing")
    page.wait_for_selector(f"{WIDGET} .pplw-status-done", timeout=300_000)
    shot(page, "first_load_done")
    assert "preparing" not in page.locator(text).inner_text()
    assert page.locator(f"{WIDGET} .pplw-tok").count() > 3
    # no third-party progress bar or warning printed under the cell
    assert page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
                        ).count() == 0
    assert (cache / "converted").is_dir()
