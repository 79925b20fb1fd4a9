"""What the front-end tests share (test_front_ends.py: the live front ends;
test_front_ends_static.py: executed notebooks read offline, docs/front-ends.md): the
notebook's cells, the servers they run under, and what a reader must see in a widget."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ppl_widget import score

from .conftest import ARTIFACTS, ROOT, _lab_settings, chromium

WIDGET, COMPARE = ".pplw-root:not(.pplc-root)", ".pplc-root"  # the comparison root is both
TEXT = ("The quick brown fox jumps over the lazy dog. Perplexity is the exponential of the "
        "average negative log-likelihood. Sliding windows score every token exactly once, "
        "with as much context as fits. Surprisal is minus the log probability of a token "
        "given its context.")   # 88 tokens with the tiny GPT-2
STREAMED = TEXT * 12                # ~1,000 tokens, ~130 chunks at 30 ms: long enough to watch
GATE = "stream-go.flag"  # in the kernel's folder: the streamed run goes on once it exists
LONG = TEXT * 60                    # cancelled early
TYPED = " The end."
CMP_TEXT = "The cat sat on the mat. The dog sat on the log."
WINDOW = "max_length=32, stride=8"
PPL_KEYS = ("token_ppl", "word_ppl", "char_ppl", "byte_ppl")

SETUP = f"""\
import sys, time
sys.path[:0] = [{str(ROOT / 'tests')!r}, {str(ROOT)!r}]
from conftest import _tiny
from ppl_widget import PerplexityWidget, ComparisonWidget
lm = _tiny("gpt2")
slow = _tiny("gpt2")  # the same model, 30 ms a batch: the chunks arrive one by one
slow2 = _tiny("gpt2")
_hook = slow2.model.base_model.register_forward_pre_hook(lambda *_: time.sleep(0.03))
import os
_calls = [0]
def _gate(*_):
    # the streamed run's first chunk is drawn, the rest wait until the test has seen it
    # on the page (it writes {GATE}): however loaded the machine, the page watches the
    # run, not its end
    _calls[0] += 1
    _t = time.time()
    while _calls[0] > 1 and not os.path.exists({GATE!r}) and time.time() - _t < 120:
        time.sleep(0.05)
    time.sleep(0.03)
_hook = slow.model.base_model.register_forward_pre_hook(_gate)"""
# one expression each: the widget a front end shows (marimo wraps it in mo.ui.anywidget)
STREAM = f"PerplexityWidget({STREAMED!r}, slow, {WINDOW}, batch_size=1)"
CANCEL = f"PerplexityWidget({LONG!r}, slow2, {WINDOW}, batch_size=1)"
EDIT = f"PerplexityWidget({TEXT!r}, lm, {WINDOW}, editable=True)"
COMPARE_W = (f"ComparisonWidget({CMP_TEXT!r}, [lm, _tiny('llama')], "
             f"labels=['gpt2-tiny', 'llama-tiny'], {WINDOW})")
LIVE = [STREAM, CANCEL, EDIT, COMPARE_W]


# ---- servers and pages ---------------------------------------------------------------
def needs(module: str, what: str) -> None:
    browser_path = chromium()
    if not Path(browser_path).exists():
        pytest.skip(f"Chromium not found at {browser_path}")
    try:
        __import__(module)
    except ImportError:
        pytest.skip(f"{what} is not installed (pip install {module.replace('_', '-')})")


def front_end_env(work: Path) -> dict:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "JUPYTER_CONFIG_DIR": str(work / "config"),
            "JUPYTERLAB_SETTINGS_DIR": str(work / "settings"),
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def serve(cmd: list[str], ready: str, work: Path, name: str):
    """Start ``cmd`` in ``work``; return the process once ``ready`` answers."""
    _lab_settings(work / "settings")
    log = open(work / f"{name}.log", "w")
    proc = subprocess.Popen(cmd, cwd=work, env=front_end_env(work), stdout=log,
                            stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    while True:
        try:
            urllib.request.urlopen(ready, timeout=2)
            return proc
        except urllib.error.HTTPError:  # it answered
            return proc
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                raise RuntimeError(f"{name} did not start:\n"
                                   + (work / f"{name}.log").read_text()) from None
            time.sleep(0.5)


def stop(proc, work: Path, name: str) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(work / f"{name}.log", ARTIFACTS / f"fe-{name}.log")


def shot(page, name: str, **kw) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"fe-{name}.png"), **kw)


# ---- what a reader sees ------------------------------------------------------------
def expected(tiny_gpt2, text: str):
    return score(text, tiny_gpt2, max_length=32, stride=8)


def check_coloured_panel_tooltip(page, root, res, name: str) -> None:
    """Every token a coloured span, the panel's numbers the result's, a tooltip on hover."""
    spans = root.locator(".pplw-tok")
    assert spans.count() == len(res)
    colours = spans.evaluate_all("els => els.map(e => getComputedStyle(e).backgroundColor)")
    assert "rgba(0, 0, 0, 0)" not in colours
    titles = root.locator(".pplw-ppl-v").evaluate_all("els => els.map(e => e.title)")[:4]
    m = res.metrics()
    assert [float(t) for t in titles] == pytest.approx([m[k] for k in PPL_KEYS], rel=1e-4)
    root.locator(".pplw-tok[data-i='3']").hover()
    tip = root.locator(".pplw-tooltip")
    tip.wait_for(state="visible")
    assert "bits" in tip.inner_text() and tip.locator(".pplw-tt-alt").count() == 5
    shot(page, f"{name}-tooltip")


def check_compare(page, compare, name: str) -> None:
    compare.locator(".pplc-chip.pplc-done").nth(1).wait_for(timeout=120_000)
    words = compare.locator(".pplc-word")
    assert words.count() == len(CMP_TEXT.split())
    colours = words.evaluate_all("els => els.map(e => getComputedStyle(e).backgroundColor)")
    assert "rgba(0, 0, 0, 0)" not in colours and len(set(colours)) > 1
    assert compare.locator(".pplc-table tbody tr").count() == 2
    compare.scroll_into_view_if_needed()
    shot(page, f"{name}-compare")
