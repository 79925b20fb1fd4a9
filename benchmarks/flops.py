"""FLOPs each method executes over a text: the transformer body over every input
position, the LM head over the positions it is applied to, and causal attention.

Shared by bench_gpu.py and bench_vs_guide.py (the FLOP-ratio ceiling); the count of one
forward is the package's own (``ppl_widget.scoring.runner.throughput``), as the corpus report uses.
"""

from __future__ import annotations

from ppl_widget.core.windows import plan_windows
from ppl_widget.scoring.runner.throughput import flop_model, window_flops

__all__ = ["executed_flops", "flop_model", "window_flops"]


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
