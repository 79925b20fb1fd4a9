"""``show_words``: one group of a word list in the single-model widget, coloured per word.

No renderer of its own: the group's text (its words joined with ``sep``, as
``score_words`` joins them) goes to ``PerplexityWidget`` at the word level, with the
list's own words as the word units (a ``words=`` callable giving their spans), so
each word is coloured by its surprisal as ``score_words`` computes it (the same
token-to-word rule, ``levels.assign_tokens``) and the widget's tables, tooltip and
static page (``to_html``) come with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.reading.word_list import WordListError
from ..core.text_units import word_spans as word_spans_of
from .widget import PerplexityWidget


def show_words(words: Any, lm: Any = None, *, group: Any = None,
               by: str | Sequence[str] | None = None, sep: str = " ",
               **widget_options: Any) -> PerplexityWidget:
    """The widget on one group of ``words`` (a list of words or a frame with a ``word``
    column, as ``score_words`` takes it), at the word level, the list's words as units.

    ``group``: the ``by`` key of the group to show (a tuple for several ``by`` columns;
    default: the first group).  ``widget_options``: as ``PerplexityWidget`` takes them
    (``max_length``, ``add_eos``, ...); use the ones the list was scored with.
    """
    from ..scoring.analyses.words import group_texts

    _frame, _keys, groups = group_texts(words, by=by, sep=sep)
    if not groups:
        raise WordListError("the word list is empty: no group to show")
    if group is None:
        chosen = groups[0]
    else:
        chosen = next((g for g in groups if g[0] == group), None)
        if chosen is None:
            known = [g[0] for g in groups[:10]]
            raise WordListError(f"group {group!r}: no such group of by={by!r} (groups: "
                                f"{known}{' ...' if len(groups) > 10 else ''})")
    _key, _rows, text, spans = chosen
    widget_options.setdefault("level", "word")
    return PerplexityWidget(text, lm, words=_fixed_spans(text, spans), **widget_options)


def _fixed_spans(text: str, spans: np.ndarray) -> Any:
    """A ``words=`` callable giving the list's word spans for this text only."""
    pairs = [tuple(span) for span in np.asarray(spans).tolist()]

    def word_spans(other: str) -> list[tuple[int, int]]:
        if other != text:  # edited in the widget: the list's words no longer apply
            return [tuple(span) for span in word_spans_of(other).tolist()]
        return pairs

    return word_spans
