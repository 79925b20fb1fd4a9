"""Streaming, cancelling, errors, awkward text and bad parameters."""

from __future__ import annotations

import threading

import numpy as np
import pytest

pytest.importorskip("torch")

from conftest import LONG_TEXT  # noqa: E402
from float64 import TINY_NATS, assert_scores_within  # noqa: E402

from ppl_widget import ScoringError, score, stream  # noqa: E402
from ppl_widget.core.result import TOKEN_ARRAYS, ScoreResult  # noqa: E402


def assert_same_result(a: ScoreResult, b: ScoreResult):
    for k in TOKEN_ARRAYS:
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k), err_msg=k)
    assert a.partial == b.partial and a.vocab == b.vocab


def test_stream_equals_score_and_reports_progress(tiny_lm):
    items = list(stream(LONG_TEXT, tiny_lm, max_length=16, stride=8, batch_size=2))
    final = score(LONG_TEXT, tiny_lm, max_length=16, stride=8, batch_size=2)
    assert len(items) > 3 and items[-1].finished and not items[-1].cancelled
    assert_same_result(items[-1].result, final)
    # chunks are contiguous, in order, and add up to the whole result
    assert [it.start for it in items] == [0] + [it.done for it in items[:-1]]
    np.testing.assert_array_equal(np.concatenate([it.chunk["surprisal"] for it in items]),
                                  final.surprisal)
    assert all(it.total == len(final) for it in items)
    assert items[0].tokens_per_s > 0 and items[-1].eta_s == 0
    # every id shown (targets and alternatives) was decoded exactly once
    seen = {k for it in items for k in it.new_vocab}
    assert sum(len(it.new_vocab) for it in items) == len(seen) == len(final.vocab)
    assert set(final.token_ids.tolist()) | set(final.topk_ids.ravel().tolist()) == seen
    mid = items[1].result
    assert mid.partial and len(mid) == items[1].done


def test_cancel_stops_within_one_batch_and_keeps_what_was_scored(tiny_lm):
    flag = threading.Event()
    items = []
    for it in stream(LONG_TEXT, tiny_lm, max_length=16, stride=4, batch_size=1, cancel=flag):
        items.append(it)
        if len(items) == 2:
            flag.set()
    assert len(items) == 3 and items[-1].cancelled and not items[-1].finished
    res = items[-1].result
    assert res.partial and len(res) == items[1].done < res.total_tokens
    full = score(LONG_TEXT, tiny_lm, max_length=16, stride=4)
    np.testing.assert_array_equal(res.token_ids, full.token_ids[:len(res)])
    assert_scores_within(res, tiny_lm, TINY_NATS)  # batches of one, not score()'s: float64
    assert res.metrics()["partial"] is True


def test_cancel_callable(tiny_lm):
    items = list(stream(LONG_TEXT, tiny_lm, max_length=16, stride=4, cancel=lambda: True))
    assert len(items) == 1 and items[0].cancelled and len(items[0].result) == 0


def test_error_mid_run_keeps_partial_result(tiny_lm, monkeypatch):
    from ppl_widget.scoring.runner.forward import BatchedForward

    calls = {"n": 0}
    real = BatchedForward.score_batch

    def flaky(self, sequence, batch):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("simulated device failure")
        return real(self, sequence, batch)

    monkeypatch.setattr(BatchedForward, "score_batch", flaky)
    with pytest.raises(ScoringError, match="simulated device failure") as info:
        score(LONG_TEXT, tiny_lm, max_length=16, stride=8, batch_size=1)
    partial = info.value.partial_result
    assert partial.partial and len(partial) == 16 + 8  # two batches survived


def test_out_of_memory_halves_the_batch_and_loses_nothing(tiny_lm, monkeypatch):
    from ppl_widget.scoring.runner.forward import BatchedForward

    real = BatchedForward.score_batch
    sizes = []

    def oom_when_big(self, sequence, batch):
        sizes.append(len(batch))
        if len(batch) > 2:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(self, sequence, batch)

    monkeypatch.setattr(BatchedForward, "score_batch", oom_when_big)
    res = score(LONG_TEXT, tiny_lm, max_length=16, stride=8, batch_size=8)
    assert sizes[:3] == [8, 4, 2] and not res.partial
    monkeypatch.undo()
    np.testing.assert_array_equal(
        res.token_ids, score(LONG_TEXT, tiny_lm, max_length=16, stride=8).token_ids)
    assert_scores_within(res, tiny_lm, TINY_NATS)  # batches of two, not score()'s: float64


AWKWARD = {
    "emoji": "Smile 🙂 and 👩‍👩‍👧 family, flags 🇫🇷🇯🇵.",
    "cjk": "日本語の文章と中文句子，还有한국어 문장。",
    "combining": "Cafe\u0301 na\u0308ive e\u0301le\u0300ve",
    "rtl": "שלום עולם and مرحبا بالعالم mixed",
    "crlf_tabs": "line one\r\nline\ttwo\r\n\r\n\tindented  double  spaces ",
    "specials": "before <|endoftext|> middle <s></s> after <|im_start|>",
}


