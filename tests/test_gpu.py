"""GPU against CPU, per token (runs only where CUDA is present; CI has no GPU).

Run on a lent H100 for this project: see docs/performance.md for the output.
"""

from __future__ import annotations

import copy
import threading

import numpy as np
import pytest

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")]

from conftest import LONG_TEXT, _tiny  # noqa: E402

TEXT = (LONG_TEXT * 4 + "日本語のテキスト、emoji 🙂, and code: for i in range(10): print(i)")


def _wide_llama(vocab: int = 9001):
    """A small Llama whose head spans several kernel blocks (vocabulary > 2 x 4096)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from ppl_widget import load_model

    tok = _tiny("llama").tokenizer
    torch.manual_seed(1)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=256, bos_token_id=tok.bos_token_id,
                      eos_token_id=tok.eos_token_id, tie_word_embeddings=False)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(40.0)
    return load_model((model, tok), device="cpu", dtype="float32")


@pytest.fixture(scope="module", params=["gpt2", "llama", "wide"])
def cpu_lm(request):
    return _wide_llama() if request.param == "wide" else _tiny(request.param)


def on_gpu(lm, dtype):
    from ppl_widget import load_model

    return load_model((copy.deepcopy(lm.model), lm.tokenizer), device="cuda", dtype=dtype)


@pytest.mark.parametrize("vocab", [17, 9001, 128256])
def test_fused_row_statistics_match_float64(vocab):
    from ppl_widget.scoring.runner import gpu_stats

    assert gpu_stats.fused_available(0)
    gen = torch.Generator(device="cuda").manual_seed(vocab)
    logits = torch.randn((67, vocab), device="cuda", generator=gen) * 6
    logits[0] = 0.0  # all tied: rank 1, entropy log V
    logits[1, 5] = 80.0  # one certain token: entropy ~0, its surprisal ~0
    targets = torch.randint(0, vocab, (67,), device="cuda", generator=gen)
    targets[1] = 5
    weights = (torch.rand(vocab, device="cuda", generator=gen) < 0.3).float()
    out = gpu_stats.slab_stats(logits.clone(), targets, 5, weights=weights)
    ref = torch.log_softmax(logits.double(), -1)
    # the begin-of-word mass: sum of p over the marked tokens
    torch.testing.assert_close(out["bow_prob"].double(), ref.exp() @ weights.double(),
                               atol=1e-6, rtol=1e-5)
    surprisal = -ref.gather(1, targets[:, None])[:, 0]
    entropy = -(ref.exp() * ref).sum(-1)
    rank = (logits > logits.gather(1, targets[:, None])).sum(-1) + 1
    torch.testing.assert_close(out["surprisal"].double(), surprisal, atol=2e-5, rtol=1e-6)
    torch.testing.assert_close(out["entropy"].double(), entropy, atol=2e-5, rtol=1e-6)
    assert torch.equal(out["rank"], rank)
    top = ref.exp().topk(5, -1)
    torch.testing.assert_close(out["topk_probs"].double(), top.values, atol=1e-6, rtol=1e-5)
    assert out["entropy"][1].item() < 1e-6 and out["rank"][0].item() == 1
    # ids found in the kernel: their logits are the top values, ties broken by smaller id
    torch.testing.assert_close(logits.gather(1, out["topk_ids"]), logits.topk(5, -1).values)
    assert out["topk_ids"][0].tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("top_k", [1, 3, 16, 17])
def test_fused_top_k_sizes_match_torch_topk(top_k):
    from ppl_widget.scoring.runner import gpu_stats

    logits = torch.randn((40, 9001), device="cuda") * 3
    targets = torch.randint(0, 9001, (40,), device="cuda")
    out = gpu_stats.slab_stats(logits, targets, top_k)  # 17: torch.topk fallback
    ref = torch.log_softmax(logits, -1).exp().topk(top_k, -1)
    torch.testing.assert_close(out["topk_probs"], ref.values, atol=1e-6, rtol=1e-5)
    assert torch.equal(out["topk_ids"], ref.indices)  # continuous values: no ties


def test_fp32_gpu_equals_cpu_per_token(cpu_lm):
    from ppl_widget import score
    from ppl_widget.scoring.runner.forward import BatchedForward

    cpu = score(TEXT, cpu_lm, max_length=64, stride=24)
    gpu_lm = on_gpu(cpu_lm, "float32")
    assert BatchedForward(gpu_lm, 5).fused
    gpu = score(TEXT, gpu_lm, max_length=64, stride=24)
    assert gpu.settings["batch_size"] > 1  # batched, and two batches in flight
    np.testing.assert_allclose(gpu.surprisal, cpu.surprisal, atol=1e-4, rtol=0)
    np.testing.assert_allclose(gpu.entropy, cpu.entropy, atol=1e-4, rtol=0)
    np.testing.assert_allclose(gpu.topk_probs, cpu.topk_probs, atol=1e-5, rtol=0)
    assert (gpu.rank == cpu.rank).mean() > 0.999  # summation order may flip a near-tie
    np.testing.assert_array_equal(gpu.context_length, cpu.context_length)
    np.testing.assert_array_equal(gpu.token_ids, cpu.token_ids)


def test_bf16_difference_is_measured(cpu_lm, capsys):
    from ppl_widget import score
    from ppl_widget.scoring.runner.forward import BatchedForward

    cpu = score(TEXT, cpu_lm, max_length=64, stride=32)
    g16 = on_gpu(cpu_lm, "bfloat16")
    fwd = BatchedForward(g16, 5)
    assert fwd.fused and fwd.head_fp32 is not None  # fp32 logits from the bf16 head
    res = score(TEXT, g16, max_length=64, stride=32)
    diff = np.abs(res.surprisal - cpu.surprisal)
    with capsys.disabled():
        print(f"\nbf16 GPU vs fp32 CPU ({len(diff)} tokens): per-token |d surprisal| mean "
              f"{diff.mean():.4f} nats, max {diff.max():.4f}; token ppl "
              f"{res.metrics()['token_ppl']:.4f} vs {cpu.metrics()['token_ppl']:.4f}")
    assert diff.mean() < 0.1  # bf16 is close on average, not exact
    assert np.isfinite(res.surprisal).all() and (res.entropy >= 0).all()


def test_fp32_head_product_is_not_rounded_to_bf16():
    from ppl_widget.scoring.runner import gpu_stats

    head = torch.nn.Linear(256, 9001, bias=False, device="cuda", dtype=torch.bfloat16)
    rows = torch.randn(33, 256, device="cuda", dtype=torch.bfloat16)
    run = gpu_stats.head_fp32(head)
    assert run is not None
    exact = rows.double() @ head.weight.double().t()
    err32 = (run(rows).double() - exact).abs().max().item()
    err16 = (head(rows).double() - exact).abs().max().item()
    assert run(rows).dtype == torch.float32 and err32 < err16 / 10
    assert run(rows).shape == (33, 9001)  # the padded columns are not handed out


def test_pipelined_stream_equals_score_and_cancel_keeps_what_was_yielded():
    from ppl_widget import score, stream

    lm = on_gpu(_tiny("gpt2"), "float32")
    full = score(TEXT, lm, max_length=16, stride=4, batch_size=2)
    items = list(stream(TEXT, lm, max_length=16, stride=4, batch_size=2))
    np.testing.assert_array_equal(np.concatenate([it.chunk["surprisal"] for it in items]),
                                  full.surprisal)
    flag = threading.Event()
    got = []
    for it in stream(TEXT, lm, max_length=16, stride=4, batch_size=2, cancel=flag):
        got.append(it)
        if len(got) == 2:
            flag.set()
    assert len(got) == 3 and got[-1].cancelled
    res = got[-1].result
    assert res.partial and len(res) == got[1].done
    np.testing.assert_array_equal(res.surprisal, full.surprisal[:len(res)])


def test_out_of_memory_on_gpu_halves_the_batch_and_loses_nothing(monkeypatch):
    from ppl_widget import score
    from ppl_widget.scoring.runner.forward import BatchedForward

    lm = on_gpu(_tiny("llama"), "float32")
    ref = score(TEXT, lm, max_length=16, stride=8, batch_size=1)
    real = BatchedForward.submit

    def oom_when_big(self, sequence, batch):
        if len(batch) > 3:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(self, sequence, batch)

    monkeypatch.setattr(BatchedForward, "submit", oom_when_big)
    res = score(TEXT, lm, max_length=16, stride=8, batch_size=16)
    assert res.settings["batch_size"] == 2
    np.testing.assert_allclose(res.surprisal, ref.surprisal, atol=1e-5)


def test_long_text_prepared_ahead_on_gpu_equals_prepared_first(monkeypatch):
    from conftest import CORPUS

    from ppl_widget import score
    from ppl_widget.scoring.runner import prepare, scorer

    long_text = "\n".join(f"{CORPUS[i % 5]} #{i}" for i in range(2000))
    assert len(long_text) > prepare.PARALLEL_MIN_CHARS
    lm = on_gpu(_tiny("gpt2"), "float32")
    taken = []
    real = scorer.prepare_ahead
    monkeypatch.setattr(scorer, "prepare_ahead",
                        lambda *a, **k: taken.append(real(*a, **k)) or taken[-1])
    ahead = score(long_text, lm, max_length=64, stride=32, batch_size=16)
    assert taken and taken[0] is not None  # the GPU path tokenized ahead
    monkeypatch.setattr(scorer, "prepare_ahead", lambda *a, **k: None)
    first = score(long_text, lm, max_length=64, stride=32, batch_size=16)
    for name in ("token_ids", "offsets", "surprisal", "entropy", "rank", "topk_ids"):
        np.testing.assert_array_equal(getattr(ahead, name), getattr(first, name))
    assert ahead.settings == first.settings


def test_corpus_on_gpu_with_host_work_beside_equals_it_in_turn(tmp_path, monkeypatch):
    pytest.importorskip("pyarrow")
    from conftest import CORPUS

    from ppl_widget import score_corpus
    from ppl_widget.scoring.corpus import run as corpus

    docs = {"long": TEXT, **{f"s{i}": t for i, t in enumerate(CORPUS[:9])}, "empty": ""}
    lm = on_gpu(_tiny("gpt2"), "float32")
    opts = dict(max_length=32, stride=16, batch_size=4, flush_docs=3, progress=False)
    beside = score_corpus(docs, tmp_path / "a.parquet", lm, **opts)  # on CUDA: beside
    monkeypatch.setattr(corpus, "pipeline_depth", lambda *_: 1)
    in_turn = score_corpus(docs, tmp_path / "b.parquet", lm, **opts)
    for doc_id in docs:
        for name in ("token_ids", "offsets", "surprisal", "entropy", "rank", "topk_ids"):
            np.testing.assert_array_equal(getattr(beside[doc_id], name),
                                          getattr(in_turn[doc_id], name))
