"""Sentence, line and paragraph spans of a text.  Pure: numpy, and pysbd on first use.

Sentences come from pysbd (Golden Rules segmenter: rule-based, no download), so
abbreviations such as "Dr." or "p.m." and decimals such as "3.14" do not end a
sentence.  It runs on each paragraph separately: a sentence never crosses a
blank line, and long texts are segmented piece by piece.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from functools import lru_cache

import numpy as np

SentenceSpec = str | re.Pattern | Callable[[str], Iterable] | None

_BLANK_LINE = re.compile(r"\n[^\S\n]*\n\s*")
_LINE = re.compile(r"[^\n]+")


def _strip(text: str, spans: Iterable[tuple[int, int]]) -> np.ndarray:
    """Spans shrunk to exclude surrounding whitespace; empty ones dropped."""
    out = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            out.append((s, e))
    return np.asarray(out, dtype=np.int64).reshape(-1, 2)


def paragraph_spans(text: str) -> np.ndarray:
    """Paragraphs: text separated by blank lines (lines holding only whitespace)."""
    spans, start = [], 0
    for m in _BLANK_LINE.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    return _strip(text, spans)


def line_spans(text: str) -> np.ndarray:
    """Lines: text between newlines (a CR before LF is whitespace); blank lines dropped."""
    return _strip(text, ((m.start(), m.end()) for m in _LINE.finditer(text)))


@lru_cache(maxsize=4)
def _segmenter(language: str):  # noqa: ANN202 - pysbd is imported lazily
    import pysbd  # a dependency of the package itself: the widget's sentence level needs it

    return pysbd.Segmenter(language=language, clean=False)


# pysbd's Segmenter keeps state while it segments: two threads sharing it (two widgets
# scoring at once) get pieces of each other's text
_PYSBD_LOCK = threading.Lock()


@lru_cache(maxsize=8)
def _pysbd_spans(text: str, language: str) -> np.ndarray:
    """pysbd over each paragraph.  Cached per text: pysbd takes ~1 ms a sentence, and
    tables, intervals and the widget ask for the same text's sentences again."""
    with _PYSBD_LOCK:
        return _pysbd_spans_locked(text, language)


def _pysbd_spans_locked(text: str, language: str) -> np.ndarray:
    seg = _segmenter(language)
    spans = []
    for ps, pe in paragraph_spans(text).tolist():
        cursor = ps
        # with clean=False pysbd's pieces concatenate back to its input
        for piece in seg.segment(text[ps:pe]):
            spans.append((cursor, cursor + len(piece)))
            cursor += len(piece)
        if cursor != pe:  # pragma: no cover - guards against a pysbd change
            raise RuntimeError("pysbd changed the text while segmenting it")
    return _strip(text, spans)


def sentence_spans(text: str, sentences: SentenceSpec = None, *,
                   language: str = "en") -> np.ndarray:
    """(n, 2) code-point spans of the sentences of ``text``, in order.

    ``sentences``: None for pysbd (``language`` its ISO code); a regex (string or
    compiled) whose matches are the sentences; or a callable returning ``(start,
    end)`` pairs or match objects.  Spans exclude surrounding whitespace.
    """
    if sentences is None:
        return _pysbd_spans(text, language).copy()  # a copy: the cached array stays intact
    if isinstance(sentences, str | re.Pattern):
        pattern = re.compile(sentences) if isinstance(sentences, str) else sentences
        return _strip(text, ((m.start(), m.end()) for m in pattern.finditer(text)))
    if callable(sentences):
        spans = []
        for item in sentences(text):
            if isinstance(item, re.Match):
                spans.append((item.start(), item.end()))
            else:
                spans.append((int(item[0]), int(item[1])))
        out = _strip(text, sorted(spans))
        if out.size and (out[0, 0] < 0 or out[-1, 1] > len(text)):
            raise ValueError("sentence spans must lie inside the text (0 <= start <= end "
                             "<= len(text))")
        if len(out) > 1 and np.any(out[1:, 0] < out[:-1, 1]):
            raise ValueError("sentence spans must not overlap")
        return out
    raise TypeError("sentences must be None (pysbd), a regex pattern or a callable returning "
                    f"spans; got {type(sentences).__name__}")
