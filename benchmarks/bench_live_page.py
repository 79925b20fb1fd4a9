"""The live page (export_live_page) in headless Chromium on this machine's CPU: per model,
what a reader waits for and downloads.

Per model (one row each, whatever kinds the page holds: the n-gram models here, an ONNX
model as soon as a page with one is given by ``--page`` or built by ``extra_models``):

* page weight: the model's files, and the whole first download (bundles, CSS, manifest);
* first colours: from the run's start (the page's first run, the model just picked) to
  the first frame after its first chunk, for a ~200-token text;
* tokens/s: the same text's whole run, then a ~10x longer one (typed into the page), beside
  Python's ``score()`` of the same text with the same model where Python has it (ratio);
* typing: the page thread's longest task (over 50 ms) while the long text is scored;
* memory: the page's JS heap (``performance.memory``) and the RSS of all Chromium processes
  (the worker included) after the long run.

    python benchmarks/bench_live_page.py            # n-gram models, a page built here
    python benchmarks/bench_live_page.py --page DIR # every model of an exported page
    python benchmarks/bench_live_page.py --onnx fp32 int8   # + the default model as ONNX
    python benchmarks/bench_live_page.py --smoke    # seconds: tiny model and texts
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--enable-precise-memory-info"]


def training_text(n_chars: int) -> str:
    from bench_memory import make_text  # English-like text (wordfreq's frequencies)

    return make_text(n_chars, seed=1)


def ngram_models(train: str) -> list[Any]:
    from ppl_widget import NGramModel

    lines = train.replace("? ", "?\n").replace(". ", ".\n").replace("! ", "!\n")
    return [NGramModel(2, "kneser-ney").fit(lines),
            NGramModel(3, "add-k", k=0.1).fit(lines),
            NGramModel(5, "kneser-ney", "char").fit(lines)]


def extra_models(args: argparse.Namespace) -> list[Any]:
    """Models of other kinds to add as rows (objects with ``live_files``, as
    ``export_live_page`` takes them): the default transformer as ONNX (``--onnx VARIANT``),
    where this checkout has the ONNX export (``scoring/kinds/onnx/onnx_files.py``)."""
    from ppl_widget import load_model

    if not args.onnx:
        return []
    from ppl_widget.scoring.kinds.onnx.onnx_files import OnnxLiveModel  # the onnx branch's export

    return [OnnxLiveModel(load_model(), variant) for variant in args.onnx]


def text_of_tokens(lm: Any, source: str, n_tokens: int) -> str:
    """The shortest prefix of ``source`` (cut at a space) holding ``n_tokens`` tokens."""
    words = source.split(" ")
    lo, hi = 1, len(words)
    while lo < hi:
        mid = (lo + hi) // 2
        if len(lm.tokenizer(" ".join(words[:mid]))["input_ids"]) >= n_tokens:
            hi = mid
        else:
            lo = mid + 1
    return " ".join(words[:lo])


def serve(folder: Path) -> tuple[subprocess.Popen, str]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                               "127.0.0.1", "--directory", str(folder)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    for _ in range(100):
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return server, url
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("http.server did not start")


def chromium_rss_mb() -> float:
    """RSS of every Chromium process under this one (renderer and its worker included)."""
    import psutil

    procs = [p for p in psutil.Process().children(recursive=True)
             if "chrom" in (p.name() or "").lower()]
    return sum(p.memory_info().rss for p in procs) / 2**20


def run_in_page(pg: Any, text: str | None) -> dict[str, Any]:
    """Start a run (on ``text``, or wait for the one running) and wait for its end: its
    timings (ms) and the token count."""
    if text is not None:
        pg.evaluate("t => { const l = document.querySelector('#pplv').pplwLive; "
                    "l.model.set('text', t); l.model.save_changes(); }", text)
        pg.wait_for_timeout(50)
    pg.wait_for_function("() => { const l = document.querySelector('#pplv').pplwLive; "
                         "const t = l && l.timings[l.timings.length - 1]; "
                         "return t && t.done !== null && t.firstPaint > 0; }", timeout=600_000)
    return pg.evaluate("() => { const l = document.querySelector('#pplv').pplwLive; "
                       "return l.timings[l.timings.length - 1]; }")


def python_rate(lm: Any, text: str) -> float | None:
    """Python's score() tokens/s on the same text (None: not a model Python scores here)."""
    if not hasattr(lm, "make_forward"):
        return None
    from ppl_widget import score

    score(text[:200], lm)  # warm
    t0 = time.perf_counter()
    res = score(text, lm, top_k=5)
    return len(res) / (time.perf_counter() - t0)


