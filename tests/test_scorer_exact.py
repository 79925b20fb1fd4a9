"""The scorer against independent references: a naive one-forward-per-chunk loop
and lm-evaluation-harness's rolling log-likelihood."""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from conftest import LONG_TEXT  # noqa: E402
from float64 import TINY_NATS, assert_scores_within  # noqa: E402
from test_windows import lm_eval_rolling_windows  # noqa: E402

from ppl_widget import score  # noqa: E402


def reference_sequence(lm, text, prefix="bos"):
    ids = lm.tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"]
    return ([lm.tokenizer.bos_token_id] if prefix == "bos" else []) + list(ids)


@torch.no_grad()
def naive_reference(lm, seq, max_length, stride, top_k=5):
    """One full forward per chunk of targets, plain cross-entropy; written from the spec:
    the first chunk holds up to max_length targets, later ones stride, and a chunk reads
    the max_length tokens before its last target."""
    rows = {"surprisal": [], "entropy": [], "rank": [], "topk_ids": [], "context": []}
    pos, size = 1, max_length
    while pos < len(seq):
        last = min(pos + size - 1, len(seq) - 1)
        begin = max(0, last - max_length)
        logits = lm.model(torch.tensor([seq[begin:last]])).logits[0].float()
        k = last - pos + 1
        lg, tgt = logits[-k:], torch.tensor(seq[pos:last + 1])
        rows["surprisal"].append(F.cross_entropy(lg, tgt, reduction="none"))
        logp = F.log_softmax(lg, -1)
        rows["entropy"].append(-(logp.exp() * logp).sum(-1))
        rows["rank"].append((lg > lg.gather(1, tgt[:, None])).sum(-1) + 1)
        rows["topk_ids"].append(lg.topk(top_k, -1).indices)
        rows["context"].append(torch.arange(pos, last + 1) - begin)
        pos, size = last + 1, stride
    return {k: torch.cat(v).numpy() for k, v in rows.items()}


@pytest.mark.parametrize("max_length,stride", [(64, 32), (64, 64), (16, 5), (8, 1), (5, 5)])
def test_matches_naive_reference(tiny_lm, max_length, stride):
    res = score(LONG_TEXT, tiny_lm, max_length=max_length, stride=stride)
    ref = naive_reference(tiny_lm, reference_sequence(tiny_lm, LONG_TEXT), max_length, stride)
    assert len(res) == len(ref["surprisal"]) > 2 * max_length  # several windows
    np.testing.assert_allclose(res.surprisal, ref["surprisal"], atol=2e-5, rtol=0)
    np.testing.assert_allclose(res.entropy, ref["entropy"], atol=2e-5, rtol=0)
    np.testing.assert_array_equal(res.rank, ref["rank"])
    np.testing.assert_array_equal(res.context_length, ref["context"])
    np.testing.assert_array_equal(res.topk_ids, ref["topk_ids"])
    # the total: the per-token tolerance above, once per token, on a float64 sum (a float32
    # sum of ~1,000 values is off by its own rounding: 1.0e-3 of 9,125 nats under
    # ATEN_CPU_CAPABILITY=default, where 1e-3 was allowed)
    assert res.metrics()["total_nll"] == pytest.approx(
        float(ref["surprisal"].astype(np.float64).sum()), abs=2e-5 * len(res))
    assert (res.topk_probs[:, 0] >= res.topk_probs[:, -1]).all()
    top1 = res.rank == 1
    np.testing.assert_allclose(res.probability[top1], res.topk_probs[top1, 0], rtol=1e-4)


@torch.no_grad()
def lm_eval_rolling_loglikelihood(lm, text, max_length):
    """lm-evaluation-harness HFLM.loglikelihood_rolling: rolling windows, made disjoint,
    input = (context + continuation)[-(max_length + 1):][:-1]."""
    tokens = lm.tokenizer(text, add_special_tokens=False)["input_ids"]
    total = 0.0
    for context, continuation in lm_eval_rolling_windows(
            tokens, lm.tokenizer.bos_token_id, max_length, context_len=1):
        context = context[: len(context) - (len(continuation) - 1)]  # make_disjoint_window
        inp = (context + continuation)[-(max_length + 1):][:-1]
        logits = lm.model(torch.tensor([inp])).logits[0, -len(continuation):].float()
        logp = F.log_softmax(logits, -1)
        total += logp.gather(1, torch.tensor(continuation)[:, None]).sum().item()
    return total


