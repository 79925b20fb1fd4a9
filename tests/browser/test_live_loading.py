"""How the live page loads, in Chromium, served by a plain static server that sends no
COOP/COEP headers and records every path asked of it: the bigram colours at once, a
transformer (a tiny random Llama as ONNX) is not requested until the reader picks it, then
loads with a download bar in MB; the page's service worker (coi-serviceworker) registers
on the first visit without a reload, and the page reloads once, keeping what the reader
did, when the transformer is picked: then it is cross-origin isolated and onnxruntime-web
gets its threads; nothing is requested outside the folder."""

from __future__ import annotations

import functools
import http.server
import threading

import numpy as np
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from ppl_widget import NGramModel, export_live_page, score

from .conftest import ARTIFACTS

pytestmark = pytest.mark.browser

TRAIN = ["the cat sat on the mat", "the dog sat on the log", "a cat saw a dog",
         "the quick brown fox jumps over the lazy dog"]
TEXT = "the cat sat on the log. the fox saw a dog"
BOX = "#pplv"
LIVE = "() => { const l = document.querySelector('#pplv').pplwLive; return l && "


class Recorded(http.server.SimpleHTTPRequestHandler):
    """A static host as GitHub Pages is one: files, no COOP/COEP; every path kept."""

    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".mjs": "text/javascript", ".js": "text/javascript",
                      ".wasm": "application/wasm"}

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.paths.append(self.path)
        super().do_GET()

    def log_message(self, *args) -> None:
        pass


@functools.lru_cache(maxsize=1)
def tiny_transformer():
    """A tiny random Llama for export_live_page (its ONNX export: seconds)."""
    import sys

    from .conftest import ROOT

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from tiny_llama import tiny_llama

    from ppl_widget.scoring.kinds.onnx.onnx_files import OnnxLiveModel

    lm = tiny_llama(TRAIN * 20, vocab_size=120, max_positions=64)
    return OnnxLiveModel(lm, "fp32", cache=False, measure=False, webgpu=False)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """(url, paths asked, bigram, transformer) of a page listing the bigram first."""
    pytest.importorskip("onnxruntime")
    folder = tmp_path_factory.mktemp("live")
    bigram = NGramModel(2, "kneser-ney").fit(TRAIN)
    transformer = tiny_transformer()
    export_live_page(folder, [bigram, transformer], text=TEXT, title="Loading")
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Recorded, directory=str(folder)))
    server.paths = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", server.paths, bigram, transformer
    server.shutdown()


WORKER_ACTIVE = ("() => navigator.serviceWorker.getRegistration()"
                 ".then(r => !!(r && r.active && r.active.state === 'activated'))")


def open_page(browser, url, scheme="light", later_visit=False):
    """A fresh context (no service worker yet), every request URL recorded; `later_visit`:
    reloaded once the worker is active, as a reader's next visit (isolated from the start)."""
    context = browser.new_context(viewport={"width": 1200, "height": 800}, color_scheme=scheme)
    pg = context.new_page()
    pg.urls, pg.errors, pg.console = [], [], []
    context.on("request", lambda r: pg.urls.append(r.url))
    context.on("requestfailed", lambda r: pg.console.append(f"failed {r.url}: {r.failure}"))
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.on("console", lambda m: pg.console.append(f"{m.type}: {m.text}"))
    pg.goto(url + "index.html")
    if later_visit:
        pg.wait_for_function(WORKER_ACTIVE, timeout=20_000)
        # and in control of this page (its activate handler claims it): then it serves the
        # next navigation. (Once in ~17 runs the reload came back unisolated, the worker
        # active but not in control: a reload begun before the claim would do that; the
        # cause is not proven, the flake too rare to reproduce at will.)
        pg.wait_for_function("() => !!navigator.serviceWorker.controller", timeout=20_000)
        pg.reload()
        try:
            pg.wait_for_function("() => window.crossOriginIsolated === true", timeout=20_000)
        except PlaywrightTimeout as e:
            # an isolated document comes in a new renderer process; a wait begun across
            # that swap may watch the document before it: read the page as it is now
            state = isolation_state(pg)
            if not state["isolated"]:
                raise AssertionError(f"not isolated after the reload: {state}") from e
    return context, pg


def isolation_state(pg) -> dict:
    """What a page that stayed unisolated shows: its URL, whether the worker controls it,
    the headers its document came with, the page's errors and console."""
    state = pg.evaluate("""async () => {
        const r = await navigator.serviceWorker.getRegistration();
        return {url: location.href, title: document.title, isolated: window.crossOriginIsolated,
                controlled: !!navigator.serviceWorker.controller,
                worker: r && r.active ? r.active.state : null,
                body: (document.body ? document.body.innerText : '').slice(0, 200)}; }""")
    return {**state, "errors": pg.errors, "console": pg.console[-10:],
            "requests": pg.urls[-15:]}


