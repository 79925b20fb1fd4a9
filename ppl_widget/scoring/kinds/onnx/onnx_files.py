"""The files a live page (``views/live_page.py``) loads for a transformer model, and the
manifest entry that lists them: ``export_onnx_model(lm, folder, variant)``, or
``OnnxLiveModel(lm, variant)`` in ``export_live_page(folder, models=[...])``.

``folder`` (the model's subfolder of the page) gets ``model.<variant>.onnx`` (the graph of
``onnx_export``), ``tokenizer.json`` (the very tokenizer ``load_model`` gave, which the
page's tokenizer, ``js/src/live/tokenizer.js``, reads), ``config.json`` (the entry itself)
and onnxruntime-web's runtime (``ort/``: its ES modules and .wasm files, copied from the
front-end build, so the page fetches nothing from elsewhere).  The entry's file names are
relative to ``folder``; ``js/src/live/models/onnx.js`` loads them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from .onnx_export import (
    DEFAULT_MAX_LENGTH,
    DEFAULT_TOP_K,
    VARIANTS,
    copy_into,
    kv_shape,
    model_file,
)

#: The tokenizer.json parts the page's tokenizer implements (js/src/live/tokenizer.js);
#: another part fails the export here rather than tokenizing differently in the browser.
BROWSER_TOKENIZER = {
    "normalizer": {None},
    "pre_tokenizer": {"ByteLevel", "Metaspace", "Split", "Digits", "Sequence"},
    "model": {"BPE"},
}


#: onnxruntime-web's files, as ``js/scripts/copy_ort.mjs`` leaves them in the build: role ->
#: the ES module the page imports (the .mjs glue and .wasm it loads lie beside it)
ORT_DIR = Path(__file__).parents[3] / "static" / "ort"
ORT_ENTRY = {"ort_wasm": "ort.wasm.min.mjs", "ort_webgpu": "ort.webgpu.min.mjs"}
ORT_FILES = {"ort_wasm": ("ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm"),
             "ort_webgpu": ("ort-wasm-simd-threaded.asyncify.mjs",
                            "ort-wasm-simd-threaded.asyncify.wasm")}


def copy_runtime(folder: Path, *, webgpu: bool = True) -> dict[str, str]:
    """onnxruntime-web's files into ``folder/ort``; the entry's file roles for them."""
    roles = ["ort_wasm", "ort_webgpu"] if webgpu else ["ort_wasm"]
    names = [n for r in roles for n in (ORT_ENTRY[r], *ORT_FILES[r])]
    missing = [n for n in names if not (ORT_DIR / n).is_file()]
    if missing:
        raise FileNotFoundError(f"onnxruntime-web's files are not in {ORT_DIR} ({missing}): "
                                "build the front end (cd js && npm install && npm run build)")
    (folder / "ort").mkdir(parents=True, exist_ok=True)
    for name in names:
        copy_into(ORT_DIR / name, folder / "ort" / name)
    files = {r: f"ort/{ORT_ENTRY[r]}" for r in roles}
    for r in roles:
        files.update({f"{r}_{k}": f"ort/{n}" for k, n in zip(("glue", "binary"), ORT_FILES[r],
                                                                 strict=True)})
    return files


def check_browser_tokenizer(spec: dict[str, Any]) -> None:
    """Raise ValueError if ``spec`` (a parsed tokenizer.json) uses a part the page's
    tokenizer lacks."""
    problems = []
    normalizer = spec.get("normalizer")
    if (normalizer or {}).get("type") not in BROWSER_TOKENIZER["normalizer"]:
        problems.append(f"normalizer {normalizer.get('type')!r}")
    for pre in _flat(spec.get("pre_tokenizer")):
        if pre.get("type") not in BROWSER_TOKENIZER["pre_tokenizer"]:
            problems.append(f"pre-tokenizer {pre.get('type')!r}")
    model = spec.get("model") or {}
    if model.get("type") not in BROWSER_TOKENIZER["model"]:
        problems.append(f"model {model.get('type')!r}")
    elif model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"):
        problems.append("BPE with a subword prefix or suffix")
    if problems:
        raise ValueError(
            "the live page's tokenizer implements byte-level and Metaspace BPE without a "
            f"normalizer ({sorted(BROWSER_TOKENIZER['pre_tokenizer'])}); this tokenizer has "
            f"{', '.join(problems)}, which it would tokenize differently from Python")


def _flat(pre: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not pre:
        return []
    if pre.get("type") == "Sequence":
        return [p for child in pre.get("pretokenizers", []) for p in _flat(child)]
    return [pre]


def export_onnx_model(lm: Any, folder: str | Path, variant: str = "fp32", *,
                      top_k: int = DEFAULT_TOP_K, max_length: int | None = None,
                      measure: bool = True, cache: bool = True,
                      webgpu: bool = True) -> dict[str, Any]:
    """Write ``lm`` (anything ``load_model`` takes) into ``folder`` for a live page, as
    ``variant`` (``fp32``, ``int8`` or ``q4``), and return its manifest entry.

    ``max_length``: the longest window the page may run (default: the model's, capped at
    ``DEFAULT_MAX_LENGTH``); ``top_k``: alternatives per token the graph returns (a page
    shows at most these).  ``measure``: score ``onnx_check.CHECK_TEXT`` with ``score()``
    and with the graph (onnxruntime on this machine) and put the per-token difference in
    the entry (and print it).  ``cache``: keep the export in ``~/.cache/ppl_widget/onnx``
    for next time.  ``webgpu``: also ship onnxruntime-web's WebGPU build (25 MB, fetched
    only by a browser with WebGPU); the WASM build (12 MB) always.
    """
    from ..models import as_loaded
    from .onnx_check import measure_difference

    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    lm = as_loaded(lm)
    if not getattr(lm.tokenizer, "is_fast", False):
        raise ValueError(f"{lm.name}: the page needs the tokenizer's tokenizer.json (a fast "
                         "tokenizer)")
    tokenizer_spec = json.loads(lm.tokenizer.backend_tokenizer.to_str())
    check_browser_tokenizer(tokenizer_spec)
    max_length = min(max_length or DEFAULT_MAX_LENGTH, lm.context_length or DEFAULT_MAX_LENGTH)
    top_k = min(top_k, lm.vocab_size)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    runtime = copy_runtime(folder, webgpu=webgpu)  # fails early where the build lacks them
    source = model_file(lm, variant, top_k=top_k, max_length=max_length, cache=cache)
    files = {"model": f"model.{variant}.onnx", "tokenizer": "tokenizer.json",
             "config": "config.json", **runtime}
    try:  # the two uses of the export itself
        copy_into(source, folder / files["model"])
        diff = measure_difference(lm, source, max_length=max_length) if measure else None
    finally:
        if not cache:  # the export's own temporary folder: the page has its copy
            shutil.rmtree(source.parent, ignore_errors=True)
    (folder / files["tokenizer"]).write_text(json.dumps(tokenizer_spec, ensure_ascii=False),
                                             encoding="utf-8")
    tok = lm.tokenizer
    prefix = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    entry: dict[str, Any] = {
        "name": lm.name if variant == "fp32" else f"{lm.name} ({variant})",
        "kind": "onnx", "files": files,
        "settings": {"variant": variant, "max_length": max_length,
                     "context_length": max_length, "graph_top_k": top_k,
                     "vocab_size": lm.vocab_size,
                     "prefix_id": None if prefix is None else int(prefix),
                     "eos_id": None if tok.eos_token_id is None else int(tok.eos_token_id),
                     # the graph's key/value cache (past_* in, present_* out): the page runs
                     # a window in pieces and an edit from its first changed token
                     "kv_cache": kv_shape(lm)},
        "model_bytes": (folder / files["model"]).stat().st_size,
    }
    if diff is not None:
        entry["difference"] = diff
        print(f"{entry['name']}: {entry['model_bytes'] / 1e6:.1f} MB, |Δ surprisal| vs "
              f"score() over {diff['tokens']} tokens: mean {diff['mean_abs_nats']:.2e}, "
              f"max {diff['max_abs_nats']:.2e} nats")
    (folder / files["config"]).write_text(json.dumps(entry, indent=1), encoding="utf-8")
    return entry


class OnnxLiveModel:
    """A transformer for ``export_live_page(folder, models=[...])``: written into the page
    as the ONNX ``variant`` by ``export_onnx_model`` (keywords: its own)."""

    def __init__(self, lm: Any = None, variant: str = "fp32", **options: Any) -> None:
        from ..models import as_loaded

        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        self.lm = as_loaded(lm)
        self.variant = variant
        self.options = options
        self.name = self.lm.name if variant == "fp32" else f"{self.lm.name} ({variant})"

    def live_files(self, folder: str | Path, name: str) -> dict[str, Any]:
        """The live page's seam (``views/live_page.py``): files into ``folder``, the entry."""
        entry = export_onnx_model(self.lm, folder, self.variant, **self.options)
        return {**entry, "name": name}
