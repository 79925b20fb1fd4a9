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


def tokens_in_span(offsets: np.ndarray, a: int, b: int, text_length: int) -> tuple[int, int]:
    """Tokens ``[i, j)`` overlapping the character span ``[a, b)`` of a text of
    ``text_length`` characters (``offsets``: (n, 2), in text order; the span is checked by
    the caller).  A token ``[s, e)`` overlaps when ``s < b`` and ``e > a``.  A zero-width
    token (the tail of a split character, EOS) goes with the token before it; the first
    token, when zero-width, with the span holding its position, or at the text's end the
    span ending there.  The front end's copy (js/src/metrics.js) runs the same cases
    (tests/cases/token_ranges.json)."""
    offsets = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    s, e = offsets[:, 0], offsets[:, 1]
    chosen = (s < b) & (e > a)
    for i in np.flatnonzero(s == e):
        # the first (its predecessor unscored): the span holding its position, or at
        # the text's end the span ending there (found by the property tests)
        chosen[i] = chosen[i - 1] if i > 0 else (a <= s[i] < b or s[i] == b == text_length)
    idx = np.flatnonzero(chosen)
    if idx.size == 0:
        return 0, 0
    return int(idx[0]), int(idx[-1]) + 1


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