@pytest.mark.parametrize("max_length", [64, 17])
def test_stride_equal_max_length_reproduces_lm_eval(tiny_lm, max_length):
    res = score(LONG_TEXT, tiny_lm, max_length=max_length, stride=max_length)
    ll = lm_eval_rolling_loglikelihood(tiny_lm, LONG_TEXT, max_length)
    m = res.metrics()
    tol = 2e-5 * m["n_tokens"]  # the naive reference's per-token tolerance, once per token
    assert m["total_nll"] == pytest.approx(-ll, abs=tol)
    words = len(re.split(r"\s+", LONG_TEXT))  # lm-eval's count_words
    assert m["n_words"] == words
    # word_perplexity = exp(-ll / words), byte_perplexity = exp(-ll / bytes)
    assert np.log(m["word_ppl"]) * words == pytest.approx(-ll, abs=tol)
    assert np.log(m["byte_ppl"]) * len(LONG_TEXT.encode()) == pytest.approx(-ll, abs=tol)


def test_batch_size_does_not_change_results(tiny_lm):
    a = score(LONG_TEXT, tiny_lm, max_length=16, stride=4, batch_size=1)
    b = score(LONG_TEXT, tiny_lm, max_length=16, stride=4, batch_size=7)
    np.testing.assert_array_equal(a.token_ids, b.token_ids)
    np.testing.assert_array_equal(a.context_length, b.context_length)
    np.testing.assert_array_equal(a.rank, b.rank)
    assert b.settings["batch_size"] == 7
    # other batches, other matrix shapes: each run within the float32 tolerance of the
    # float64 copy (b after the last token too), not of the other run
    assert not np.isnan(a.bow_prob_end) and not np.isnan(b.bow_prob_end)
    for res in (a, b):
        assert_scores_within(res, tiny_lm, TINY_NATS)


def test_models_with_post_head_logit_transforms_use_their_own_forward(tiny_llama, monkeypatch):
    # with soft-capping declared, the head-only shortcut must not be taken; the model's
    # own forward (here: plain Llama, which ignores the attribute) gives the reference
    monkeypatch.setattr(tiny_llama.model.config, "final_logit_softcapping", 30.0, raising=False)
    from ppl_widget.scoring.runner.forward import BatchedForward

    assert BatchedForward(tiny_llama, 5).base is None
    res = score(LONG_TEXT, tiny_llama, max_length=16, stride=8)
    ref = naive_reference(tiny_llama, reference_sequence(tiny_llama, LONG_TEXT), 16, 8)
    np.testing.assert_allclose(res.surprisal, ref["surprisal"], atol=2e-5)


def test_no_prefix_leaves_first_token_unscored(tiny_lm):
    res = score(LONG_TEXT, tiny_lm, max_length=32, stride=16, prefix=None)
    seq = reference_sequence(tiny_lm, LONG_TEXT, prefix=None)
    ref = naive_reference(tiny_lm, seq, 32, 16)
    np.testing.assert_allclose(res.surprisal, ref["surprisal"], atol=2e-5)
    assert len(res.unscored_token_ids) == 1 and res.unscored_token_ids[0] == seq[0]
    m = res.metrics()
    assert m["n_unscored_tokens"] == 1 and m["n_tokens"] == len(seq) - 1
    # the unscored token's characters are not in the denominators
    assert m["n_chars"] == len(LONG_TEXT) - res.unscored_offsets[0, 1]


def test_add_eos_scores_one_more_unit_everywhere(tiny_lm):
    a = score(LONG_TEXT, tiny_lm, max_length=32, stride=16)
    b = score(LONG_TEXT, tiny_lm, max_length=32, stride=16, add_eos=True)
    ma, mb = a.metrics(), b.metrics()
    assert len(b) == len(a) + 1 and b.is_eos[-1] and not b.is_eos[:-1].any()
    assert b.token_ids[-1] == tiny_lm.tokenizer.eos_token_id
    assert b.offsets[-1].tolist() == [len(LONG_TEXT)] * 2
    for unit in ("n_tokens", "n_words", "n_chars", "n_bytes"):
        assert mb[unit] == ma[unit] + 1
    assert mb["n_eos"] == 1
    seq = reference_sequence(tiny_lm, LONG_TEXT) + [tiny_lm.tokenizer.eos_token_id]
    np.testing.assert_allclose(b.surprisal, naive_reference(tiny_lm, seq, 32, 16)["surprisal"],
                               atol=2e-5)
