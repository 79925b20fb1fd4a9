"""Exported pages in Chromium with the network blocked: a result's page, and an executed
notebook converted by nbconvert.  Screenshots land in test-artifacts/."""

from __future__ import annotations

import math
import os
import re

import pytest

from ppl_widget import score

from .conftest import ARTIFACTS, ROOT, offline_context
from .lab_notebooks import new_notebook, open_notebook, run_all, write_notebook

pytestmark = pytest.mark.browser

MARKUP = ("<img src=x onerror=alert(1)> </script><script>alert(1)</script> <!-- c "
          "\u2028 <b>bold</b> & ")
TEXT = MARKUP + "The quick brown fox jumps over the lazy dog. Surprisal is minus the log."
WIDGET = ".pplw-root"
PPL_KEYS = ("token_ppl", "word_ppl", "char_ppl", "byte_ppl")


@pytest.fixture
def offline(browser, request):
    """A page whose every request other than file: is aborted, and recorded."""
    context, pg = offline_context(browser, height=900)
    yield pg
    ARTIFACTS.mkdir(exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / f"{request.node.name}-final.png"), full_page=True)
    context.close()


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def check_page(page, res, name: str, *, distinct_colours: int = 1) -> None:
    """The page shows `res` as the widget does: spans, colours, panel, tooltip, inert text."""
    root = page.locator(WIDGET).first
    root.wait_for(timeout=20_000)
    spans = root.locator(".pplw-tok")
    spans.first.wait_for()
    assert spans.count() == len(res)
    colours = spans.evaluate_all("els => els.map(e => getComputedStyle(e).backgroundColor)")
    assert "rgba(0, 0, 0, 0)" not in colours and len(set(colours)) >= distinct_colours
    assert root.locator(".pplw-status").inner_text().lower() == "done"

    # the panel's numbers are metrics() exactly (title = the full-precision value)
    titles = root.locator(".pplw-ppl-v").evaluate_all("els => els.map(e => e.title)")[:4]
    m = res.metrics()
    assert [float(t) for t in titles] == [m[k] for k in PPL_KEYS]

    # tooltip on hover: the token's numbers and its top-k alternatives
    i = int(res.surprisal.argmax())
    root.locator(f".pplw-tok[data-i='{i}']").hover()
    tip = root.locator(".pplw-tooltip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    assert f"{res.surprisal_bits[i]:.2f} bits" in text
    assert f"{int(res.rank[i]):,}" in text
    assert tip.locator(".pplw-tt-alt").count() == res.topk_ids.shape[1]
    shot(page, f"{name}-tooltip")

    # the markup in the text is text: shown verbatim, nothing ran, no element made
    shown = root.locator(".pplw-content").evaluate("e => e.textContent")
    assert shown == res.text
    assert page.dialogs == [] and page.errors == []
    assert root.locator(".pplw-content").locator("img, b, script").count() == 0
    assert page.locator("img").count() == 0


def test_exported_result_offline(offline, tiny_lm, tmp_path):
    res = score(TEXT, tiny_lm, max_length=24, stride=8, top_k=4)
    path = tmp_path / "result.html"
    res.to_html(path)
    offline.goto(path.as_uri())
    check_page(offline, res, f"export-{res.settings['model']}")
    assert offline.attempted == []
    # a span selection shows that span's perplexity, as in the widget
    offline.evaluate("""() => { const q = (i) => document.querySelector(`.pplw-tok[data-i='${i}']`);
        const r = document.createRange(); r.setStart(q(2).firstChild, 0);
        r.setEnd(q(6).firstChild, q(6).firstChild.length);
        const s = document.getSelection(); s.removeAllRanges(); s.addRange(r); }""")
    sel = offline.locator(f"{WIDGET} .pplw-sel")
    sel.wait_for(state="visible")
    shown = [float(t) for t in sel.locator(".pplw-ppl-v").evaluate_all(
        "els => els.map(e => e.title)")]
    # the tokens the selection covers, as the panel states them ("#first–last", 1-based)
    first, last = map(int, re.search(r"#([\d,]+)–([\d,]+)", sel.inner_text()).groups())
    i0, i1 = first - 1, last
    assert i0 <= 2 and i1 >= 7
    nll = float(res.surprisal[i0:i1].sum())
    w, c, b = res.units[i0:i1].sum(axis=0).tolist()
    assert shown == pytest.approx([math.exp(nll / n) for n in (i1 - i0, w, c, b)], rel=1e-6)
    shot(offline, f"export-{res.settings['model']}-selection")


def test_exported_default_model_offline(offline, default_lm, tmp_path):
    text = ("The committee will meet on Tuesday to discuss the budget. Colourless green ideas "
            "sleep furiously. " + MARKUP)
    res = score(text, default_lm)
    path = tmp_path / "default.html"
    res.to_html(path)
    offline.goto(path.as_uri())
    check_page(offline, res, "export-default", distinct_colours=5)
    assert offline.attempted == []
    offline.locator(WIDGET).screenshot(path=str(ARTIFACTS / "export-default.png"))


def test_exported_levels_and_context_gain_are_coloured(offline, tiny_gpt2, tmp_path):
    """A page built from complete data (export, reload, second display) colours words and
    sentences at once, and context gain on its diverging scale with the kernel's sign."""
    from ppl_widget import PerplexityWidget
    from ppl_widget.core.unigram import as_unigram

    text = "The cat sat on the mat. The dog sat on the log. " + MARKUP + " The end."
    w = PerplexityWidget(text, tiny_gpt2, max_length=24, stride=8, unigram=text)
    res = w.wait()
    # the widget's in-sample unigram, built the way it builds it
    gain_bits = res.context_gain(as_unigram(text, tiny_gpt2.tokenizer, text=text)) / math.log(2)
    for level in ("word", "sentence"):
        w.level, w.color_mode = level, "surprisal"
        path = tmp_path / f"{level}.html"
        w.to_html(path)
        offline.goto(path.as_uri())
        spans = offline.locator(f"{WIDGET} .pplw-tok")
        spans.first.wait_for()
        bins = spans.evaluate_all("els => els.map(e => e.className.match(/pplw-c(\\w+)/)[1])")
        outside = set(res.to_frame(level).attrs["outside"])
        # every token of a unit is coloured (none were before the sums existed)
        assert all(b != "na" for i, b in enumerate(bins) if i not in outside), (level, bins)
        shot(offline, f"export-{level}-level")
    w.level, w.color_mode = "token", "context_gain"
    path = tmp_path / "gain.html"
    w.to_html(path)
    offline.goto(path.as_uri())
    spans = offline.locator(f"{WIDGET} .pplw-tok")
    spans.first.wait_for()
    bins = [int(b) for b in spans.evaluate_all(
        "els => els.map(e => e.className.match(/pplw-c(\\d+)/)[1])")]
    assert len(bins) == len(res)
    for b, g in zip(bins, gain_bits, strict=True):
        if g > 16 / 30:
            assert b > 15, (b, g)
        elif g < -16 / 30:
            assert b < 15, (b, g)
    assert "blue = context hurt" in offline.locator(f"{WIDGET} .pplw-legend-title").inner_text()
    shot(offline, "export-context-gain")
    w.close()


NOTEBOOK = [
    f"import sys\nsys.path[:0] = [{str(ROOT / 'tests')!r}, {str(ROOT)!r}]\n"
    "from conftest import _tiny\nfrom ppl_widget import PerplexityWidget\nlm = _tiny('gpt2')",
    f"text = {TEXT!r}\nw = PerplexityWidget(text, lm, max_length=24, stride=8, top_k=4)\nw",
    # (wait() returns after the run's thread has sent the output's update)
    "r = w.wait()\nimport json\nprint(json.dumps(r.to_dict()))",
]


def test_nbconvert_html_offline(offline, tmp_path):
    """nbclient runs the notebook; the widget's output is displayed while scoring and
    brought up to date when it ends; nbconvert's HTML shows the final result offline."""
    import json

    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    from ppl_widget.core.result import ScoreResult

    nb = new_notebook(NOTEBOOK)
    # without saved widget state nbconvert uses the text/html (see docs/export.md)
    NotebookClient(nb, timeout=600, kernel_name="python3", store_widget_state=False,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    printed = "".join(o.get("text", "") for o in nb.cells[2].outputs)
    res = ScoreResult.from_dict(json.loads(printed))
    out = nb.cells[1].outputs
    assert len(out) == 1 and "text/html" in out[0]["data"]
    # nbclient is no front end (views/headless.py): the output is the static page alone
    assert "application/vnd.jupyter.widget-view+json" not in out[0]["data"]
    body, _ = HTMLExporter().from_notebook_node(nb)
    path = tmp_path / "notebook.html"
    path.write_text(body, encoding="utf-8")
    offline.goto(path.as_uri())
    check_page(offline, res, "nbconvert")
    shot(offline, "nbconvert")
    # the only requests tried are nbconvert's own template's (require.js, MathJax)
    template = [u for u in ("require.min.js", "mathjax") if u in body.split("pplw-static")[0]]
    assert all(any(t in url for t in template) for url in offline.attempted), offline.attempted



def test_nbconvert_execute_with_saved_state_offline(offline, tmp_path):
    """`nbconvert --execute` saves widget state; with it nbconvert would draw a widget
    view, which needs a CDN (blank offline).  Executed with no front end, the widget's
    output is its static page alone, so the default route shows it; the documented
    one-liner with ppl_widget.StaticWidgetOutputs also drops the saved state, so the page
    asks the network for no widget manager."""
    import json
    import subprocess
    import sys

    from ppl_widget.core.result import ScoreResult

    write_notebook(tmp_path, "lesson.ipynb", NOTEBOOK)
    convert = [sys.executable, "-m", "nbconvert", "--execute", "--to", "html"]

    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's ppl_widget

    def run(*args: str) -> str:
        subprocess.run([*convert, *args, "lesson.ipynb"], cwd=tmp_path, check=True,
                       capture_output=True, timeout=600, env=env)
        return (tmp_path / "lesson.html").read_text(encoding="utf-8")

    # without it: the static page, but the saved state still loads the widget manager
    plain = run()
    assert '<script type="application/vnd.jupyter.widget-view+json">' not in plain
    assert "pplw-static" in plain and "html-manager" in plain
    body = run("--HTMLExporter.preprocessors=ppl_widget.StaticWidgetOutputs")
    assert "pplw-static" in body
    assert "application/vnd.jupyter.widget-view+json" not in body
    assert "html-manager" not in body  # no saved state left, so no widget manager fetched
    printed = re.search(r"<pre>(\{.*?\})\s*</pre>", body, re.S).group(1)
    res = ScoreResult.from_dict(json.loads(__import__("html").unescape(printed)))
    offline.goto((tmp_path / "lesson.html").as_uri())
    check_page(offline, res, "nbconvert-execute")
    shot(offline, "nbconvert-execute-static")


def test_live_jupyterlab_shows_only_the_widget(lab, page):
    """Where widgets run, the widget view outranks the text/html: one live widget, no
    static copy, before and after the output's update at the end of scoring."""

    _, _, notebooks = lab
    name = write_notebook(notebooks, "export_live.ipynb", NOTEBOOK[:2])
    open_notebook(page, lab, name)
    run_all(page)
    page.wait_for_selector(f"{WIDGET} .pplw-status-done", timeout=180_000)
    # the display update that follows the end of scoring has arrived: the notebook model
    # (what a save writes) holds the final page as text/html
    html = """() => { const nb = window.jupyterapp.shell.currentWidget.content;
        const out = nb.widgets[1].model.outputs.get(0);
        return out && (out.data['text/html'] || '').includes('"status":"done"'); }"""
    page.wait_for_function(html, timeout=60_000)
    # the update redraws the view (in the same task that changed the model): drawn again
    page.wait_for_selector(f"{WIDGET} .pplw-status-done", timeout=60_000)
    assert page.locator(WIDGET).count() == 1
    assert page.locator(".pplw-static").count() == 0
    assert page.locator(f"{WIDGET} .pplw-tok").count() > 0
    assert page.locator(f"{WIDGET} .pplw-status").inner_text().lower() == "done"
    page.locator(WIDGET).scroll_into_view_if_needed()
    shot(page, "export-live-jupyterlab")


# JupyterLab's styles for <code> in rendered HTML (a text/html output, where the static page
# goes; nbconvert's lab template has them too): they gave the tooltip's top-k column grey boxes
HOST_CODE_CSS = """
.jp-RenderedHTMLCommon code { background-color: transparent; padding: 0; }
.jp-RenderedHTMLCommon pre, .jp-ThemedContainer .jp-RenderedHTMLCommon code {
  border: 0; background-color: #ffffff; font-size: inherit; padding: 0; white-space: pre-wrap; }
.jp-RenderedHTMLCommon :not(pre) > code { background-color: #eeeeee; padding: 1px 5px; }
"""


def test_tooltip_looks_the_same_inside_a_host_that_styles_code(offline, tiny_gpt2, tmp_path):
    res = score("The quick brown fox jumps over the lazy dog.", tiny_gpt2, top_k=4)
    looks = {}
    for host in ("plain", "lab"):
        page = res.to_html()
        if host == "lab":
            page = page.replace("<body>", f"<body><style>{HOST_CODE_CSS}</style><div "
                                "class='jp-ThemedContainer'><div class='jp-RenderedHTMLCommon'>")
        path = tmp_path / f"{host}.html"
        path.write_text(page, encoding="utf-8")
        offline.goto(path.as_uri())
        offline.locator(f"{WIDGET} .pplw-tok[data-i='2']").hover()
        tip = offline.locator(f"{WIDGET} .pplw-tooltip")
        tip.wait_for(state="visible")
        looks[host] = tip.evaluate("""t => [
            ...t.querySelectorAll('.pplw-tt-token, .pplw-tt-alttok')
            ].map(e => { const s = getComputedStyle(e);
                        return [s.backgroundColor, s.padding, s.fontSize, s.whiteSpace]; })""")
        shot(offline, f"export-tooltip-{host}")
    assert len(looks["plain"]) == 1 + 4
    assert all(bg == "rgba(0, 0, 0, 0)" for bg, *_ in looks["plain"][1:])  # no boxes
    assert looks["lab"] == looks["plain"]
