"""The comparison view and a chart, as a person sees them in JupyterLab (Chromium).

Three models with three different segmentations (SmolLM2's BPE, a character
trigram, a word bigram) score one text in a notebook; the page is checked
against what the kernel computed (dumped to JSON): every word coloured by the
sign of the difference, the tooltip's per-model tokenizations and surprisals,
the table with per-token perplexity marked, the pair picker (its choice reaches
the kernel), keyboard access, markup kept as text; then one Altair chart drawn by
JupyterLab's built-in Vega renderer with no network.
"""

from __future__ import annotations

import re

import pytest

from .conftest import ARTIFACTS
from .lab_notebooks import open_notebook, run_cell, shot, wait_for_json, write_notebook
from .lab_waits import wait_for_chart
from .test_export_offline import offline  # noqa: F401  (the network-blocked page fixture)

pytestmark = pytest.mark.browser

ROOT = ".pplc-root"
TEXT = ("The cat sat on the mat. The dog sat on the log. "
        "A surprising <b id=\"injected\">word</b> & \"quotes\" appear here.")
LABELS = ["SmolLM2", "char 3-gram", 'word 2-gram <i id="lab">x</i>']
CORPUS = ("the cat sat on the mat.\nthe dog sat on the log.\nthe cat saw the dog.\n"
          "a dog sat on a mat.\nthe mat was on the log.")

SETUP = f"""\
import json
from ppl_widget import ComparisonWidget, NGramModel, charts
corpus = {CORPUS!r}
char3 = NGramModel(3, smoothing="kneser-ney", unit="char").fit(corpus)
word2 = NGramModel(2, smoothing="add-k", unit="word").fit(corpus)
cw = ComparisonWidget({TEXT!r}, [None, char3, word2], labels={LABELS!r}, max_length=256)
cw"""

DUMP = """\
cmp = cw.wait()
f = cmp.words(0, 1)
json.dump({"n_words": len(f), "diff_bits": f["diff_bits"].tolist(),
           "bits": {lb: f[f"surprisal_bits:{lb}"].tolist() for lb in cmp.labels},
           "tokens": {lb: f[f"tokens:{lb}"].tolist() for lb in cmp.labels},
           "table": cmp.table()[["label", "word_ppl", "n_tokens"]].to_dict("records")},
          open("compare.json", "w"))"""

CHART = "charts.surprisal(cw.results[0])"
PAIR = 'json.dump({"pair": cw.pair}, open("pair.json", "w"))'


def _rgb(css: str) -> tuple[int, ...]:
    return tuple(int(v) for v in re.findall(r"\d+", css)[:3])


def test_comparison_view_and_a_chart_in_jupyterlab(lab, page):
    _, _, notebooks = lab
    name = write_notebook(notebooks, "compare.ipynb", [SETUP, DUMP, CHART, PAIR])
    open_notebook(page, lab, name)
    for i in range(3):
        run_cell(page, i)
    data = wait_for_json(notebooks / "compare.json")
    page.wait_for_function(
        "() => document.querySelectorAll('.pplc-chip.pplc-done').length === 3",
        timeout=120_000)
    root = page.locator(ROOT)
    root.scroll_into_view_if_needed()
    shot(page, "compare-view")
    root.screenshot(path=str(ARTIFACTS / "compare.png"))

    # the text once, one span per word, coloured by the sign of A - B
    words = page.locator(f"{ROOT} .pplc-word")
    assert words.count() == data["n_words"]
    colours = words.evaluate_all("els => els.map(e => getComputedStyle(e).backgroundColor)")
    assert "rgba(0, 0, 0, 0)" not in colours and len(set(colours)) > 3
    diffs = data["diff_bits"]
    worst_a = max(range(len(diffs)), key=lambda w: diffs[w])  # B predicted it much better
    worst_b = min(range(len(diffs)), key=lambda w: diffs[w])  # A predicted it much better
    r, _, b = _rgb(colours[worst_a])
    assert r > b, "positive difference (B better) is orange"
    r, _, b = _rgb(colours[worst_b])
    assert b > r, "negative difference (A better) is blue"
    legend = page.locator(f"{ROOT} .pplc-legend").inner_text()
    assert f"◀ {LABELS[0]} predicted better" in legend
    assert f"{LABELS[1]} predicted better ▶" in legend

    # the tooltip: every model's surprisal of the word and its tokens
    words.nth(worst_a).hover()
    tip = page.locator(f"{ROOT} .pplw-tooltip")
    tip.wait_for(state="visible")
    shot(page, "compare-tooltip")
    text = tip.inner_text()
    for label in LABELS:
        assert label in text
        assert f"{data['bits'][label][worst_a]:.2f} bits" in text
    for tok in data["tokens"][LABELS[1]][worst_a]:  # the character model's pieces
        assert tok.strip() in text

    # the table: one row per model, per-token perplexity marked as not comparable
    table = page.locator(f"{ROOT} .pplc-table")
    assert table.locator("tbody tr").count() == 3
    assert "PPL / token †" in table.locator("thead").inner_text()
    assert "not comparable" in page.locator(f"{ROOT} .pplc-note").inner_text()
    first_row = table.locator("tbody tr").first.inner_text()
    assert f"{data['table'][0]['n_tokens']:,}" in first_row

    # markup in the text and in a label stays text
    assert page.dialogs == []
    for sel in ("b#injected", "i#lab", "img", "script"):
        assert page.locator(f"{ROOT} {sel}").count() == 0, sel
    shown = page.locator(f"{ROOT} .pplc-text").inner_text().replace("\u00a0", " ")
    assert shown == TEXT

    # pick the pair A = SmolLM2, B = word 2-gram: the legend follows, the kernel knows
    page.locator(f"{ROOT} .pplc-pick-b").select_option(index=2)
    page.wait_for_function(
        "(lb) => document.querySelector('.pplc-better-b').textContent.startsWith(lb)",
        arg=LABELS[2])
    run_cell(page, 3)
    assert wait_for_json(notebooks / "pair.json")["pair"] == [0, 2]

    # keyboard: the text region takes focus, arrows walk the words with the tooltip
    page.locator(f"{ROOT} .pplc-text").focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    tip.wait_for(state="visible")
    assert "word 2 of" in tip.inner_text()
    shot(page, "compare-keyboard")

    # the chart: JupyterLab's own Vega renderer drew it (no CDN, no network)
    vega = page.locator(".jp-RenderedVegaCommon5 svg, .jp-RenderedVegaCommon5 canvas")
    vega.first.wait_for(state="attached", timeout=60_000)
    wait_for_chart(page, ".jp-RenderedVegaCommon5 svg.marks")
    vega.first.scroll_into_view_if_needed()
    shot(page, "chart-surprisal")
    assert not [e for e in page.console_errors if "vega" in e.lower()]


