"""Characters, bytes and words of a text, and which token each one belongs to.

Pure numpy: no torch.  Characters are Unicode code points, bytes are UTF-8
bytes, words are matches of a pattern (default: runs of non-whitespace).

Every unit is attributed to exactly one token, so the units of any run of
tokens is a plain sum, identical in Python and in the widget's JavaScript:
a character (and its bytes) belongs to the token whose span holds it, a
word belongs to the token holding its first character.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

#: Whitespace-separated words, as lm-evaluation-harness's word_perplexity
#: counts them (it splits on ``\s+``; for text with leading or trailing
#: whitespace that split also counts an empty word, this pattern does not).
DEFAULT_WORD_PATTERN = r"\S+"

WordSpec = str | re.Pattern | Callable[[str], Iterable] | None


def _code_points(text: str) -> np.ndarray:
    # surrogatepass keeps lone surrogates (invalid in UTF-8 but legal in str) countable
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")


# Every character ``str.isspace`` (and so regex ``\s``) calls whitespace is at most U+3000.
_MAX_SPACE = 0x3000
_SPACE_TABLE: np.ndarray | None = None


def whitespace_mask(text: str) -> np.ndarray:
    """``mask[i]``: ``text[i].isspace()``, for every character, without a Python loop
    (the rule ``\\s`` and ``\\S`` follow in ``re``; checked for every code point in tests)."""
    global _SPACE_TABLE
    if _SPACE_TABLE is None:
        _SPACE_TABLE = np.array([chr(c).isspace() for c in range(_MAX_SPACE + 1)], dtype=bool)
    cps = _code_points(text)
    return (cps <= _MAX_SPACE) & _SPACE_TABLE[np.minimum(cps, _MAX_SPACE)]


def _non_space_runs(text: str) -> np.ndarray:
    """(n, 2) spans of the maximal runs of non-whitespace: ``\\S+``'s matches."""
    text_char = ~whitespace_mask(text)
    edges = np.diff(np.concatenate([[False], text_char, [False]]).astype(np.int8))
    return np.stack([np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)], axis=1)


def word_spans(text: str, words: WordSpec = None) -> np.ndarray:
    """(n, 2) spans of the words, as the metrics define them (default ``\\S+``).

    ``words`` as in ``text_units.word_starts``: a regex whose matches are words, or a
    callable returning ``(start, end)`` pairs, match objects or start indices (a bare
    start runs to the end of its non-whitespace run, or the next start).
    """
    if words is None or words == DEFAULT_WORD_PATTERN or (
            isinstance(words, re.Pattern) and words.pattern == DEFAULT_WORD_PATTERN
            and not words.flags & re.ASCII):
        return _non_space_runs(text).astype(np.int64)  # the default, a regex's result in numpy
    if isinstance(words, str | re.Pattern):
        pattern = re.compile(words) if isinstance(words, str) else words
        spans = [(m.start(), m.end()) for m in pattern.finditer(text) if m.end() > m.start()]
    elif callable(words):
        spans, bare = [], []
        for item in words(text):
            if isinstance(item, re.Match):
                spans.append((item.start(), item.end()))
            elif isinstance(item, int | np.integer):
                bare.append(int(item))
            else:
                spans.append((int(item[0]), int(item[1])))
        bare.sort()
        for k, s in enumerate(bare):
            m = re.compile(r"\S*").match(text, s)
            limit = bare[k + 1] if k + 1 < len(bare) else len(text)
            spans.append((s, max(s + 1, min(m.end(), limit))))
    else:
        raise TypeError("words must be a regex pattern, a callable returning word spans, or "
                        f"None; got {type(words).__name__}")
    out = np.asarray(sorted(spans), dtype=np.int64).reshape(-1, 2)
    if out.size and (out[0, 0] < 0 or out[:, 1].max() > len(text)):
        raise ValueError("word spans must lie inside the text (0 <= start <= end <= len(text))")
    return out


def word_starts(text: str, words: WordSpec = None) -> np.ndarray:
    """Character index where each word of ``text`` starts, ascending (the words of
    :func:`word_spans`: one parser of ``words`` for the counts and the word tables)."""
    return word_spans(text, words)[:, 0].copy()


def partition_offsets(offsets: np.ndarray, text_length: int) -> np.ndarray:
    """Turn a tokenizer's offset mapping into spans that tile the text.

    Tokenizers leave gaps (a dropped space), overlap (byte-level tokens that
    split one multi-byte character all claim that character) or stop short of
    the end.  Each token here ends where the tokenizer said its text ends
    (made non-decreasing) and starts where the previous one ended, so each
    character belongs to exactly one token; a token holding only the tail
    bytes of a character already claimed gets an empty span.
    """
    offsets = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    n = len(offsets)
    spans = np.zeros((n, 2), dtype=np.int64)
    if n == 0:
        return spans
    ends = np.maximum.accumulate(np.clip(offsets[:, 1], 0, text_length))
    ends[-1] = text_length
    spans[:, 1] = ends
    spans[1:, 0] = ends[:-1]
    return spans


@dataclass(frozen=True)
class TextUnits:
    """Prefix counts over a text, for O(1) unit counts of any character span."""

    text: str
    word_start_index: np.ndarray  # character index of each word's first character
    byte_prefix: np.ndarray  # byte_prefix[i] = UTF-8 bytes in text[:i]
    utf16_prefix: np.ndarray  # utf16_prefix[i] = UTF-16 code units in text[:i]

    @classmethod
    def of(cls, text: str, words: WordSpec = None) -> TextUnits:
        cps = _code_points(text)
        nbytes = 1 + (cps >= 0x80) + (cps >= 0x800) + (cps >= 0x10000)
        nutf16 = 1 + (cps >= 0x10000)
        zero = np.zeros(1, dtype=np.int64)
        return cls(
            text=text,
            word_start_index=word_starts(text, words),
            byte_prefix=np.concatenate([zero, np.cumsum(nbytes, dtype=np.int64)]),
            utf16_prefix=np.concatenate([zero, np.cumsum(nutf16, dtype=np.int64)]),
        )

    def counts(self, start: int, end: int) -> tuple[int, int, int]:
        """(words, chars, bytes) attributed to the character span [start, end)."""
        return tuple(int(v) for v in self.per_span(np.array([[start, end]]))[0])

    def per_span(self, spans: np.ndarray) -> np.ndarray:
        """(words, chars, bytes) for each ``[start, end)`` row of ``spans``."""
        spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
        s, e = spans[:, 0], spans[:, 1]
        out = np.empty((len(spans), 3), dtype=np.int64)
        ws = self.word_start_index
        out[:, 0] = np.searchsorted(ws, e, "left") - np.searchsorted(ws, s, "left")
        out[:, 1] = e - s
        out[:, 2] = self.byte_prefix[e] - self.byte_prefix[s]
        return out

    def to_utf16(self, index: np.ndarray) -> np.ndarray:
        """Code-point indices to UTF-16 code-unit indices (for JavaScript)."""
        return self.utf16_prefix[np.asarray(index, dtype=np.int64)]
