"""The run loop of ``stream``: plan the windows, keep batches in flight on the device,
and yield each finished batch as a ``ScoreProgress`` chunk."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ...core.result import TOKEN_ARRAYS, ScoreResult, empty_token_arrays, model_ref
from ...core.windows import Window, plan_windows, plan_windows_of_start
from ..kinds.model_kind import PendingStats, ScoringForward, ScoringModel
from .forward import is_oom
from .prepare import Prepared, PreparingText
from .progress import CancelFlag, ScoreProgress, ScoringError, is_cancelled
from .vocab import decode_each, ids_in

#: Batches in flight at most while a long text is still being tokenized (prepare_ahead):
#: on the device they hold only their outputs, and the GPU should not wait for the host.
AHEAD_IN_FLIGHT = 8
#: With batches in flight (a GPU), the first batch holds this share of a full one, at least
#: one window: the first colours come after a fraction of a batch's device time.
FIRST_BATCH_SHARE = 8


class ScoringRun:
    """One run of ``stream``: submits batches of ``windows`` (up to ``depth`` in flight)
    and yields each as a ``ScoreProgress`` as it finishes (iterate over it once).

    ``prep`` may still be preparing (``prepare_ahead``): then ``windows`` is None, full
    batches are submitted as more of the text's tokens are final (up to
    ``AHEAD_IN_FLIGHT``), and the whole text is waited for before the first batch's
    results are turned into arrays.  ``kept``: the windows an edit left unchanged
    (``incremental.plan_reuse``), handed out first as one chunk."""

    def __init__(self, prep: Prepared | PreparingText, windows: list[Window] | None,
                 forward: ScoringForward, lm: ScoringModel, settings: dict, batch_size: int,
                 depth: int, cancel: CancelFlag, kept: Any = None):
        import torch

        self.forward, self.lm, self.settings = forward, lm, settings
        self.batch_size, self.depth, self.cancel, self.kept = batch_size, depth, cancel, kept
        self.max_length, self.stride = settings["max_length"], settings["stride"]
        # how windows are planned beyond their sizes (every window reads the prefix token)
        self.plan = {"prefix_every_window": settings.get("prefix_every_window", False)}
        self.prep = prep
        self.ahead = prep if isinstance(prep, PreparingText) else None
        if self.ahead is not None:  # the device holds the positions final so far
            self.sequence = extend_on_device(None, self.ahead.known(), lm.device)
            windows = plan_windows_of_start(len(self.sequence), self.max_length, self.stride,
                                            **self.plan)
            self.total = -1  # not known until the whole text is tokenized
        else:
            self.sequence = torch.as_tensor(prep.sequence, device=lm.device)
            self.total = len(prep.target_ids)
        assert windows is not None
        self.windows = windows
        self.parts: list[dict[str, np.ndarray]] = []
        self.vocab: dict[int, str] = {}
        self.done = 0
        self.t0 = time.perf_counter()
        self.cancelled = False
        self.bow_end = math.nan  # b after the last token, computed once every token is scored
        # On a GPU, batch i+1 is enqueued before batch i's results are turned into arrays
        # and yielded: the host work (and the consumer's) overlaps the device's.
        self.in_flight: deque[tuple[list[Window], PendingStats]] = deque()
        self.next_window = 0

    def __iter__(self) -> Iterator[ScoreProgress]:
        if self.kept is not None:
            yield self._reused()
        while self.next_window < len(self.windows) or self.in_flight or self.ahead is not None:
            if self.ahead is not None:
                self._grow()
            if self._oldest_is_done():  # hand it out before more go in flight: live colours
                if self.ahead is not None:
                    self._settle()
                yield self._finish_oldest()
                continue
            if self._can_submit():
                if is_cancelled(self.cancel):
                    self.cancelled = True  # what is in flight is dropped: a stop within a batch
                    break
                self._submit_next()
                continue
            if self.ahead is not None:
                if len(self.in_flight) < AHEAD_IN_FLIGHT and not self.ahead.finished:
                    self.ahead.wait_for_more(len(self.sequence))  # too little for a full batch
                else:  # the batches in flight need their tokens' spans: the whole text
                    self._settle()
                continue
            yield self._finish_oldest()
        if self.ahead is not None:  # cancelled before the rest of the text was tokenized
            self._settle()
        if self.done < self.total or self.total == 0:
            # a final marker: cancelled, or a text with nothing to score
            elapsed = time.perf_counter() - self.t0
            yield ScoreProgress(start=self.done, chunk=empty_token_arrays(self.forward.top_k),
                                new_vocab={}, done=self.done, total=self.total,
                                elapsed_s=elapsed, finished=self.done == self.total,
                                cancelled=self.cancelled,
                                _build=self._snapshot(len(self.parts), self.done, elapsed))

    # ---- the text ----------------------------------------------------------
    def _grow(self) -> None:
        """Take in what the thread has tokenized since: more windows are final."""
        assert self.ahead is not None
        positions = self.ahead.known()
        if len(positions) > len(self.sequence):
            self.windows = plan_windows_of_start(len(positions), self.max_length, self.stride,
                                                 **self.plan)
            self.sequence = extend_on_device(self.sequence, positions, self.lm.device)

    def _settle(self) -> None:
        """Wait for the whole text prepared ahead; its windows go on from those in flight."""
        assert self.ahead is not None
        prep, self.ahead = self.ahead.result(), None
        self.prep = prep
        full = plan_windows(len(prep.sequence), self.max_length, self.stride, **self.plan)
        i = self.next_window
        assert full[:i] == self.windows[:i], "the start's windows are the whole text's"
        self.windows = full
        self.sequence = extend_on_device(self.sequence, prep.sequence, self.lm.device)
        self.total = len(prep.target_ids)
        self.settings.update(prefix_token=prep.prefix_token, n_windows=len(full))

    # ---- the device --------------------------------------------------------
    def _can_submit(self) -> bool:
        if self.ahead is not None:  # full batches only: the batches are those of the whole text
            return (len(self.windows) - self.next_window >= self.batch_size
                    and len(self.in_flight) < AHEAD_IN_FLIGHT)
        return self.next_window < len(self.windows) and len(self.in_flight) < self.depth

    def _oldest_is_done(self) -> bool:
        """The queue is full (``depth`` batches in flight) and its oldest batch is done,
        with the text's spans known: its chunk can go out without waiting.  (Filling
        up to ``AHEAD_IN_FLIGHT`` first held the first colours back for several batches
        while each launch waited for the device.)"""
        if len(self.in_flight) < self.depth or not self.in_flight[0][1].ready():
            return False
        return self.ahead is None or self.ahead.finished

    def _submit_next(self) -> None:
        """Put the next batch in flight; out of memory, halve the batch and try again."""
        import torch

        size = self.batch_size
        if self.depth > 1 and self.next_window == 0 and self.kept is None:
            size = max(1, size // FIRST_BATCH_SHARE)  # small first: live first colours
        batch = self.windows[self.next_window:self.next_window + size]
        # one input width per batch (a plan's last window may be shorter than the others)
        width = batch[0].n_inputs
        batch = batch[:next((i for i, w in enumerate(batch) if w.n_inputs != width), len(batch))]
        try:
            with torch.inference_mode():
                if self.depth > 1:
                    pending = self.forward.submit(self.sequence, batch)
                else:
                    arrays = self.forward.score_batch(self.sequence, batch)
                    pending = PendingStats((lambda a: lambda: a)(arrays))
        except Exception as exc:
            if is_oom(exc) and self.batch_size > 1:
                self.batch_size = max(1, self.batch_size // 2)  # the same windows, smaller
                if self.lm.device.type == "cuda":
                    torch.cuda.empty_cache()
                return
            raise self._failed(exc) from exc
        self.in_flight.append((batch, pending))
        self.next_window += len(batch)

    def _finish_oldest(self) -> ScoreProgress:
        """Wait for the oldest batch in flight; its chunk."""
        batch, pending = self.in_flight.popleft()
        try:
            arrays = pending()
        except Exception as exc:  # an asynchronous device error surfaces here
            raise self._failed(exc) from exc
        # batches finish in order and the plan's targets follow the text: this batch's
        # targets are the scored tokens after those done (a protocol may skip positions)
        start = self.done
        stop = start + sum(w.n_targets for w in batch)
        arrays = self._token_arrays(arrays, start, stop)
        new_ids = [t for t in ids_in([arrays]).tolist() if t not in self.vocab]
        new_vocab = decode_each(self.lm.tokenizer, new_ids)
        self.vocab.update(new_vocab)
        self.parts.append(arrays)
        self.done = stop
        elapsed = time.perf_counter() - self.t0
        return ScoreProgress(start=start, chunk=arrays, new_vocab=new_vocab, done=self.done,
                             total=self.total, elapsed_s=elapsed,
                             finished=self.done == self.total,
                             _build=self._snapshot(len(self.parts), self.done, elapsed))

    def _token_arrays(self, arrays: dict[str, np.ndarray], start: int,
                      stop: int) -> dict[str, np.ndarray]:
        """A batch's statistics with its tokens' fields, typed as ``TOKEN_ARRAYS``; takes
        b after the last token when the batch holds it (or computes it)."""
        prep = self.prep
        arrays.update(token_ids=prep.target_ids[start:stop],
                      offsets=prep.target_offsets[start:stop],
                      units=prep.target_units[start:stop], is_eos=prep.target_is_eos[start:stop])
        end = arrays.pop("bow_end", None)  # b after the last token, from the same forward
        arrays.setdefault("bow_prob", np.full(stop - start, np.nan))  # model kinds without b
        arrays = {k: np.asarray(arrays[k], dtype=TOKEN_ARRAYS[k]) for k in TOKEN_ARRAYS}
        if end is not None:
            self.bow_end = float(np.asarray(end).reshape(-1)[0])
        elif stop == self.total and self.windows[-1].target_end < len(self.sequence):
            self.bow_end = math.nan  # a plan that leaves the text's end unscored: no end
        elif stop == self.total:  # one more forward (NaN from a kind without b)
            try:
                if self.plan["prefix_every_window"]:  # only BatchedForward takes it
                    self.bow_end = self.forward.bow_after_last(self.sequence, self.max_length,
                                                               True)
                else:
                    self.bow_end = self.forward.bow_after_last(self.sequence, self.max_length)
            except Exception as exc:
                raise self._failed(exc) from exc
        return arrays

    # ---- results -----------------------------------------------------------
    def _reused(self) -> ScoreProgress:
        """The windows an edit left unchanged: their results, as one chunk."""
        kept = self.kept
        self.windows = self.windows[kept.windows:]
        self.vocab.update(kept.vocab)
        missing = [t for t in ids_in([kept.arrays]).tolist() if t not in self.vocab]
        self.vocab.update(decode_each(self.lm.tokenizer, missing))
        self.parts.append(kept.arrays)
        self.done = kept.tokens
        if self.done == self.total:
            self.bow_end = kept.bow_prob_end
        return ScoreProgress(start=0, chunk=kept.arrays, new_vocab=dict(self.vocab),
                             done=self.done, total=self.total, elapsed_s=0.0,
                             finished=self.done == self.total,
                             _build=self._snapshot(1, self.done, 0.0))

    def _snapshot(self, n_parts: int, scored: int, elapsed: float) -> Callable[[], ScoreResult]:
        """The result as it stands now, built only if asked for."""
        def build() -> ScoreResult:
            prep, vocab = self.prep, self.vocab
            kept = self.parts[:n_parts]
            ids = ids_in(kept)
            return ScoreResult.from_parts(
                prep.text, kept, self.forward.top_k, vocab={i: vocab[i] for i in ids.tolist()},
                unscored_token_ids=prep.unscored_ids, unscored_offsets=prep.unscored_offsets,
                settings={**self.settings, "batch_size": self.batch_size},
                partial=scored < self.total, total_tokens=self.total, elapsed_s=elapsed,
                tokenizer=self.lm.tokenizer, model=model_ref(self.lm),
                context=getattr(prep, "context", None),
                bow_prob_end=self.bow_end if scored == self.total else math.nan)
        return build

    def _failed(self, exc: BaseException) -> ScoringError:
        if self.ahead is not None:
            self._settle()  # the partial result (empty) needs the text's units
        return ScoringError(f"scoring failed after {self.done} of {self.total} tokens: "
                            f"{type(exc).__name__}: {exc}",
                            self._snapshot(len(self.parts), self.done,
                                           time.perf_counter() - self.t0)())


def extend_on_device(sequence: Any, positions: np.ndarray, device: Any) -> Any:
    """``positions`` as a device tensor, given ``sequence``, a device copy of its start
    (or None).  On CUDA only the new positions are copied, through pinned memory and
    without waiting: a plain copy from host memory waits for every batch in flight."""
    import torch

    start = 0 if sequence is None else len(sequence)
    new = torch.from_numpy(np.ascontiguousarray(positions[start:], dtype=np.int64))
    if device.type == "cuda":
        new = new.pin_memory().to(device, non_blocking=True)
    else:
        new = new.to(device)
    return new if sequence is None else torch.cat([sequence, new])


def pipeline_depth(lm: ScoringModel, forward: ScoringForward) -> int:
    """Batches in flight: 2 on a GPU (host work overlaps device work), else 1.  A forward
    that ``supports_async`` may say how many it takes (``pipeline_depth``; the simulated
    device of benchmarks/bench_prepare_ahead.py does); one that does not takes 1."""
    if not forward.supports_async:
        return 1
    if forward.pipeline_depth:
        return int(forward.pipeline_depth)
    return 2 if lm.device.type == "cuda" else 1

