"""Two batches in flight (the GPU path), exercised on the CPU by forcing the depth."""

from __future__ import annotations

import threading

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from conftest import LONG_TEXT  # noqa: E402
from float64 import TINY_NATS, assert_scores_within  # noqa: E402

from ppl_widget import ScoringError, score, stream  # noqa: E402
from ppl_widget.scoring.kinds.model_kind import PendingStats  # noqa: E402
from ppl_widget.scoring.runner import scorer  # noqa: E402
from ppl_widget.scoring.runner.forward import BatchedForward  # noqa: E402


@pytest.fixture
def pipelined(monkeypatch):
    """Count submits and finishes; run with two batches in flight."""
    log = []
    real = BatchedForward.submit

    def submit(self, sequence, batch):
        log.append(("submit", batch[0].target_start))
        finish = real(self, sequence, batch)

        def wrapped():
            log.append(("finish", batch[0].target_start))
            return finish()
        return PendingStats(wrapped, finish.ready)

    monkeypatch.setattr(scorer, "pipeline_depth", lambda lm, forward: 2)
    monkeypatch.setattr(BatchedForward, "submit", submit)
    return log


def test_next_batch_is_submitted_before_the_previous_one_is_finished(tiny_lm, pipelined):
    ref = score(LONG_TEXT, tiny_lm, max_length=16, stride=4, batch_size=3)
    # the first batch is small (FIRST_BATCH_SHARE of 3 windows: one), the next full
    assert pipelined[:3] == [("submit", 1), ("submit", 1 + 16), ("finish", 1)]
    pipelined.clear()
    items = list(stream(LONG_TEXT, tiny_lm, max_length=16, stride=4, batch_size=3))
    assert [k for k, _ in pipelined].count("finish") == len(items)
    np.testing.assert_array_equal(np.concatenate([it.chunk["surprisal"] for it in items]),
                                  ref.surprisal)
    assert [it.start for it in items] == [0] + [it.done for it in items[:-1]]


def test_cancel_drops_the_batch_in_flight(tiny_lm, pipelined):
    flag = threading.Event()
    items = []
    for it in stream(LONG_TEXT, tiny_lm, max_length=16, stride=4, batch_size=1, cancel=flag):
        items.append(it)
        if len(items) == 2:
            flag.set()
    assert len(items) == 3 and items[-1].cancelled
    res = items[-1].result
    assert res.partial and len(res) == items[1].done
    full = score(LONG_TEXT, tiny_lm, max_length=16, stride=4)
    np.testing.assert_array_equal(res.token_ids, full.token_ids[:len(res)])
    assert_scores_within(res, tiny_lm, TINY_NATS)  # batches of one, not score()'s: float64


def test_out_of_memory_with_a_batch_in_flight_loses_nothing(tiny_lm, pipelined, monkeypatch):
    ref = score(LONG_TEXT, tiny_lm, max_length=16, stride=8, batch_size=1)
    inner = BatchedForward.submit

    def oom_when_big(self, sequence, batch):
        if len(batch) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return inner(self, sequence, batch)

    monkeypatch.setattr(BatchedForward, "submit", oom_when_big)
    res = score(LONG_TEXT, tiny_lm, max_length=16, stride=8, batch_size=9)
    assert res.settings["batch_size"] == 2
    np.testing.assert_array_equal(res.token_ids, ref.token_ids)
    assert_scores_within(res, tiny_lm, TINY_NATS)  # batches of two, not one: float64


def test_error_when_waiting_for_a_batch_keeps_what_was_yielded(tiny_lm, pipelined, monkeypatch):
    inner = BatchedForward.submit
    calls = {"n": 0}

    def fails_third(self, sequence, batch):
        finish = inner(self, sequence, batch)
        calls["n"] += 1
        if calls["n"] != 3:
            return finish

        def broken():
            raise RuntimeError("device-side assert (simulated)")
        return PendingStats(broken)

    monkeypatch.setattr(BatchedForward, "submit", fails_third)
    with pytest.raises(ScoringError, match="device-side assert") as info:
        score(LONG_TEXT, tiny_lm, max_length=16, stride=8, batch_size=1)
    assert len(info.value.partial_result) == 16 + 8  # the two batches before it
