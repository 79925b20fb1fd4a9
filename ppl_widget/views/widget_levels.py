"""Which word and which sentence each streamed token belongs to, for the widget.

The rule is ``core.levels.assign_tokens`` (one implementation for tables, the widget
and comparisons); this only feeds it chunk by chunk.  A token's unit depends on its
own span, except a token holding only the tail bytes of a character (an empty
span), which goes with the token before it: so each chunk is assigned together
with the previous chunk's trailing tokens back to the last non-empty one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.levels import assign_tokens, unit_spans
from ..core.text_units import TextUnits

#: Unit levels the widget colours by (besides tokens), in protocol order.
LEVELS = ("word", "sentence")

#: pysbd needs about half a millisecond per character: above this the default sentence
#: segmentation is not run for the widget (a regex or callable ``sentences=`` always is).
SENTENCE_LIMIT_CHARS = 20_000


class LevelAssigner:
    """Unit spans of one text, and the unit index of each token as chunks arrive."""

    def __init__(self, text: str, units: TextUnits, *, words: Any = None,
                 sentences: Any = None) -> None:
        self.text = text
        self.units = units  # UTF-16 offsets of the text, for its spans and every chunk
        self.notes: dict[str, str] = {}
        self.spans: dict[str, np.ndarray | None] = {"word": unit_spans(text, "word",
                                                                       words=words)}
        if sentences is None and len(text) > SENTENCE_LIMIT_CHARS:
            self.spans["sentence"] = None
            self.notes["sentence"] = (f"sentence level is off for texts over "
                                      f"{SENTENCE_LIMIT_CHARS:,} characters with the default "
                                      "segmenter (pysbd is slow): pass sentences= a regex, or "
                                      "use result.to_frame('sentence')")
        else:
            self.spans["sentence"] = unit_spans(text, "sentence", sentences=sentences)
        self.spans16 = {
            level: (None if s is None else
                    (units.to_utf16(s[:, 0]).astype(np.int32), units.to_utf16(s[:, 1])
                     .astype(np.int32)))
            for level, s in self.spans.items()}
        self._tail = (np.zeros((0, 2), np.int64), np.zeros(0, bool))

    @classmethod
    def for_result(cls, result: Any) -> LevelAssigner:
        """The levels of a finished result: its own word rule when it was a regex (the
        callable of a run is not kept in ``settings``), else the default; default sentences."""
        units = TextUnits.of(result.text)
        words = result.settings.get("words")
        try:
            return cls(result.text, units, words=words if isinstance(words, str) else None)
        except (TypeError, ValueError):
            return cls(result.text, units)

    def assign(self, offsets: np.ndarray, is_eos: np.ndarray) -> dict[str, np.ndarray]:
        """Unit index (-1: no unit) per token of a whole run at once, for every level; the
        chunks' ``owners`` give the same (tests/test_widget_levels.py)."""
        off = np.asarray(offsets, np.int64).reshape(-1, 2)
        return {level: (np.full(len(off), -1, np.int32) if spans is None else
                        assign_tokens(self.text, off, spans, is_eos).astype(np.int32))
                for level, spans in self.spans.items()}

    def owners(self, offsets: np.ndarray, is_eos: np.ndarray) -> dict[str, np.ndarray]:
        """Unit index (-1: no unit) per token of the next chunk, for every level."""
        tail_off, tail_eos = self._tail
        off = np.concatenate([tail_off, np.asarray(offsets, np.int64).reshape(-1, 2)])
        eos = np.concatenate([tail_eos, np.asarray(is_eos, bool)])
        k = len(tail_off)
        out = {}
        # the rule reads the text only inside the tokens: pass the chunk's stretch of it
        # (and the units near it), so a chunk costs its own size, not the text's
        lo = int(off[:, 0].min()) if len(off) else 0
        hi = int(off[:, 1].max()) if len(off) else 0
        part = self.text[lo:hi]
        for level, spans in self.spans.items():
            if spans is None:
                out[level] = np.full(len(off) - k, -1, dtype=np.int32)
                continue
            k0 = int(np.searchsorted(spans[:, 1], lo, side="right"))  # first ending after lo
            k1 = int(np.searchsorted(spans[:, 0], hi, side="left")) + 1  # + first from hi on
            owner = assign_tokens(part, off - lo, spans[k0:k1] - lo, eos)
            out[level] = np.where(owner >= 0, owner + k0, -1)[k:].astype(np.int32)
        nonempty = np.flatnonzero(off[:, 1] > off[:, 0])
        keep = nonempty[-1] if nonempty.size else 0
        self._tail = (off[keep:], eos[keep:])
        return out

    def buffers(self) -> list[bytes]:
        """The unit spans in UTF-16 offsets, per level: start16 then end16 (int32)."""
        out = []
        for level in LEVELS:
            pair = self.spans16[level]
            for arr in pair if pair is not None else (np.zeros(0, np.int32),) * 2:
                out.append(np.ascontiguousarray(arr, dtype="<i4").tobytes())
        return out

    def counts(self) -> dict[str, int | None]:
        return {level: (None if self.spans[level] is None else len(self.spans[level]))
                for level in LEVELS}


def context_gain(unigram: Any, token_ids: np.ndarray, surprisal: np.ndarray) -> np.ndarray:
    """Context gain per token, nats: log P(w|ctx) - log P_uni(w)."""
    return -unigram.log_prob(token_ids) - surprisal


def with_levels(chunk: dict[str, np.ndarray], levels: LevelAssigner,
                unigram: Any = None) -> dict[str, np.ndarray]:
    """The chunk plus each token's word and sentence, and its context gain (nats)."""
    out = dict(chunk)
    out.update(levels.owners(chunk["offsets"], chunk["is_eos"]))
    if unigram is not None:
        out["context_gain"] = context_gain(unigram, chunk["token_ids"], chunk["surprisal"])
    return out


def word_corrected(res: Any, word: np.ndarray | None,
                   levels: LevelAssigner) -> bytes | None:
    """BOW-corrected surprisal per word (``core.word_probability``) as float32 bytes, given
    each token's word index ``word``; None unless the result is complete, has tokens and
    the scorer gave b(i).  The one rule for the widget and the exported page."""
    spans = levels.spans["word"]
    if res is None or word is None or res.partial or spans is None or not len(res):
        return None
    try:
        from ..core.word_probability import corrected_word_surprisal

        values = corrected_word_surprisal(res, np.asarray(word, np.int64), len(spans))
    except (ImportError, ValueError):  # an older scorer, or a model kind without b(i)
        return None
    return np.ascontiguousarray(values, dtype="<f4").tobytes()
