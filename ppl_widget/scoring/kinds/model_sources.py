"""Where a model's files come from: a local directory (checked for config, weights and
tokenizer before transformers reads it) or a Hub id (the local cache first, then the Hub
if it answers within seconds)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .model_errors import ModelLoadError, one_line

#: Seconds to wait for the Hub before saying it cannot be reached.
HUB_CHECK_TIMEOUT_S = 3.0
#: Files that hold a transformers model's weights.
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack")
#: Files that hold a tokenizer (one is enough).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "vocab.txt",
                   "spiece.model", "sentencepiece.bpe.model", "tokenizer_config.json")


def _looks_like_path(spec: str) -> bool:
    # Hub ids are "name" or "owner/name"; anything else is meant as a path
    return spec.startswith((".", "/", "~")) or spec.count("/") > 1 or os.path.exists(spec)


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


def model_family(architectures: Any) -> str:
    """What a model's config says it is, by its ``architectures`` and transformers' own
    tables of the Auto classes: ``"causal"`` (an ``AutoModelForCausalLM`` class, or no
    architectures named: scored as a causal LM as before), ``"masked"`` (an
    ``AutoModelForMaskedLM`` class only: BertForMaskedLM, RobertaForMaskedLM, ...), or
    ``"no-head"`` (named classes, none with a language-model head: BertModel, ...).
    The one place that picks a model's family; ``auto_class`` maps it to its class."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    names = set(architectures or ())
    if not names or names & set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values()):
        return "causal"
    if names & set(MODEL_FOR_MASKED_LM_MAPPING_NAMES.values()):
        return "masked"
    known = set().union(*(_all_auto_architectures()))
    return "no-head" if names <= known else "causal"  # a custom class: as before


def config_family(config: Any) -> str:
    """``model_family`` of a config, an encoder-decoder first: ``"seq2seq"`` for an
    ``AutoModelForSeq2SeqLM`` architecture or an encoder-decoder model type that has one
    (a config naming only ``BartModel``; kinds/seq2seq)."""
    from .seq2seq.seq2seq_model import is_seq2seq_config

    if is_seq2seq_config(config):
        return "seq2seq"
    return model_family(getattr(config, "architectures", None))


def _all_auto_architectures() -> list[set[str]]:
    """Every class name in transformers' Auto tables (to tell a known headless
    architecture from a custom one)."""
    from transformers.models.auto import modeling_auto

    return [set(v for v in table.values() if isinstance(v, str))
            for name, table in vars(modeling_auto).items()
            if name.startswith("MODEL_") and name.endswith("_MAPPING_NAMES")]


def auto_class(family: str, spec: str, architectures: Any) -> Any:
    """The transformers Auto class that loads a model of ``family``
    (``model_family``); a ModelLoadError naming the rule for a model without an LM
    head."""
    import transformers

    if family == "masked":
        return transformers.AutoModelForMaskedLM
    if family == "seq2seq":
        return transformers.AutoModelForSeq2SeqLM
    if family == "no-head":
        shown = ", ".join(sorted(architectures))
        raise ModelLoadError(
            f"{spec!r} is a {shown}: a model without a language-model head (not a causal "
            "language model, a masked one or an encoder-decoder), so it predicts no tokens. "
            "Scoring needs a causal LM (an AutoModelForCausalLM architecture, e.g. "
            "GPT2LMHeadModel), a masked LM (an AutoModelForMaskedLM architecture, e.g. "
            "BertForMaskedLM) or an encoder-decoder (an AutoModelForSeq2SeqLM architecture, "
            "e.g. T5ForConditionalGeneration): load the checkpoint that has the head")
    return transformers.AutoModelForCausalLM


