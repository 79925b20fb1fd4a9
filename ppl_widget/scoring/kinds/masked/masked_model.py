"""A masked language model (BERT, RoBERTa, ALBERT, DeBERTa, ...) scored by
pseudo-log-likelihood: every token masked in turn and read from both sides.

A ``ScoringModel`` (``model_kind.py``) that plans its own windows (``PlansOwnWindows``):
two-sided windows (``core/two_sided_windows.py``), one masked copy per target, the model's
special tokens around every copy.  docs/masked.md has the definitions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ....core.two_sided_windows import (
    check_pll_metric,
    masked_copies,
    plan_two_sided,
    word_ends,
)
from ..model_errors import ModelLoadError, ModelSettingError

#: Default window length on a CPU (as a causal model's, ``models.CPU_MAX_LENGTH_CAP``).
CPU_MAX_LENGTH_CAP = 1024


@dataclass
class MaskedModel:
    """A masked LM ready for scoring: ``.model`` (an ``AutoModelForMaskedLM``),
    ``.tokenizer`` (a fast tokenizer with a mask token) and where it runs."""

    model: Any
    tokenizer: Any
    name: str
    device: Any  # torch.device
    dtype: Any  # torch.dtype
    #: the special tokens the tokenizer puts before and after a text ([CLS] / [SEP])
    special_head: tuple[int, ...] = field(default=())
    special_tail: tuple[int, ...] = field(default=())
    #: what ``score()`` maximises: pseudo-log-likelihood (``result.settings["objective"]``)
    objective = "pll"

    def __post_init__(self) -> None:
        check_masked_tokenizer(self.tokenizer)
        if not self.special_head and not self.special_tail:
            self.special_head, self.special_tail = special_frame(self.tokenizer)

    @property
    def mask_token_id(self) -> int:
        return int(self.tokenizer.mask_token_id)

    @property
    def n_special(self) -> int:
        """Positions each window spends on the special tokens."""
        return len(self.special_head) + len(self.special_tail)

    @property
    def context_length(self) -> int | None:
        """The most positions the model reads, special tokens included.  RoBERTa-style
        embeddings number positions from ``padding_idx + 1``, so they hold
        ``padding_idx + 1`` fewer than ``max_position_embeddings`` (514 -> 512)."""
        cfg = self.model.config
        most = getattr(cfg, "max_position_embeddings", None)
        if not (isinstance(most, int) and most > 0):
            most = None
        else:
            embeddings = getattr(getattr(self.model, "base_model", None), "embeddings", None)
            pad = getattr(embeddings, "padding_idx", None)
            if isinstance(pad, int) and pad >= 0:
                most -= pad + 1
        value = getattr(self.tokenizer, "model_max_length", None)
        if isinstance(value, int) and 0 < value < 1_000_000:
            most = value if most is None else min(most, value)
        return most

    def default_max_length(self) -> int:
        ctx = self.context_length or CPU_MAX_LENGTH_CAP
        return min(ctx, CPU_MAX_LENGTH_CAP) if self.device.type == "cpu" else ctx

    @property
    def vocab_size(self) -> int:
        head = self.model.get_output_embeddings()
        weight = getattr(head, "weight", None)
        return int(weight.shape[0]) if weight is not None else int(self.model.config.vocab_size)

    def make_forward(self, top_k: int, max_length: int) -> Any:
        from .masked_forward import MaskedForward

        return MaskedForward(self, min(top_k, self.vocab_size))

    # ---- PlansOwnWindows ---------------------------------------------------
    def check_run(self, *, pll_metric: Any, protocol: str, add_eos: bool, context: Any,
                  prefix_every_window: bool) -> dict[str, Any]:
        """The run's options by a masked model's rules (a ValueError naming the rule
        broken); the settings it adds to the result."""
        metric = check_pll_metric(pll_metric)
        why = {"add_eos=True": add_eos,
               "prefix_every_window=True": prefix_every_window,
               f"protocol={protocol!r}": protocol != "exact",
               "context=": context is not None}
        for option, given in why.items():
            if given:
                raise ValueError(
                    f"{option} is for causal models; {self.name} is a masked language model, "
                    "scored by pseudo-log-likelihood: every token masked in turn and read "
                    "from both sides, in two-sided windows with the model's special tokens "
                    "around each (docs/masked.md)")
        return {"objective": "pll", "pll_metric": metric, "prefix": None}

    def plan_windows(self, prep: Any, max_length: int, stride: int,
                     settings: dict[str, Any]) -> list[Any]:
        """One masked copy per target of the two-sided windows (``two_sided_windows``):
        ``max_length`` counts the model's positions, its special tokens included."""
        text_length = max_length - self.n_special
        if text_length < 1:
            raise ValueError(f"max_length must be at least {self.n_special + 1} for "
                             f"{self.name}: each window holds its {self.n_special} special "
                             f"tokens and one text token, got {max_length}")
        if stride > text_length:
            raise ValueError(f"stride must not exceed the text tokens of a window "
                             f"(max_length - {self.n_special} special tokens = "
                             f"{text_length}), got stride={stride}")
        n = len(prep.sequence)
        if n == 0 and prep.text:
            raise ValueError(f"nothing to score: {prep.text[:60]!r} gives no tokens to "
                             f"{self.name} besides its special tokens, which are never "
                             "scored")
        windows = plan_two_sided(n, text_length, stride, first_target=prep.first_target)
        metric = settings["pll_metric"]
        ends = word_ends(self.word_ids(prep)) if metric == "within_word_l2r" else None
        return list(masked_copies(windows, metric, ends))

    def word_ids(self, prep: Any) -> list[int | None]:
        """The word of each token, as the tokenizer's own pre-tokenizer splits the text
        (``word_ids()`` of its encoding, as minicons reads them)."""
        enc = self.tokenizer(prep.text, add_special_tokens=False, split_special_tokens=True)
        if not np.array_equal(np.asarray(enc["input_ids"], np.int64), prep.sequence):
            raise ValueError("the text's tokens differ between two encodings of it, so "
                             "its words are unknown: use pll_metric='original'")
        return list(enc.word_ids())

    def __repr__(self) -> str:
        return f"<MaskedModel {self.name} on {self.device} ({self.dtype})>"


