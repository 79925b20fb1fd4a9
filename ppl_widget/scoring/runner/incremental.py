"""Re-scoring an edited text: keep the windows an edit cannot change.

A window's results depend only on its input tokens.  After an edit, every window
whose inputs and targets all lie before the first token that differs (in id or in
character span) gives exactly what it gave before, so ``stream(..., reuse=old)``
takes those from the previous result and scores from the first window holding a
changed token.  The result equals a full ``score()`` of the new text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.result import TOKEN_ARRAYS, ScoreResult
from ...core.windows import Window, plan_windows

if TYPE_CHECKING:
    from .prepare import Prepared

#: Settings that must match for a previous result to be reused.
SAME_SETTINGS = ("model", "max_length", "stride", "prefix", "add_eos", "top_k", "words",
                 "protocol")
#: What the model computed per token (the text's own arrays come from the new tokenization).
MODEL_ARRAYS = ("surprisal", "entropy", "rank", "context_length", "topk_ids", "topk_probs",
                "bow_prob")


@dataclass
class Reuse:
    """The leading windows kept from a previous result, and their token arrays."""

    windows: int  # how many leading windows are kept
    tokens: int  # how many leading targets they scored
    arrays: dict[str, np.ndarray]  # keyed like TOKEN_ARRAYS, the first ``tokens`` targets
    vocab: dict[int, str]
    bow_prob_end: float  # the old value, valid when every target is kept


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of two strings."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def first_changed_target(old: ScoreResult, prep: Prepared) -> int:
    """Index of the first target whose input may differ from ``old``'s scoring of it.

    The smallest of: the first target whose id or span differs, the first whose
    span reaches past the text the two versions share, and the number ``old``
    scored.  With no prefix token, a different unscored first token changes every
    window's input: 0."""
    n = min(len(old.token_ids), len(prep.target_ids))
    if len(old.unscored_token_ids) != len(prep.unscored_ids) or not (
            np.array_equal(old.unscored_token_ids, prep.unscored_ids)
            and np.array_equal(np.asarray(old.unscored_offsets).reshape(-1, 2),
                               np.asarray(prep.unscored_offsets).reshape(-1, 2))):
        return 0
    same = (old.token_ids[:n] == prep.target_ids[:n]) \
        & np.all(old.offsets[:n] == prep.target_offsets[:n], axis=1) \
        & (old.is_eos[:n] == prep.target_is_eos[:n])
    shared = common_prefix(old.text, prep.text)
    same &= prep.target_offsets[:n, 1] <= shared
    # an EOS target sits at the end of the text: the same text end is not enough
    same &= ~prep.target_is_eos[:n] | (len(old.text) == len(prep.text) == shared)
    differs = np.flatnonzero(~same)
    return int(differs[0]) if len(differs) else n


def plan_reuse(old: ScoreResult | None, prep: Prepared, windows: list[Window],
               settings: dict[str, Any]) -> Reuse | None:
    """What of ``old`` (a previous result, possibly partial) can be kept for ``prep``."""
    if old is None or not isinstance(old, ScoreResult):
        return None
    if any(old.settings.get(k) != settings.get(k) for k in SAME_SETTINGS):
        return None  # another model or window layout: nothing carries over
    changed = first_changed_target(old, prep)
    old_total = old.total_tokens if old.total_tokens is not None else len(old.token_ids)
    old_windows = plan_windows(old_total + 1, settings["max_length"], settings["stride"])
    keep = 0
    for k, w in enumerate(windows):
        # targets [target_start, target_end) are target indices target_start-1 ... ; the
        # inputs lie before the last target, so targets before `changed` cover both
        if k >= len(old_windows) or old_windows[k] != w or w.target_end - 1 > changed:
            break
        keep = k + 1
    complete_before = len(old.token_ids) == old_total and not old.partial
    if keep == len(windows) and not (complete_before and old_total == len(prep.target_ids)):
        # b after the last token depends on the last window: score that one again
        keep -= 1
    if keep <= 0:  # nothing kept (-1: a text with no windows, all of it deleted)
        return None
    n = windows[keep - 1].target_end - 1
    arrays = {k: np.asarray(getattr(old, k)[:n]) for k in MODEL_ARRAYS}
    if arrays["bow_prob"] is None or arrays["bow_prob"].shape != (n,):
        arrays["bow_prob"] = np.full(n, np.nan)
    arrays.update(token_ids=prep.target_ids[:n], offsets=prep.target_offsets[:n],
                  units=prep.target_units[:n], is_eos=prep.target_is_eos[:n])
    arrays = {k: np.asarray(arrays[k], dtype=TOKEN_ARRAYS[k]) for k in TOKEN_ARRAYS}
    ids = set(arrays["token_ids"].tolist()) | set(arrays["topk_ids"].ravel().tolist())
    vocab = {i: old.vocab[i] for i in ids if i in old.vocab}
    end = old.bow_prob_end if n == len(prep.target_ids) else math.nan
    return Reuse(windows=keep, tokens=n, arrays=arrays, vocab=vocab, bow_prob_end=end)
