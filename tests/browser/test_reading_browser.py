"""The reading view in Chromium, from its static page (no kernel, no network): words
coloured and shown as text, a reading-time bar under each, the colour switch, the
tooltip by mouse and keyboard, the unit picker, and the live switch to the dark theme;
screenshots to look at."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from .conftest import ARTIFACTS
from .test_export_offline import offline  # noqa: F401  (the network-blocked page fixture)

pytestmark = pytest.mark.browser

WORDS = ("The ancient Romans had a god of <b id=\"injected\">beginnings</b> and gates. "
         "Janus was shown with two faces, one looking back, one ahead.").split(" ")


def _per_word() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = len(WORDS)
    s = rng.gamma(2.0, 2.0, n)
    rt = 150 + 14 * s + rng.normal(0, 25, n)
    pred = 160 + 12 * s
    pred[:2] = np.nan  # the first words of a text: no prediction (spillover)
    rt[5] = np.nan
    frame = pd.DataFrame({"model": "lm", "rt": "gaze_rt", "text": [1] * 13 + [2] * (n - 13),
                          "word": WORDS, "rt_value": rt, "surprisal_bits": s,
                          "frequency": rng.uniform(2, 7, n), "length": [len(w) for w in WORDS],
                          "rt_predicted": pred, "rt_residual": rt - pred})
    frame.attrs["by"] = ["text"]
    return frame


def _colours(root) -> list[str]:
    return root.locator(".pplr-w").evaluate_all(
        "els => els.map(e => getComputedStyle(e).backgroundColor)")


def test_reading_view_offline(offline, tmp_path):  # noqa: F811
    from ppl_widget import show_reading

    frame = _per_word()
    path = tmp_path / "reading.html"
    show_reading(frame).to_html(path)
    offline.goto(path.as_uri())
    root = offline.locator(".pplr-root")
    root.wait_for(timeout=20_000)
    ARTIFACTS.mkdir(exist_ok=True)

    # every word as text, in order, in two texts; markup stays text
    assert root.locator(".pplr-w").all_inner_texts() == WORDS
    assert root.locator(".pplr-text").count() == 2
    assert offline.locator("#injected").count() == 0 and not offline.dialogs
    light = _colours(root)
    assert "rgba(0, 0, 0, 0)" not in light and len(set(light)) > 5
    # the bars: taller for slower words, none for the word without a reading time
    heights = root.locator(".pplr-bar").evaluate_all(
        "els => els.map(e => e.getBoundingClientRect().height)")
    rt = frame["rt_value"].to_numpy()
    assert heights[5] == 0 and root.locator(".pplr-word").nth(5).get_attribute(
        "class").endswith("pplr-nort")
    slow, fast = int(np.nanargmax(rt)), int(np.nanargmin(rt))
    assert heights[slow] > 2 * heights[fast] > 0
    root.screenshot(path=str(ARTIFACTS / "reading-view.png"))

    # the tooltip: hover a word, then the keyboard to the last word
    root.locator(".pplr-word").nth(3).hover()
    tip = root.locator(".pplw-tooltip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    for part in ("gaze_rt", f"{rt[3]:.0f} ms", "surprisal", "bits", "frequency", "length",
                 "predicted", "residual", "text 1 · word 4 of 13"):
        assert part in text, part
    offline.mouse.move(0, 0)
    root.locator(".pplr-list").focus()
    offline.keyboard.press("End")
    assert f"word {len(WORDS) - 13} of {len(WORDS) - 13}" in tip.inner_text()
    offline.keyboard.press("Home")
    assert "no prediction" in tip.inner_text()  # the first word: not in the regression
    root.screenshot(path=str(ARTIFACTS / "reading-view-tooltip.png"))

    # the unit picker and the colour switch
    root.locator(".pplr-unit").select_option("nats")
    assert "nats" in tip.inner_text()
    root.locator(".pplr-color").select_option("residual")
    residual = _colours(root)
    assert residual != light and "faster than predicted" in root.locator(
        ".pplr-legend").inner_text()
    root.locator(".pplr-color").select_option("rt")
    assert _colours(root) not in (light, residual)
    root.locator(".pplr-color").select_option("surprisal")
    assert _colours(root) == light

    # the page follows the OS theme when it switches, after the view is drawn
    offline.emulate_media(color_scheme="dark")
    offline.wait_for_function(
        "() => document.querySelector('.pplr-root').classList.contains('pplw-dark')")
    dark = _colours(root)
    assert dark != light
    root.screenshot(path=str(ARTIFACTS / "reading-view-dark.png"))
    root.locator(".pplr-color").select_option("residual")
    root.locator(".pplr-word").nth(7).hover()
    root.screenshot(path=str(ARTIFACTS / "reading-view-dark-residual.png"))
    offline.emulate_media(color_scheme="light")
    assert not offline.errors and not offline.attempted


def test_reading_view_of_predictive_powers_frame_per_text(offline, tmp_path):  # noqa: F811
    """MECO English through predictive_power (a word bigram): show_reading(per_word) shows
    the 12 texts as 12 blocks, each headed with its word count and its ΔLL, the tooltip
    placing the word in its text and naming the frequency Zipf."""
    pytest.importorskip("wordfreq")
    from meco_data import meco_dir

    from ppl_widget import NGramModel, load_meco, predictive_power, show_reading

    meco_dir()  # skip (fail under CI) without the data
    en = load_meco("en")
    reading = en[en["model"] == "taint_none"].drop(columns=["model", "surp", "renyi"])
    reading = reading.reset_index(drop=True)
    texts = [" ".join(g["word.x"]) for _, g in reading.groupby("sample_id")]
    with pytest.warns(UserWarning, match="differs from"):  # text 3's shifted labels
        table = predictive_power(reading, {"bigram": NGramModel(2, "kneser-ney").fit(texts)},
                                 rt="gaze_rt", word="word.x", by="sample_id",
                                 baseline=["freq", "len"], fold_by="contiguous")
    per_word = table.attrs["per_word"]
    path = tmp_path / "meco.html"
    show_reading(per_word).to_html(path)
    offline.goto(path.as_uri())
    root = offline.locator(".pplr-root")
    root.wait_for(timeout=20_000)
    sizes = reading.groupby("sample_id", sort=False).size()
    heads = root.locator(".pplr-head").all_inner_texts()
    assert len(heads) == 12 == root.locator(".pplr-text").count()
    for head, (text, n) in zip(heads, sizes.items(), strict=True):
        dll = per_word.loc[per_word["sample_id"] == text, "delta_ll"]
        assert head.startswith(f"text {text} · {n:,} words"), head
        assert f"ΔLL {'+' if dll.mean() > 0 else '−'}{abs(dll.mean()):.4f} nats/word over " \
               f"its {dll.notna().sum():,} words in the regression" in head, head
    summary = root.locator(".pplr-summary").inner_text()
    n = int(table.loc[0, "n"])
    assert f"{len(reading):,} words" in summary and f"over the {n:,} words in the " \
        f"regression ({len(reading) - n:,} left out" in summary
    ARTIFACTS.mkdir(exist_ok=True)
    root.screenshot(path=str(ARTIFACTS / "reading-view-meco.png"))
    third = int(sizes.iloc[:2].sum()) + 11  # text 3, word 12
    _hover_after_scrolling(offline, root.locator(".pplr-word").nth(third))
    tip = root.locator(".pplw-tooltip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    assert f"text 3 · word 12 of {sizes.iloc[2]:,}" in text and "Zipf frequency" in text
    assert "ΔLL of the word" in text
    root.screenshot(path=str(ARTIFACTS / "reading-view-meco-tooltip.png"))
    offline.emulate_media(color_scheme="dark")
    offline.wait_for_function(
        "() => document.querySelector('.pplr-root').classList.contains('pplw-dark')")
    _hover_after_scrolling(offline, root.locator(".pplr-word").nth(third))
    root.screenshot(path=str(ARTIFACTS / "reading-view-meco-dark.png"))
    offline.emulate_media(color_scheme="light")
    assert not offline.errors and not offline.attempted


def _hover_after_scrolling(page, word) -> None:
    """Hover a word far down the view: scroll it into view first and let the scroll events
    arrive (they come before the next frames are drawn), so that the scroll, which hides a
    tooltip, cannot land after the hover that shows it."""
    word.scroll_into_view_if_needed()
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => "
                  "requestAnimationFrame(r)))")
    word.hover()
