"""Which vocabulary items begin a new word: the mask behind b(i), the probability that
the next token starts a word (Pimentel & Meister, 2024; Oh & Schuler, 2024).

A token begins a word when its text starts with whitespace (GPT-2's "Ġ", SentencePiece's
"▁", a newline...) or when it is EOS.  The text of each id is decoded after an anchor
token and the anchor's own text removed, because decoders drop the leading space of a
sequence's first token (SentencePiece/metaspace do).  Built once per tokenizer.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _anchor_id(tokenizer: Any) -> int | None:
    for text in ("a", "x", "0"):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(ids) == 1:
            return int(ids[0])
    return None


def boundary_mask(tokenizer: Any, vocab_size: int) -> np.ndarray | None:
    """Boolean mask over ``vocab_size`` ids: True where the item begins a new word.
    ``None`` when the tokenizer cannot decode single ids after an anchor."""
    try:
        cached = _CACHE.get(tokenizer)
    except TypeError:  # not weak-referenceable
        cached = None
    if cached is not None and len(cached) == vocab_size:
        return cached
    anchor = _anchor_id(tokenizer)
    if anchor is None:
        return None
    head = tokenizer.decode([anchor])
    n = min(vocab_size, len(tokenizer))
    pairs = [[anchor, i] for i in range(n)]
    texts = tokenizer.batch_decode(pairs, skip_special_tokens=False,
                                   clean_up_tokenization_spaces=False)
    mask = np.zeros(vocab_size, dtype=bool)
    for i, text in enumerate(texts):
        rest = text[len(head):] if text.startswith(head) else text
        mask[i] = bool(rest) and rest[0].isspace()
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    for i in special:  # special tokens other than EOS do not begin words (nor are words)
        if 0 <= i < vocab_size:
            mask[i] = False
    eos = getattr(tokenizer, "eos_token_id", None)
    if eos is not None and 0 <= eos < vocab_size:
        mask[eos] = True
    try:
        _CACHE[tokenizer] = mask
    except TypeError:
        pass
    return mask
