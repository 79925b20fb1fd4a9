"""An encoder-decoder model as a ``ScoringModel``: ``score(target, lm, context=source)``
scores the target's tokens through the decoder, teacher-forced, given the source the
encoder reads (minicons' ``Seq2SeqScorer``'s quantity; docs/seq2seq.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..devices import default_window
from ..model_errors import ModelLoadError
from .seq2seq_forward import Seq2SeqForward
from .seq2seq_layout import OBJECTIVE, Seq2SeqPrepared, prepare_seq2seq

#: Config attributes that bound a model's learned positions.
_POSITION_ATTRS = ("max_position_embeddings", "n_positions")


def seq2seq_mapping() -> dict[str, str]:
    """transformers' model type -> encoder-decoder LM class name (``AutoModelForSeq2SeqLM``'s
    mapping)."""
    from transformers.models.auto import modeling_auto

    return dict(modeling_auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES)


def is_seq2seq_config(config: Any) -> bool:
    """The config is of an encoder-decoder LM: one of its ``architectures`` is an
    ``AutoModelForSeq2SeqLM`` class, or (a config that names only its base model, like
    ``BartModel``) it is an encoder-decoder whose model type has one."""
    mapping = seq2seq_mapping()
    if set(getattr(config, "architectures", None) or ()) & set(mapping.values()):
        return True
    return (bool(getattr(config, "is_encoder_decoder", False))
            and getattr(config, "model_type", None) in mapping)


def is_seq2seq_model(model: Any) -> bool:
    """A loaded encoder-decoder LM: an ``AutoModelForSeq2SeqLM`` class, or any model with
    an encoder, a decoder and an LM head that says it is an encoder-decoder."""
    if type(model).__name__ in seq2seq_mapping().values():
        return True
    return (bool(getattr(getattr(model, "config", None), "is_encoder_decoder", False))
            and hasattr(model, "get_encoder") and hasattr(model, "get_output_embeddings")
            and model.get_output_embeddings() is not None)


@dataclass
class Seq2SeqModel:
    """An encoder-decoder LM ready for scoring: ``.model``, ``.tokenizer``, where it runs."""

    model: Any
    tokenizer: Any
    name: str
    device: Any  # torch.device
    dtype: Any  # torch.dtype
    #: the decoder reads its start token first in every window (the scorer's checks)
    reads_prefix_token = True
    #: what ``score()`` computes: the target given the source (``settings["objective"]``)
    objective = OBJECTIVE

    @property
    def decoder_start_token_id(self) -> int:
        """The token the decoder reads first (``config.decoder_start_token_id``)."""
        return decoder_start_id(self.model)

    @property
    def context_length(self) -> int | None:
        """The decoder's longest input: its learned positions (BART, Marian), else the
        tokenizer's ``model_max_length`` (T5's relative positions have no hard limit)."""
        return _positions(self.model.config, self.tokenizer, decoder=True)

    @property
    def source_length(self) -> int | None:
        """The most source tokens the encoder takes (None: no known limit)."""
        return _positions(self.model.config, self.tokenizer, decoder=False)

    def default_max_length(self) -> int:
        """``context_length``, capped on CPU (``devices.default_window``)."""
        return default_window(self.context_length, self.device)

    @property
    def vocab_size(self) -> int:
        """Rows of the LM head: the outcomes of each predictive distribution."""
        return self.model.get_output_embeddings().weight.shape[0]

    def make_forward(self, top_k: int, max_length: int) -> Seq2SeqForward:
        """The forward of one run (a text's source is encoded by ``start_text``)."""
        return Seq2SeqForward(self, min(top_k, self.vocab_size))

    def prepare_text(self, text: str, *, prefix: str | None = "bos", add_eos: bool = False,
                     words: Any = None, context: Any = None) -> Seq2SeqPrepared:
        """The target laid out for the decoder, the source for the encoder
        (``seq2seq_layout.py``)."""
        return prepare_seq2seq(text, self.tokenizer, self.decoder_start_token_id,
                               prefix=prefix, add_eos=add_eos, words=words, context=context,
                               max_source=self.source_length)

    def __repr__(self) -> str:
        return f"<Seq2SeqModel {self.name} on {self.device} ({self.dtype})>"


def decoder_start_id(model: Any) -> int:
    """``decoder_start_token_id`` from the config (or its generation config)."""
    for cfg in (model.config, getattr(model, "generation_config", None)):
        value = getattr(cfg, "decoder_start_token_id", None)
        if isinstance(value, int):
            return value
    raise ModelLoadError(f"{type(model).__name__} names no decoder_start_token_id in its "
                         "config: the decoder's first input is unknown; set "
                         "model.config.decoder_start_token_id")


def _positions(config: Any, tokenizer: Any, *, decoder: bool) -> int | None:
    side = ("max_target_positions",) if decoder else ("max_source_positions",)
    for attr in (*side, *_POSITION_ATTRS):
        value = getattr(config, attr, None)
        if isinstance(value, int) and value > 0:
            return value
    value = getattr(tokenizer, "model_max_length", None)
    if isinstance(value, int) and 0 < value < 1_000_000:
        return value
    return None


def load_seq2seq(model: Any, tokenizer: Any, name: str, device: Any, dtype: Any,
                 move: bool) -> Seq2SeqModel:
    """``load_model``'s encoder-decoder: moved to ``device``/``dtype`` where ``move`` (else
    left where it is), in eval mode, its decoder start token checked now."""
    from ..devices import resolve_device, resolve_dtype
    from ..model_errors import one_line

    decoder_start_id(model)
    if move:
        dev = resolve_device(device)
        dt = resolve_dtype(dtype, dev)
        try:
            model = model.to(device=dev, dtype=dt)
        except Exception as exc:  # out of memory on the GPU, a dtype the device lacks
            raise ModelLoadError(f"could not move the model to {dev} as {dt}: "
                                 f"{one_line(exc)}; try device='cpu' or another "
                                 "dtype") from exc
    else:
        param = next(model.parameters())
        dev, dt = param.device, param.dtype
    model.eval()
    return Seq2SeqModel(model=model, tokenizer=tokenizer, name=name, device=dev, dtype=dt)