def test_comparison_page_exported_offline(offline, tiny_gpt2, tiny_llama, tmp_path):  # noqa: F811
    """Comparison.to_html(): the same view with no kernel and no network: words
    coloured, tooltips, the table, the pair swap (it runs in the page), text inert."""
    from ppl_widget import compare

    cmp = compare(TEXT, [tiny_gpt2, tiny_llama], labels=LABELS[:2], max_length=32, stride=16)
    path = tmp_path / "comparison.html"
    cmp.to_html(path)
    offline.goto(path.as_uri())
    offline.wait_for_selector(f"{ROOT} .pplc-word", timeout=30_000)
    frame = cmp.words(0, 1)
    words = offline.locator(f"{ROOT} .pplc-word")
    assert words.count() == len(frame)
    assert offline.locator(f"{ROOT} .pplc-word.pplc-pending").count() == 0
    words.nth(3).hover()
    tip = offline.locator(f"{ROOT} .pplw-tooltip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    for label in LABELS[:2]:
        assert f"{frame[f'surprisal_bits:{label}'].iloc[3]:.2f} bits" in text
    assert offline.locator(f"{ROOT} .pplc-table tbody tr").count() == 2
    assert offline.locator(f"{ROOT} .pplc-cancel").is_hidden()
    offline.locator(f"{ROOT} .pplc-swap").click()
    assert offline.locator(f"{ROOT} .pplc-better-a").inner_text().endswith(
        f"{LABELS[1]} predicted better")
    offline.locator(ROOT).screenshot(path=str(ARTIFACTS / "compare-exported.png"))
    assert offline.dialogs == [] and offline.errors == [] and offline.attempted == []
    assert offline.locator(f"{ROOT} b#injected").count() == 0
    assert offline.locator(f"{ROOT} .pplc-text").inner_text().replace("\u00a0", " ") == TEXT


def test_comparison_with_a_chat_context_offline(offline, tiny_gpt2, tiny_llama, tmp_path):  # noqa: F811
    """A context every model read first: shown above the words as its turns, uncoloured,
    its markup inert text; the words are those of the continuation."""
    import copy

    from ppl_widget import compare, load_model

    template = ("{% for m in messages %}<|endoftext|>{{ m['role'] }}\n{{ m['content'] }}"
                "<|endoftext|>\n{% endfor %}{% if add_generation_prompt %}<|endoftext|>"
                "assistant\n{% endif %}")
    models = []
    for lm in (tiny_gpt2, tiny_llama):
        tok = copy.deepcopy(lm.tokenizer)
        tok.chat_template = template if lm is tiny_gpt2 else template.replace(
            "<|endoftext|>", "</s>")
        models.append(load_model((lm.model, tok), device="cpu", dtype="float32"))
    chat = [{"role": "user", "content": 'Say it <b id="ctx">bold</b> & "quoted".'}]
    reply = "The cat sat on the mat."
    cmp = compare(reply, models, labels=LABELS[:2], context=chat, max_length=32, stride=16)
    path = tmp_path / "comparison-context.html"
    cmp.to_html(path)
    offline.goto(path.as_uri())
    offline.wait_for_selector(f"{ROOT} .pplc-word", timeout=30_000)
    box = offline.locator(f"{ROOT} .pplw-context")
    assert box.is_visible()
    assert offline.locator(f"{ROOT} .pplw-context-role").inner_text() == "user"
    assert box.locator(".pplw-context-text").inner_text() == chat[0]["content"]
    assert "read, not scored" in box.locator(".pplw-context-label").text_content()
    assert offline.locator(f"{ROOT} b#ctx").count() == 0  # text, never markup
    above = offline.evaluate(
        "() => { const c = document.querySelector('.pplc-root .pplw-context');"
        " const t = document.querySelector('.pplc-root .pplc-text');"
        " return !!(c.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING); }")
    assert above
    assert offline.locator(f"{ROOT} .pplc-word").count() == len(reply.split())
    assert offline.locator(f"{ROOT} .pplc-text").inner_text().replace("\u00a0", " ") == reply
    offline.locator(ROOT).screenshot(path=str(ARTIFACTS / "compare-context.png"))
    assert offline.dialogs == [] and offline.errors == [] and offline.attempted == []
