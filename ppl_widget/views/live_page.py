"""A live page with no kernel: a static folder that scores what its reader types, in the
browser.

``export_live_page(folder, models=[...], text=...)`` writes ``index.html``, the front-end
bundles (``live.js``, the page; ``live_worker.js``, the Web Worker that scores), the
widget's CSS, ``coi-serviceworker.js`` (a service worker that gives the page cross-origin
isolation, so WASM threads, on hosts that send no COOP/COEP headers), one subfolder of
files per model and ``manifest.json``, which lists the models as ``{name, kind, files,
settings, bytes}``.  Any static host serves the folder (``python -m http.server``, GitHub
Pages, a course site); the page fetches nothing from outside it (its
Content-Security-Policy says so to the browser too).

A model goes into the page in one of two ways: an ``NGramModel`` (its
counts, as ``scoring/kinds/ngram/ngram_export.py`` writes them;
``js/src/live/models/ngram.js`` scores them), or
any object with ``live_files(folder, name) -> entry``, which writes the files of its kind
into ``folder`` (the model's subfolder) and returns its manifest entry ``{"kind": ...,
"files": {role: path inside the subfolder}, "settings": {...}}`` (the seam for the ONNX
export; ``js/src/live/models/index.js`` maps each kind to its scorer).
"""

from __future__ import annotations

import html
import json
import pathlib
import re
import shutil
from collections.abc import Sequence
from typing import Any

from ..core.windows import check_window_settings
from .assets import bundle_path

