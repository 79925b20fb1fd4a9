"""The LM head of the target rows in float64, for gradient x input.

Two float32 roundings spoil the gradient of log p(target), and neither is the body's:

- the log-softmax: for a predictable target (p near 1) the gradient against the target's
  logit is 1 - p, which float32 cancels (p rounds to within 6e-8 of 1);
- the head's backward for a few rows: the gradient of the states is a sum over the whole
  vocabulary (49,152 rows for the default model), which a float32 matrix-vector product
  accumulates one row after another (measured: 5e-4 of the largest attribution on the
  default model, where the same head applied to every row of the window gives 3e-6).

So the head of the target rows is computed in float64, a block of vocabulary rows at a
time (no float64 copy of the whole head is kept), and so is its backward; the log-softmax
follows in float64.  The body keeps the model's dtype.
"""

from __future__ import annotations

from functools import cache
from typing import Any

#: float64 elements of one block of the head's weight (32 MB)
BLOCK_ELEMENTS = 4_000_000


def float64_logits(head: Any, states: Any) -> Any:
    """``head(states)`` in float64 with a float64 backward to ``states``; a head that is
    not a plain linear layer: its float32 logits, taken to float64."""
    import torch

    if not isinstance(head, torch.nn.Linear) or states.device.type == "mps":
        return to_float64(head(states))
    bias = None if head.bias is None else head.bias.detach()
    return _function().apply(states, head.weight.detach(), bias)


def to_float64(logits: Any) -> Any:
    """Logits in float64 (an Apple GPU has none: they move to the CPU, and autograd
    carries the gradient back)."""
    if logits.device.type == "mps":
        logits = logits.cpu()
    return logits.double()


def _blocks(weight: Any) -> range:
    rows = max(1, BLOCK_ELEMENTS // max(1, weight.shape[1]))
    return range(0, weight.shape[0], rows)


@cache
def _function() -> Any:
    """The autograd Function, made on first use (``import ppl_widget`` stays torch-free)."""
    import torch

    class Float64Linear(torch.autograd.Function):
        """``states @ weight.T + bias`` in float64; the backward to ``states`` too."""

        @staticmethod
        def forward(ctx: Any, states: Any, weight: Any, bias: Any) -> Any:
            ctx.save_for_backward(weight)
            ctx.states_dtype = states.dtype
            s = states.double()
            out = s.new_empty((s.shape[0], weight.shape[0]))
            step = _blocks(weight).step
            for i in _blocks(weight):
                out[:, i:i + step] = s @ weight[i:i + step].double().T
            if bias is not None:
                out += bias.double()
            return out

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            (weight,) = ctx.saved_tensors
            out = grad.new_zeros((grad.shape[0], weight.shape[1]))
            step = _blocks(weight).step
            for i in _blocks(weight):
                out += grad[:, i:i + step] @ weight[i:i + step].double()
            return out.to(ctx.states_dtype), None, None

    return Float64Linear

    return Float64Linear
