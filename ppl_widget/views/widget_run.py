"""``WidgetRun``: one scoring run of a ``PerplexityWidget``.

What the run has streamed (its chunks with each token's word and sentence, the
vocabulary, the last progress), the levels and extras it was asked for, and the
messages and final ``result_data`` built from them (``protocol.py``).  A new run is
a new object: the widget shows the previous one until the new one has data.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.result import TOKEN_ARRAYS, ScoreResult
from ..core.text_units import TextUnits
from ..scoring.runner.scorer import ScoreProgress
from . import protocol as P
from .widget_levels import LevelAssigner, with_levels

Message = tuple[dict[str, Any], list[bytes] | None]

#: The per-token fields a run adds to the scorer's chunks (widget_levels.with_levels).
OWN_COLUMNS = ("word", "sentence", "context_gain")


class WidgetRun:
    """The streamed state of one run, and the messages that describe it."""

    def __init__(self, run_id: int, text: str, lm: Any, *, words: Any = None,
                 sentences: Any = None, unigram: Any = None, ci: float | None = None) -> None:
        self.run_id = run_id
        self.levels = LevelAssigner(text, TextUnits.of(text), words=words, sentences=sentences)
        self.unigram = None  # PPLu and context gain (unigram=: anything as_unigram takes)
        if unigram is not None:
            from ..core.unigram import as_unigram

            self.unigram = as_unigram(unigram, lm.tokenizer, text=text)
        self.ci = ci  # bootstrap intervals of the final metrics
        self.chunks: list[dict[str, np.ndarray]] = []
        self.vocab: dict[int, str] = {}
        self.last: ScoreProgress | None = None  # the latest batch (None: nothing scored yet)
        self.failed: ScoreResult | None = None  # what a failed run had scored
        self.top_k = 0
        self.total = 0
        self.done: dict[str, Any] | None = None  # the final message, kept for replays

    @property
    def result(self) -> ScoreResult | None:
        if self.failed is not None:
            return self.failed
        return self.last.result if self.last is not None else None

    def add(self, item: ScoreProgress) -> Message:
        """Take in one batch from the scorer; its ``chunk`` message."""
        if self.last is None:
            self.top_k = int(item.result.settings.get("top_k", 0))
            self.total = item.total
        self.last = item
        chunk = with_levels(item.chunk, self.levels, self.unigram)
        if len(chunk["token_ids"]):
            self.chunks.append(chunk)
            self.vocab.update(item.new_vocab)
        return P.chunk_message(item.start, chunk, item.new_vocab, item, self.top_k,
                               self.levels.units)

    def settings(self) -> dict[str, Any]:
        """The ``settings`` trait for what the run has scored."""
        return P.result_settings(self.result, unigram=self.unigram, ci=self.ci)

    def reset(self) -> Message:
        return P.reset_message(self.levels, self.total, self.top_k)

    def finish(self) -> dict[str, Any]:
        """The run's ``result_data`` (the done message is kept for replays)."""
        res = self.result
        assert res is not None, "a run finishes only once it has a result"
        data = self.all_scored(res) or {}
        columns = {k: data[k] for k in OWN_COLUMNS if k in data}
        payload = P.result_data(res, levels=self.levels, columns=columns, unigram=self.unigram,
                                ci=self.ci, run_id=self.run_id)
        self.done = P.done_message(payload)
        return payload

    def replay(self) -> list[Message]:
        """Everything so far for a view attached mid-run: reset, one chunk, done."""
        out = [self.reset()]
        data = self.all_scored()
        if data is not None and self.last is not None:
            out.append(P.chunk_message(0, data, self.vocab, self.last, self.top_k,
                                       self.levels.units))
        if self.done is not None:
            out.append((self.done, None))
        return out

    def all_scored(self, res: ScoreResult | None = None) -> dict[str, np.ndarray] | None:
        """Every chunk so far as one array per field (replays stay cheap).  ``res``, the
        run's result built from the same chunks, lends its token arrays: only the run's
        own fields (word, sentence, context gain) are joined here."""
        if not self.chunks:
            return None
        if len(self.chunks) > 1:
            n = sum(len(c["token_ids"]) for c in self.chunks)
            shared = res is not None and len(res.token_ids) == n
            self.chunks = [{k: getattr(res, k) if shared and k in TOKEN_ARRAYS
                            else np.concatenate([c[k] for c in self.chunks])
                            for k in self.chunks[0]}]
        return self.chunks[0]
