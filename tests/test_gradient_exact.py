"""Gradient x input against a float64 copy of the model: the reference is plain
transformers in float64 (the window written out from its rule, ``test_explain``'s
``ref_windows``; the log-softmax and the backward in float64), so no float32 rounding of
ours is in it.  Predictable targets (p > 0.999, where float32 cancels 1 - p) and
surprising ones, in windows that cut the context.  Tolerance: 1e-4 of the largest
attribution (issue 48); measured (docs/explain.md) 7.8e-8 to 3.7e-6 on the tiny Llama
under ATEN_CPU_CAPABILITY native, avx2 and default, where the float32 head and
log-softmax gave up to 7.2e-4 on the predictable targets."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from test_explain import LONG, ref_windows

from ppl_widget import explain, score

TOL = 1e-4  # of the largest attribution
WINDOW = {"max_length": 16, "stride": 8}


def float64_attribution(model64, ids: list[int], n: int) -> np.ndarray:
    """Gradient x input of the summed log p of the last ``n`` of ``ids`` (float64)."""
    e = model64.get_input_embeddings()(torch.tensor([ids[:-1]])).detach().requires_grad_(True)
    logits = model64(inputs_embeds=e).logits[0, -n:]
    log_p = torch.log_softmax(logits, -1).gather(1, torch.tensor(ids[-n:])[:, None]).sum()
    (grad,) = torch.autograd.grad(log_p, e)
    return (e * grad).sum(-1)[0].detach().numpy()


def greedy_text(lm, n: int = 40) -> str:
    """A text the model predicts: each token its argmax after the ones before."""
    tok = lm.tokenizer
    ids = [tok.bos_token_id] + tok("The", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        for _ in range(n):
            ids.append(int(lm.model(torch.tensor([ids])).logits[0, -1].argmax()))
    return tok.decode(ids[1:], skip_special_tokens=True)


def relative_error(lm, model64, text: str, token: int, **window) -> float:
    tok = lm.tokenizer
    seq = [tok.bos_token_id] + tok(text, add_special_tokens=False)["input_ids"]
    e = explain(text, lm, token=token, unit="token", method="gradient", **window)
    p = token + 1  # the BOS sits at 0
    start = next(w[0] for w in ref_windows(len(seq), window["max_length"], window["stride"])
                 if w[1] <= p < w[2])
    want = float64_attribution(model64, seq[start:p + 1], 1)
    if start == 0:
        want = want[1:]  # the BOS is read, never a unit
    assert len(e.delta_nats) == len(want) == e.context_tokens
    return float(np.abs(e.delta_nats - want).max() / np.abs(want).max())


@pytest.fixture(scope="module")
def llama64(tiny_llama):
    return copy.deepcopy(tiny_llama.model).double()


def late_targets(r) -> np.ndarray:
    """Scored tokens whose window cuts the context, least probable first."""
    late = np.arange(WINDOW["max_length"] + 1, len(r))
    return late[np.argsort(r.probability[late])]


def test_predictable_targets_in_a_cut_window(tiny_llama, llama64):
    text = greedy_text(tiny_llama)
    r = score(text, tiny_llama, **WINDOW)
    predictable = late_targets(r)[-2:]
    assert r.probability[predictable].min() > 0.999  # where float32 cancels 1 - p
    for token in predictable:
        err = relative_error(tiny_llama, llama64, text, int(token), **WINDOW)
        assert err < TOL, (int(token), r.probability[token], err)


def test_surprising_and_middling_targets(tiny_llama, llama64):
    # Llama-shaped, as the default model; the tiny random GPT-2's own float32 body is off
    # its float64 copy by up to 1.6e-4 on these targets (measured with plain transformers),
    # so it cannot test a 1e-4 tolerance: its path is checked against captum instead
    r = score(LONG, tiny_llama, **WINDOW)
    order = late_targets(r)
    assert r.probability[order[:2]].max() < 0.01
    for token in (*order[:2], order[len(order) // 2], len(r) - 1):
        err = relative_error(tiny_llama, llama64, LONG, int(token), **WINDOW)
        assert err < TOL, (int(token), r.probability[token], err)


def test_a_word_of_several_tokens_is_differentiated_as_one_sum(tiny_llama, llama64):
    text = "The lighthouse keeper counted the ships each night."
    e = explain(text, tiny_llama, word=-1, unit="token", method="gradient")
    tok = tiny_llama.tokenizer
    seq = [tok.bos_token_id] + tok(text, add_special_tokens=False)["input_ids"]
    n = len(e.target["tokens"])
    assert n > 1 and e.target["tokens"][-1] == len(seq) - 2
    want = float64_attribution(llama64, seq, n)[1:-(n - 1)]  # the context, after the BOS
    assert len(want) == len(e.delta_nats)
    assert np.abs(e.delta_nats - want).max() < TOL * np.abs(want).max()
