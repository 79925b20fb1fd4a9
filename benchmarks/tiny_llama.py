"""A Llama-shaped model with random weights and a Metaspace BPE tokenizer trained on the
benchmark's own text: the smoke forms' model (bench_pairs, bench_words) and the
prefix_every_window study's, which differ only in size."""

from __future__ import annotations

from typing import Any


def tiny_llama(texts: list[str], *, vocab_size: int = 300, hidden_size: int = 64,
               layers: int = 2, max_positions: int = 128, device: str = "cpu",
               dtype: str = "float32") -> Any:
    """A ``LoadedModel``: the tokenizer trained on ``texts`` (``<unk>``, ``<s>`` BOS,
    ``</s>`` EOS), the model seeded, 4 heads over 2 key-value heads, MLP twice as wide."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from ppl_widget import load_model

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<unk>", "<s>", "</s>"]))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                        unk_token="<unk>")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden_size,
                      intermediate_size=2 * hidden_size, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=max_positions,
                      bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    return load_model((LlamaForCausalLM(cfg), tokenizer), device=device, dtype=dtype)
