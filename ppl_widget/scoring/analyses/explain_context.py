"""The units of a context read before the text (``explain(..., context=...)``).

A string context is split as the text is (``unit="token"``: its tokens; otherwise its
words, the scorer's word rule applied to the context as read); a chat is split per
message: a message's unit is the tokens of its content in the rendered chat (the
template's own tokens, a role name, a default system prompt and the generation prompt
are read, never units, as the prefix token).  Units carry ``part`` ("context" or
"message i"), and their character spans are in that part: the context as read, or the
message's content.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.explain.target import TargetGroup, Unit, units_of
from ...core.text_units import word_spans


def context_units(prep: Any, groups: list[TargetGroup], unit_kind: str,
                  words: Any) -> list[Unit]:
    """The context's units the target's windows read, in reading order (none without a
    context)."""
    pair = prep.pair
    if pair is None:
        return []
    first = prep.first_target  # the text's first position
    start = first - len(pair.context_ids)  # the context's first position
    lo = min(int(g.context[0]) for g in groups if len(g.context))
    pos = np.arange(max(lo, start), first, dtype=np.int64)
    if len(pos) == 0:
        return []
    offsets = np.asarray(pair.context_offsets, np.int64)[pos - start]
    if isinstance(prep.context, str):
        text = pair.prompt
        if unit_kind == "token":
            return units_of(text, pos, offsets, "token", None, part="context")
        return units_of(text, pos, offsets, "word", word_spans(text, words), part="context")
    return _message_units(pair.prompt, prep.context, pos, offsets)


def _message_units(rendered: str, chat: list[dict[str, str]], pos: np.ndarray,
                   offsets: np.ndarray) -> list[Unit]:
    """One unit per message: the tokens overlapping its content in the rendered chat
    (found in order; a template that rewrites a content, beyond trimming it, leaves that
    message without a unit)."""
    units, cursor = [], 0
    for i, message in enumerate(chat):
        content = message["content"]
        found = content if content and content in rendered[cursor:] else content.strip()
        at = rendered.find(found, cursor) if found else -1
        if at < 0:
            continue
        end = at + len(found)
        cursor = end
        mine = pos[(offsets[:, 0] < end) & (offsets[:, 1] > at)]
        if len(mine):
            units.append(Unit(mine, 0, len(content), content, f"message {i}"))
    return units
