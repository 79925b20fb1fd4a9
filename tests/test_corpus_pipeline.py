"""A corpus run on a GPU tokenizes the next chunk, and assembles and writes the last one,
while it scores: the helpers, and a whole run with that forced on the CPU equal to one
done in turn."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from conftest import CORPUS, LONG_TEXT

from ppl_widget.scoring.corpus.pipeline import BackgroundWriter, prefetched


def test_prefetched_works_one_ahead_in_order():
    log, started = [], {k: threading.Event() for k in range(7)}

    def work(k):
        started[k].set()
        log.append(("work", k))
        return k * 10

    got = []
    for item, value in prefetched(work, [0, 1, 2, 3], enabled=True):
        # while the caller holds item k, item k + 1 is being worked on already
        if item < 3:
            assert started[item + 1].wait(5)
        assert not any(started[j].is_set() for j in range(item + 2, 4))
        got.append((item, value))
    assert got == [(0, 0), (1, 10), (2, 20), (3, 30)]
    assert [k for _, k in log] == [0, 1, 2, 3]
    log.clear()
    assert list(prefetched(work, [5, 6], enabled=False)) == [(5, 50), (6, 60)]
    assert list(prefetched(work, [], enabled=True)) == []


def test_prefetched_raises_the_work_error_at_its_item():
    def work(k):
        if k == 1:
            raise ValueError("bad document 1")
        return k

    it = prefetched(work, [0, 1, 2], enabled=True)
    assert next(it) == (0, 0)
    with pytest.raises(ValueError, match="bad document 1"):
        next(it)


@pytest.mark.parametrize("enabled", [True, False])
def test_writer_writes_in_order_and_raises_a_failed_write(enabled):
    written, gate = [], threading.Event()

    def write(rows):
        if rows == "slow":
            gate.wait(5)
        if rows == "broken":
            raise OSError("disk full")
        written.append(rows)

    with BackgroundWriter(write, enabled) as w:
        w.write("a")
        if enabled:
            w.write("slow")
            assert written == ["a"]  # the caller goes on while the write waits
            gate.set()
        w.write("b")
    assert written == (["a", "slow", "b"] if enabled else ["a", "b"])
    with pytest.raises(OSError, match="disk full"):
        with BackgroundWriter(write, enabled) as w:
            w.write("broken")
            w.write("c")  # a background write's error surfaces at the next write
    assert "c" not in written


def test_writer_finishes_the_last_write_when_the_block_fails():
    written = []

    def write(rows):
        time.sleep(0.2)
        written.append(rows)

    with pytest.raises(RuntimeError, match="scoring failed"):
        with BackgroundWriter(write, True) as w:
            w.write("scored before the failure")
            raise RuntimeError("scoring failed")
    assert written == ["scored before the failure"]


DOCS = {"long": LONG_TEXT, "empty": "", **{f"s{i}": t for i, t in enumerate(CORPUS[:9])}}


def test_corpus_run_with_host_work_beside_equals_one_in_turn(tiny_gpt2, tmp_path,
                                                             monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("pyarrow")
    from ppl_widget import score_corpus
    from ppl_widget.scoring.corpus import run as corpus

    opts = dict(max_length=32, stride=16, top_k=3, batch_size=3, flush_docs=3, progress=False)
    in_turn = score_corpus(DOCS, tmp_path / "a.parquet", tiny_gpt2, **opts)
    threads = set()
    real_tokenize, real_write = corpus.CorpusRun._tokenize, corpus.CorpusRun._write_part
    real_assemble = corpus.CorpusRun._assemble

    def assemble(self, *args):
        threads.add(("assemble", threading.current_thread().name.split("_")[0]))
        return real_assemble(self, *args)

    def tokenize(self, indices):
        threads.add(("tokenize", threading.current_thread().name.split("_")[0]))
        return real_tokenize(self, indices)

    def write(self, rows):
        threads.add(("write", threading.current_thread().name.split("_")[0]))
        return real_write(self, rows)

    monkeypatch.setattr(corpus, "pipeline_depth", lambda lm, fwd: 2)  # as on a GPU
    monkeypatch.setattr(corpus.CorpusRun, "_tokenize", tokenize)
    monkeypatch.setattr(corpus.CorpusRun, "_write_part", write)
    monkeypatch.setattr(corpus.CorpusRun, "_assemble", assemble)
    beside = score_corpus(DOCS, tmp_path / "b.parquet", tiny_gpt2, **opts)
    assert threads == {("tokenize", "ppl-widget-tokenize"), ("write", "ppl-widget-write"),
                       ("assemble", "ppl-widget-write")}
    assert list(beside) == list(in_turn) == list(DOCS)
    for doc_id in DOCS:
        a, b = in_turn[doc_id], beside[doc_id]
        for name in ("token_ids", "offsets", "surprisal", "entropy", "rank", "topk_ids"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert in_turn.metrics() == beside.metrics()
