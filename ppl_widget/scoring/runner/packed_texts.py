"""Per-token NLL of many short texts (a word list's groups), packed into few forward
passes instead of one ``score()`` call each.

Each text is laid out exactly as ``score()`` lays it out (``prepare_many``: the prefix
token, the text's tokens, an EOS with ``add_eos``; the same scored tokens and spans);
a text whose targets fit one window (``len(sequence) - 1 <= max_length``) is then one
sequence of ``packed.PackedNLL``, so its per-token NLL is score()'s surprisal.  A
longer text is not scored here (None): it needs score()'s windows.  Only the NLL is
computed (no entropy, rank, top-k or the BOW probabilities).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .packed import PACKED_OPTIONS
from .prepare import prepare_many


@dataclass
class PackedText:
    """A scored text with what ``core.reading.word_list.word_surprisals`` reads of a result."""

    text: str
    token_ids: np.ndarray  # scored token ids
    offsets: np.ndarray  # (n, 2) spans, as score()'s result.offsets
    is_eos: np.ndarray
    surprisal: np.ndarray  # nats, float64
    eos_text: str  # the EOS token's own string (result.tokens shows it so)

    def __len__(self) -> int:
        return len(self.surprisal)

    @property
    def tokens(self) -> list[str]:
        return [self.eos_text if eos else self.text[s:e]
                for (s, e), eos in zip(self.offsets.tolist(), self.is_eos.tolist(), strict=True)]


def can_pack(lm: Any, options: dict[str, Any]) -> bool:
    """A transformers model (the n-gram model brings its own forward) and only the
    options a packed text honours."""
    from ..kinds.models import LoadedModel

    return isinstance(lm, LoadedModel) and set(options) <= set(PACKED_OPTIONS)


def score_texts_packed(texts: list[str], lm: Any, *, max_length: int, prefix: str | None = "bos",
                       add_eos: bool = False) -> list[PackedText | None]:
    """Each text that fits one window of ``max_length`` scored in packed forward passes;
    None for the others.  ``lm``: a loaded transformers model."""
    from .packed import PackedNLL
    from .vocab import decode_each

    prepared = prepare_many(texts, lm, prefix=prefix, add_eos=add_eos)
    fits = [0 < len(p.sequence) - 1 <= max_length for p in prepared]
    n_scored = [len(p.target_ids) if f else 0 for p, f in zip(prepared, fits, strict=True)]
    nll = PackedNLL(lm).token_nlls([p.sequence for p in prepared], n_scored)
    eos_id = lm.tokenizer.eos_token_id
    eos_text = decode_each(lm.tokenizer, [int(eos_id)])[int(eos_id)] if add_eos else ""
    out: list[PackedText | None] = []
    for p, f, values in zip(prepared, fits, nll, strict=True):
        out.append(PackedText(p.text, p.target_ids, p.target_offsets, p.target_is_eos,
                              values, eos_text) if f else None)
    return out
