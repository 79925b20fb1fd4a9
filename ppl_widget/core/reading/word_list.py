"""A user's word list (reading-time stimuli) as texts to score, and each word's share of
a scored text.  Pure numpy; ``scoring/analyses/words.py`` runs the model.

The words of a group are joined with ``sep`` into one text; each word is then the span
it was placed at, and a scored token belongs to the word holding its first
non-whitespace character, a whitespace-only token to the next word
(``levels.assign_tokens``: the rule every table of the package follows).  So every
scored token of the text belongs to exactly one word, except a scored EOS, which is
no word: the words' surprisals plus the EOS's add up to the text's total NLL.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..levels import assign_tokens, outside_tokens
from ..metrics import LN2
from ..text_units import whitespace_mask

if TYPE_CHECKING:
    from ..tokens import ScoredTokens


class WordListError(ValueError):
    """A word list that cannot be scored as given (an empty word, a word with whitespace,
    a missing value): nothing is guessed."""


def check_sep(sep: Any) -> str:
    """``sep``: the empty string or whitespace only.  Any other character would be text
    outside every word, and its tokens would belong to no word."""
    if not isinstance(sep, str):
        raise WordListError(f"sep must be a string, got {type(sep).__name__}")
    if sep and not whitespace_mask(sep).all():
        raise WordListError(f"sep must be '' or whitespace only (a separator holding other "
                            f"characters would be scored as part of no word), got {sep!r}")
    return sep


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) \
        or type(value).__name__ in ("NAType", "NaTType")


def check_words(words: Sequence[Any], rows: Sequence[Any]) -> list[str]:
    """Each word as given, or a ``WordListError`` naming the first bad row (``rows``:
    the row label of each word, for the message)."""
    out = []
    for word, row in zip(words, rows, strict=True):
        if _is_missing(word):
            raise WordListError(f"row {row!r}: the word is missing (NaN/None); every row "
                                "needs a word")
        if not isinstance(word, str):
            raise WordListError(f"row {row!r}: a word must be a string, got "
                                f"{type(word).__name__} {word!r} (read the file with "
                                "dtype=str to keep words such as '1990' as written)")
        if not word:
            raise WordListError(f"row {row!r}: the word is empty")
        if whitespace_mask(word).any():
            raise WordListError(f"row {row!r}: the word {word!r} contains whitespace; a word "
                                "list holds one word a row (split it into rows)")
        out.append(word)
    return out


def join_words(words: Sequence[str], sep: str) -> tuple[str, np.ndarray]:
    """The text the words make joined with ``sep``, and each word's (start, end) in it."""
    lengths = np.fromiter((len(w) for w in words), dtype=np.int64, count=len(words))
    starts = np.concatenate([[0], np.cumsum(lengths + len(sep))[:-1]]).astype(np.int64) \
        if len(words) else np.zeros(0, np.int64)
    spans = np.stack([starts, starts + lengths], axis=1) if len(words) \
        else np.zeros((0, 2), np.int64)
    return sep.join(words), spans


def word_surprisals(result: ScoredTokens, spans: np.ndarray, *,
                    bow_correction: bool = False) -> dict[str, Any]:
    """Per word of ``spans``: ``surprisal`` (nats), ``surprisal_bits``, ``n_tokens`` (and
    ``surprisal_corrected(_bits)``, as ``to_frame("word", bow_correction=True)`` computes
    it); ``outside``: the scored tokens of no word (an EOS), with their surprisal."""
    owner = assign_tokens(result.text, result.offsets, spans, result.is_eos)
    n_words = len(spans)
    inside = owner >= 0
    nll = np.bincount(owner[inside], weights=result.surprisal[inside], minlength=n_words)
    out: dict[str, Any] = {
        "surprisal": nll, "surprisal_bits": nll / LN2,
        "n_tokens": np.bincount(owner[inside], minlength=n_words).astype(np.int64),
    }
    if bow_correction:
        from ..word_probability import corrected_word_surprisal

        corrected = corrected_word_surprisal(result, owner, n_words)
        out["surprisal_corrected"] = corrected
        out["surprisal_corrected_bits"] = corrected / LN2
    out["outside"] = outside_tokens(result, owner)
    return out
