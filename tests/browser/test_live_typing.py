"""Typing into the live page with a transformer (a tiny random Llama exported to ONNX with
its key/value cache): each edit is scored from the cache of the text before it and the
windows the kernel's rule keeps (js/src/live/run.js, reuse.js), and what the page's store
holds after the edit equals score() of the text from scratch, within 1e-4 nats a token."""

from __future__ import annotations

import numpy as np
import pytest

from ppl_widget import export_live_page, score

from .conftest import ARTIFACTS
from .test_live_page import BOX, open_page, served, shown

pytestmark = pytest.mark.browser
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

# ~120 tokens of the tiny tokenizer: windows of 64 every 32, so edits fall in later windows
TEXT = ("the cat sat on the mat and looked at the dog who sat on the log by the door. " * 3).strip()


@pytest.fixture(scope="module")
def site(tmp_path_factory, tiny_llama):
    from ppl_widget.scoring.kinds.onnx.onnx_files import OnnxLiveModel

    mp = pytest.MonkeyPatch()
    mp.setenv("PPL_WIDGET_CACHE", str(tmp_path_factory.mktemp("onnx-cache")))
    folder = tmp_path_factory.mktemp("typing")
    export_live_page(folder, [OnnxLiveModel(tiny_llama, "fp32", webgpu=False, measure=False)],
                     text=TEXT)
    mp.undo()
    yield from served(folder)


def check(got: dict, lm) -> np.ndarray:
    """The page's tokens are score()'s; the per-token |Δ surprisal| (nats)."""
    res = score(got["text"], lm, top_k=5)
    assert got["ids"] == res.token_ids.tolist() and got["spans"] == len(res)
    assert got["rank"] == res.rank.tolist()
    diff = np.abs(np.asarray(got["surprisal"], np.float64) - res.surprisal)
    assert diff.max() < 1e-4, diff.max()
    return diff


def settings_of(pg) -> dict:
    return pg.evaluate(f"() => document.querySelector('{BOX}').pplwLive.model.get('settings')")


def test_edits_scored_from_the_cache_equal_score_from_scratch(browser, site, tiny_llama):
    context, pg = open_page(browser, site)
    first = shown(pg)
    check(first, tiny_llama)
    assert len(first["ids"]) > 96  # three windows of 64 (every 32)
    editor = pg.locator(".pplw-editor")
    edits = [
        ("append (typed)", None),
        ("edit in the middle", TEXT.replace("looked", "glared", 1) + " more"),
        ("edit across a window boundary", None),
        ("delete at the end", None),
        ("undo", TEXT),
    ]
    for name, text in edits:
        before = pg.evaluate(f"() => document.querySelector('{BOX}').pplwLive.model.get('text')")
        if name == "append (typed)":
            editor.click()
            editor.press("Control+End")
            editor.type(" more", delay=20)
            want = before + " more"
        elif name == "edit across a window boundary":
            cut = len(before) // 2
            want = before[:cut - 3] + "XYZW" + before[cut + 1:]
        elif name == "delete at the end":
            want = before[:-6]
        else:
            want = text
        if name != "append (typed)":
            editor.fill(want)
        pg.wait_for_function(f"() => document.querySelector('{BOX}').pplwLive.model"
                             f".get('text') === {want!r}", timeout=20_000)
        got = shown(pg)
        assert got["text"] == want, name
        check(got, tiny_llama)
        reused = settings_of(pg)["reused_tokens"]
        if name in ("append (typed)", "delete at the end"):
            assert reused > 64, (name, reused)  # the windows before the last one kept
    assert pg.errors == [] and pg.refused == []
    ARTIFACTS.mkdir(exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / "live-typing-light.png"), full_page=True)
    context.close()


def test_bench_live_typing_smoke(tmp_path):
    # benchmarks/bench_live_typing.py --smoke: every figure measured and printed beside
    # score()'s time
    from .conftest import bench_smoke

    stdout, row = bench_smoke("bench_live_typing.py", tmp_path / "row.json")
    assert "page/Py" in stdout and "last key -> colours done" in stdout
    for key in ("typed_word_ms", "scratch_ms", "middle_ms", "long_scratch_ms",
                "long_last_window_ms", "python_ms", "python_long_ms"):
        assert row[key] > 0, key
    # the editor's debounce is in it: at least js/src/live/loading.js's MIN_WAIT_MS (150 ms;
    # it fits the model's cost, up to 400 ms)
    assert row["typed_word_ms"] > 150
    # the long text's edit in its last window kept the windows before it
    assert 0 < row["long_reused_tokens"] < row["long_tokens"]
