"""A transformer scoring in the browser: each ONNX variant of a model (export_onnx_model)
loaded by the live page's adapter (js/src/live/models/onnx.js) in a Web Worker of headless
Chromium, on a page served from 127.0.0.1, against ``score()`` in torch on the same CPU.

Prints per variant: the page's weight (model + tokenizer + onnxruntime-web), the time to the
first colours of a ~200-token text (cold: fetch, session, tokenize, first window; warm: an
edit once the model is loaded), tokens/s of the graph in the browser vs ``score()``, the
per-token |Δ surprisal| against ``score()`` (mean, max), whether the ids equal Python's,
Chromium's peak memory (all its processes), and every request that left 127.0.0.1 (none).

    python benchmarks/bench_onnx_page.py                  # SmolLM2-135M, fp32 int8 q4
    python benchmarks/bench_onnx_page.py --variants q4 --isolated   # threads (COOP/COEP)
    python benchmarks/bench_onnx_page.py --smoke          # tiny random Llama, fp32 (tests)
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
HERE = ROOT / "benchmarks" / "onnx_page"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
CSP = ("default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self' blob:; "
       "connect-src 'self'")


def build_page(folder: pathlib.Path, lm, variants: list[str], webgpu: bool,
               cache: bool = True) -> dict:
    """Each variant in its subfolder (file paths relative to the page, as export_live_page
    writes them), the harness bundled beside index.html; the entries by variant."""
    from ppl_widget.scoring.kinds.onnx.onnx_files import export_onnx_model

    entries = {}
    for v in variants:
        entry = export_onnx_model(lm, folder / v, v, webgpu=webgpu, cache=cache)
        entry["files"] = {role: f"{v}/{path}" for role, path in entry["files"].items()}
        entries[v] = entry
    esbuild = ROOT / "js" / "node_modules" / ".bin" / "esbuild"
    subprocess.run([str(esbuild), str(HERE / "harness_worker.js"), "--bundle", "--format=esm",
                    "--log-level=warning", f"--outfile={folder / 'harness_worker.js'}"],
                   check=True)
    shutil.copyfile(HERE / "harness.js", folder / "harness.js")
    (folder / "index.html").write_text(
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><meta http-equiv='
        f'"Content-Security-Policy" content="{CSP}"><link rel="icon" href="data:,">'
        '<script src="harness.js"></script></head><body>ONNX bench</body></html>',
        encoding="utf-8")
    return entries


def serve(folder: pathlib.Path, isolated: bool) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.SimpleHTTPRequestHandler):
        extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                          ".mjs": "text/javascript", ".js": "text/javascript",
                          ".wasm": "application/wasm"}

        def end_headers(self) -> None:
            if isolated:  # cross-origin isolation: SharedArrayBuffer, so WASM threads
                self.send_header("Cross-Origin-Opener-Policy", "same-origin")
                self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
            super().end_headers()

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class PeakMemory:
    """Peak summed RSS of Chromium's processes, sampled every 50 ms."""

    def __init__(self, pid: int) -> None:
        import psutil

        self.root = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            total = 0
            for p in [self.root, *self.root.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            time.sleep(0.05)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def run_browser(url: str, entries: dict, text: str, windows: list, top_k: int) -> dict:
    from playwright.sync_api import sync_playwright

    reports = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for variant, entry in entries.items():
            context = browser.new_context()  # a cold cache per variant
            page = context.new_page()
            outside = []
            page.on("request", lambda r, out=outside: out.append(r.url)
                    if not r.url.startswith(url) and not r.url.startswith("data:") else None)
            page.goto(url)
            import psutil

            browser_pid = next(c.pid for c in psutil.Process().children(recursive=True)
                               if "chromium" in c.name() or "chrome" in c.name())
            memory = PeakMemory(browser_pid)
            report = page.evaluate("job => window.scoreInWorker(job)",
                                   {"entry": entry, "text": text, "windows": windows,
                                    "topK": top_k})
            report["peak_rss"] = memory.stop()
            report["outside_requests"] = outside
            reports[variant] = report
            context.close()
        browser.close()
    return reports


def torch_rate(text: str, lm, max_length: int) -> tuple[float, object]:
    """score()'s tokens/s on this CPU (the second of two runs) and its result."""
    from ppl_widget import score

    score(text, lm, max_length=max_length)
    t0 = time.perf_counter()
    result = score(text, lm, max_length=max_length)
    return len(result) / (time.perf_counter() - t0), result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="tiny random Llama, fp32 only")
    ap.add_argument("--variants", default="fp32,int8,q4")
    ap.add_argument("--isolated", action="store_true",
                    help="serve with COOP/COEP headers (WASM threads)")
    ap.add_argument("--webgpu", action="store_true",
                    help="also ship onnxruntime-web's WebGPU build (headless: no GPU)")
    ap.add_argument("--keep", help="write the page here and keep it")
    args = ap.parse_args(argv)

    from ppl_widget import load_model
    from ppl_widget.core.windows import default_stride, plan_windows
    from ppl_widget.scoring.kinds.onnx.onnx_check import CHECK_TEXT

    text = CHECK_TEXT
    if args.smoke:
        from tiny_llama import tiny_llama

        lm = tiny_llama([text] * 4, max_positions=64)
        variants = ["fp32"]
    else:
        lm = load_model(None, device="cpu")
        variants = args.variants.split(",")
    top_k = 5
    folder = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="ppl-widget-onnx-page-"))
    folder.mkdir(parents=True, exist_ok=True)
    entries = build_page(folder, lm, variants, args.webgpu, cache=not args.smoke)
    max_length = entries[variants[0]]["settings"]["max_length"]
    rate, ref = torch_rate(text, lm, max_length)
    n_positions = len(ref) + 1  # the prefix token, then the text's tokens
    windows = [[w.input_start, w.input_end, w.target_start, w.target_end]
               for w in plan_windows(n_positions, max_length, default_stride(max_length))]
    server = serve(folder, args.isolated)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        reports = run_browser(url, entries, text, windows, top_k)
    finally:
        server.shutdown()
    print(f"model {lm.name}: {len(ref)} tokens, windows of {max_length}, "
          f"{len(windows)} window(s); score() in torch on this CPU: {rate:,.0f} tokens/s; "
          f"served {'with' if args.isolated else 'without'} cross-origin isolation")
    print(f"{'variant':8} {'page MB':>8} {'model MB':>9} {'cold first colours s':>21} "
          f"{'warm s':>7} {'tok/s':>7} {'vs torch':>8} {'mean |Δ|':>9} {'max |Δ|':>9} "
          f"{'ids':>4} {'peak MB':>8} {'outside':>7}")
    failed = False
    for v, rep in reports.items():
        if not rep.get("ok"):
            print(f"{v:8} FAILED: {rep.get('error')}")
            failed = True
            continue
        diff = np.abs(np.asarray(rep["surprisal"]) - ref.surprisal)
        same_ids = rep["ids"] == ref.token_ids.tolist()
        page_mb = sum(p.stat().st_size for p in (folder / v).rglob("*") if p.is_file()) / 1e6
        model_mb = entries[v]["model_bytes"] / 1e6
        first = (rep["loadMs"] + rep["tokenizeMs"] + rep["windowMs"][0]) / 1e3
        js_rate = len(ref) / (sum(rep["windowMs"]) / 1e3)
        print(f"{v:8} {page_mb:8.1f} {model_mb:9.1f} {first:21.2f} "
              f"{rep['warmFirstMs'] / 1e3:7.2f} {js_rate:7.0f} {js_rate / rate:7.2f}x "
              f"{diff.mean():9.2e} {diff.max():9.2e} {'same' if same_ids else 'DIFF':>4} "
              f"{rep['peak_rss'] / 1e6:8.0f} {len(rep['outside_requests']):7d}")
        print(f"         load {rep['loadMs'] / 1e3:.2f} s, tokenize {rep['tokenizeMs']:.1f} ms, "
              f"windows {[round(w) for w in rep['windowMs']]} ms, backend {rep['dtype']}, "
              f"isolated={rep['threads']}")
        failed |= not same_ids or bool(rep["outside_requests"])
    print(json.dumps({v: {k: r.get(k) for k in ("loadMs", "tokenizeMs", "windowMs",
                                                 "warmFirstMs", "peak_rss", "device")}
                      for v, r in reports.items()}))
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
