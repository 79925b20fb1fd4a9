"""Typing into the live page with a transformer (ONNX with its key/value cache) in headless
Chromium on this CPU: how long after the last keystroke the colours are complete, and what
an edit costs, each beside score()'s time for the same text in Python.

* one word typed at the end of a ~200-token text (real keystrokes: the editor's 0.4 s
  debounce included), from the last keystroke to the run's end;
* the same text scored from scratch in the page (its first token changed: nothing kept);
* an edit in the middle (a word near the text's middle replaced), run start to end;
* a long text (several windows): an edit in its last window, and how many tokens the
  reuse rule kept (the earlier windows: ``reused_tokens``).

    python benchmarks/bench_live_typing.py             # SmolLM2 fp32 (export cached)
    python benchmarks/bench_live_typing.py --variant q4
    python benchmarks/bench_live_typing.py --smoke     # seconds: a tiny random Llama
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_live_page import ARGS, CHROMIUM, serve, text_of_tokens, training_text  # noqa: E402

LIVE = "document.querySelector('#pplv').pplwLive"


def wait_run(pg: Any, text: str) -> dict[str, Any]:
    """The page's run of ``text``, once done: its timings (ms, the page's clock) and the
    settings it reports (reused_tokens)."""
    pg.wait_for_function(f"t => {{ const l = {LIVE}; "
                         "const r = l && l.timings[l.timings.length - 1]; "
                         "return !!r && l.model.get('text') === t && r.done !== null && "
                         "l.model.get('status') === 'done'; }", arg=text, timeout=900_000)
    return pg.evaluate(f"() => {{ const l = {LIVE}; return {{...l.timings[l.timings.length - 1], "
                       "reused: l.model.get('settings').reused_tokens, "
                       "tokens: l.view.store.length}; }")


def set_text(pg: Any, text: str) -> dict[str, Any]:
    """A new text straight into the page's model (no debounce): its run."""
    pg.evaluate(f"t => {{ const l = {LIVE}; l.model.set('text', t); l.model.save_changes(); }}",
                text)
    return wait_run(pg, text)


def type_at_end(pg: Any, word: str) -> float:
    """Type ``word`` at the end of the editor's text, key by key: ms from the last
    keystroke to the end of the run that scores it."""
    box = pg.locator(".pplw-editor")
    pg.evaluate("() => { window.__lastKey = 0; document.addEventListener('keydown', "
                "() => (window.__lastKey = performance.now()), true); }")
    text = box.input_value()
    box.focus()
    box.press("Control+End")
    box.type(word, delay=60)
    run = wait_run(pg, text + word)
    return run["done"] - pg.evaluate("() => window.__lastKey")


def python_ms(lm: Any, text: str) -> float:
    from ppl_widget import score

    score(text, lm, top_k=5)  # warm
    t0 = time.perf_counter()
    score(text, lm, top_k=5)
    return (time.perf_counter() - t0) * 1e3


def bench(folder: Path, lm: Any, short: str, long_text: str, edit_word: str) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    server, url = serve(folder)
    row: dict[str, Any] = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            ctx = browser.new_context(viewport={"width": 1200, "height": 800})
            ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith(url)
                      else r.abort())
            pg = ctx.new_page()
            pg.goto(f"{url}index.html")
            # (a first visit reloads once, for cross-origin isolation: wait across it)
            pg.wait_for_function(f"() => !!{LIVE}", timeout=120_000)
            wait_run(pg, pg.evaluate(f"() => {LIVE}.model.get('text')"))
            full = set_text(pg, short)
            row["tokens"] = full["tokens"]
            scratch = set_text(pg, "X" + short[1:])  # first token changed: nothing kept
            row["scratch_ms"] = scratch["done"] - scratch["start"]
            set_text(pg, short)
            row["typed_word_ms"] = type_at_end(pg, edit_word)
            words = short.split(" ")
            mid = len(words) // 2
            edited = " ".join(words[:mid] + ["elephant"] + words[mid + 1:]) + edit_word
            middle = set_text(pg, edited)
            row["middle_ms"] = middle["done"] - middle["start"]
            row["middle_tokens_after"] = len(lm.tokenizer(" ".join(words[mid:]) + edit_word)
                                             ["input_ids"])
            # a long text: an edit in its last window keeps the windows before it
            longest = set_text(pg, long_text)
            row["long_tokens"] = longest["tokens"]
            row["long_scratch_ms"] = longest["done"] - longest["start"]
            last = set_text(pg, long_text + edit_word)
            row["long_last_window_ms"] = last["done"] - last["start"]
            row["long_reused_tokens"] = last["reused"]
            ctx.close()
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
    row["python_ms"] = python_ms(lm, short)
    row["python_long_ms"] = python_ms(lm, long_text)
    return row


def print_row(name: str, r: dict[str, Any]) -> None:
    print(f"model: {name}; {r['tokens']}-token text, {r['long_tokens']}-token long text")
    print(f"{'what':52} {'page ms':>9} {'score() ms':>11} {'page/Py':>8}")
    lines = [
        ("one word typed at the end: last key -> colours done", r["typed_word_ms"],
         r["python_ms"]),
        ("same text from scratch (run start -> done)", r["scratch_ms"], r["python_ms"]),
        (f"edit in the middle ({r['middle_tokens_after']} tokens after it)", r["middle_ms"],
         r["python_ms"]),
        ("long text from scratch", r["long_scratch_ms"], r["python_long_ms"]),
        (f"long text, edit in its last window (kept {r['long_reused_tokens']})",
         r["long_last_window_ms"], r["python_long_ms"]),
    ]
    for what, page, py in lines:
        print(f"{what:52} {page:9.0f} {py:11.0f} {page / py:8.2f}")
    print("typed: real keystrokes, the editor's 0.4 s debounce included; the others: the "
          "text set in the page's model (no debounce). score(): Python, the whole text.")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variant", default="fp32", help="fp32, int8 or q4")
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--long", type=int, default=1400, help="the long text's tokens")
    ap.add_argument("--smoke", action="store_true", help="a tiny random model (seconds)")
    ap.add_argument("--out", type=Path, help="write the row as JSON")
    args = ap.parse_args(argv)
    from ppl_widget import export_live_page
    from ppl_widget.scoring.kinds.onnx.onnx_files import OnnxLiveModel

    source = training_text(60_000)
    if args.smoke:
        from tiny_llama import tiny_llama

        lm = tiny_llama([source[:20_000]], max_positions=128)
        args.tokens, args.long = 40, 200
    else:
        from ppl_widget import load_model

        lm = load_model()
    short = text_of_tokens(lm, source[20_000:], args.tokens)
    long_text = text_of_tokens(lm, source[20_000:], args.long)
    with tempfile.TemporaryDirectory(prefix="bench-typing-") as tmp:
        model = OnnxLiveModel(lm, args.variant, webgpu=False, measure=False)
        export_live_page(Path(tmp), [model], text="Type here.")
        row = bench(Path(tmp), lm, short, long_text, " garden")
    print_row(model.name, row)
    if args.out:
        args.out.write_text(json.dumps(row, indent=1), encoding="utf-8")
    return row


if __name__ == "__main__":
    main()