def bench(folder: Path, texts: dict[str, str], lms: dict[str, Any]) -> list[dict[str, Any]]:
    from playwright.sync_api import sync_playwright

    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    page_bytes = sum((folder / f).stat().st_size for f in
                     ("index.html", "live.js", "live_worker.js", "widget.css", "manifest.json"))
    server, url = serve(folder)
    rows = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for entry in manifest["models"]:
                ctx = browser.new_context(viewport={"width": 1200, "height": 800})
                ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith(url)
                          else r.abort())
                pg = ctx.new_page()
                pg.goto(f"{url}index.html?model={urllib.request.quote(entry['name'])}")
                first = run_in_page(pg, None)  # the page's own first run: manifest text
                short = run_in_page(pg, texts["short"])
                # typing stays responsive: the page thread's longest task while it runs
                pg.evaluate("() => { window.__long = []; new PerformanceObserver((l) => "
                            "l.getEntries().forEach((e) => window.__long.push(e.duration)))"
                            ".observe({type: 'longtask'}); }")
                long = run_in_page(pg, texts["long"])
                longest = pg.evaluate("() => Math.max(0, ...window.__long)")
                heap = pg.evaluate("() => performance.memory ? "
                                   "performance.memory.usedJSHeapSize : null")
                lm = lms.get(entry["name"])
                rows.append({
                    "model": entry["name"], "kind": entry["kind"],
                    "model_kB": entry["bytes"] / 1e3,
                    "first_download_kB": (entry["bytes"] + page_bytes) / 1e3,
                    "first_colours_ms_page_load": first["firstPaint"],
                    "first_colours_ms": short["firstPaint"] - short["start"],
                    "short_tokens": short["tokens"],
                    "tokens_per_s_short": short["tokens"] / (short["done"] - short["start"])
                    * 1e3,
                    "long_tokens": long["tokens"],
                    "tokens_per_s_long": long["tokens"] / (long["done"] - long["start"]) * 1e3,
                    "python_tokens_per_s_long": python_rate(lm, texts["long"]) if lm else None,
                    "longest_page_task_ms": longest,
                    "js_heap_MB": heap / 2**20 if heap else None,
                    "chromium_rss_MB": chromium_rss_mb(),
                })
                ctx.close()
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
    return rows


def fmt(v: Any, spec: str = ".0f") -> str:
    return "—" if v is None else format(v, spec)


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'model':34} {'kind':6} {'model kB':>9} {'page kB':>8} {'load→1st':>9} "
          f"{'1st col':>8} {'tok/s 200':>10} {'tok/s long':>11} {'Python':>9} "
          f"{'JS/Py':>6} {'task ms':>8} {'heap MB':>8} {'RSS MB':>7}")
    for r in rows:
        py = r["python_tokens_per_s_long"]
        ratio = r["tokens_per_s_long"] / py if py else None
        print(f"{r['model'][:34]:34} {r['kind']:6} {r['model_kB']:9.1f} "
              f"{r['first_download_kB']:8.1f} {fmt(r['first_colours_ms_page_load']):>7}ms "
              f"{fmt(r['first_colours_ms']):>6}ms {fmt(r['tokens_per_s_short']):>10} "
              f"{fmt(r['tokens_per_s_long']):>11} {fmt(py):>9} {fmt(ratio, '.2f'):>6} "
              f"{fmt(r['longest_page_task_ms']):>8} {fmt(r['js_heap_MB'], '.1f'):>8} "
              f"{fmt(r['chromium_rss_MB']):>7}")
    print("load→1st: from the page's start to its first coloured frame; 1st col: from a new "
          "text's run start to its first coloured frame (~200 tokens); JS/Py: the long "
          "text's tokens/s in the browser over Python's score() on this CPU; task ms: the "
          "page thread's longest task during the long run (0: none over 50 ms)")


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--page", type=Path, help="an exported live page: bench its models")
    ap.add_argument("--tokens", type=int, default=200, help="the short text's tokens")
    ap.add_argument("--long", type=int, default=10, help="the long text: this many times")
    ap.add_argument("--train-chars", type=int, default=300_000)
    ap.add_argument("--onnx", nargs="*", default=[], metavar="VARIANT",
                    help="add the default model as ONNX rows (fp32, int8, q4)")
    ap.add_argument("--smoke", action="store_true", help="tiny model and texts (seconds)")
    ap.add_argument("--out", type=Path, help="write the rows as JSON")
    args = ap.parse_args(argv)
    if args.smoke:
        args.tokens, args.long, args.train_chars = 20, 2, 3_000
    from ppl_widget import export_live_page

    source = training_text(args.train_chars + args.tokens * args.long * 12)  # ~6 chars/word
    train, held_out = source[:args.train_chars], source[args.train_chars:]
    lms: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
        if args.page is None:
            models = ngram_models(train)[:1 if args.smoke else None] + extra_models(args)
            # Python's side of each row: the model, or the one a browser copy was made of
            lms = {m.name: getattr(m, "lm", m) for m in models}
            folder = Path(tmp)
            export_live_page(folder, models, text=held_out[:400])
        else:
            folder = args.page
        ref = next(iter(lms.values()), None)
        short = (text_of_tokens(ref, held_out, args.tokens) if ref
                 else held_out[:args.tokens * 5])
        long_text = (text_of_tokens(ref, held_out, args.tokens * args.long) if ref
                     else held_out[:args.tokens * args.long * 5])
        rows = bench(folder, {"short": short, "long": long_text}, lms)
    print_table(rows)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return rows


if __name__ == "__main__":
    main()