@pytest.mark.parametrize("name", sorted(AWKWARD))
@pytest.mark.parametrize("prefix", ["bos", None])
def test_awkward_text_tiles_exactly(tiny_lm, name, prefix):
    text = AWKWARD[name]
    res = score(text, tiny_lm, max_length=8, stride=3, prefix=prefix, add_eos=True)
    spans = np.vstack([res.unscored_offsets, res.offsets])
    assert spans[0, 0] == 0 and spans[-1, 1] == len(text)
    assert (spans[1:, 0] == spans[:-1, 1]).all()  # every character in exactly one token
    assert "".join(text[s:e] for s, e in spans) == text
    m = res.metrics()
    skipped = res.unscored_offsets[:, 1].max(initial=0)
    assert m["n_chars"] == len(text) - skipped + 1  # + EOS
    assert m["n_bytes"] == len(text[skipped:].encode()) + 1
    assert np.isfinite(res.surprisal).all() and (res.surprisal >= 0).all()


def test_special_token_strings_are_plain_text(tiny_gpt2):
    text = "a <|endoftext|> b"
    res = score(text, tiny_gpt2, max_length=8, stride=4)
    special = tiny_gpt2.tokenizer.eos_token_id
    assert special not in res.token_ids.tolist()
    assert "".join(res.tokens) == text


def test_an_empty_text_is_refused_unless_the_eos_token_is_scored(tiny_lm):
    for run in (score, lambda *a: list(stream(*a))):
        with pytest.raises(ValueError, match=r"text is empty: there is nothing to score.*"
                           r"add_eos=True scores the end-of-text token alone"):
            run("", tiny_lm)
    with pytest.raises(TypeError, match="text must be a str, got NoneType"):
        score(None, tiny_lm)
    eos_only = score("", tiny_lm, add_eos=True)
    assert len(eos_only) == 1 and eos_only.is_eos[0]


def test_one_token_text(tiny_gpt2):
    res = score("a", tiny_gpt2)
    assert len(res) == 1 and res.tokens == ["a"] and res.context_length.tolist() == [1]
    unscored = score("a", tiny_gpt2, prefix=None)
    assert len(unscored) == 0 and len(unscored.unscored_token_ids) == 1


@pytest.mark.parametrize("kwargs,rule", [
    ({"stride": 0, "max_length": 8}, "stride must be at least 1"),
    ({"stride": 9, "max_length": 8}, "stride must not exceed max_length"),
    ({"max_length": 65}, "context length"),
    ({"prefix": "start"}, "prefix must be 'bos' or None"),
    ({"top_k": -1}, "top_k must be a non-negative integer"),
    ({"batch_size": 0}, "batch_size must be 'auto' or a positive integer"),
])
def test_bad_parameters_name_the_rule(tiny_gpt2, kwargs, rule):
    with pytest.raises(ValueError, match=rule):
        score(LONG_TEXT, tiny_gpt2, **kwargs)


def test_text_must_be_str(tiny_gpt2):
    with pytest.raises(TypeError, match="text must be a str"):
        score(b"bytes", tiny_gpt2)


def test_defaults_follow_the_model_context(tiny_gpt2):
    res = score(LONG_TEXT, tiny_gpt2)
    assert res.settings["max_length"] == 64 and res.settings["stride"] == 32
    assert res.context_length.max() == 64


def test_metrics_over_prefix_and_span(tiny_gpt2):
    res = score(LONG_TEXT, tiny_gpt2, max_length=32, stride=16)
    k = 40
    m = res.metrics(upto=k)
    assert m["n_tokens"] == k
    assert m["total_nll"] == pytest.approx(res.surprisal[:k].sum())
    assert m["n_chars"] == res.offsets[k - 1, 1]
    assert res.running_perplexity("token")[k - 1] == pytest.approx(m["token_ppl"])
    assert res.running_perplexity("char")[k - 1] == pytest.approx(m["char_ppl"])
    a, b = res.offsets[10, 0], res.offsets[19, 1]
    span = res.metrics(span=(int(a), int(b)))
    assert span["n_tokens"] == 10 and span["n_chars"] == b - a
    assert span["total_nll"] == pytest.approx(res.surprisal[10:20].sum())
    with pytest.raises(ValueError, match="span must satisfy"):
        res.metrics(span=(5, 2))


@pytest.mark.parametrize("top_k", [0, 3])
def test_result_json_round_trip(tiny_gpt2, tmp_path, top_k):
    res = score(AWKWARD["emoji"], tiny_gpt2, max_length=8, stride=4, add_eos=True, top_k=top_k)
    path = tmp_path / "r.json"
    res.to_json(str(path))
    import json

    back = ScoreResult.from_dict(json.loads(path.read_text()))
    assert_same_result(res, back)
    assert back.metrics() == res.metrics()
