"""Host work beside the GPU in a corpus run.

A corpus is scored a chunk of documents at a time: tokenize the chunk, score its windows,
write its part.  On a GPU the tokenizing and the writing (Arrow tables, zstd, fsync) would
leave the device idle for a fifth of the time or more, so there the next chunk is tokenized
and the last one written in threads while this one is scored.  Results do not change:
each step is the same, only when it runs.  Without a GPU everything runs in turn (the
cores are the model's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def prefetched(fn: Callable[[T], R], items: Sequence[T], enabled: bool
               ) -> Iterator[tuple[T, R]]:
    """``(item, fn(item))`` in order; when ``enabled``, ``fn`` of the next item runs in a
    thread while the caller works on this one (one ahead: memory stays one chunk's)."""
    if not enabled:
        for item in items:
            yield item, fn(item)
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ppl-widget-tokenize") as pool:
        ahead = pool.submit(fn, items[0]) if items else None
        for k, item in enumerate(items):
            assert ahead is not None
            result = ahead.result()
            ahead = pool.submit(fn, items[k + 1]) if k + 1 < len(items) else None
            yield item, result


class BackgroundWriter:
    """``write(rows)`` hands rows to ``fn``; when ``enabled``, in a thread, one write at a
    time (a write waits for the one before, whose error it raises).  Leaving the ``with``
    block waits for the last write, also when the block failed: what was scored is kept."""

    def __init__(self, fn: Callable[[Any], None], enabled: bool):
        self._fn = fn
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ppl-widget-write") \
            if enabled else None
        self._pending: Future | None = None

    def __enter__(self) -> BackgroundWriter:
        return self

    def write(self, rows: Any) -> None:
        if self._pool is None:
            self._fn(rows)
            return
        self._wait()
        self._pending = self._pool.submit(self._fn, rows)

    def _wait(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if self._pool is None:
            return
        try:
            if exc_type is None:
                self._wait()  # its error is this block's
        finally:
            self._pool.shutdown(wait=True)  # a failed block still lets the last write finish
