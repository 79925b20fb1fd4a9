"""What a scoring run hands out: a ``ScoreProgress`` per finished batch, a
``ScoringError`` carrying the partial result, and how a caller asks it to stop."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ...core.result import ScoreResult

CancelFlag = threading.Event | Callable[[], bool] | None


class ScoringError(RuntimeError):
    """Scoring stopped on an error; ``partial_result`` keeps what was scored."""

    def __init__(self, message: str, partial_result: ScoreResult | None = None):
        super().__init__(message)
        self.partial_result = partial_result


@dataclass
class ScoreProgress:
    """One finished batch: the new tokens and how far the run is."""

    start: int  # index, among scored tokens, of this chunk's first token
    chunk: dict[str, np.ndarray]  # arrays keyed like result.TOKEN_ARRAYS
    new_vocab: dict[int, str]  # decoded text of token ids first seen in this chunk
    done: int
    total: int
    elapsed_s: float
    finished: bool = False  # every token scored
    cancelled: bool = False
    _build: Callable[[], ScoreResult] = field(default=None, repr=False)  # type: ignore[assignment]
    _result: ScoreResult | None = field(default=None, repr=False, compare=False)

    @property
    def tokens_per_s(self) -> float:
        return self.done / self.elapsed_s if self.elapsed_s > 0 else math.nan

    @property
    def eta_s(self) -> float:
        rate = self.tokens_per_s
        return (self.total - self.done) / rate if rate and rate > 0 else math.nan

    @property
    def result(self) -> ScoreResult:
        """Everything scored up to this point (``partial`` unless finished); built on
        first use and kept (a widget's last message and ``wait()`` share one)."""
        if self._result is None:
            self._result = self._build()
        return self._result


def is_cancelled(cancel: CancelFlag) -> bool:
    if cancel is None:
        return False
    if isinstance(cancel, threading.Event):
        return cancel.is_set()
    return bool(cancel())
