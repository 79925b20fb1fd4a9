"""The minimal-pairs view in Chromium, from its static page (no kernel, no network):
each pair's two sentences coloured per token, the delta and verdict, the first
difference marked, sorting by delta, markup kept as text; screenshots to look at."""

from __future__ import annotations

import pandas as pd
import pytest

from .conftest import ARTIFACTS
from .test_export_offline import offline  # noqa: F401  (the network-blocked page fixture)

pytestmark = pytest.mark.browser

FRAME = pd.DataFrame({
    "good": ["The dog sleeps near the river.", "These dogs sleep.",
             'A <b id="injected">bold</b> claim holds.', "The fox jumps."],
    "bad": ["The dog sleep near the river.", "This dogs sleep.",
            'A <b id="injected">bold</b> claims holds.', "The foxes jumps."],
    "phenomenon": ["agreement", "determiner", "markup", "agreement"],
})


def test_pairs_view_offline(offline, tiny_gpt2, tmp_path):  # noqa: F811
    from ppl_widget import score_pairs, show_pairs

    scored = score_pairs(FRAME, tiny_gpt2)
    widget = show_pairs(scored, tiny_gpt2)
    path = tmp_path / "pairs.html"
    widget.to_html(path)
    offline.goto(path.as_uri())
    root = offline.locator(".pplp-root")
    root.wait_for(timeout=20_000)
    pairs = root.locator(".pplp-pair")
    assert pairs.count() == len(FRAME)
    ARTIFACTS.mkdir(exist_ok=True)
    root.screenshot(path=str(ARTIFACTS / "pairs-view.png"))

    # each sentence shown whole, as text, coloured token by token on one scale
    texts = root.locator(".pplp-good .pplp-text").all_inner_texts()
    assert texts == list(FRAME["good"])
    assert offline.locator("#injected").count() == 0 and not offline.dialogs
    colours = root.locator(".pplw-tok").evaluate_all(
        "els => els.map(e => getComputedStyle(e).backgroundColor)")
    assert "rgba(0, 0, 0, 0)" not in colours and len(set(colours)) > 3
    # delta and verdict as the frame has them
    heads = root.locator(".pplp-head").all_inner_texts()
    for head, (_, row) in zip(heads, scored.iterrows(), strict=True):
        shown = f"{row['delta'] / 0.6931471805599453:+.2f}".replace("-", "\u2212")  # true minus
        assert f"{shown} bits" in head
        assert ("prefers good" in head) == bool(row["correct"])
    # the first difference: the marked token of "These"/"This" holds character 2
    first = root.locator(".pplp-pair").nth(1).locator(".pplp-good .pplp-first")
    assert first.count() == 1 and "These".startswith(first.inner_text().strip()[:2])

    # the rich tooltip in the page too (no kernel): hover, then the keyboard
    root.locator(".pplp-tok").nth(2).hover()
    tip = root.locator(".pplw-tooltip")
    tip.wait_for(state="visible")
    assert "token 3 of" in tip.inner_text() and "surprisal" in tip.inner_text()
    offline.mouse.move(0, 0)
    root.locator(".pplp-list").focus()
    offline.keyboard.press("End")
    assert "· bad" in tip.inner_text()  # the last token of the last pair's bad sentence
    root.screenshot(path=str(ARTIFACTS / "pairs-view-tooltip.png"))

    # the exported page follows the OS theme when it switches, after the view is drawn
    offline.emulate_media(color_scheme="dark")
    offline.wait_for_function(
        "() => document.querySelector('.pplp-root').classList.contains('pplw-dark')")
    dark = root.locator(".pplw-tok").evaluate_all(
        "els => els.map(e => getComputedStyle(e).backgroundColor)")
    assert dark != colours
    root.screenshot(path=str(ARTIFACTS / "pairs-view-dark.png"))
    offline.emulate_media(color_scheme="light")

    # sorted by delta, largest first
    root.locator(".pplp-sort").select_option("delta_desc")
    order = [int(t.lstrip("#")) for t in root.locator(".pplp-row").all_inner_texts()]
    assert order == list(scored["delta"].reset_index(drop=True)
                         .sort_values(ascending=False, kind="stable").index)
    root.screenshot(path=str(ARTIFACTS / "pairs-view-sorted.png"))
    assert not offline.errors and not offline.attempted
