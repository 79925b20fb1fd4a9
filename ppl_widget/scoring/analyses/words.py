"""``score_words``: the surprisal of each word of a user's word list (reading-time
stimuli), one row per word in the input order, for a regression.

Each group (``by``) is joined into one text.  The texts that fit one window are scored
together in packed forward passes (``packed_texts.py``: a reading-time list of
thousands of short items takes a few passes, not one each); a longer text, and every
text when an option needs more than the NLL (``bow_correction``), gets its own
``score()`` call (windows).  Both give score()'s surprisals.  The token-to-word rule
and the checks live in ``core/reading/word_list.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.metrics import objective_labels
from ...core.reading.word_list import (
    WordListError,
    check_sep,
    check_words,
    join_words,
    word_surprisals,
)
from ...core.validation import as_count
from ..kinds.devices import precision_settings

if TYPE_CHECKING:
    import pandas as pd

#: Columns score_words adds (an input frame must not have them already).
ADDED = ("surprisal", "surprisal_bits", "n_tokens", "surprisal_corrected",
         "surprisal_corrected_bits")


def score_words(words: Sequence[str] | pd.DataFrame, /, lm: Any = None, *,
                by: str | Sequence[str] | None = None, sep: str = " ",
                bow_correction: bool = False, packed: bool = True,
                **score_options: Any) -> pd.DataFrame:
    """Surprisal of every word of ``words``, one row per word, in the input order.

    ``words``: a sequence of strings, or a DataFrame with a ``word`` column (its other
    columns, e.g. subject, item, reading time, are kept).  The words of each ``by``
    group (a column name or a list of them; without ``by`` all words) are joined with
    ``sep`` (``""`` or whitespace) into one text, scored as ``score(text, lm,
    **score_options)`` scores it (``packed=False``: by that call itself, one per group;
    else the texts that fit one window share packed forward passes).  Adds
    ``surprisal`` (nats), ``surprisal_bits``, ``n_tokens`` and, with
    ``bow_correction=True``, ``surprisal_corrected(_bits)`` as
    ``ScoreResult.to_frame("word", bow_correction=True)`` computes them.

    A token belongs to the word holding its first non-whitespace character; a
    whitespace-only token to the next word.  Per group the words' surprisals sum to
    the text's total NLL; a scored EOS (``add_eos=True``) belongs to no word and is
    reported in ``frame.attrs["groups"]`` (``eos_surprisal``; ``total_nll`` = the
    words' sum + ``eos_surprisal``).  See docs/words.md.
    """
    from ..kinds.models import as_loaded
    from ..runner.packed_texts import can_pack, score_texts_packed
    from ..runner.scorer import resolve_window, score

    sep = check_sep(sep)
    for name in ("words", "reuse"):
        if name in score_options:
            raise TypeError(f"score_words sets the words itself; {name}= is not an option here")
    if score_options.get("prefix", "bos") is None:
        raise WordListError("score_words scores every token of every word; prefix=None would "
                            "leave the first word's first token unscored")
    score_options.setdefault("top_k", 0)  # no column shows alternatives: skip them
    as_count("top_k", score_options["top_k"], minimum=0, rule="a non-negative integer")
    frame, keys, joined = group_texts(words, by=by, sep=sep)
    clash = [c for c in ADDED if c in frame.columns]
    if clash:
        raise WordListError(f"the word list already has column(s) {clash}, which score_words "
                            "adds: rename or drop them first")
    added = ADDED if bow_correction else ADDED[:3]
    columns = {c: np.zeros(len(frame), dtype=np.int64 if c == "n_tokens" else np.float64)
               for c in added}
    lm = as_loaded(lm)
    groups, settings = [], {}
    nll_only = {k: v for k, v in score_options.items() if k != "top_k"}
    fast: list[Any] = [None] * len(joined)
    if packed and not bow_correction and joined and can_pack(lm, nll_only):
        max_length, stride = resolve_window(lm, nll_only.get("max_length"),
                                            nll_only.get("stride"))
        fast = score_texts_packed([text for _, _, text, _ in joined], lm,
                                  max_length=max_length, prefix=nll_only.get("prefix", "bos"),
                                  add_eos=nll_only.get("add_eos", False))
        settings = _packed_settings(lm, max_length, stride, nll_only)
    for (key, rows, text, spans), result in zip(joined, fast, strict=True):
        if result is None:
            result = score(text, lm, **score_options)
            settings = result.settings
        per_word = word_surprisals(result, spans, bow_correction=bow_correction)
        for name in added:
            columns[name][rows] = per_word[name]
        eos = float(sum(t["surprisal"] for t in per_word["outside"]))
        groups.append({"group": key, "text": text, "n_words": len(rows),
                       "n_tokens": len(result),
                       "total_nll": float(np.sum(result.surprisal, dtype=np.float64)),
                       "eos_surprisal": eos, "outside": per_word["outside"]})
    out = frame.copy()
    for name in added:
        out[name] = columns[name]
    out.attrs.update(groups=groups, by=None if keys is None else keys.columns.tolist(),
                     sep=sep, settings=settings,
                     packed_groups=sum(r is not None for r in fast),
                     # a masked LM's words hold pseudo-surprisals (core/metrics.py's rule)
                     measure=objective_labels(settings)["surprisal"])
    return out


def group_texts(words: Sequence[str] | pd.DataFrame, *, by: str | Sequence[str] | None = None,
                sep: str = " ") -> tuple[pd.DataFrame, pd.DataFrame | None, list[tuple]]:
    """The word list as a frame, its ``by`` columns (None: one group) and each group's
    ``(key, row positions, text, word spans)`` in order of appearance; checked."""
    sep = check_sep(sep)
    frame = _as_frame(words)
    keys = _group_keys(frame, by)
    checked = check_words(frame["word"].tolist(), frame.index.tolist())
    return frame, keys, [(key, rows, *join_words([checked[i] for i in rows], sep))
                         for key, rows in _groups(keys, len(frame))]


def _packed_settings(lm: Any, max_length: int, stride: int,
                     options: dict[str, Any]) -> dict[str, Any]:
    """The settings the packed texts were scored with (a score() result's, for a
    group scored by score(), replace them: it names its windows)."""
    return {"model": lm.name, "max_length": max_length, "stride": stride,
            "prefix": options.get("prefix", "bos"), "add_eos": options.get("add_eos", False),
            "top_k": 0, "device": str(lm.device), **precision_settings(lm),
            "n_windows": 1, "packed": True}


def _as_frame(words: Any) -> pd.DataFrame:
    import pandas as pd

    if isinstance(words, pd.DataFrame):
        if "word" not in words.columns:
            raise WordListError("a word-list DataFrame needs a 'word' column; it has "
                                f"{list(words.columns)}")
        return words
    if isinstance(words, str):
        raise WordListError("words must be a list of words (one a row), not one string: "
                            "split it first, e.g. text.split()")
    return pd.DataFrame({"word": list(words)})


def _group_keys(frame: pd.DataFrame, by: str | Sequence[str] | None) -> pd.DataFrame | None:
    """The ``by`` columns (checked: present, no missing value), or None for one group."""
    if by is None:
        return None
    names = [by] if isinstance(by, str) else list(by)
    missing = [n for n in names if n not in frame.columns]
    if missing or not names:
        raise WordListError(f"by names column(s) {missing or names} the word list does not "
                            f"have; it has {list(frame.columns)}")
    keys = frame[names]
    bad = keys.isna().any(axis=1).to_numpy()
    if bad.any():
        row = frame.index[int(np.flatnonzero(bad)[0])]
        raise WordListError(f"row {row!r}: the group column(s) {names} hold a missing value; "
                            "every word needs its group")
    return keys


def _groups(keys: pd.DataFrame | None, n_rows: int) -> list[tuple[Any, np.ndarray]]:
    """(group key, positions of its rows in input order), groups in order of appearance."""
    if keys is None:
        return [(None, np.arange(n_rows))] if n_rows else []
    grouped = keys.groupby(list(keys.columns), sort=False).indices
    out = []
    for key, positions in grouped.items():
        parts = tuple(_plain(k) for k in (key if isinstance(key, tuple) else (key,)))
        out.append((parts[0] if len(parts) == 1 else parts, np.sort(positions)))
    return sorted(out, key=lambda group: group[1][0])


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value (the group keys are reported in attrs)."""
    return value.item() if isinstance(value, np.generic) else value
