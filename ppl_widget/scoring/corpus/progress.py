"""A corpus run's progress line on stderr (documents and tokens per second), and its
closing report: each rank's throughput against its device's measured peak."""

from __future__ import annotations

import math
import time
from typing import Any, TextIO

from .distributed import Ranks


class CorpusProgress:
    """Documents and tokens per second on stderr (rank 0 only; its own shard)."""

    def __init__(self, stream: TextIO | None, ranks: Ranks):
        self.stream = stream
        self.ranks = ranks
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.docs = self.tokens = self.total = self.before = 0
        self.flops = 0.0
        self.end: float | None = None

    def start(self, n_documents: int, already: int, mine: int) -> None:
        self.t0 = time.perf_counter()
        self.total, self.before = mine, already
        if self.stream is not None and already:
            self.stream.write(f"resuming: {already:,} of {n_documents:,} documents already "
                              "scored\n")
        self._show(force=True)

    def update(self, docs: int, tokens: int, flops: float = 0.0) -> None:
        self.docs += docs
        self.tokens += tokens
        self.flops += flops
        self._show()

    def seconds(self) -> float:
        """Seconds since this rank started scoring (until ``close``)."""
        return (self.end or time.perf_counter()) - self.t0

    def summary(self) -> dict[str, Any]:
        """This rank's work: documents, scored tokens, seconds, executed FLOPs (the
        windows' positions, padding not counted; NaN for a model kind without a count)."""
        return {"rank": self.ranks.rank, "documents": self.docs, "tokens": self.tokens,
                "seconds": self.seconds(), "flops": self.flops or math.nan}

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
        self.end = time.perf_counter()
        self._show(force=True)
        if self.stream is not None:
            self.stream.write("\n")


def throughput_table(rows: list[dict[str, Any]]) -> Any:
    """One row per rank: documents, tokens, seconds, tokens/s, TFLOP/s, the measured
    matrix-product peak of its device in the model's dtype, and the share of it reached."""
    import pandas as pd

    table = pd.DataFrame(rows, columns=["rank", "device", "dtype", "compiled", "documents",
                                        "tokens", "seconds", "flops", "peak_tflops"])
    seconds = table["seconds"].clip(lower=1e-9)
    table["tokens_per_s"] = table["tokens"] / seconds
    table["tflops"] = table["flops"] / seconds / 1e12
    table["percent_of_peak"] = 100 * table["tflops"] / table["peak_tflops"]
    return table


def throughput_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The report printed at the end of a run: one line per rank."""
    lines = []
    for r in throughput_table(rows).itertuples():
        who = f"rank {r.rank}: " if len(rows) > 1 else ""
        line = (f"{who}scored {r.documents:,} documents, {r.tokens:,} tokens in "
                f"{r.seconds:.1f} s on {r.device} ({r.dtype}"
                f"{', compiled' if r.compiled else ''}): {r.tokens_per_s:,.0f} tokens/s")
        if not math.isnan(r.percent_of_peak):
            line += (f", {r.tflops:.3g} TFLOP/s, {r.percent_of_peak:.1f}% of the "
                     f"{r.peak_tflops:.3g} TFLOP/s {r.dtype} matrix-product peak measured there")
        lines.append(line)
    return lines