def wait_done(pg, model: str, timeout=60_000):
    pg.wait_for_function(
        LIVE + f"l.model.get('settings').model === {model!r} && "
        "document.querySelector('.pplw-status').textContent === 'done' && "
        "document.querySelectorAll('.pplw-content .pplw-tok').length === l.view.store.length; }",
        timeout=timeout)
    return pg.evaluate(LIVE + """{ text: l.model.get('text'),
        ids: Array.from(l.view.store.token_ids.slice(0, l.view.store.length)),
        surprisal: Array.from(l.view.store.surprisal.slice(0, l.view.store.length))}; }""")


def test_bigram_at_once_then_one_reload_for_the_transformer(browser, site):
    url, paths, bigram, transformer = site
    paths.clear()
    context, pg = open_page(browser, url)
    # a first visit: the bigram colours with no reload (the n-gram needs no threads)
    got = wait_done(pg, bigram.name)
    ref = score(got["text"], bigram, top_k=5)
    assert got["ids"] == ref.token_ids.tolist()
    assert got["surprisal"] == ref.surprisal.astype(np.float32).tolist()
    assert pg.evaluate("() => window.crossOriginIsolated") is False
    assert paths.count("/index.html") == 1
    # ... while the service worker registers, for the transformer's threads later
    pg.wait_for_function(WORKER_ACTIVE, timeout=20_000)
    # what the reader does before picking the transformer survives the page's one reload
    typed = "the dog saw the cat on the mat"
    pg.locator(".pplw-editor").fill(typed)
    pg.wait_for_function(LIVE + f"l.model.get('text') === {typed!r}; }}")
    wait_done(pg, bigram.name)
    pg.select_option(".pplw-toolbar select >> nth=0", "word")
    # the transformer is listed with its size, and not one of its files was asked for
    option = pg.locator(".pplv-model option").nth(1)
    assert " MB)" in option.inner_text() or " kB)" in option.inner_text()
    assert "pick it in the menu" in pg.locator(".pplv-notes").inner_text()
    # the worker answered every load it began at its start (the bigram's "model" message),
    # and the page never asked it for the transformer (it asks through its loads record)
    pg.wait_for_function(LIVE + f"l.status.has({bigram.name!r}); }}")
    assert pg.evaluate(LIVE + f"l.loads.has({transformer.name!r}); }}") is False
    assert not [p for p in paths if "model.fp32.onnx" in p or "tokenizer.json" in p]
    first_visit = len(paths)
    # picked: the page reloads once (now isolated), then the transformer is fetched, its
    # session built, its colours those of score() for the text the reader typed
    pg.select_option(".pplv-model", transformer.name)
    pg.wait_for_function("() => window.crossOriginIsolated === true", timeout=20_000)
    got = wait_done(pg, transformer.name)
    assert got["text"] == typed
    assert pg.evaluate(LIVE + "l.model.get('level'); }") == "word"
    assert paths.count("/index.html") == 2
    # nothing came later either: the pick's reload is the first request after the first
    # visit's (its index.html), so whatever the first visit asked for, however late, is
    # logged before it; the transformer's files come only after it
    reload_at = paths.index("/index.html", first_visit)
    assert not [p for p in paths[:reload_at] if "model.fp32.onnx" in p or "tokenizer.json" in p]
    assert pg.evaluate("() => new URL(location.href).searchParams.get('model')") == transformer.name
    ref = score(got["text"], transformer.lm, top_k=5)
    assert got["ids"] == ref.token_ids.tolist()
    assert np.abs(np.array(got["surprisal"]) - ref.surprisal).max() < 1e-3
    assert any("model.fp32.onnx" in p for p in paths)
    load = pg.evaluate(LIVE + f"l.loads.get({transformer.name!r}); }}")
    assert load["ready"] > load["asked"] and 0 <= load["fetch_ms"] <= load["ready_ms"]
    assert pg.evaluate("() => document.querySelector('.pplv-loading').hidden")
    # every request stayed in the folder (the page's, its worker's, the service worker's)
    # (a blob: URL of the page's origin: onnxruntime-web's thread workers)
    assert [u for u in pg.urls if not u.startswith((url, "blob:" + url))] == []
    assert [p for p in paths if not p.startswith("/")] == []
    assert pg.errors == []
    context.close()


