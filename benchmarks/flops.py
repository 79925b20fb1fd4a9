"""FLOPs each method executes over a text: the transformer body over every input
position, the LM head over the positions it is applied to, and causal attention.

Shared by bench_gpu.py and bench_vs_guide.py (the FLOP-ratio ceiling).
"""

from __future__ import annotations

from typing import Any

from ppl_widget.core.windows import plan_windows


def flop_model(model: Any) -> dict[str, float]:
    cfg = model.config
    emb = model.get_input_embeddings().weight
    head = model.get_output_embeddings().weight
    skip = {id(emb), id(head)}
    pos = getattr(getattr(model, "transformer", None), "wpe", None)
    if pos is not None:
        skip.add(id(pos.weight))
    body = sum(p.numel() for p in model.parameters() if id(p) not in skip)
    total = sum(p.numel() for p in model.parameters())
    layers = getattr(cfg, "num_hidden_layers", None) or cfg.n_layer
    d_attn = (getattr(cfg, "num_attention_heads", None) or cfg.n_head) * \
        (getattr(cfg, "head_dim", None) or (getattr(cfg, "hidden_size", None) or cfg.n_embd)
         // (getattr(cfg, "num_attention_heads", None) or cfg.n_head))
    return {"body": body, "total": total, "head_per_pos": 2 * head.shape[0] * head.shape[1],
            "layers": layers, "d_attn": d_attn}


def window_flops(fm: dict, n_inputs: int, n_head_rows: int) -> float:
    """One forward over ``n_inputs`` positions, ``n_head_rows`` of them through the head."""
    attention = 2 * n_inputs * n_inputs * fm["d_attn"] * fm["layers"]  # causal: half of 4n^2d
    return 2 * fm["body"] * n_inputs + attention + fm["head_per_pos"] * n_head_rows


def executed_flops(fm: dict, n_seq: int, max_length: int, stride: int) -> dict[str, float]:
    """FLOPs each method executes on a sequence of ``n_seq`` positions (prefix included)."""
    ours = sum(window_flops(fm, w.n_inputs, w.n_targets)
               for w in plan_windows(n_seq, max_length, stride))
    guide = 0.0
    n_text = n_seq - 1  # the guide loop reads the text without a prefix token
    prev_end = 0
    for begin in range(0, n_text, stride):
        end = min(begin + max_length, n_text)
        guide += window_flops(fm, end - begin, end - begin)
        prev_end = end
        if end == n_text:
            break
    del prev_end
    # lm-eval: the same disjoint windows as ours at stride == max_length, head on all inputs
    lm_eval = sum(window_flops(fm, w.n_inputs, w.n_inputs)
                  for w in plan_windows(n_seq, max_length, max_length))
    return {"guide": guide, "score": ours, "stream": ours, "lm-eval": lm_eval,
            "lm-eval*": lm_eval}