FORMAT = "ppl-widget-live"
#: the built files the page loads, copied beside index.html
PAGE_FILES = ("live.js", "live_worker.js", "widget.css", "coi-on-demand.js", "coi-serviceworker.js")
#: the service worker (coi-serviceworker) that makes the page cross-origin isolated where
#: the host sends no COOP/COEP headers: onnxruntime-web's threads need SharedArrayBuffer
COI_WORKER = "coi-serviceworker.js"
#: its policy, loaded before it: register on the first visit, reload only for a transformer
COI_ON_DEMAND = "coi-on-demand.js"
#: no request leaves the folder ('wasm-unsafe-eval': a WebAssembly model kind needs it)
_CSP = ("default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self' blob:; "
        "connect-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        "object-src 'none'; base-uri 'none'; form-action 'none'")
_PAGE_CSS = """\
:root { color-scheme: light dark; }
body { margin: 16px; background: #ffffff; color: #1f1f1f; font: 14px/1.4 system-ui, sans-serif; }
@media (prefers-color-scheme: dark) { body { background: #1e1e1e; color: #e0e0e0; } }
.pplv-bar { display: flex; flex-wrap: wrap; gap: 4px 16px; align-items: baseline; margin: 0 0 8px; }
.pplv-notes { list-style: none; margin: 0; padding: 0; font-size: 12px; opacity: .8; }
.pplv-notes li { display: inline; margin-right: 12px; }
.pplv-loading { font-size: 12px; }
.pplv-loading progress { width: 160px; vertical-align: middle; }
.pplv-bad, .pplv-error { color: #b00020; }
@media (prefers-color-scheme: dark) { .pplv-bad, .pplv-error { color: #ff8a80; } }
"""


def export_live_page(folder: str | pathlib.Path, models: Sequence[Any], text: str = "", *,
                     title: str = "ppl-widget · live", max_length: int | None = None,
                     stride: int | None = None, prefix: str | None = "bos",
                     add_eos: bool = False, top_k: int = 5) -> pathlib.Path:
    """Write the live page into ``folder`` (made if missing) and return its path.

    ``models``: the models the reader can pick, the first shown first (see the module's
    docstring for what a model can be).  ``text``: what the page opens with.
    ``max_length``/``stride``/``prefix``/``add_eos``/``top_k``: score()'s settings, for
    every model (None: the model's own default), checked by score()'s rules here."""
    if isinstance(models, (str, bytes)) or not isinstance(models, Sequence) or not models:
        raise ValueError("models must be a non-empty list of models (an NGramModel, or an "
                         "object with live_files(folder, name))")
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if prefix not in ("bos", None):
        raise ValueError(f"prefix must be 'bos' or None, got {prefix!r}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise ValueError(f"top_k must be a non-negative integer, got {top_k!r}")
    max_length, stride = check_window_settings(max_length, stride)
    settings = {"max_length": max_length, "stride": stride,
                "prefix": "bos" if prefix == "bos" else "none", "add_eos": bool(add_eos),
                "top_k": top_k}
    out = pathlib.Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    entries: list[dict[str, Any]] = []
    slugs: set[str] = set()  # one subfolder per model
    for model in models:
        name = _unique(_model_name(model), {e["name"] for e in entries})
        entries.append(_write_model(model, out, name, settings, slugs))
    for file in PAGE_FILES:
        shutil.copyfile(bundle_path(file), out / file)
    manifest = {"format": FORMAT, "version": 1, "title": title, "text": text,
                "models": entries}
    (out / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1),
                                       encoding="utf-8")
    (out / "index.html").write_text(page_html(title), encoding="utf-8")
    return out


def page_html(title: str) -> str:
    """index.html: the page's frame; the text and the models come from manifest.json."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
            f"<title>{html.escape(title)}</title>"
            '<link rel="icon" href="data:,">'  # no favicon request
            '<link rel="stylesheet" href="widget.css">'
            # fetched as the page opens, beside the scripts (the first colours wait for both)
            '<link rel="preload" href="manifest.json" as="fetch" crossorigin="anonymous">'
            '<link rel="modulepreload" href="live.js">'
            f"<style>{_PAGE_CSS}</style></head><body>"
            f"<h1 class=\"pplv-title\" style=\"font-size:18px\">{html.escape(title)}</h1>"
            '<div id="pplv"><noscript>This page scores text with JavaScript.</noscript></div>'
            # before the page's module: the worker registers on the first visit; the page
            # reloads once for it only when a transformer is about to load
            # (deferred: they run in this order, before the module, without holding the parser)
            f'<script defer src="{COI_ON_DEMAND}"></script>'
            f'<script defer src="{COI_WORKER}"></script>'
            '<script type="module" src="live.js"></script></body></html>\n')


def _model_name(model: Any) -> str:
    name = getattr(model, "name", None)
    return str(name) if name else type(model).__name__


def _unique(name: str, taken: set[str]) -> str:
    out, k = name, 2
    while out in taken:
        out, k = f"{name} ({k})", k + 1
    return out


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "model"


def _write_model(model: Any, out: pathlib.Path, name: str, settings: dict[str, Any],
                 slugs: set[str]) -> dict[str, Any]:
    """Write one model's files into its own subfolder (a slug not in ``slugs``); its
    manifest entry (paths relative to the page, ``bytes``: what the reader downloads)."""
    sub = _unique(_slug(name), slugs).replace(" (", "-").rstrip(")")
    slugs.add(sub)
    folder = out / sub
    folder.mkdir(parents=True, exist_ok=True)
    from ..scoring.kinds.ngram.ngram import NGramModel

    if isinstance(model, NGramModel):
        from ..scoring.kinds.ngram.ngram_export import ngram_to_json

        (folder / "counts.json").write_text(
            json.dumps(ngram_to_json(model), ensure_ascii=False, separators=(",", ":")),
            encoding="utf-8")
        entry: dict[str, Any] = {"kind": "ngram", "files": {"counts": "counts.json"},
                                 "settings": {}}
    elif callable(getattr(model, "live_files", None)):
        entry = dict(model.live_files(folder, name))
    else:
        raise TypeError(f"{name}: a live page runs an NGramModel, or a model with "
                        f"live_files(folder, name) (the ONNX export); got "
                        f"{type(model).__name__}")
    if not isinstance(entry.get("kind"), str) or not isinstance(entry.get("files"), dict):
        raise ValueError(f"{name}: live_files() must return {{'kind': str, 'files': {{role: "
                         f"path}}, 'settings': {{...}}}}, got {entry!r}")
    files = {role: f"{sub}/{path}" for role, path in entry["files"].items()}
    missing = [p for p in files.values() if not (out / p).is_file()]
    if missing:
        raise FileNotFoundError(f"{name}: live_files() named files it did not write: {missing}")
    merged = {**(entry.get("settings") or {}),
              **{k: v for k, v in settings.items() if v is not None}}
    return {**entry, "name": name, "files": files, "settings": merged,
            "bytes": sum((out / p).stat().st_size for p in files.values())}
