"""Word surprisal corrected for leading whitespace (Pimentel & Meister, 2024, "How to
Compute the Probability of a Word"; Oh & Schuler, 2024).  Pure numpy.

With tokenizers whose word-initial tokens carry the preceding space, the sum of a
word's token surprisals does not pay for the word's end (that the next token starts a
new word) and pays for its start twice over a text (the space is predicted with the
word).  With b(i) the probability, at the position that predicts token i, that the
next token begins a new word (whitespace-initial vocabulary items plus EOS):

    corrected(w) = sum_{t=i..j} s(t) - log b(j+1) + [token i begins with whitespace] log b(i)

where tokens i..j make up the word and b(n) (after the last token) is
``ScoreResult.bow_prob_end``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .text_units import whitespace_mask

if TYPE_CHECKING:
    from .tokens import ScoredTokens


def corrected_word_surprisal(result: ScoredTokens, owner: np.ndarray,
                             n_words: int) -> np.ndarray:
    """Corrected surprisal (nats) of each of ``n_words`` words, given each scored token's
    word index in ``owner`` (-1 for tokens of no word)."""
    b = np.asarray(result.bow_prob, dtype=np.float64)
    n = len(result)
    inside = owner >= 0
    if n and np.isnan(b[inside]).any():
        raise ValueError("bow_correction needs each token's begin-of-word probability, which "
                         "this result lacks (scored by an older version, or by a model kind "
                         "that does not provide it): score the text again")
    after = np.append(b, result.bow_prob_end)  # after[k] = b at the position after token k-1
    plain = np.bincount(owner[inside], weights=result.surprisal[inside], minlength=n_words)
    first = np.full(n_words, -1, dtype=np.int64)
    last = np.full(n_words, -1, dtype=np.int64)
    idx = np.flatnonzero(inside)
    last[owner[idx]] = idx  # the last assignment wins: the word's last token
    first[owner[idx[::-1]]] = idx[::-1]  # reversed: the first token wins
    out = np.full(n_words, np.nan)
    has = first >= 0
    with np.errstate(divide="ignore"):
        end = -np.log(after[last[has] + 1])
        starts = result.offsets[first[has], 0]
        space = np.append(whitespace_mask(result.text), False)  # False past the end
        begins_ws = space[np.minimum(starts, len(result.text))] \
            & (result.offsets[first[has], 1] > starts)
        start = np.where(begins_ws, np.log(b[first[has]]), 0.0)
    out[has] = plain[has] + end + start
    return out
