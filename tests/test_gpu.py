"""GPU against CPU, per token (runs only where CUDA is present; CI has no GPU)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")]

TEXT = ("Perplexity is the exponential of the average negative log-likelihood. " * 40
        + "日本語のテキスト、emoji 🙂, and code: for i in range(10): print(i)")


def test_fp32_gpu_equals_cpu_and_bf16_difference_is_measured(default_lm, capsys):
    from ppl_widget import load_model, score

    cpu = score(TEXT, default_lm, max_length=256, stride=128)
    # copies: the session's CPU model must stay where it is for the other tests
    gpu32 = load_model((copy.deepcopy(default_lm.model), default_lm.tokenizer), device="cuda",
                       dtype="float32")
    g32 = score(TEXT, gpu32, max_length=256, stride=128)
    np.testing.assert_allclose(g32.surprisal, cpu.surprisal, atol=1e-4, rtol=0)
    np.testing.assert_allclose(g32.entropy, cpu.entropy, atol=1e-4, rtol=0)
    gpu16 = load_model((copy.deepcopy(default_lm.model), default_lm.tokenizer), device="cuda",
                       dtype="bfloat16")
    g16 = score(TEXT, gpu16, max_length=256, stride=128)
    diff = np.abs(g16.surprisal - cpu.surprisal)
    m16, m32 = g16.metrics(), cpu.metrics()
    with capsys.disabled():
        print(f"\nbf16 vs fp32 CPU: per-token |d surprisal| mean {diff.mean():.4f} nats, "
              f"max {diff.max():.4f}; token ppl {m16['token_ppl']:.4f} vs {m32['token_ppl']:.4f}")
    assert diff.mean() < 0.1  # bf16 is close on average, not exact
