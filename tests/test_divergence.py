"""divergence(): KL(base ‖ other) and both models' statistics from one pass, checked
against a float64 recomputation from the models' own full logits, each model's statistics
against its float64 copy (and score()'s tokens and windows), and llama.cpp's statistics
against their definitions."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from ppl_widget.core.divergence import (
    DivergenceResult,
    VocabularyMismatchError,
    divergence_summary,
    percentile,
)

torch = pytest.importorskip("torch")

from conftest import CORPUS  # noqa: E402
from float64 import TINY_NATS, assert_scores_within  # noqa: E402

TEXT = " ".join(CORPUS[:5]) * 2


@pytest.fixture(scope="module")
def noisy_llama(tiny_llama):
    """The tiny Llama with every weight perturbed by ~2% (a stand-in for quantization)."""
    from ppl_widget import load_model

    model = copy.deepcopy(tiny_llama.model)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.02 * p.abs().mean())
    return load_model((model, tiny_llama.tokenizer), device="cpu", dtype="float32")


def float64_kl(base, other, ids: list[int], windows) -> np.ndarray:
    """KL(base ‖ other) per target, from each model's full float64 logits of each window."""
    from ppl_widget.scoring.runner.forward import window_inputs

    seq = torch.tensor(ids)
    mb, mo = copy.deepcopy(base.model).double(), copy.deepcopy(other.model).double()
    out = []
    with torch.no_grad():
        for w in windows:
            inputs = window_inputs(seq, w)[None]
            lp = torch.log_softmax(mb(inputs).logits[0, -w.n_targets:], dim=-1)
            lq = torch.log_softmax(mo(inputs).logits[0, -w.n_targets:], dim=-1)
            out.append((lp.exp() * (lp - lq)).sum(-1).numpy())
    return np.concatenate(out)


@pytest.mark.parametrize("every", [False, True])
def test_kl_equals_a_float64_recomputation(tiny_llama, noisy_llama, every):
    from ppl_widget import divergence
    from ppl_widget.core.windows import plan_windows

    res = divergence(TEXT, tiny_llama, noisy_llama, max_length=32, stride=16,
                     prefix_every_window=every)
    tok = tiny_llama.tokenizer
    ids = [tok.bos_token_id, *tok(TEXT, add_special_tokens=False)["input_ids"]]
    assert res.base.token_ids.tolist() == ids[1:]
    windows = plan_windows(len(ids), 32, 16, prefix_every_window=every)
    assert len(windows) > 3
    want = float64_kl(tiny_llama, noisy_llama, ids, windows)
    assert want.min() < 1e-3 < want.max()  # small and large divergences both occur
    np.testing.assert_allclose(res.kl, want, rtol=1e-3, atol=1e-7)
    assert abs(res.summary()["mean_kld"] / want.mean() - 1) < 1e-3


def test_each_model_as_score_gives_it(tiny_llama, noisy_llama):
    """One pass, the same windows: each model's statistics are score()'s."""
    from ppl_widget import divergence, score

    res = divergence(TEXT, tiny_llama, noisy_llama, max_length=32, stride=8, top_k=3)
    for lm, got in ((tiny_llama, res.base), (noisy_llama, res.other)):
        ref = score(TEXT, lm, max_length=32, stride=8, top_k=3)
        np.testing.assert_array_equal(got.token_ids, ref.token_ids)
        # its own forward (two models' logits, KL): float64 of each model, not score()
        assert_scores_within(got, lm, TINY_NATS)
        np.testing.assert_array_equal(got.topk_ids, ref.topk_ids)
        np.testing.assert_array_equal(got.context_length, ref.context_length)
        assert got.metrics()["n_words"] == ref.metrics()["n_words"]
    np.testing.assert_allclose(res.delta_p, res.other.probability - res.base.probability)
    agree = res.base.topk_ids[:, 0] == res.other.topk_ids[:, 0]
    np.testing.assert_array_equal(res.same_top, agree)
    assert 0 < res.same_top.mean() < 1


