"""The per-token arrays of a scored text, and what the analyses read of a result.

``TOKEN_ARRAYS`` names the arrays (with the dtype each is stored in).
``ScoredTokens`` is the shape ``levels``, ``statistics`` and ``word_probability``
work on: they annotate against it, so they sit below ``result.py`` (which uses
them) and never import it back.  ``ScoreResult`` has all of it.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

#: Per-token arrays, with the dtype each is stored in.
TOKEN_ARRAYS: dict[str, Any] = {
    "token_ids": np.int64,
    "offsets": np.int64,  # (n, 2) code-point spans that tile the scored text
    "surprisal": np.float64,  # nats
    "entropy": np.float64,  # nats, of the full predictive distribution
    "rank": np.int64,  # 1 = the model's most probable token
    "context_length": np.int64,  # input positions the token was predicted from
    "topk_ids": np.int64,  # (n, top_k)
    "topk_probs": np.float64,  # (n, top_k)
    "units": np.int64,  # (n, 3): words, chars, bytes attributed to the token
    "is_eos": np.bool_,
    # b(i): probability, where token i is predicted, that the next token begins a word
    # (whitespace-initial vocabulary items + EOS); NaN where the model kind lacks it
    "bow_prob": np.float64,
}


def empty_token_arrays(top_k: int) -> dict[str, np.ndarray]:
    """Every per-token array with no rows (``top_k`` columns for the alternatives)."""
    shapes = {"offsets": (0, 2), "units": (0, 3), "topk_ids": (0, top_k), "topk_probs": (0, top_k)}
    return {k: np.zeros(shapes.get(k, (0,)), dtype=t) for k, t in TOKEN_ARRAYS.items()}


class ScoredTokens(Protocol):
    """A scored text as the analyses read it: the arrays of ``TOKEN_ARRAYS`` (one row
    per scored token), the text, and what ``ScoreResult`` derives from them."""

    text: str
    token_ids: np.ndarray
    offsets: np.ndarray
    surprisal: np.ndarray
    entropy: np.ndarray
    rank: np.ndarray
    context_length: np.ndarray
    topk_ids: np.ndarray
    topk_probs: np.ndarray
    units: np.ndarray
    is_eos: np.ndarray
    bow_prob: np.ndarray
    bow_prob_end: float
    vocab: dict[int, str]
    unscored_offsets: np.ndarray
    tokenizer: Any

    def __len__(self) -> int: ...

    @property
    def tokens(self) -> list[str]: ...

    @property
    def probability(self) -> np.ndarray: ...

    def conventions(self) -> str: ...
