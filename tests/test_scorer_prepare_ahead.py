"""A long text on a GPU: the first batches are scored from its start while the rest is
tokenized in a thread (prepare_ahead), with results equal to preparing it all first.
Exercised on the CPU by forcing two batches in flight, as on a GPU."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from conftest import CORPUS, _byte_level_tokenizer, _metaspace_tokenizer  # noqa: E402

from ppl_widget import ScoringError, score, stream  # noqa: E402
from ppl_widget.scoring.kinds.model_kind import PendingStats  # noqa: E402
from ppl_widget.scoring.runner import prepare as prep_mod  # noqa: E402
from ppl_widget.scoring.runner import scorer  # noqa: E402
from ppl_widget.scoring.runner.forward import BatchedForward  # noqa: E402
from ppl_widget.scoring.runner.run import AHEAD_IN_FLIGHT  # noqa: E402

# lines, some indented and some blank, so there are cuts (a newline, then a non-space)
TEXT = "\n".join(f"{'  ' * (i % 2)}{CORPUS[i % 5]} <b>#{i}</b>" + "\n" * (i % 9 == 0)
                 for i in range(240))
WINDOW = dict(max_length=16, stride=8, batch_size=8)


class _Tok:
    """Just what prepare needs of a loaded model."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer


@pytest.fixture
def short_texts_go_ahead(monkeypatch):
    """prepare_ahead takes texts from 10,000 characters (100,000 by default)."""
    monkeypatch.setattr(prep_mod, "PARALLEL_MIN_CHARS", 10_000)
    assert len(TEXT) > 10_000


@pytest.fixture
def gpu_like(monkeypatch, short_texts_go_ahead):
    """Two batches in flight, and a log of submits (first target, length of the
    sequence, windows), finishes and the wait for the whole text."""
    log = []
    real_submit, real_result = BatchedForward.submit, prep_mod.PreparingText.result

    def submit(self, sequence, batch):
        log.append(("submit", batch[0].target_start, len(sequence), len(batch)))
        finish = real_submit(self, sequence, batch)
        return PendingStats(lambda: log.append(("finish", batch[0].target_start, 0, 0))
                            or finish(), finish.ready)

    def result(self):
        log.append(("whole text", 0, 0, 0))
        return real_result(self)

    monkeypatch.setattr(scorer, "pipeline_depth", lambda lm, forward: 2)
    monkeypatch.setattr(BatchedForward, "submit", submit)
    monkeypatch.setattr(prep_mod.PreparingText, "result", result)
    return log


def _not_ahead(monkeypatch):
    monkeypatch.setattr(scorer, "prepare_ahead", lambda *a, **k: None)


@pytest.mark.parametrize("prefix,add_eos", [("bos", False), (None, True)])
def test_prepared_ahead_equals_prepared_at_once(short_texts_go_ahead, monkeypatch, prefix,
                                                add_eos):
    lm = _Tok(_byte_level_tokenizer())
    whole = prep_mod.prepare(TEXT, lm, prefix=prefix, add_eos=add_eos)
    segments = []  # the text each encode call got, in order
    real = prep_mod.encode_with_offsets
    monkeypatch.setattr(prep_mod, "encode_with_offsets",
                        lambda tok, t: segments.append(t) or real(tok, t))
    ahead = prep_mod.prepare_ahead(TEXT, lm, 300, prefix=prefix, add_eos=add_eos)
    assert ahead is not None
    seen = []
    while True:  # what the scorer sees: a start of the whole sequence, growing
        known = ahead.known()
        np.testing.assert_array_equal(known, whole.sequence[:len(known)])
        seen.append(len(known))
        if ahead.finished:
            break
        ahead.wait_for_more(len(known))
    assert seen == sorted(seen) and 300 <= seen[0]
    got = ahead.result()
    for field in ("sequence", "target_ids", "target_offsets", "target_units", "target_is_eos",
                  "unscored_ids", "unscored_offsets"):
        np.testing.assert_array_equal(getattr(got, field), getattr(whole, field), err_msg=field)
    assert got.prefix_token == whole.prefix_token and got.text is TEXT
    # segments in order, growing by AHEAD_GROWTH from the start's length, the last the rest
    assert "".join(segments) == TEXT and len(segments) >= 3
    assert 300 * prep_mod.AHEAD_CHARS_PER_TOKEN <= len(segments[0]) < len(TEXT) // 2
    sizes = [len(t) for t in segments]
    g = prep_mod.AHEAD_GROWTH
    assert all(size >= int(sizes[0] * g ** k) for k, size in enumerate(sizes[:-1]))
    # cut after a newline that a non-space character follows
    assert all(a.endswith("\n") and not b[0].isspace()
               for a, b in zip(segments, segments[1:], strict=False))


