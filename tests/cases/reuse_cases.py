"""The reuse rule's shared cases (reuse.json, written by generate.py): what of an earlier
run ``scoring/incremental.plan_reuse`` keeps after an edit, which the live page's copy
(js/src/live/reuse.js) must keep too.  Texts are tokenized one character a token (id: the
code point) so that a case reads as the edit it is."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from ppl_widget.core.result import ScoreResult
from ppl_widget.core.windows import plan_windows
from ppl_widget.scoring.runner.incremental import first_changed_target, plan_reuse

BASE = "the cat sat on the mat"
# (name, old text, new text, max_length, stride, prefix "bos"/"none", add_eos, scored
#  targets of the old run (None: all of them))
EDITS: list[tuple[str, str, str, int, int, str, bool, int | None]] = [
    ("append a word", BASE, BASE + " today", 8, 4, "bos", False, None),
    ("append one character", BASE, BASE + "s", 8, 4, "bos", False, None),
    ("delete the last word", BASE, BASE[:-4], 8, 4, "bos", False, None),
    # the new last window is one of the old plan's: still scored again (the word-start
    # correction after the last token reads it)
    ("delete back to a window's end", BASE, BASE[:-2], 8, 4, "bos", False, None),
    ("delete in the middle", BASE, BASE[:8] + BASE[12:], 8, 4, "bos", False, None),
    ("edit in the middle", BASE, BASE.replace("sat", "ran"), 8, 4, "bos", False, None),
    ("edit in the first window", BASE, "a" + BASE[1:], 8, 4, "bos", False, None),
    ("edit across a window boundary", BASE, BASE[:7] + "XY" + BASE[9:], 8, 4, "bos", False,
     None),
    ("edit at a window boundary", BASE, BASE[:8] + "X" + BASE[9:], 8, 3, "bos", False, None),
    ("undo an append", BASE + " today", BASE, 8, 4, "bos", False, None),
    ("undo an edit", BASE.replace("sat", "ran"), BASE, 8, 4, "bos", False, None),
    ("the same text", BASE, BASE, 8, 4, "bos", False, None),
    ("the same text, one window", "the cat", "the cat", 16, 8, "bos", False, None),
    ("append, one window", "the cat", "the cat sat", 16, 8, "bos", False, None),
    ("append after a cancelled run", BASE, BASE + "!", 8, 4, "bos", False, 9),
    ("edit after a cancelled run, past what it scored", BASE, BASE[:15] + "X", 8, 4, "bos",
     False, 9),
    ("append with a scored EOS", BASE, BASE + " now", 8, 4, "bos", True, None),
    ("the same text with a scored EOS", BASE, BASE, 8, 4, "bos", True, None),
    ("first token unscored, changed", BASE, "T" + BASE[1:], 8, 4, "none", False, None),
    ("first token unscored, append", BASE, BASE + " now", 8, 4, "none", False, None),
    ("everything deleted", BASE, "", 8, 4, "bos", False, None),
    ("typed into an empty text", "", "hi", 8, 4, "bos", False, None),
    ("stride of one", BASE, BASE + "!", 6, 1, "bos", False, None),
    ("stride of a whole window", BASE, BASE[:14] + "?" + BASE[15:], 6, 6, "bos", False, None),
]


def layout(text: str, prefix: str, add_eos: bool) -> dict[str, Any]:
    """One token per character; the first one unscored without a prefix token."""
    ids = [ord(c) for c in text]
    offsets = [[i, i + 1] for i in range(len(text))]
    skip = 0 if prefix == "bos" else min(1, len(ids))
    if add_eos:
        ids, offsets = ids + [0], offsets + [[len(text), len(text)]]
    is_eos = [False] * (len(ids) - 1) + [True] if add_eos else [False] * len(ids)
    return {"text": text, "ids": ids[skip:], "offsets": offsets[skip:], "is_eos": is_eos[skip:],
            "unscored_ids": ids[:skip], "unscored_offsets": offsets[:skip]}


def as_result(lay: dict[str, Any], scored: int, settings: dict[str, Any]) -> ScoreResult:
    """The old run as a (possibly partial) ScoreResult of its first ``scored`` targets."""
    n = scored
    return ScoreResult(
        text=lay["text"], token_ids=np.asarray(lay["ids"][:n], np.int64),
        offsets=np.asarray(lay["offsets"][:n], np.int64).reshape(-1, 2),
        surprisal=np.zeros(n), entropy=np.zeros(n), rank=np.ones(n, np.int64),
        context_length=np.ones(n, np.int64), topk_ids=np.zeros((n, 0), np.int64),
        topk_probs=np.zeros((n, 0)), units=np.zeros((n, 3), np.int64),
        is_eos=np.asarray(lay["is_eos"][:n], bool),
        unscored_token_ids=np.asarray(lay["unscored_ids"], np.int64),
        unscored_offsets=np.asarray(lay["unscored_offsets"], np.int64).reshape(-1, 2),
        settings=dict(settings), total_tokens=len(lay["ids"]), partial=n < len(lay["ids"]))


def as_prepared(lay: dict[str, Any]) -> SimpleNamespace:
    """The fields of ``Prepared`` that the rule reads."""
    n = len(lay["ids"])
    return SimpleNamespace(
        text=lay["text"], target_ids=np.asarray(lay["ids"], np.int64),
        target_offsets=np.asarray(lay["offsets"], np.int64).reshape(-1, 2),
        target_units=np.zeros((n, 3), np.int64), target_is_eos=np.asarray(lay["is_eos"], bool),
        unscored_ids=np.asarray(lay["unscored_ids"], np.int64),
        unscored_offsets=np.asarray(lay["unscored_offsets"], np.int64).reshape(-1, 2))


def reuse_cases() -> list[dict[str, Any]]:
    """Each edit: the two layouts, the window settings and what plan_reuse keeps."""
    cases = []
    for name, old_text, new_text, max_length, stride, prefix, add_eos, scored in EDITS:
        old, new = layout(old_text, prefix, add_eos), layout(new_text, prefix, add_eos)
        settings = {"model": "chars", "max_length": max_length, "stride": stride,
                    "prefix": prefix, "add_eos": add_eos, "top_k": 0, "words": None,
                    "protocol": "every_token"}
        scored = len(old["ids"]) if scored is None else scored
        prev, prep = as_result(old, scored, settings), as_prepared(new)
        windows = plan_windows(len(new["ids"]) + 1, max_length, stride)
        kept = plan_reuse(prev, prep, windows, settings)
        cases.append({"name": name, "old": {**old, "scored": scored}, "new": new,
                      "max_length": max_length, "stride": stride,
                      "expected": {"changed": first_changed_target(prev, prep),
                                   "windows": kept.windows if kept else 0,
                                   "tokens": kept.tokens if kept else 0}})
    return cases
