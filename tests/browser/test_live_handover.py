"""A run that a newer text stops hands over to the newer text's run, in Chromium (issue #44):
the live page with a tiny random Llama exported to ONNX (windows of 64 every 32, pieces of
32 tokens), a text set, and a newer one typed at several moments of its run: before its
first piece, between two pieces, after its last.  Each time the page ends "done" with the
typed text's tokens and numbers, those of Python's score(); and from the first key typed
until then, it does not say "done".

The moments are not left to timing: the page's onnxruntime-web module is served wrapped
(the browser's requests are routed), its session.run waiting at a gate the test opens piece
by piece from the page (a message to the worker, which the wrapper listens to)."""

from __future__ import annotations

import pytest

from ppl_widget import export_live_page

from .test_live_page import BOX, served, shown
from .test_live_typing import check

pytestmark = pytest.mark.browser
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

TEXT = ("the cat sat on the mat and looked at the dog who sat on the log by the door. " * 3).strip()
TAIL = " then the dog saw a cat on the mat and the cat saw the dog by the log at the door"
LIVE = f"document.querySelector('{BOX}').pplwLive"
ORT = "ort.wasm.min.mjs"

# onnxruntime-web with a gate before each session.run: {type: "test-gate", more: n} lets n
# more runs through; every change is reported as {type: "test-gate", ran, waiting}
GATED_ORT = """
import * as ort from "./ORT?real";
export const env = ort.env;
export const Tensor = ort.Tensor;
let allowed = 1e9, ran = 0;
const waiting = [];
const report = () => self.postMessage({ type: "test-gate", ran, waiting: waiting.length });
const release = () => {
  while (waiting.length && ran < allowed) { ran += 1; waiting.shift()(); }
  report();
};
self.addEventListener("message", (e) => {
  if (e.data && e.data.type === "test-gate") { allowed = ran + e.data.more; release(); }
});
export const InferenceSession = {
  async create(...args) {
    const s = await ort.InferenceSession.create(...args);
    return { inputNames: s.inputNames, outputNames: s.outputNames,
             run: (feeds) => new Promise((go) => { waiting.push(go); release(); })
               .then(() => s.run(feeds)) };
  },
};
""".replace("ORT", ORT, 1)


@pytest.fixture(scope="module")
def site(tmp_path_factory, tiny_llama):
    from ppl_widget.scoring.kinds.onnx.onnx_files import OnnxLiveModel

    mp = pytest.MonkeyPatch()
    mp.setenv("PPL_WIDGET_CACHE", str(tmp_path_factory.mktemp("onnx-cache")))
    folder = tmp_path_factory.mktemp("handover")
    export_live_page(folder, [OnnxLiveModel(tiny_llama, "fp32", webgpu=False, measure=False)],
                     text=TEXT)
    mp.undo()
    yield from served(folder)


def open_gated(browser, site):
    """The page, its onnxruntime-web module wrapped with the gate; nothing out of the folder."""
    context = browser.new_context(viewport={"width": 1200, "height": 800})

    def route(r):
        url = r.request.url
        if not url.startswith(site):
            r.abort()
        elif url.endswith("/" + ORT):
            r.fulfill(status=200, content_type="text/javascript", body=GATED_ORT)
        else:
            r.continue_()

    context.route("**/*", route)
    pg = context.new_page()
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.goto(site + "index.html")
    pg.wait_for_function(f"() => !!{LIVE}", timeout=60_000)
    pg.evaluate(f"""() => {{ window.gate = {{ran: 0, waiting: 0}};
        {LIVE}.worker.addEventListener('message', (e) => {{
            if (e.data && e.data.type === 'test-gate') window.gate = e.data; }}); }}""")
    return context, pg


def gate(pg, more: int) -> None:
    pg.evaluate(f"n => {LIVE}.worker.postMessage({{type: 'test-gate', more: n}})", more)


def held_at(pg, ran: int) -> None:
    """Wait until `ran` pieces ran and the next one waits at the gate."""
    pg.wait_for_function(f"() => window.gate.ran === {ran} && window.gate.waiting > 0",
                         timeout=20_000)


def set_text(pg, text: str) -> None:
    """Set the page's text, and wait until its run has started (until then the page may still
    say "done" of the text before)."""
    runs = pg.evaluate(f"t => {{ const l = {LIVE}, n = l.timings.length; l.model.set('text', t);"
                       " l.model.save_changes(); return n; }", text)
    pg.wait_for_function(f"n => {LIVE}.timings.length > n", arg=runs, timeout=20_000)


def status(pg) -> str:
    return pg.evaluate(f"() => {LIVE}.model.get('status')")


def type_newer(pg, kind: str, first: str) -> str:
    """The reader's edit of `first` in the editor, key by key for an append; the text."""
    editor = pg.locator(".pplw-editor")
    if kind == "append":
        editor.click()
        editor.press("Control+End")
        editor.type(" and the dog sat", delay=10)
        return first + " and the dog sat"
    newer = first.replace("looked", "glared", 1)
    editor.fill(newer)
    return newer


EDITS = {"append": TEXT + TAIL, "middle": TEXT.replace("the mat", "a rug", 1) + TAIL}


@pytest.mark.parametrize("kind", ["append", "middle"])
def test_newer_text_typed_during_a_run_is_what_the_page_ends_with(browser, site, tiny_llama,
                                                                  kind):
    context, pg = open_gated(browser, site)
    check(shown(pg), tiny_llama)
    first = EDITS[kind]
    for moment in ("before its first piece", "between pieces", "after its last piece"):
        set_text(pg, TEXT)
        check(shown(pg), tiny_llama)
        ran = pg.evaluate("() => window.gate.ran")
        gate(pg, 0)  # hold the next piece
        set_text(pg, first)
        held_at(pg, ran)
        if moment == "between pieces":
            gate(pg, 1)
            held_at(pg, ran + 1)
        elif moment == "after its last piece":
            gate(pg, 10**9)
            got = shown(pg)
            assert got["text"] == first, moment
            check(got, tiny_llama)
        want = type_newer(pg, kind, first)
        # from the first key the page is not "done": its text is about to change
        assert status(pg) == "scoring", moment
        gate(pg, 10**9)
        pg.wait_for_function(f"t => {LIVE}.model.get('text') === t", arg=want, timeout=20_000)
        got = shown(pg)
        assert got["text"] == want, moment
        check(got, tiny_llama)  # the typed text's ids and numbers, those of score()
        assert pg.evaluate(f"() => {LIVE}.view.store.totalTokens") == len(got["ids"])
    assert pg.errors == []
    context.close()
