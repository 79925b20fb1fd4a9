"""Unigram distributions and PPLu, against the formula computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppl_widget import ScoreResult
from ppl_widget.core.unigram import Unigram


def hand_result():
    # "ab ab" as 3 tokens: "ab"(id 0), " "(id 1), "ab"(id 0)
    text = "ab ab"
    return ScoreResult(
        text=text, token_ids=[0, 1, 0], offsets=[[0, 2], [2, 3], [3, 5]],
        surprisal=[2.0, 0.5, 1.0], entropy=[1, 1, 1], rank=[1, 1, 1],
        context_length=[1, 2, 3], topk_ids=np.zeros((3, 0)), topk_probs=np.zeros((3, 0)),
        units=[[1, 2, 2], [0, 1, 1], [1, 2, 2]], is_eos=[False] * 3)


def test_from_counts_add_alpha_by_hand():
    u = Unigram.from_counts({0: 3, 2: 1}, alpha=1.0, vocab_size=4)
    # (count + 1) / (4 + 4)
    assert np.exp(u.log_probs).tolist() == pytest.approx([4 / 8, 1 / 8, 2 / 8, 1 / 8])
    assert u.n_tokens == 4 and not u.in_sample
    same = Unigram.from_counts(np.array([3, 0, 1, 0]), alpha=1.0)
    assert np.allclose(same.log_probs, u.log_probs)


def test_pplu_by_hand():
    res = hand_result()
    probs = np.array([0.5, 0.25, 0.25])
    m = res.metrics(unigram=Unigram.from_probs(probs))
    # PPLu = (prod p(w|c)/p_uni(w))^(-1/T) = exp(mean(s + log p_uni))
    by_hand = math.exp(((2.0 + math.log(0.5)) + (0.5 + math.log(0.25)) + (1.0 + math.log(0.5)))
                       / 3)
    assert m["pplu"] == pytest.approx(by_hand)
    assert m["unigram_ppl"] == pytest.approx(math.exp(-(2 * math.log(0.5) + math.log(0.25)) / 3))
    assert m["token_ppl"] == pytest.approx(math.exp(3.5 / 3))


def test_pplu_per_sentence_and_context_gain():
    res = hand_result()
    u = Unigram.from_probs([0.5, 0.25, 0.25])
    tokens = res.to_frame("token", unigram=u)
    assert tokens["context_gain"].tolist() == pytest.approx(
        [-2.0 - math.log(0.5), -0.5 - math.log(0.25), -1.0 - math.log(0.5)])
    assert res.context_gain(u).tolist() == pytest.approx(tokens["context_gain"].tolist())
    words = res.to_frame("word", unigram=u, log_freq=False)
    assert words["pplu"].tolist() == pytest.approx(
        [math.exp(2 + math.log(0.5)), math.exp((0.5 + math.log(0.25) + 1 + math.log(0.5)) / 2)])
    assert words["ppl_rank"].tolist() == [2, 1]


def test_bad_unigrams_name_the_rule():
    with pytest.raises(ValueError, match="must sum to 1"):
        Unigram.from_probs([0.5, 0.6])
    with pytest.raises(ValueError, match="alpha must be a non-negative number"):
        Unigram.from_counts([1, 2], alpha=-1)
    with pytest.raises(ValueError, match="outside this unigram's vocabulary"):
        hand_result().metrics(unigram=Unigram.from_probs([1.0]))
    with pytest.raises(ValueError, match="above 0"):
        hand_result().metrics(unigram=Unigram.from_counts([1, 0, 0], alpha=0))
    with pytest.raises(ValueError, match="tokenizer"):
        hand_result().metrics(unigram="some reference text")
    with pytest.raises(TypeError, match="unigram must be"):
        hand_result().metrics(unigram=3)


def test_from_texts_uses_the_models_tokenizer_and_in_sample_is_labelled(tiny_gpt2):
    from ppl_widget import score

    text = "The quick brown fox jumps over the lazy dog."
    res = score(text, tiny_gpt2, max_length=16, stride=8)
    ref = ["Perplexity is the exponential of the average negative log-likelihood."]
    u = Unigram.from_texts(ref, tiny_gpt2)
    ids = tiny_gpt2.tokenizer(ref[0], add_special_tokens=False)["input_ids"]
    assert u.n_tokens == len(ids)
    assert math.exp(u.log_probs[ids[0]]) == pytest.approx(
        (ids.count(ids[0]) + 1) / (len(ids) + u.vocab_size))
    m = res.metrics(unigram=ref)  # the shortcut: counted with the result's tokenizer
    assert m["pplu"] == pytest.approx(res.metrics(unigram=u)["pplu"])
    assert m["unigram_source"] == "1 reference text(s)"
    assert res.metrics(unigram=text)["unigram_source"] == "in-sample"
    assert Unigram.from_result(res).in_sample


def test_frequent_word_sentences_rank_lower_by_pplu(tiny_gpt2):
    """The paper's point: PPL rewards sentences of frequent tokens, PPLu divides that out."""
    from ppl_widget import score

    text = "the the the the the the. Quick brown fox jumps. The lazy dog sleeps."
    res = score(text, tiny_gpt2, max_length=32, stride=16)
    u = Unigram.from_texts(["the " * 50 + "quick brown fox lazy dog"], tiny_gpt2)
    frame = res.to_frame("sentence", unigram=u)
    assert {"ppl_rank", "pplu_rank", "pplu", "unigram_ppl"} <= set(frame.columns)
    assert sorted(frame["ppl_rank"].tolist()) == [1, 2, 3]
    # a unigram model finds the repeated frequent word easy: its unigram ppl is lowest
    assert frame["unigram_ppl"].idxmin() == 0