def test_not_ahead_where_it_cannot_be_exact_or_does_not_pay(short_texts_go_ahead):
    # sentencepiece-style: every input starts with a space marker, so pieces differ
    assert prep_mod.prepare_ahead(TEXT, _Tok(_metaspace_tokenizer()), 300) is None
    lm = _Tok(_byte_level_tokenizer())
    assert prep_mod.prepare_ahead(TEXT[:9_000], lm, 300) is None  # short
    assert prep_mod.prepare_ahead(TEXT, lm, len(TEXT) // 5) is None  # start > half the text
    assert prep_mod.prepare_ahead(TEXT.replace("\n", " "), lm, 300) is None  # no cut
    with pytest.raises(ValueError, match="prefix must be 'bos' or None"):
        prep_mod.prepare_ahead(TEXT, lm, 300, prefix="eos")


def _ahead_phase(log):
    """The submits made before the whole text was waited for."""
    kinds = [e[0] for e in log]
    assert "whole text" in kinds
    return [e for e in log[:kinds.index("whole text")] if e[0] == "submit"]


def test_batches_are_in_flight_while_the_text_is_tokenized(tiny_gpt2, gpu_like, monkeypatch):
    items = list(stream(TEXT, tiny_gpt2, **WINDOW))
    early = _ahead_phase(gpu_like)
    full_len = max(e[2] for e in gpu_like if e[0] == "submit")
    # full batches from a start of the text (a shorter sequence), at most 4 before any
    # finishes, and none finishes before the whole text is there (its spans are needed)
    assert 1 <= len(early) <= AHEAD_IN_FLIGHT
    # a small first batch (one window of 8: FIRST_BATCH_SHARE), then full ones
    assert early[0][2] < full_len // 2 and early[0][3] == 1
    assert all(e[3] == 8 for e in early[1:])
    kinds = [e[0] for e in gpu_like]
    assert kinds.index("whole text") < kinds.index("finish")
    assert [e[1] for e in gpu_like if e[0] == "submit"][:3] == [1, 1 + 16, 1 + 16 + 8 * 8]

    ahead = items[-1].result
    _not_ahead(monkeypatch)
    gpu_like.clear()
    at_once = list(stream(TEXT, tiny_gpt2, **WINDOW))
    assert [e[0] for e in gpu_like][:3] == ["submit", "submit", "finish"]
    assert [it.start for it in items] == [it.start for it in at_once]  # the same batches
    ref = at_once[-1].result
    assert not ahead.partial and len(ahead) == len(ref) == items[-1].total
    for name in ("token_ids", "offsets", "surprisal", "entropy", "rank", "topk_ids",
                 "context_length", "units"):
        np.testing.assert_array_equal(getattr(ahead, name), getattr(ref, name), err_msg=name)
    assert ahead.settings == ref.settings
    assert ahead.settings["n_windows"] > 16 and ahead.settings["prefix_token"] == "<|endoftext|>"


def test_only_full_batches_go_before_the_whole_text(tiny_gpt2, gpu_like, monkeypatch):
    # batches of 64 windows (about 1,000 tokens) against segments that start at about
    # 800 tokens: batches wait for more text, and never go short
    monkeypatch.setattr(prep_mod, "AHEAD_CHARS_PER_TOKEN", 1.5)
    real, calls = prep_mod.encode_with_offsets, []

    def slow_after_the_start(tok, text):  # the thread's segments come late
        calls.append(len(text))
        if len(calls) > 1:
            time.sleep(0.5)
        return real(tok, text)

    monkeypatch.setattr(prep_mod, "encode_with_offsets", slow_after_the_start)
    window = {**WINDOW, "batch_size": 64}
    items = list(stream(TEXT, tiny_gpt2, **window))
    early = _ahead_phase(gpu_like)
    assert early and early[0][3] == 64 // 8 and all(e[3] == 64 for e in early[1:])
    assert min(e[2] for e in early) < 64 * 8 * 2  # the first went from a short start
    monkeypatch.setattr(prep_mod, "encode_with_offsets", real)
    _not_ahead(monkeypatch)
    at_once = list(stream(TEXT, tiny_gpt2, **window))
    assert [it.start for it in items] == [it.start for it in at_once]
    # the same windows in the same batches, only sooner: bit for bit
    np.testing.assert_array_equal(items[-1].result.surprisal, at_once[-1].result.surprisal)


def test_metaspace_tokenizer_is_prepared_at_once_and_scores_the_same(tiny_llama, gpu_like):
    res = score(TEXT, tiny_llama, **WINDOW)
    assert "whole text" not in [e[0] for e in gpu_like]  # prepare_ahead declined
    assert not res.partial and np.isfinite(res.surprisal).all()


def test_cancel_before_the_first_batch_reports_the_whole_text(tiny_gpt2, gpu_like):
    flag = threading.Event()
    flag.set()
    items = list(stream(TEXT, tiny_gpt2, cancel=flag, **WINDOW))
    assert len(items) == 1 and items[0].cancelled and items[0].done == 0
    res = items[0].result
    assert res.partial and len(res) == 0 and res.settings["n_windows"] > 16
    assert items[0].total == len(tiny_gpt2.tokenizer(TEXT)["input_ids"])  # BOS + all but 0


def test_out_of_memory_in_a_start_batch_halves_it_and_loses_nothing(tiny_gpt2, gpu_like,
                                                                    monkeypatch):
    inner = BatchedForward.submit

    def oom_when_big(self, sequence, batch):
        if len(batch) > 4:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return inner(self, sequence, batch)

    monkeypatch.setattr(BatchedForward, "submit", oom_when_big)
    res = score(TEXT, tiny_gpt2, **WINDOW)
    assert res.settings["batch_size"] == 4
    _not_ahead(monkeypatch)
    ref = score(TEXT, tiny_gpt2, **WINDOW)
    np.testing.assert_array_equal(res.surprisal, ref.surprisal)


def test_error_in_a_start_batch_names_the_whole_text(tiny_gpt2, gpu_like, monkeypatch):
    def broken(self, sequence, batch):
        raise RuntimeError("device fell over")

    monkeypatch.setattr(BatchedForward, "submit", broken)
    with pytest.raises(ScoringError, match=r"after 0 of \d+ tokens: RuntimeError: device") as e:
        score(TEXT, tiny_gpt2, **WINDOW)
    partial = e.value.partial_result
    assert partial.partial and len(partial) == 0 and partial.settings["n_windows"] > 16


def test_a_finished_batch_goes_out_before_more_go_in_flight(tiny_gpt2, gpu_like, monkeypatch):
    """Live first colours: once the queue holds ``depth`` batches, the oldest one's chunk
    goes out as soon as it is done and the text's spans are known, instead of filling up
    to AHEAD_IN_FLIGHT first (on a GPU each launch then waited for the device)."""
    monkeypatch.setattr(prep_mod.PreparingText, "finished",
                        property(lambda self: self._future.result() is not None))
    items = list(stream(TEXT, tiny_gpt2, **WINDOW))
    kinds = [e[0] for e in gpu_like]
    assert kinds[:4] == ["submit", "submit", "whole text", "finish"]
    assert items[-1].finished and items[-1].done == items[-1].total


def test_batches_not_done_yet_let_more_go_in_flight(tiny_gpt2, gpu_like, monkeypatch):
    """While the oldest batch is still on the device, the queue fills (up to
    AHEAD_IN_FLIGHT while the text is tokenized): the device never waits for the host."""
    monkeypatch.setattr(PendingStats, "ready", lambda self: False)
    items = list(stream(TEXT, tiny_gpt2, **WINDOW))
    early = _ahead_phase(gpu_like)
    assert len(early) > 2  # more than depth before the first finish
    _not_ahead(monkeypatch)
    at_once = list(stream(TEXT, tiny_gpt2, **WINDOW))
    np.testing.assert_array_equal(items[-1].result.surprisal, at_once[-1].result.surprisal)