@pytest.mark.parametrize("protocol", ["llama.cpp", "hf-guide"])
def test_a_protocol_gives_score_s_tokens_of_that_protocol(tiny_llama, noisy_llama, protocol):
    """divergence(protocol=...) reads that protocol's windows: each model's scored tokens
    and statistics are score(protocol=...)'s, the rest unscored as there."""
    from ppl_widget import divergence, score

    res = divergence(TEXT, tiny_llama, noisy_llama, max_length=32, top_k=2, protocol=protocol)
    assert res.settings["protocol"] == res.base.settings["protocol"] == protocol
    for lm, got in ((tiny_llama, res.base), (noisy_llama, res.other)):
        ref = score(TEXT, lm, max_length=32, top_k=2, protocol=protocol)
        np.testing.assert_array_equal(got.offsets, ref.offsets)
        np.testing.assert_array_equal(got.unscored_offsets, ref.unscored_offsets)
        assert_scores_within(got, lm, TINY_NATS)  # float64 of each model, not score()
    assert len(res.kl) == len(res.base) < len(res.base) + len(res.base.unscored_token_ids)
    with pytest.raises(ValueError, match="protocol must be one of"):
        divergence(TEXT, tiny_llama, noisy_llama, protocol="llama")


def test_a_model_against_itself_diverges_nowhere(tiny_gpt2):
    from ppl_widget import divergence

    res = divergence(TEXT, tiny_gpt2, tiny_gpt2, max_length=24, labels=("a", "b"))
    assert np.all(res.kl < 1e-6) and res.same_top.all()
    s = res.summary()
    assert s["ppl_ratio"] == pytest.approx(1.0) and s["rms_delta_p"] < 1e-6


def test_different_vocabularies_are_refused_with_compare_named(tiny_gpt2, tiny_llama):
    from ppl_widget import divergence

    with pytest.raises(VocabularyMismatchError, match=r"differ in size.*compare\("):
        divergence("Some text.", tiny_gpt2, tiny_llama)


def test_same_size_other_tokens_are_refused(tiny_llama):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from ppl_widget import divergence, load_model

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    size = len(tiny_llama.tokenizer)
    tok.train_from_iterator([s[::-1] for s in CORPUS] + CORPUS, trainers.BpeTrainer(
        vocab_size=size, special_tokens=["<unk>", "<s>", "</s>"]))
    other_tok = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                        unk_token="<unk>")
    assert len(other_tok) == size
    other = load_model((tiny_llama.model, other_tok), device="cpu", dtype="float32")
    with pytest.raises(VocabularyMismatchError, match=r"token id\(s\), first .*compare\("):
        divergence("Some text.", tiny_llama, other)


def test_window_options_are_checked_as_score_checks_them(tiny_llama, noisy_llama):
    from ppl_widget import divergence

    with pytest.raises(ValueError, match="stride must not exceed max_length"):
        divergence("Some text.", tiny_llama, noisy_llama, max_length=8, stride=9)
    with pytest.raises(ValueError, match="context length"):
        divergence("Some text.", tiny_llama, noisy_llama, max_length=65)


def test_cancel_keeps_equal_lengths(tiny_llama, noisy_llama):
    from ppl_widget import divergence

    calls = []
    res = divergence(TEXT, tiny_llama, noisy_llama, max_length=16, stride=8, batch_size=1,
                     cancel=lambda: calls.append(1) or len(calls) > 2)
    assert res.partial and 0 < len(res) < res.base.total_tokens
    assert len(res.kl) == len(res.other) == len(res)


def test_saved_and_read_back(tiny_llama, noisy_llama):
    import json

    from ppl_widget import divergence

    res = divergence(TEXT[:200], tiny_llama, noisy_llama, max_length=32, labels=("fp", "q"))
    back = DivergenceResult.from_dict(json.loads(json.dumps(res.to_dict())))
    np.testing.assert_array_equal(back.kl, res.kl)
    np.testing.assert_array_equal(back.same_top, res.same_top)
    assert back.labels == ("fp", "q") and back.summary() == res.summary()
    frame = res.to_frame()
    assert len(frame) == len(res) and frame.attrs["labels"] == {"base": "fp", "other": "q"}
    assert {"kl", "delta_p", "same_top", "surprisal_base", "entropy_other",
            "top_other"} <= set(frame.columns)
    worst = res.worst(3)
    assert worst["kl"].tolist() == sorted(res.kl, reverse=True)[:3]
    assert "Mean    KLD:" in res.report() and "Same top p:" in res.report()


