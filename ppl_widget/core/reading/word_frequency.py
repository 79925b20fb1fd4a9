"""The word properties psycholinguists put beside surprisal: frequency (wordfreq's Zipf
scale, the ``[analysis]`` extra) and length (characters without punctuation)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

import numpy as np

from ..extras import require


def zipf_frequencies(words: Iterable[str], language: str, *, purpose: str) -> dict[str, float]:
    """Zipf frequency (log10 per billion words, wordfreq) of each distinct word; 0 for
    words wordfreq does not know. ``purpose`` names the feature in the missing-extra
    error."""
    zipf_frequency = require("wordfreq", purpose).zipf_frequency
    return {word: zipf_frequency(word, language) for word in dict.fromkeys(words)}


def letters_length(word: str) -> int:
    """Characters of ``word`` that are not punctuation (Unicode category P*), as
    reading-time studies count a word's length ("Roman," has 5)."""
    return sum(not unicodedata.category(ch).startswith("P") for ch in word)


def letters_lengths(words: Iterable[str]) -> np.ndarray:
    """``letters_length`` of each word (each distinct word counted once)."""
    words = list(words)
    length = {w: letters_length(w) for w in dict.fromkeys(words)}
    return np.fromiter((length[w] for w in words), dtype=np.int64, count=len(words))
