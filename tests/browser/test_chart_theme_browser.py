"""A chart drawn in JupyterLab's light theme follows a switch to dark and back, as the
widgets do: no white box, its text in the page's colour, readable on its background."""

from __future__ import annotations

import pytest

from .conftest import ARTIFACTS
from .lab_notebooks import contrast, open_notebook, run_all, write_notebook
from .lab_waits import switch_theme, wait_for_chart

pytestmark = pytest.mark.browser

CHART = """\
import numpy as np
from ppl_widget.core.divergence import DivergenceResult
from ppl_widget.core.result import ScoreResult
n = 200
rng = np.random.default_rng(0)
offsets = np.stack([np.arange(n), np.arange(n) + 1], axis=1)
r = ScoreResult(text="a" * n, token_ids=np.zeros(n, int), offsets=offsets,
                surprisal=rng.gamma(2.0, 2.0, n), entropy=rng.gamma(2.0, 2.0, n),
                rank=np.ones(n, int), context_length=np.arange(n) + 1,
                topk_ids=np.zeros((n, 0)), topk_probs=np.zeros((n, 0)),
                units=np.ones((n, 3), int), is_eos=np.zeros(n, bool), settings={})
DivergenceResult(base=r, other=r, kl=np.exp(rng.normal(-4, 2, n)),
                 same_top=np.ones(n, bool), labels=("fp32", "Q4_0")).chart()
"""

#: What the chart looks like now: its painted background (none: the page's), the
#: colour of its title and axis labels as the page draws them, the page behind it.
LOOK = """(el) => {
  const svg = el.querySelector('svg.marks');
  const bg = (e) => { for (; e; e = e.parentElement) {
      const c = getComputedStyle(e).backgroundColor;
      if (c && c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') return c; }
    return getComputedStyle(document.body).backgroundColor; };
  const painted = svg.querySelector('.background');
  const fill = painted ? getComputedStyle(painted).fill : 'none';
  const texts = [...svg.querySelectorAll('.role-axis-label text, .role-title-text text')];
  return { fill, page: bg(el), text: texts.map((t) => getComputedStyle(t).fill) };
}"""


def test_a_chart_follows_a_theme_switch_live(lab, page):
    _, _, notebooks = lab
    name = write_notebook(notebooks, "chart_theme.ipynb", [CHART])
    open_notebook(page, lab, name)
    run_all(page)
    wait_for_chart(page, ".jp-OutputArea-output svg.marks", timeout=120_000)
    output = page.locator(".jp-OutputArea-output").filter(
        has=page.locator("svg.marks")).first
    try:
        looks = {}
        for theme, light in (("JupyterLab Light", True), ("JupyterLab Dark", False),
                             ("JupyterLab Light", True)):
            if looks:  # drawn once, in light; then switched, never redrawn
                switch_theme(page, theme, light)
            output.scroll_into_view_if_needed()
            output.screenshot(path=str(ARTIFACTS / f"chart-theme-{len(looks)}-"
                                                    f"{'light' if light else 'dark'}.png"))
            look = output.evaluate(LOOK)
            looks[len(looks)] = look
            assert look["fill"] in ("none", "transparent", "rgba(0, 0, 0, 0)"), look
            assert len(set(look["text"])) == 1, look  # all in the page's one colour
            # readable on the page behind it, whichever theme (contrast at least 4.5)
            assert contrast(look["text"][0], look["page"]) >= 4.5, look
        # the text changed colour with the theme, and back
        assert looks[0]["text"][0] != looks[1]["text"][0]
        assert looks[0]["text"][0] == looks[2]["text"][0]
    finally:
        switch_theme(page, "JupyterLab Light", True)
