"""Load a causal language model and its tokenizer: the embedded default, a Hub
id, a local directory, a ``.gguf`` file, or an already-loaded pair."""

from __future__ import annotations

import os
import threading
import warnings
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .devices import CPU_MAX_LENGTH_CAP, cpu_bf16, default_window, resolve_device, resolve_dtype
from .gguf.gguf import DEFAULT_MODEL_NAME, default_gguf_path, load_gguf, load_gguf_tokenizer
from .hf.bf16_products import choose_bf16_products
from .hf.fp32_products import use_fp32_products
from .load_progress import FirstLoadLine, LoadProgress
from .masked.masked_model import MaskedModel, check_masked_tokenizer
from .model_errors import ModelLoadError, ModelSettingError, ModelTypeError, one_line
from .model_kind import ScoringModel
from .model_sources import load_pretrained, load_pretrained_tokenizer, model_family

__all__ = ["CPU_MAX_LENGTH_CAP", "DEFAULT_MODEL_NAME", "LoadedModel", "ModelLoadError",
           "ModelSettingError", "as_loaded", "check_causal", "check_tokenizer", "load_model",
           "load_tokenizer"]



@dataclass
class LoadedModel:
    """A causal LM ready for scoring: ``.model``, ``.tokenizer`` and where it runs."""

    model: Any
    tokenizer: Any
    name: str
    device: Any  # torch.device
    dtype: Any  # torch.dtype
    #: the body compiled by ``compile()`` (torch.compile), or None: scored eagerly
    compiled_body: Any = field(default=None, repr=False, compare=False)
    #: a bf16 model on a CPU: its matrix products, ``"native"`` (torch's bf16) or
    #: ``"float32"`` (from the bf16 weights; ``bf16_products.py``); None elsewhere
    bf16_products: str | None = None

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
        return default_window(self.context_length, self.device)

    @property
    def vocab_size(self) -> int:
        """Rows of the LM head: the outcomes of each predictive distribution."""
        return self.model.get_output_embeddings().weight.shape[0]

    def make_forward(self, top_k: int, max_length: int) -> Any:
        """A ``forward.BatchedForward`` for windows of ``max_length`` positions."""
        from ..runner.forward import BatchedForward

        forward = BatchedForward(self, min(top_k, self.vocab_size))
        # one more input position must fit the model's context (else a second forward)
        forward.end_row_limit = self.context_length or max_length
        forward.full_width = max_length  # the one width a compiled body takes
        return forward

    def compile(self) -> LoadedModel:
        """Compile the transformer body with ``torch.compile``, once; returns the model.

        From then on the batches of full windows (two or more windows of ``max_length``
        positions: the bulk of a long text, of a corpus) run compiled in ``score``,
        ``stream``, the widget and ``score_corpus``; other shapes (a text's last window,
        packed short texts, one-window batches: a CPU's default) run eagerly, so there is
        one compile per window length.  The
        first full batch compiles: 20-40 s on a GPU, after which a batch ran 19-27% faster
        (docs/performance.md), so it pays when many texts are scored with the same model.
        Results equal the eager ones within float noise."""
        from ..runner.forward import compile_body

        compile_body(self)
        return self

    def __repr__(self) -> str:
        compiled = ", compiled" if self.compiled_body is not None else ""
        products = f", {self.bf16_products} products" if self.bf16_products else ""
        return f"<LoadedModel {self.name} on {self.device} ({self.dtype}{products}{compiled})>"


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
               trust_remote_code: bool = False, device_map: Any = None,
               progress: LoadProgress | None = None, served_model: str | None = None,
               tokenizer: Any = None) -> Any:
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

    ``progress(note, fraction)`` hears about a first-time preparation (the default model
    or a ``.gguf`` dequantized into the cache, ~20 s): the note to show and 0.0 .. 1.0.
    Without one, that preparation shows one line (``load_progress.FirstLoadLine``: an
    output line in a notebook, else stderr).  Later loads print nothing and call it not
    at all.

    A model served by vLLM: ``spec`` an OpenAI-compatible server's URL
    (``"http://HOST:PORT/v1"``; ``served_model=`` where it serves several; its API key
    from ``$VLLM_API_KEY`` or ``$OPENAI_API_KEY``) or an offline ``vllm.LLM``; the model's
    own tokenizer is loaded here (``tokenizer=``: a folder, Hub id or tokenizer; default
    the served model's path).  Returns a ``vllm_model.VllmModel`` (docs/vllm.md;
    ``vllm_model.load_vllm`` takes more options).

    An encoder-decoder (an ``AutoModelForSeq2SeqLM`` architecture: T5, BART, ...) is loaded
    with that class and returned as a ``seq2seq_model.Seq2SeqModel``:
    ``score(target, lm, context=source)`` (docs/seq2seq.md).
    """
    from .vllm.vllm_model import is_server_url, is_vllm_engine, load_vllm

    if is_server_url(spec) or is_vllm_engine(spec):
        if device_map is not None or device != "auto":
            raise ModelSettingError("device= and device_map= are the vLLM server's to choose "
                                    "(--tensor-parallel-size and others, docs/vllm.md)")
        return load_vllm(spec, served_model=served_model, tokenizer=tokenizer,
                         dtype=None if dtype == "auto" else str(dtype))
    if served_model is not None or tokenizer is not None:
        raise ModelSettingError("served_model= and tokenizer= are for a model served by vLLM "
                                "(a server URL or a vllm.LLM)")
    line = FirstLoadLine() if progress is None else None
    try:
        return _load_model(spec, device, dtype, trust_remote_code, device_map,
                           progress or line)
    except ModelLoadError:
        raise
    except Exception as exc:  # anything else from transformers or torch, in one line
        shown = spec if isinstance(spec, str | os.PathLike) else type(spec).__name__
        what = (f"the default model {DEFAULT_MODEL_NAME}" if spec is None
                else f"model {str(shown)!r}")
        raise ModelLoadError(f"could not load {what}: {one_line(exc)}") from exc
    finally:
        if line is not None:
            line.close()  # a line a failed preparation left open ends before the error


def _load_model(spec: Any, device: str | Any, dtype: str | Any, trust_remote_code: bool,
                device_map: Any = None, progress: LoadProgress | None = None) -> Any:
    if isinstance(spec, ScoringModel):  # a LoadedModel, a MaskedModel
        return spec
    if device is not None and device != "auto":
        resolve_device(device)  # a device this machine lacks fails before the load, not after
    move = True
    if device_map is not None and not (isinstance(spec, str | os.PathLike)
                                       and not os.fspath(spec).endswith(".gguf")):
        raise ModelSettingError("device_map= needs a model id or a model directory (it is "
                                "applied while the weights load)")
    if spec is None:
        model, tokenizer = load_gguf(default_gguf_path(), progress)
        name = DEFAULT_MODEL_NAME
    elif isinstance(spec, tuple | list) and len(spec) == 2:
        model, tokenizer = spec
        name = getattr(model.config, "_name_or_path", "") or type(model).__name__
        move = device != "auto" or dtype != "auto"
    elif isinstance(spec, str | os.PathLike):
        spec = os.fspath(spec)
        gguf = _gguf_file(spec)
        if gguf is not None:
            model, tokenizer = load_gguf(gguf, progress)
            name = gguf.stem
        else:
            kwargs: dict[str, Any] = {}
            if device_map is not None:  # transformers/accelerate place the layers
                kwargs = {"device_map": device_map,
                          "dtype": resolve_dtype(dtype, resolve_device("auto"))}
                move = False
            model, tokenizer = load_pretrained(spec, trust_remote_code, **kwargs)
            name = spec
    else:
        raise _spec_type_error(spec)
    from .seq2seq.seq2seq_model import is_seq2seq_model, load_seq2seq

    if is_seq2seq_model(model):  # an encoder-decoder (T5, BART, Marian): its own kind
        check_tokenizer(tokenizer)
        return load_seq2seq(model, tokenizer, str(name), device, dtype, move)
    # a masked LM (BertForMaskedLM, ...) is never scored as a causal one
    masked = model_family([type(model).__name__]) == "masked"
    if masked:
        check_masked_tokenizer(tokenizer)
    else:
        check_causal(model)
        check_tokenizer(tokenizer)
    if move:
        dev = resolve_device(device)
        dt = resolve_dtype(dtype, dev)
        try:
            model = model.to(device=dev, dtype=dt)
        except Exception as exc:  # out of memory on the GPU, a dtype the device lacks
            raise ModelLoadError(f"could not move the model to {dev} as {dt}: "
                                 f"{one_line(exc)}; try device='cpu' or another "
                                 "dtype") from exc
        products = (choose_bf16_products(model).path if cpu_bf16(dt, dev) and not masked
                    else None)
        if products == "float32":  # bf16 weights, float32 products: faster on this CPU
            use_fp32_products(model)
    else:
        param = next(model.parameters())
        dev, dt = param.device, param.dtype
        if device_map is not None:  # inputs go where the embeddings are
            dev = model.get_input_embeddings().weight.device
        products = None if masked else _given_bf16_products(model, dev, dt)
    model.eval()
    if masked:
        return MaskedModel(model=model, tokenizer=tokenizer, name=str(name), device=dev,
                           dtype=dt)
    return LoadedModel(model=model, tokenizer=tokenizer, name=str(name), device=dev, dtype=dt,
                       bf16_products=products)


#: A caller's bf16 model, run as given, warns where torch's bf16 products measured this
#: many times slower than float32 ones from the same weights (the emulated case: ~6x).
WARN_NATIVE_SLOWDOWN = 1.5


def _given_bf16_products(model: Any, dev: Any, dt: Any) -> str | None:
    """The products of the caller's bf16 model on a CPU, left as they are, with a warning
    where float32 products measured much faster on this CPU."""
    if not cpu_bf16(dt, dev):
        return None
    if any(getattr(m, "fp32_products", False) for m in model.modules()):
        return "float32"  # a model load_model already gave them
    slowdown = choose_bf16_products(model).native_slowdown()
    if slowdown >= WARN_NATIVE_SLOWDOWN:
        warnings.warn(f"on this CPU torch's bfloat16 matrix products measured {slowdown:.1f}x "
                      "slower than float32 products from the same bf16 weights: this "
                      "bfloat16 model, as given, runs torch's; load_model(..., "
                      "dtype='bfloat16') gives it the faster ones (bf16 weights kept), "
                      "dtype='float32' runs float32 throughout", RuntimeWarning, stacklevel=4)
    return "native"


def _gguf_file(spec: str) -> Path | None:
    """The GGUF file a ``.gguf`` spec names (a ModelLoadError where there is none); None
    for any other spec."""
    if not spec.endswith(".gguf"):
        return None
    gguf = Path(spec).expanduser()
    if not gguf.is_file():
        raise ModelLoadError(f"model not found: no GGUF file at {spec!r}")
    return gguf


def _spec_type_error(spec: Any) -> ModelTypeError:
    """What ``load_model`` and ``load_tokenizer`` say of a spec of no kind they take."""
    return ModelTypeError("model must be None, a model id or path, a .gguf path, a (model, "
                          "tokenizer) pair, a LoadedModel, a vLLM server's URL or a vllm.LLM; "
                          f"got {type(spec).__name__}")


def load_tokenizer(spec: Any = None, *, trust_remote_code: bool = False) -> Any:
    """The tokenizer ``load_model(spec)`` scores with, without loading any weights.

    ``spec`` as for ``load_model``; a ``.gguf`` file may also hold only a vocabulary.  A
    GGUF's tokenizer follows llama.cpp (``tokenizer.ggml.pre``, SentencePiece rules;
    docs/gguf.md): the one the converted copy in the cache holds, else built from the
    file's metadata."""
    try:
        if isinstance(spec, LoadedModel | MaskedModel):
            return spec.tokenizer
        if spec is None:
            tokenizer = load_gguf_tokenizer(default_gguf_path())
        elif isinstance(spec, tuple | list) and len(spec) == 2:
            tokenizer = spec[1]
        elif isinstance(spec, str | os.PathLike):
            spec = os.fspath(spec)
            gguf = _gguf_file(spec)
            if gguf is not None:
                tokenizer = load_gguf_tokenizer(gguf)
            else:
                tokenizer = load_pretrained_tokenizer(spec, trust_remote_code)
        else:
            raise _spec_type_error(spec)
    except ModelLoadError:
        raise
    except Exception as exc:
        raise ModelLoadError(f"could not load the tokenizer of {spec!r}: "
                             f"{one_line(exc)}") from exc
    check_tokenizer(tokenizer)
    return tokenizer


_default_model: LoadedModel | None = None
_load_lock = threading.Lock()  # loads run one at a time: transformers' lazy imports race
_loaded_by_spec: weakref.WeakValueDictionary[str, LoadedModel] = weakref.WeakValueDictionary()


def as_loaded(lm: Any, progress: LoadProgress | None = None) -> Any:
    """Anything ``load_model`` takes, as something the scorer can use.  ``None`` is the
    embedded default model, loaded once per process; a model id or path is loaded once
    while anyone holds it.  Concurrent callers (several widgets started at once, a
    notebook's Run All) wait for that one load and share it.  ``progress``: as for
    ``load_model`` (the caller that starts the load hears it)."""
    global _default_model
    if isinstance(lm, ScoringModel):  # a LoadedModel, an NGramModel, a VllmModel
        return lm
    if lm is None:
        with _load_lock:
            if _default_model is None:
                _default_model = load_model(None, progress=progress)
            return _default_model
    if isinstance(lm, str | os.PathLike):
        key = os.fspath(lm)
        with _load_lock:
            loaded = _loaded_by_spec.get(key)
            if loaded is None:
                loaded = load_model(lm, progress=progress)
                _loaded_by_spec[key] = loaded
            return loaded
    return load_model(lm, progress=progress)
