"""The run loop of ``stream``: plan the windows, keep batches in flight on the device,
and yield each finished batch as a ``ScoreProgress`` chunk."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..core.result import TOKEN_ARRAYS, ScoreResult, empty_token_arrays
from ..core.windows import Window, plan_windows, plan_windows_of_start
from .forward import is_oom
from .prepare import Prepared, PreparingText
from .progress import CancelFlag, ScoreProgress, ScoringError, is_cancelled
from .vocab import decode_each, ids_in

#: Batches in flight at most while a long text is still being tokenized (prepare_ahead):
#: on the device they hold only their outputs, and the GPU should not wait for the host.
AHEAD_IN_FLIGHT = 8


def run_batches(prep: Prepared | PreparingText, windows: list[Window] | None, forward: Any,
         lm: Any, settings: dict, batch_size: int, depth: int, cancel: CancelFlag,
         kept: Any = None) -> Iterator[ScoreProgress]:
    """Submit batches of ``windows`` (up to ``depth`` in flight) and yield each as it
    finishes.  ``prep`` may still be preparing (``prepare_ahead``): then ``windows`` is
    None, full batches are submitted as more of the text's tokens are final (up to
    ``AHEAD_IN_FLIGHT``), and the whole text is waited for before the first batch's
    results are turned into arrays."""
    import torch

    max_length, stride = settings["max_length"], settings["stride"]
    ahead = prep if isinstance(prep, PreparingText) else None
    if ahead is not None:  # the device holds the positions final so far
        sequence = extend_on_device(None, ahead.known(), lm.device)
        windows = plan_windows_of_start(len(sequence), max_length, stride)
        total = -1  # not known until the whole text is tokenized
    else:
        sequence = torch.as_tensor(prep.sequence, device=lm.device)
        total = len(prep.target_ids)
    assert windows is not None
    parts: list[dict[str, np.ndarray]] = []
    vocab: dict[int, str] = {}
    done = 0
    t0 = time.perf_counter()
    cancelled = False
    bow_end = [math.nan]  # b after the last token, computed once every token is scored

    def snapshot(n_parts: int, scored: int, elapsed: float) -> Callable[[], ScoreResult]:
        """The result as it stands now, built only if asked for."""
        def build() -> ScoreResult:
            kept = parts[:n_parts]
            ids = ids_in(kept)
            return ScoreResult.from_parts(
                prep.text, kept, forward.top_k, vocab={i: vocab[i] for i in ids.tolist()},
                unscored_token_ids=prep.unscored_ids, unscored_offsets=prep.unscored_offsets,
                settings={**settings, "batch_size": batch_size},
                partial=scored < total, total_tokens=total, elapsed_s=elapsed,
                tokenizer=lm.tokenizer,
                bow_prob_end=bow_end[0] if scored == total else math.nan)
        return build

    # On a GPU, batch i+1 is enqueued before batch i's results are turned into arrays
    # and yielded: the host work (and the consumer's) overlaps the device's.
    in_flight: deque[tuple[list[Window], Callable[[], dict[str, np.ndarray]]]] = deque()
    i = 0

    def grow() -> None:
        """Take in what the thread has tokenized since: more windows are final."""
        nonlocal windows, sequence
        positions = ahead.known()
        if len(positions) > len(sequence):
            windows = plan_windows_of_start(len(positions), max_length, stride)
            sequence = extend_on_device(sequence, positions, lm.device)

    def settle() -> None:
        """Wait for the whole text prepared ahead; its windows go on from those in flight."""
        nonlocal prep, ahead, windows, sequence, total
        assert ahead is not None
        prep, ahead = ahead.result(), None
        full = plan_windows(len(prep.sequence), max_length, stride)
        assert full[:i] == windows[:i], "the start's windows are the whole text's"
        windows = full
        sequence = extend_on_device(sequence, prep.sequence, lm.device)
        total = len(prep.target_ids)
        settings.update(prefix_token=prep.prefix_token, n_windows=len(full))

    def failed(exc: BaseException) -> ScoringError:
        if ahead is not None:
            settle()  # the partial result (empty) needs the text's units
        return ScoringError(f"scoring failed after {done} of {total} tokens: "
                            f"{type(exc).__name__}: {exc}",
                            snapshot(len(parts), done, time.perf_counter() - t0)())

    if kept is not None:  # the windows an edit left unchanged: their results, as one chunk
        windows = windows[kept.windows:]
        vocab.update(kept.vocab)
        missing = [t for t in ids_in([kept.arrays]).tolist() if t not in vocab]
        vocab.update(decode_each(lm.tokenizer, missing))
        parts.append(kept.arrays)
        done = kept.tokens
        if done == total:
            bow_end[0] = kept.bow_prob_end
        yield ScoreProgress(start=0, chunk=kept.arrays, new_vocab=dict(vocab), done=done,
                            total=total, elapsed_s=0.0, finished=done == total,
                            _build=snapshot(1, done, 0.0))

    def can_submit() -> bool:
        if ahead is not None:  # full batches only: the batches are those of the whole text
            return len(windows) - i >= batch_size and len(in_flight) < AHEAD_IN_FLIGHT
        return i < len(windows) and len(in_flight) < depth

    while i < len(windows) or in_flight or ahead is not None:
        if ahead is not None:
            grow()
        if can_submit():
            if is_cancelled(cancel):
                cancelled = True  # what is still in flight is dropped: a stop within one batch
                break
            batch = windows[i:i + batch_size]
            try:
                with torch.inference_mode():
                    if depth > 1:
                        pending = forward.submit(sequence, batch)
                    else:
                        arrays = forward.score_batch(sequence, batch)
                        pending = (lambda a: lambda: a)(arrays)
            except Exception as exc:
                if is_oom(exc) and batch_size > 1:
                    batch_size = max(1, batch_size // 2)  # retry the same windows, smaller
                    if lm.device.type == "cuda":
                        torch.cuda.empty_cache()
                    continue
                raise failed(exc) from exc
            in_flight.append((batch, pending))
            i += len(batch)
            continue
        if ahead is not None:
            if len(in_flight) < AHEAD_IN_FLIGHT and not ahead.finished:
                ahead.wait_for_more(len(sequence))  # too little text for a full batch yet
            else:  # the batches in flight need their tokens' spans: the whole text
                settle()
            continue
        batch, pending = in_flight.popleft()
        try:
            arrays = pending()
        except Exception as exc:  # an asynchronous device error surfaces here
            raise failed(exc) from exc
        start, stop = batch[0].target_start - 1, batch[-1].target_end - 1
        arrays.update(token_ids=prep.target_ids[start:stop],
                      offsets=prep.target_offsets[start:stop],
                      units=prep.target_units[start:stop], is_eos=prep.target_is_eos[start:stop])
        end = arrays.pop("bow_end", None)  # b after the last token, from the same forward
        arrays.setdefault("bow_prob", np.full(stop - start, np.nan))  # model kinds without b
        arrays = {k: np.asarray(arrays[k], dtype=TOKEN_ARRAYS[k]) for k in TOKEN_ARRAYS}
        if end is not None:
            bow_end[0] = float(np.asarray(end).reshape(-1)[0])
        elif stop == total and hasattr(forward, "bow_after_last"):  # one more forward
            try:
                bow_end[0] = forward.bow_after_last(sequence, settings["max_length"])
            except Exception as exc:
                raise failed(exc) from exc
        new_ids = [i for i in ids_in([arrays]).tolist() if i not in vocab]
        new_vocab = decode_each(lm.tokenizer, new_ids)
        vocab.update(new_vocab)
        parts.append(arrays)
        done = stop
        elapsed = time.perf_counter() - t0
        yield ScoreProgress(start=start, chunk=arrays, new_vocab=new_vocab, done=done,
                            total=total, elapsed_s=elapsed, finished=done == total,
                            _build=snapshot(len(parts), done, elapsed))
    if ahead is not None:  # cancelled before the rest of the text was tokenized
        settle()
    if done < total or total == 0:
        # a final marker: cancelled, or a text with nothing to score
        elapsed = time.perf_counter() - t0
        yield ScoreProgress(start=done, chunk=empty_token_arrays(forward.top_k), new_vocab={},
                            done=done, total=total, elapsed_s=elapsed, finished=done == total,
                            cancelled=cancelled, _build=snapshot(len(parts), done, elapsed))


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


def pipeline_depth(lm: Any, forward: Any) -> int:
    """Batches in flight: 2 on a GPU (host work overlaps device work), else 1.  A model
    kind's own forward with ``submit`` may say how many it takes (``pipeline_depth``;
    the simulated device of benchmarks/bench_prepare_ahead.py does)."""
    if hasattr(forward, "submit") and getattr(forward, "pipeline_depth", None):
        return int(forward.pipeline_depth)
    return 2 if (lm.device.type == "cuda" and hasattr(forward, "submit")) else 1