def _from_hub_cache(spec: str, trust_remote_code: bool,
                    **load_kwargs: Any) -> tuple[Any, Any] | None:
    """The model from the local Hugging Face cache without touching the network,
    or None if it is not (completely) there."""
    from huggingface_hub import try_to_load_from_cache
    from transformers import AutoConfig, AutoTokenizer

    if not isinstance(try_to_load_from_cache(spec, "config.json"), str):
        return None
    try:
        config = AutoConfig.from_pretrained(spec, trust_remote_code=trust_remote_code,
                                            local_files_only=True)
        cls = auto_class(config_family(config), spec, getattr(config, "architectures", None))
        return (cls.from_pretrained(spec, trust_remote_code=trust_remote_code,
                                    local_files_only=True, **load_kwargs),
                AutoTokenizer.from_pretrained(spec, trust_remote_code=trust_remote_code,
                                              local_files_only=True))
    except OSError:  # config cached but weights or tokenizer not: go to the Hub
        return None


def load_pretrained(spec: str, trust_remote_code: bool, **load_kwargs: Any) -> tuple[Any, Any]:
    """A local directory, or a Hub id: the local cache first, then the Hub if it
    answers within ``HUB_CHECK_TIMEOUT_S`` (never a minute of retries)."""
    from transformers import AutoConfig, AutoTokenizer

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
            f"Hub ({one_line(exc)}); check the spelling, or {where}"
        ) from exc
    except Exception as exc:  # a config.json that is not JSON, or of an unknown model type
        raise ModelLoadError(f"the config.json of {spec!r} could not be read: "
                             f"{one_line(exc)}") from exc
    auto = auto_class(config_family(config), spec, getattr(config, "architectures", None))
    try:
        model = auto.from_pretrained(source, trust_remote_code=trust_remote_code,
                                     **load_kwargs)
    except ValueError as exc:
        raise ModelLoadError(
            f"{spec!r} is not a causal language model (config type {type(config).__name__}); "
            "perplexity needs a left-to-right LM such as GPT-2, Llama, Mistral or SmolLM."
        ) from exc
    except Exception as exc:  # truncated safetensors, shape mismatch, missing shard
        raise ModelLoadError(
            f"could not load the weights of {spec!r}: {one_line(exc)}. The weight files may "
            "be incomplete or damaged: copy or download them again."
        ) from exc
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code)
    except Exception as exc:
        raise ModelLoadError(
            f"{spec!r} has a model but its tokenizer could not be loaded ({one_line(exc)}); "
            "save the tokenizer next to the weights (tokenizer.save_pretrained(path)) or pass "
            "a (model, tokenizer) pair."
        ) from exc
    return model, tokenizer


def load_pretrained_tokenizer(spec: str, trust_remote_code: bool) -> Any:
    """The tokenizer ``load_pretrained(spec)`` loads, without the weights: from a local
    directory, or a Hub id from the local cache first, then the Hub if it answers."""
    from transformers import AutoTokenizer

    path = Path(spec).expanduser()
    if _looks_like_path(spec) and not path.exists():
        raise ModelLoadError(f"model not found: no file or directory at {spec!r}")
    if path.is_file():
        raise ModelLoadError(f"{spec!r} is a file; pass the directory that holds the "
                             "tokenizer files, or a .gguf file")
    if path.is_dir():
        if not any((path / t).is_file() for t in TOKENIZER_FILES):
            raise ModelLoadError(f"{str(path)!r} has no tokenizer files (none of "
                                 f"{', '.join(TOKENIZER_FILES)})")
        source, local_only = str(path), True
    else:
        source, local_only = spec, True
        try:
            return AutoTokenizer.from_pretrained(spec, trust_remote_code=trust_remote_code,
                                                 local_files_only=True)
        except OSError:  # not in the local cache: the Hub, if it answers
            why = _hub_reachable(HUB_CHECK_TIMEOUT_S)
            if why is not None:
                raise ModelLoadError(f"the tokenizer of {spec!r} is not in the local Hugging "
                                     f"Face cache and the Hub cannot be reached ({why})") from None
            local_only = False
    try:
        return AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code,
                                             local_files_only=local_only)
    except Exception as exc:
        raise ModelLoadError(f"the tokenizer of {spec!r} could not be loaded: "
                             f"{one_line(exc)}") from exc
