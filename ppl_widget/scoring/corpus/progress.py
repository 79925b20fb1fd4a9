"""A corpus run's progress line on stderr: documents and tokens per second."""

from __future__ import annotations

import time
from typing import TextIO

from .distributed import Ranks


class CorpusProgress:
    """Documents and tokens per second on stderr (rank 0 only; its own shard)."""

    def __init__(self, stream: TextIO | None, ranks: Ranks):
        self.stream = stream
        self.ranks = ranks
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.docs = self.tokens = self.total = self.before = 0

    def start(self, n_documents: int, already: int, mine: int) -> None:
        self.t0 = time.perf_counter()
        self.total, self.before = mine, already
        if self.stream is not None and already:
            self.stream.write(f"resuming: {already:,} of {n_documents:,} documents already "
                              "scored\n")
        self._show(force=True)

    def update(self, docs: int, tokens: int) -> None:
        self.docs += docs
        self.tokens += tokens
        self._show()

    def _show(self, force: bool = False) -> None:
        now = time.perf_counter()
        if self.stream is None or (not force and now - self.last < 0.2):
            return
        self.last = now
        dt = max(now - self.t0, 1e-9)
        frac = self.docs / self.total if self.total else 1.0
        bar = "#" * int(round(frac * 30)) + "." * (30 - int(round(frac * 30)))
        who = (f"rank 0 of {self.ranks.world_size}: " if self.ranks.distributed else "")
        self.stream.write(f"\r{who}[{bar}] {self.docs:,}/{self.total:,} documents  "
                          f"{self.docs / dt:,.1f} docs/s  {self.tokens / dt:,.0f} tok/s ")
        self.stream.flush()

    def close(self) -> None:
        self._show(force=True)
        if self.stream is not None:
            self.stream.write("\n")