def test_download_bar_in_mb(browser, site):
    # the download held back: the bar says how many MB of how many have come
    url, paths, bigram, transformer = site
    context, pg = open_page(browser, url, scheme="dark", later_visit=True)
    wait_done(pg, bigram.name)
    release = []
    context.route("**/model.fp32.onnx", lambda r: release.append(r))
    pg.select_option(".pplv-model", transformer.name)
    bar = pg.locator(".pplv-loading")
    bar.wait_for(state="visible", timeout=10_000)
    assert "downloading" in bar.inner_text() and "MB" in bar.inner_text()
    # the bigram keeps working meanwhile
    pg.select_option(".pplv-model", bigram.name)
    wait_done(pg, bigram.name)
    assert bar.is_hidden()
    pg.select_option(".pplv-model", transformer.name)
    bar.wait_for(state="visible", timeout=10_000)
    ARTIFACTS.mkdir(exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / "live-loading-dark.png"), full_page=True)
    for r in release:
        r.continue_()
    wait_done(pg, transformer.name)
    assert bar.is_hidden() and pg.errors == []
    context.close()


def test_missing_transformer_file_is_named_and_bigram_keeps_working(browser, tmp_path):
    pytest.importorskip("onnxruntime")
    bigram = NGramModel(2, "kneser-ney").fit(TRAIN)
    export_live_page(tmp_path, [bigram, tiny_transformer()], text=TEXT)
    onnx = next(tmp_path.glob("*/model.fp32.onnx"))
    onnx.unlink()
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Recorded, directory=str(tmp_path)))
    server.paths = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        context, pg = open_page(browser, url, later_visit=True)
        wait_done(pg, bigram.name)
        pg.select_option(".pplv-model", tiny_transformer().name)
        pg.locator(".pplv-bad").wait_for(timeout=20_000)
        assert "model.fp32.onnx" in pg.locator(".pplv-bad").inner_text()
        assert "404" in pg.locator(".pplv-bad").inner_text()
        # back on the bigram, which still scores what is typed
        pg.wait_for_function("() => document.querySelector('.pplv-model').value === "
                             f"{bigram.name!r}", timeout=10_000)
        pg.locator(".pplw-editor").fill("the dog saw the cat")
        pg.wait_for_function(LIVE + "l.model.get('text') === 'the dog saw the cat'; }")
        got = wait_done(pg, bigram.name)
        assert got["text"] == "the dog saw the cat"
        assert got["ids"] == score(got["text"], bigram).token_ids.tolist()
        pg.screenshot(path=str(ARTIFACTS / "live-loading-missing.png"), full_page=True)
        context.close()
    finally:
        server.shutdown()


def test_sentence_level_matches_python(browser, site):
    # the page's sentences (a JS port of pysbd's rules) give each token score()'s sentence
    from ppl_widget.core.levels import assign_tokens
    from ppl_widget.core.sentences import sentence_spans

    url, paths, bigram, transformer = site
    context, pg = open_page(browser, url)
    text = "Dr. Smith sat on the mat. the dog saw a cat! Did the fox jump?"
    wait_done(pg, bigram.name)
    pg.evaluate("t => { const l = document.querySelector('#pplv').pplwLive; "
                "l.model.set('text', t); l.model.save_changes(); }", text)
    pg.wait_for_function(LIVE + f"l.model.get('text') === {text!r}; }}")
    wait_done(pg, bigram.name)
    got = pg.evaluate(LIVE + "Array.from(l.view.store.sentence.slice(0, l.view.store.length)); }")
    res = score(text, bigram, top_k=5)
    assert got == assign_tokens(text, res.offsets, sentence_spans(text)).tolist()
    assert max(got) == 2
    sentences = res.to_frame("sentence")
    pg.select_option(".pplw-toolbar select >> nth=0", "sentence")
    pg.locator(".pplw-tok").first.hover()
    tip = pg.locator(".pplw-tooltip")
    tip.wait_for(state="visible")
    assert f"{sentences['surprisal_bits'].iloc[0]:.2f} bits" in tip.inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / "live-sentences-light.png"), full_page=True)
    context.close()


def test_bench_course_page_smoke(tmp_path):
    # benchmarks/bench_course_page.py --smoke in its own process: every figure printed
    import json
    import subprocess
    import sys

    from .conftest import ROOT

    pytest.importorskip("onnxruntime")
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_course_page.py"),
                           "--smoke", "--out", str(out)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "first window" in proc.stdout and "score() in torch" in proc.stdout
    r = json.loads(out.read_text())
    assert r["transformer_requests_before_pick"] == 0 and r["outside_requests"] == []
    assert r["frame_isolated"] is True and r["first_visit_isolated"] is False
    assert r["cold_reload_ms"] > 0
    assert r["navigation_to_first_colours_ms"] > 0 and len(r["bigram_edit_ms"]) == 2
    assert r["cold_fetch_ms"] >= 0 and r["cold_session_ms"] > 0 and r["cold_first_window_ms"] > 0