def test_summary_is_llama_cpp_statistics():
    """The summary's figures from their definitions, on made-up numbers."""
    rng = np.random.default_rng(0)
    n = 500
    kl = rng.gamma(0.5, 0.4, n)
    nll_b = rng.gamma(2.0, 1.5, n)
    nll_o = nll_b + rng.normal(0.05, 0.3, n)
    same = rng.random(n) < 0.7
    s = divergence_summary(kl, nll_b, nll_o, same)
    assert s["mean_kld"] == pytest.approx(kl.mean())
    assert s["mean_kld_se"] == pytest.approx(kl.std() / math.sqrt(n - 1))
    for key, q in (("kld_p99", 99), ("kld_p90", 90), ("kld_p1", 1), ("kld_median", 50)):
        assert s[key] == pytest.approx(np.percentile(kl, q))
    assert s["kld_max"] == kl.max() and s["kld_min"] == kl.min()
    dp = np.exp(-nll_o) - np.exp(-nll_b)
    assert s["mean_delta_p"] == pytest.approx(dp.mean())
    assert s["rms_delta_p"] == pytest.approx(math.sqrt((dp ** 2).mean()))
    assert s["delta_p_p25"] == pytest.approx(np.percentile(dp, 25))
    p = same.mean()
    assert s["same_top_p"] == p and s["same_top_p_se"] == pytest.approx(
        math.sqrt(p * (1 - p) / (n - 1)))
    assert s["ppl_ratio"] == pytest.approx(math.exp(nll_o.mean() - nll_b.mean()))
    # the ratio's SE: the difference of the means, whose variance has the covariance in it
    diff = nll_o - nll_b
    assert s["log_ppl_ratio_se"] == pytest.approx(diff.std() / math.sqrt(n - 1), rel=1e-6)
    assert s["cor_log_ppl"] == pytest.approx(np.corrcoef(nll_o, nll_b)[0, 1], rel=1e-6)
    # llama.cpp: no standard error from 10 values or fewer
    assert divergence_summary(kl[:10], nll_b[:10], nll_o[:10], same[:10])["mean_kld_se"] == 0


def test_percentile_is_llama_cpp_interpolation():
    v = np.array([0.0, 1.0, 2.0, 10.0])
    assert percentile(v, 0.5) == pytest.approx(1.5)
    assert percentile(v, 0.999) == pytest.approx(2.0 + 0.997 * 8.0)
    assert percentile(v, 0.0) == 0.0 and percentile(v, 1.0) == 10.0


def test_quantized_copy_rounds_the_body_and_leaves_the_original(tiny_llama):
    from ppl_widget.scoring.kinds.gguf.quantize import q8_0_round_trip, quantized_copy, round_trip

    before = {k: v.clone() for k, v in tiny_llama.model.state_dict().items()}
    q = quantized_copy(tiny_llama, "Q4_0")
    after = q.model.state_dict()
    for k, v in tiny_llama.model.state_dict().items():
        assert torch.equal(v, before[k]), k  # the original is untouched
    w = before["model.layers.0.mlp.down_proj.weight"]
    assert torch.equal(after["model.layers.0.mlp.down_proj.weight"],
                       torch.from_numpy(round_trip(w.numpy(), "Q4_0")))
    assert len(torch.unique(after["model.layers.0.mlp.down_proj.weight"][0, :32])) <= 16
    for k in ("model.embed_tokens.weight", "lm_head.weight", "model.norm.weight"):
        assert torch.equal(after[k], before[k]), k
    # activations: Q8_0 blocks of 32 values, one fp16 scale each
    x = torch.randn(3, 64)
    xq = q8_0_round_trip(x)
    d = (x.reshape(-1, 32).abs().amax(-1) / 127).half().float()
    steps = xq.reshape(-1, 32) / d[:, None]
    assert torch.allclose(steps, steps.round(), atol=1e-4)
    with pytest.raises(ValueError, match="kind must be one of"):
        quantized_copy(tiny_llama, "Q3_K")
    with pytest.raises(ValueError, match="activations"):
        quantized_copy(tiny_llama, activations="Q4_0")
