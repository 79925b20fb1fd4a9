"""The models bench_gpu.py times (random weights, real shapes: GPT-2-large, Llama-3.2-1B,
Llama-3.1-8B; tiny ones for --smoke) and the measured bf16 matrix-product peak."""

from __future__ import annotations

from typing import Any

import torch

from ppl_widget.scoring.runner import throughput

LLAMA_3_2_1B = dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192,
                    num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                    head_dim=64, max_position_embeddings=131072, rms_norm_eps=1e-5,
                    rope_theta=500000.0, tie_word_embeddings=True,
                    rope_scaling={"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                  "original_max_position_embeddings": 8192,
                                  "rope_type": "llama3"})
# Llama-3.1-8B's shape (bf16 weights ~16 GB: fits an H100 beside the activations)
LLAMA_3_1_8B = dict(LLAMA_3_2_1B, hidden_size=4096, intermediate_size=14336,
                    num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                    head_dim=128, tie_word_embeddings=False,
                    rope_scaling=dict(LLAMA_3_2_1B["rope_scaling"], factor=8.0))
LLAMA_SHAPES = {"llama-1b": LLAMA_3_2_1B, "llama-8b": LLAMA_3_1_8B}
GPT2_LARGE = dict(vocab_size=50257, n_positions=1024, n_embd=1280, n_layer=36, n_head=20)



def build_model(kind: str, smoke: bool, tokenizer: Any, device: torch.device) -> Any:
    from transformers import AutoModelForCausalLM, GPT2Config, LlamaConfig

    special = dict(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    if kind == "gpt2-large":
        shape = dict(GPT2_LARGE, n_embd=64, n_layer=2, n_head=2, vocab_size=2000) if smoke \
            else GPT2_LARGE
        cfg = GPT2Config(**shape, **special)
    else:
        full = LLAMA_SHAPES[kind]
        shape = dict(full, vocab_size=4000, hidden_size=64, intermediate_size=256,
                     num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                     head_dim=16) if smoke else full
        cfg = LlamaConfig(**shape, **special)
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16,
                                                 attn_implementation="sdpa")
    return model.eval()


def matmul_peak(device: torch.device, smoke: bool) -> float:
    """Measured bf16 matrix-product rate, TFLOP/s (8192^3 products; 512^3 in --smoke)."""
    return throughput.matmul_peak(device, torch.bfloat16, 512 if smoke else 8192)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()
