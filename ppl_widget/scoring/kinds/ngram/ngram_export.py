"""An ``NGramModel`` as data for the browser: its vocabulary, counts and settings as one
JSON-ready dict, which the live page's n-gram scorer (``js/src/live/models/ngram.js``)
reads to give the same numbers as Python, token for token.

The tokenizer rule travels as the model's unit (words or characters): the browser
rebuilds it with Python's whitespace (``str.isspace``), so only the default word pattern
(``\\S+``) can travel; another pattern is refused with the rule it breaks.
"""

from __future__ import annotations

from typing import Any

from ....core.text_units import DEFAULT_WORD_PATTERN
from .ngram import NGramModel

FORMAT = "ppl-widget-ngram"
VERSION = 1


def _table(counts: dict[tuple, Any]) -> list[list[list[int]]]:
    """{context: Counter(next: count)} as [[context ids], [next ids], [counts]] rows."""
    return [[list(ctx), [int(w) for w in nxt], [int(c) for c in nxt.values()]]
            for ctx, nxt in counts.items()]


def ngram_to_json(lm: NGramModel) -> dict[str, Any]:
    """The fitted model as a JSON-ready dict (format ``ppl-widget-ngram``, version 1)."""
    if not isinstance(lm, NGramModel):
        raise TypeError(f"lm must be an NGramModel, got {type(lm).__name__}")
    lm._check_fitted()
    if lm.unit == "word" and lm.pattern != DEFAULT_WORD_PATTERN:
        raise ValueError(f"the live page's n-gram tokenizer splits words at whitespace only "
                         f"(pattern {DEFAULT_WORD_PATTERN!r}); this model's pattern is "
                         f"{lm.pattern!r}")
    return {
        "format": FORMAT, "version": VERSION, "name": lm.name, "order": lm.order,
        "smoothing": lm.smoothing, "unit": lm.unit, "k": lm.k, "discount": lm.discount,
        "symbols": list(lm.symbols),
        "counts": [_table(c) for c in lm._counts],
        "cont": [_table(c) for c in lm._cont],
    }
