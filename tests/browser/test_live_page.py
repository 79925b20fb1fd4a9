"""The live page (export_live_page) in Chromium, served by python -m http.server on
127.0.0.1, every other request refused and recorded: it scores as Python does, re-scores
what is typed (markup stays text), names a model file it cannot load and shows the
n-gram instead.  Screenshots (light and dark) land in test-artifacts/."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

from ppl_widget import NGramModel, export_live_page, score

from .conftest import ARTIFACTS, offline_context, record_dialogs
from .test_export_offline import MARKUP

pytestmark = pytest.mark.browser

TRAIN = ["the cat sat on the mat", "the dog sat on the log", "a cat saw a dog",
         "the quick brown fox jumps over the lazy dog"]
TEXT = "the cat sat on the log\nthe fox saw a dog"
TYPED = MARKUP + "the dog sat\non the mat"
BOX = "#pplv"


class MissingFile:
    """A model whose file is gone after the export (a page copied without it)."""

    name = "transformer (file removed)"

    def live_files(self, folder, name):
        (folder / "model.onnx").write_bytes(b"0")
        return {"kind": "ngram", "files": {"counts": "model.onnx"}, "settings": {}}


@pytest.fixture(scope="module")
def lms():
    return [NGramModel(2, "kneser-ney").fit(TRAIN), NGramModel(3, "add-k", k=0.5).fit(TRAIN)]


@pytest.fixture(scope="module")
def site(tmp_path_factory, lms):
    folder = tmp_path_factory.mktemp("live")
    export_live_page(folder, [MissingFile(), *lms], text=TEXT, title="Live <surprisal>")
    (folder / "transformer-file-removed" / "model.onnx").unlink()
    yield from served(folder)


def served(folder):
    """python -m http.server on 127.0.0.1 serving folder: yields its URL."""
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                               "127.0.0.1", "--directory", str(folder)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    for _ in range(100):
        try:
            urllib.request.urlopen(url, timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    yield url
    server.terminate()
    server.wait(timeout=10)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def open_page(browser, site, scheme="light"):
    context, pg = offline_context(browser, allowed=site, height=800)
    context.close()  # offline_context's own context, replaced by one with a colour scheme
    context = browser.new_context(viewport={"width": 1200, "height": 800}, color_scheme=scheme)
    seen, refused = [], []

    def route(r):
        (seen if r.request.url.startswith(site) else refused).append(r.request.url)
        r.continue_() if r.request.url.startswith(site) else r.abort()

    context.route("**/*", route)
    pg = context.new_page()
    pg.seen, pg.refused, pg.errors = seen, refused, []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    record_dialogs(pg)
    pg.goto(site + "index.html")
    return context, pg


def shown(pg) -> dict:
    """What the page's store holds once its run is done (float32 as the widget keeps it).

    The check and the read are one turn of the page's event loop: a run starting between a
    check and a separate read would clear the drawn tokens under it."""
    # done, and drawn (the view draws in the next animation frame)
    handle = pg.wait_for_function(f"""() => {{
        const live = document.querySelector('{BOX}').pplwLive;
        if (!(live && document.querySelector('.pplw-status').textContent === 'done')) return null;
        const s = live.view.store, n = s.length;
        const spans = document.querySelectorAll('.pplw-content .pplw-tok').length;
        if (spans !== n) return null;
        return {{text: live.model.get('text'), model: live.model.get('settings').model,
                 ids: Array.from(s.token_ids.slice(0, n)),
                 start16: Array.from(s.start16.slice(0, n)),
                 surprisal: Array.from(s.surprisal.slice(0, n)),
                 rank: Array.from(s.rank.slice(0, n)), spans}};
    }}""", timeout=20_000)
    return handle.json_value()


def same_as_python(got: dict, lm) -> None:
    res = score(got["text"], lm, top_k=5)
    assert got["model"] == lm.name
    assert got["ids"] == res.token_ids.tolist() and got["spans"] == len(res)
    assert got["start16"] == res.offsets[:, 0].tolist()  # ASCII: code points = UTF-16
    assert got["surprisal"] == res.surprisal.astype(np.float32).tolist()
    assert got["rank"] == res.rank.tolist()


def test_live_page_scores_offline_and_falls_back(browser, site, lms):
    context, pg = open_page(browser, site)
    got = shown(pg)
    # the first model's file is missing: the page says which, and shows the n-gram
    notes = pg.locator(".pplv-notes").inner_text()
    assert "model.onnx is missing (HTTP 404)" in notes
    same_as_python(got, lms[0])
    assert got["text"] == TEXT
    # every request stayed in the folder, the worker's included
    assert pg.refused == [] and any(u.endswith("counts.json") for u in pg.seen)
    assert pg.errors == [] and pg.dialogs == []
    # the word level, as the widget's: one colour per word (its tokens' sum)
    words = score(TEXT, lms[0]).to_frame("word")
    pg.select_option(".pplw-toolbar select >> nth=0", "word")
    pg.locator(".pplw-tok").first.hover()
    tip = pg.locator(".pplw-tooltip")
    tip.wait_for(state="visible")
    assert f"{words['surprisal_bits'].iloc[0]:.2f} bits" in tip.inner_text()
    pg.select_option(".pplw-toolbar select >> nth=0", "token")
    ARTIFACTS.mkdir(exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / "live-page-light.png"), full_page=True)
    # the other n-gram, picked by the reader
    pg.select_option(".pplv-model", lms[1].name)
    pg.wait_for_function(f"() => document.querySelector('{BOX}').pplwLive.model"
                         f".get('settings').model === {lms[1].name!r}")
    same_as_python(shown(pg), lms[1])
    context.close()


def test_typing_rescores_and_markup_stays_text(browser, site, lms):
    context, pg = open_page(browser, site, scheme="dark")
    shown(pg)
    editor = pg.locator(".pplw-editor")
    editor.fill("")
    editor.type(TYPED, delay=5)  # runs start and go stale while typing
    pg.wait_for_function(f"() => document.querySelector('{BOX}').pplwLive.model.get('text')"
                         f" === {TYPED!r}", timeout=20_000)
    got = shown(pg)
    same_as_python(got, lms[0])
    content = pg.locator(".pplw-content")
    assert content.evaluate("e => e.textContent") == TYPED
    assert content.locator("img, b, script").count() == 0 and pg.locator("img").count() == 0
    assert pg.dialogs == [] and pg.errors == [] and pg.refused == []
    # a refused setting is named beside its field, and nothing is lost
    pg.locator(".pplw-form input[aria-label='stride']").fill("5000")
    pg.locator(".pplw-form").evaluate("f => f.requestSubmit()")
    pg.wait_for_function("() => document.querySelector('.pplw-form').textContent"
                         ".includes('must not exceed max_length')", timeout=10_000)
    assert pg.locator(".pplw-content .pplw-tok").count() == got["spans"]
    pg.screenshot(path=str(ARTIFACTS / "live-page-dark.png"), full_page=True)
    context.close()


def test_cancel_keeps_what_was_scored(browser, site, lms):
    context, pg = open_page(browser, site)
    shown(pg)
    long_text = " ".join(TRAIN * 2500)  # ~60k tokens
    # the reader presses Cancel as the first chunk is drawn (inside the page: no round trip)
    pg.evaluate(f"""t => {{
        const l = document.querySelector('{BOX}').pplwLive, deliver = l.model.deliver.bind(l.model);
        l.model.deliver = (msg, b) => {{
            deliver(msg, b);
            if (msg.type === 'chunk') {{
                window.__cancelled_run = msg.run_id;
                l.model.deliver = deliver;
                document.querySelector('.pplw-progress .pplw-btn').click();
            }}
        }};
        l.model.set('text', t); l.model.save_changes();
    }}""", long_text)
    pg.wait_for_function("() => document.querySelector('.pplw-status').textContent === "
                         "'cancelled'", timeout=20_000)
    # what the view holds now; from now on, whatever reaches it (through deliver, its one
    # way in) is noted until the first message of the next run comes
    got = pg.evaluate(f"""() => {{
        const l = document.querySelector('{BOX}').pplwLive, deliver = l.model.deliver.bind(l.model);
        const handle = l.worker.onmessage, late = [];
        l.model.deliver = (msg, b) => {{
            if (window.__settled === undefined) late.push(msg.type + ' of run ' + msg.run_id);
            deliver(msg, b);
        }};
        l.worker.onmessage = (ev) => {{
            const m = ev.data && ev.data.msg;
            if (m && m.run_id > window.__cancelled_run && window.__settled === undefined)
                window.__settled = late.slice();
            handle(ev);
        }};
        const s = l.view.store;
        return {{n: s.length, total: s.totalTokens, partial: s.final && s.final.partial}}; }}""")
    assert 0 < got["n"] <= 1024 < got["total"] and got["partial"] is True
    assert pg.locator(".pplw-content .pplw-tok").count() == got["n"]
    # the next edit scores again, in full.  Nothing more of the cancelled run reached the
    # view before that run's first message: the worker starts a run only once the run
    # before it has stopped, and its messages come in order, so all the cancelled run could
    # still send had come by then
    pg.evaluate(f"t => {{ const l = document.querySelector('{BOX}').pplwLive; "
                "l.model.set('text', t); l.model.save_changes(); }", TEXT)
    assert pg.wait_for_function("() => window.__settled", timeout=20_000).json_value() == []
    same_as_python(shown(pg), lms[0])
    context.close()


def test_page_outside_the_folder_is_refused(browser, site):
    # the page's Content-Security-Policy refuses a request out of the folder in the browser
    context, pg = open_page(browser, site)
    shown(pg)
    blocked = pg.evaluate("""() => new Promise((resolve) => {
        document.addEventListener('securitypolicyviolation', (e) => resolve(e.blockedURI));
        fetch('https://example.com/x').then(() => resolve('fetched'), () => {});
    })""")
    assert blocked.startswith("https://example.com")
    assert pg.refused == []  # it never left the browser
    context.close()


def build_course_site(out, **kwargs):
    import importlib.util

    from .conftest import ROOT

    spec = importlib.util.spec_from_file_location(
        "course_site_build", ROOT / "examples" / "course_site" / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    return build.build(out, **kwargs)


@pytest.fixture(scope="module")
def course_site(tmp_path_factory):
    yield from served(build_course_site(tmp_path_factory.mktemp("course"),
                                       frozen_model="bigram"))


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_course_site(browser, course_site, scheme):
    # the lesson: the live bigram beside the frozen to_html page, both drawn, all offline
    context, pg = open_page(browser, course_site, scheme=scheme)
    live = pg.frame_locator("iframe[src='live/index.html']")
    frozen = pg.frame_locator("iframe[src='frozen.html']")
    live.locator(".pplw-status", has_text="done").wait_for(timeout=20_000)
    frozen.locator(".pplw-static-ready .pplw-tok").first.wait_for(timeout=20_000)
    n_live = live.locator(".pplw-content .pplw-tok").count()
    assert n_live > 10 and n_live == frozen.locator(".pplw-content .pplw-tok").count()
    # the same model and text on both sides: the same numbers in the panels
    ppl = ".pplw-ppl-v"
    assert live.locator(ppl).first.inner_text() == frozen.locator(ppl).first.inner_text()
    assert pg.refused == [] and pg.errors == []
    pg.screenshot(path=str(ARTIFACTS / f"course-site-{scheme}.png"), full_page=True)
    context.close()


def test_course_caption_names_the_model_in_use(browser, tmp_path, lms):
    # the lesson's caption follows the live page's menu; no kernel: no badge speaks of one
    out = build_course_site(tmp_path / "course", frozen_model="bigram", more_models=[lms[1]])
    for site in served(out):
        context, pg = open_page(browser, site)
        caption = pg.locator("figcaption").first
        live = pg.frame_locator("iframe[src='live/index.html']")
        live.locator(".pplw-status", has_text="done").wait_for(timeout=20_000)
        bigram = caption.inner_text()
        assert bigram.startswith("Live: bigram") and lms[1].name not in bigram
        assert pg.locator("#live-about").inner_text().startswith("bigram")
        badge = live.locator(".pplw-badge").first
        assert badge.inner_text() == "final" and "kernel" not in badge.get_attribute("title")
        live.locator(".pplv-model").select_option(lms[1].name)
        pg.wait_for_function("n => document.querySelector('figcaption').textContent === "
                             "`Live: ${n}, in your browser`", arg=lms[1].name, timeout=20_000)
        # the intro and the questions name it too: no "bigram" left once it is not in use
        about = pg.locator("#live-about").inner_text()
        assert about.startswith(lms[1].name) and "trained on" not in about
        assert pg.locator(".live-name").first.inner_text() == lms[1].name
        assert "bigram" not in pg.locator("body > ul").inner_text()
        assert pg.refused == [] and pg.errors == []
        context.close()


@pytest.mark.default_model
def test_course_site_with_the_default_transformer(browser, tmp_path):
    # the course page: the live bigram and the embedded model (ONNX fp32, run by
    # onnxruntime-web in the page's worker) beside the frozen to_html result of score()
    from ppl_widget.scoring.kinds.models import load_model

    out = build_course_site(tmp_path / "course", frozen_model="default", transformer="fp32")
    for site in served(out):
        context, pg = open_page(browser, site)
        frame = next(f for f in pg.frames if f.url.endswith("live/index.html"))
        frame.wait_for_selector(".pplv-model option >> nth=1", state="attached")
        name = frame.evaluate("() => document.querySelector('.pplv-model').options[1].value")
        frame.select_option(".pplv-model", name)
        # without COOP/COEP from the host the lesson reloads once for threads (isolation)
        pg.wait_for_function("() => window.crossOriginIsolated === true", timeout=60_000)
        pg.wait_for_function("() => [...document.querySelectorAll('iframe')].some(f => "
                             "f.contentDocument && f.contentDocument.querySelector("
                             "'#pplv.pplv-ready'))", timeout=60_000)
        frame = next(f for f in pg.frames if f.url.split("?")[0].endswith("live/index.html"))
        frame.wait_for_function(f"""() => {{
            const live = document.querySelector('{BOX}').pplwLive;
            return live && live.model.get('settings').model !== 'bigram' &&
                document.querySelector('.pplw-status').textContent === 'done';
        }}""", timeout=300_000)
        got = frame.evaluate(f"""() => {{
            const s = document.querySelector('{BOX}').pplwLive.view.store, n = s.length;
            return {{ids: Array.from(s.token_ids.slice(0, n)),
                     surprisal: Array.from(s.surprisal.slice(0, n))}};
        }}""")
        text = frame.evaluate(f"() => document.querySelector('{BOX}').pplwLive.model.get('text')")
        ref = score(text, load_model(), top_k=5)
        assert got["ids"] == ref.token_ids.tolist()
        diff = np.abs(np.array(got["surprisal"]) - ref.surprisal)
        assert diff.max() < 1e-3, diff.max()  # fp32 in the browser, within a thousandth
        assert pg.refused == [] and pg.errors == []
        pg.screenshot(path=str(ARTIFACTS / "course-site-transformer.png"), full_page=True)
        context.close()


def test_bench_live_page_smoke(tmp_path):
    # benchmarks/bench_live_page.py --smoke, in its own process (it drives its own
    # Chromium): one row per model, every column measured
    from .conftest import bench_smoke

    stdout, (row,) = bench_smoke("bench_live_page.py", tmp_path / "rows.json", timeout=300)
    assert "load→1st" in stdout and "JS/Py" in stdout
    assert row["kind"] == "ngram" and row["model_kB"] > 0
    assert row["first_download_kB"] > row["model_kB"]
    assert row["first_colours_ms"] > 0 and row["tokens_per_s_long"] > 0
    assert row["short_tokens"] >= 20 and row["long_tokens"] >= 2 * row["short_tokens"] - 5
    assert row["python_tokens_per_s_long"] > 0 and row["chromium_rss_MB"] > 0
    assert row["longest_page_task_ms"] >= 0
