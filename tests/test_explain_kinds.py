"""explain() on every kind of model with a forward, gradient x input against captum, and
the bad inputs: each a clear error naming the rule, with nothing already scored lost."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ppl_widget import ExplainError, NGramModel, explain, iter_explain, score

TEXT = "Every morning the old ferry crossed the bay while gulls followed its wake home."
TRAIN = ["the ferry crossed the bay", "gulls followed the ferry home",
         "every morning the gulls crossed the bay", "the old ferry followed its wake"]


# ---- gradient x input: captum on the embedding layer ------------------------------
def captum_input_x_gradient(model, ids: list[int]) -> np.ndarray:
    captum = pytest.importorskip("captum.attr")
    embeds = model.get_input_embeddings()(torch.tensor([ids[:-1]])).detach()

    def log_p(e):  # the log-softmax in float64, as ours (tests/test_gradient_exact.py)
        logits = model(inputs_embeds=e).logits[:, -1].double()
        return torch.log_softmax(logits, -1)[:, ids[-1]]

    attr = captum.InputXGradient(log_p).attribute(embeds)
    return attr.detach().sum(-1)[0].double().numpy()


@pytest.mark.parametrize("settings", [{}, {"max_length": 16, "stride": 8}])
def test_gradient_x_input_equals_captum_per_token(tiny_lm, settings):
    e = explain(TEXT, tiny_lm, token=-1, unit="token", method="gradient", **settings)
    assert e.method == "gradient" and not e.exact and not e.partial
    ids = [tiny_lm.tokenizer.bos_token_id] + tiny_lm.tokenizer(TEXT)["input_ids"]
    p = len(ids) - 1
    start = 0 if not settings else max(0, p - 16)  # the last window reads 16 positions
    window = ids[start:]
    want = captum_input_x_gradient(tiny_lm.model, window)
    got = e.delta_nats
    if start == 0:
        want = want[1:]  # the BOS is read, never a unit
    assert len(got) == len(want) == e.context_tokens
    assert np.all(np.abs(got - want) <= 1e-4 * np.abs(want) + 1e-7), np.abs(got - want).max()
    r = score(TEXT, tiny_lm, **settings)
    assert abs(e.target_surprisal_nats - r.surprisal[-1]) < 1e-4


def test_gradient_units_sum_their_tokens(tiny_gpt2):
    by_token = explain(TEXT, tiny_gpt2, word=-1, unit="token", method="gradient")
    by_word = explain(TEXT, tiny_gpt2, word=-1, unit="word", method="gradient")
    assert by_word.frame.tokens.sum() == len(by_token.frame)
    sums = np.add.reduceat(by_token.delta_nats,
                           np.concatenate([[0], np.cumsum(by_word.tokens)[:-1]]))
    np.testing.assert_allclose(by_word.delta_nats, sums, rtol=1e-9, atol=1e-12)


# ---- the n-gram model: exact, and only its n-1 previous words matter ---------------
@pytest.mark.parametrize("order", [2, 3])
def test_ngram_attributions_are_exactly_zero_beyond_its_n_minus_1_previous_words(order):
    lm = NGramModel(order, "kneser-ney").fit(TRAIN)
    text = "every morning the old ferry crossed the bay"
    r = score(text, lm)
    e = explain(text, lm, token=-1, unit="word")
    assert abs(e.target_surprisal_nats - r.surprisal[-1]) < 1e-12
    near = e.delta_nats[-(order - 1):]
    far = e.delta_nats[:-(order - 1)]
    assert (far == 0.0).all()
    assert (near != 0.0).all()
    # the nearest word's delta from the model's own probabilities
    words = text.split()
    without = words[-(order + 1):-2]  # the n-1 words before "bay" once "the" is deleted
    want = -math.log(lm.prob("bay", without)) + math.log(lm.prob("bay", words[-order:-1]))
    assert abs(e.delta_nats[-1] - want) < 1e-12


def test_gradient_on_a_model_without_one_is_a_clear_error():
    lm = NGramModel(2, "add-k").fit(TRAIN)
    with pytest.raises(ExplainError, match="method='gradient' needs a model with input "
                                           "embeddings.*NGramModel.*use method='occlusion'"):
        explain("the ferry crossed the bay", lm, token=-1, method="gradient")


# ---- vLLM: occlusion through its server --------------------------------------------
@pytest.mark.filterwarnings("ignore:entropy and b\\(i\\) are NaN")
def test_a_vllm_server_gives_occlusion_and_refuses_the_gradient(tiny_gpt2, tiny_gpt2_dir):
    from ppl_widget.scoring.kinds.vllm.vllm_model import load_vllm
    from tests.vllm_fake import FakeVllm

    fake = FakeVllm(tiny_gpt2, tiny_gpt2_dir)
    try:
        lm = load_vllm(fake.url, retries=2, backoff_s=0.01)
        served = explain(TEXT, lm, token=-1, unit="word", max_length=32, stride=16)
        local = explain(TEXT, tiny_gpt2, token=-1, unit="word", max_length=32, stride=16)
        np.testing.assert_allclose(served.delta_nats, local.delta_nats, atol=1e-4)
        assert served.frame.unit.tolist() == local.frame.unit.tolist()
        with pytest.raises(ExplainError, match="method='gradient'.*VllmModel"):
            explain(TEXT, lm, token=-1, method="gradient")
    finally:
        fake.stop()


# ---- bad input --------------------------------------------------------------------
def test_a_target_index_out_of_range_names_the_rule(tiny_gpt2):
    n = len(score(TEXT, tiny_gpt2))
    with pytest.raises(ExplainError, match=f"token={n} is out of range: the text has {n} "
                                           f"scored tokens, so token= must satisfy"):
        explain(TEXT, tiny_gpt2, token=n)
    with pytest.raises(ExplainError, match="word=99 is out of range: the text has 14 words"):
        explain(TEXT, tiny_gpt2, word=99)
    with pytest.raises(ExplainError, match="exactly one of them"):
        explain(TEXT, tiny_gpt2, token=1, word=1)
    with pytest.raises(ExplainError, match="must be an integer index"):
        explain(TEXT, tiny_gpt2, token=1.5)


def test_a_target_with_no_context_is_an_error(tiny_gpt2):
    with pytest.raises(ExplainError, match="no context to attribute.*the prefix is never "
                                           "a unit"):
        explain(TEXT, tiny_gpt2, token=0)
    with pytest.raises(ExplainError, match="no context"):
        explain(TEXT, tiny_gpt2, word=0, prefix=None)


def test_a_unit_that_is_the_prefix_or_outside_the_context_is_an_error(tiny_gpt2):
    with pytest.raises(ExplainError, match="the prefix token has no characters: it is never "
                                           "a unit"):
        explain(TEXT, tiny_gpt2, token=-1, unit=[(0, 0)])
    end = len(TEXT)
    with pytest.raises(ExplainError, match="holds no token of the target's context.*own "
                                           "tokens are never removed"):
        explain(TEXT, tiny_gpt2, word=-1, unit=[(end - 5, end)])
    with pytest.raises(ExplainError, match="unit must be 'word', 'token' or a list"):
        explain(TEXT, tiny_gpt2, token=-1, unit="sentence")
    with pytest.raises(ExplainError, match="method must be one of occlusion, gradient"):
        explain(TEXT, tiny_gpt2, token=-1, method="attention")
    with pytest.raises(ValueError, match="context must hold more than whitespace"):
        explain(TEXT, tiny_gpt2, token=-1, context="   ")  # score()'s rule
    with pytest.raises(TypeError, match="unexpected setting.*'strid'"):
        explain(TEXT, tiny_gpt2, token=-1, strid=3)


def test_an_error_loses_nothing_already_scored(tiny_gpt2):
    r = score(TEXT, tiny_gpt2)
    before = r.surprisal.copy()
    with pytest.raises(ExplainError):
        r.explain(token=len(r))
    np.testing.assert_array_equal(r.surprisal, before)
    assert r.explain(token=-1).target_surprisal_nats == pytest.approx(before[-1], abs=1e-4)


def test_an_error_mid_run_carries_the_partial_explanation(tiny_gpt2, monkeypatch):
    from ppl_widget.scoring.analyses import occlusion_cache

    calls = {"n": 0}
    real = occlusion_cache.CachedOcclusion.without

    def failing(self, units):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("device lost")
        return real(self, units)

    monkeypatch.setattr(occlusion_cache.CachedOcclusion, "without", failing)
    monkeypatch.setattr(occlusion_cache, "FREE_EXTRA_POSITIONS", 0)  # small batches
    monkeypatch.setattr(occlusion_cache, "MAX_EXTRA_SHARE", 0.0)
    with pytest.raises(ExplainError, match="occlusion failed after .* units: RuntimeError: "
                                           "device lost") as info:
        list(iter_explain(TEXT, tiny_gpt2, token=-1, unit="token"))
    partial = info.value.explanation
    assert partial.partial and 0 < partial.done < len(partial.units)
    assert np.isfinite(partial.target_surprisal_nats)
