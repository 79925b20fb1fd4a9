"""Tokenize a long text with character offsets, in parallel pieces, exactly as one call.

A fast tokenizer encodes one string on one core: ~1 s for 300,000 tokens, which on a GPU
is a third of the scoring time.  Its batch call runs pieces on all cores.  A long text is
cut after a newline that a non-space character follows (a pre-tokenizer boundary for
byte-level and regex pre-tokenizers), and every cut is checked: the text around it,
encoded in one call, must give the same tokens and offsets as the two pieces.  If any
check fails (a tokenizer whose pieces are not independent, such as one that prepends a
space marker to every input), the text is encoded in one call instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Texts shorter than this are encoded in one call (the batch call would not pay).
PARALLEL_MIN_CHARS = 100_000
#: Characters per piece (about 25,000 tokens).
PIECE_CHARS = 50_000
#: Characters either side of a cut that the check re-encodes, and the margin kept
#: away from the edges of that window when comparing.
CHECK_CHARS = 2_000
CHECK_MARGIN = 500


def _encode(tokenizer: Any, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
    enc = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True,
                    split_special_tokens=True)
    return [(np.asarray(ids, dtype=np.int64), np.asarray(offs, dtype=np.int64).reshape(-1, 2))
            for ids, offs in zip(enc["input_ids"], enc["offset_mapping"], strict=True)]


def encode_many(tokenizer: Any, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Ids and offsets of each text, as one call on it would give, from one batch call
    (a fast tokenizer runs it on all cores)."""
    return _encode(tokenizer, texts) if texts else []


def next_cut(text: str, pos: int) -> int | None:
    """The first position at or after ``pos`` right after a newline that a non-space
    character follows, at least ``CHECK_CHARS`` from either end; None if there is none."""
    nl = text.find("\n", max(pos, CHECK_CHARS) - 1)
    while nl != -1 and nl + 1 < len(text) and text[nl + 1].isspace():
        nl = text.find("\n", nl + 1)
    if nl == -1 or nl + 1 >= len(text) - CHECK_CHARS:
        return None
    return nl + 1


def cut_points(text: str, piece_chars: int = PIECE_CHARS) -> list[int]:
    """Positions right after a newline followed by a non-space character, about
    ``piece_chars`` apart."""
    cuts: list[int] = []
    pos = piece_chars
    while pos < len(text) - piece_chars // 2:
        c = next_cut(text, pos + 1)
        if c is None:
            break
        cuts.append(c)
        pos = c + piece_chars
    return cuts


def _same_near(c: int, window: tuple[np.ndarray, np.ndarray], ids: np.ndarray,
               offsets: np.ndarray) -> bool:
    """The tokens of ``window`` (the text around cut ``c``, encoded in one call) and
    the pieces' tokens agree away from the window's edges."""
    w_ids, w_offs = window[0], window[1] + (c - CHECK_CHARS)
    lo, hi = c - CHECK_CHARS + CHECK_MARGIN, c + CHECK_CHARS - CHECK_MARGIN
    inner_w = (w_offs[:, 0] >= lo) & (w_offs[:, 1] <= hi)
    near = np.searchsorted(offsets[:, 0], [lo - CHECK_CHARS, hi + CHECK_CHARS])
    seg_ids, seg_offs = ids[near[0]:near[1]], offsets[near[0]:near[1]]
    inner_p = (seg_offs[:, 0] >= lo) & (seg_offs[:, 1] <= hi)
    return (np.array_equal(w_ids[inner_w], seg_ids[inner_p])
            and np.array_equal(w_offs[inner_w], seg_offs[inner_p]))


def _join(encoded: list[tuple[np.ndarray, np.ndarray]],
          starts: list[int]) -> tuple[np.ndarray, np.ndarray]:
    return (np.concatenate([e[0] for e in encoded]),
            np.concatenate([e[1] + a for e, a in zip(encoded, starts, strict=True)]))


def cut_is_safe(tokenizer: Any, text: str, c: int) -> bool:
    """Encoding ``text[:c]`` and ``text[c:]`` apart gives the tokens of one call near
    ``c`` (three short encodes; ``c`` must be ``CHECK_CHARS`` from either end)."""
    a, b, w = _encode(tokenizer, [text[c - CHECK_CHARS:c], text[c:c + CHECK_CHARS],
                                  text[c - CHECK_CHARS:c + CHECK_CHARS]])
    return _same_near(c, w, *_join([a, b], [c - CHECK_CHARS, c]))


def encode_with_offsets(tokenizer: Any, text: str) -> tuple[np.ndarray, np.ndarray]:
    """Token ids and ``(n, 2)`` character offsets of ``text`` (no special tokens added,
    special-token strings kept as text), identical to one tokenizer call."""
    cuts = cut_points(text, PIECE_CHARS) if len(text) >= PARALLEL_MIN_CHARS else []
    if not cuts or not getattr(tokenizer, "is_fast", False):
        return _encode(tokenizer, [text])[0]
    # a cheap look at the first cut first: most tokenizers that fail, fail everywhere
    if not cut_is_safe(tokenizer, text, cuts[0]):
        return _encode(tokenizer, [text])[0]
    bounds = [0, *cuts, len(text)]
    pieces = [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    windows = [text[c - CHECK_CHARS:c + CHECK_CHARS] for c in cuts]
    encoded = _encode(tokenizer, pieces + windows)  # one batch call: all cores
    ids, offsets = _join(encoded[:len(pieces)], bounds[:-1])
    if all(_same_near(c, w, ids, offsets)
           for c, w in zip(cuts, encoded[len(pieces):], strict=True)):
        return ids, offsets
    return _encode(tokenizer, [text])[0]