def check_masked_tokenizer(tokenizer: Any) -> None:
    """Pseudo-log-likelihood masks tokens: the tokenizer needs a mask token, and offsets
    (a fast tokenizer) to map tokens back to characters."""
    if getattr(tokenizer, "mask_token_id", None) is None:
        raise ModelSettingError(f"a masked language model needs a tokenizer with a mask token, to "
                         f"mask each token in turn; {type(tokenizer).__name__} has none "
                         "(set tokenizer.mask_token, e.g. '[MASK]' or '<mask>')")
    if not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(f"tokenizer {type(tokenizer).__name__} has no offset mapping "
                             "(it is not a 'fast' tokenizer); load it with "
                             "AutoTokenizer.from_pretrained(..., use_fast=True).")


def special_frame(tokenizer: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The special tokens the tokenizer adds before and after a text (BERT: [CLS] and
    [SEP]; RoBERTa: <s> and </s>), read from the tokenizer itself."""
    for probe in ("a b", "hello", "x"):
        plain = list(tokenizer(probe, add_special_tokens=False)["input_ids"])
        full = list(tokenizer(probe, add_special_tokens=True)["input_ids"])
        for i in range(len(full) - len(plain) + 1):
            if plain and full[i:i + len(plain)] == plain:
                return tuple(full[:i]), tuple(full[i + len(plain):])
    head = (tokenizer.cls_token_id,) if tokenizer.cls_token_id is not None else ()
    tail = (tokenizer.sep_token_id,) if tokenizer.sep_token_id is not None else ()
    return head, tail
