"""Gradient x input: per context token, the sum over embedding dimensions of its input
embedding times d log p(target | context) / d embedding (one forward and one backward
pass per window the target is scored in); a unit sums its tokens.  A first-order
approximation of occlusion, with its sign (positive: the token made the target more
predictable).  It needs a model with input embeddings and a backward pass.

The body runs in the model's dtype; the head of the target rows and the log-softmax run
in float64 (``float64_head.py`` says why), so gradient x input agrees with a float64 copy
of the model to the body's float32 precision (docs/explain.md,
tests/test_gradient_exact.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.explain.target import ExplainError, ExplainPlan
from ..kinds.models import LoadedModel
from ..runner.forward import body_of
from .explain_masked import check_causal_only
from .float64_head import float64_logits, to_float64


def check_gradient(lm: Any) -> None:
    """A transformers (or GGUF, dequantized) model has embeddings to differentiate; the
    other kinds do not: the rule, named (a masked model's: ``explain_masked``)."""
    check_causal_only(lm, "method='gradient'")
    if not isinstance(lm, LoadedModel) or lm.model.get_input_embeddings() is None:
        kind = type(lm).__name__
        raise ExplainError(
            f"method='gradient' needs a model with input embeddings and a backward pass "
            f"(a transformers or GGUF model); {kind} has none (an n-gram model has no "
            f"embeddings, a vLLM server returns no gradients): use method='occlusion', "
            f"which is exact for every kind")


def gradient_x_input(lm: LoadedModel, plan: ExplainPlan) -> tuple[float, np.ndarray]:
    """``(target surprisal in nats, attribution per unit)``."""
    import torch

    model = lm.model
    embed = model.get_input_embeddings()
    body = body_of(model)
    per_position: dict[int, float] = {}
    nll = 0.0
    for g in plan.groups:
        positions = g.positions()
        n = len(g.targets)
        ids = torch.from_numpy(plan.sequence[positions]).to(lm.device)
        targets = ids[-n:]
        with torch.enable_grad():
            x = embed(ids[None, :-1]).detach().requires_grad_(True)
            if body is not None:
                states = body(inputs_embeds=x, use_cache=False).last_hidden_state[0, -n:]
                logits = float64_logits(model.get_output_embeddings(), states)
            else:  # logits transformed after the head: the model's own forward
                logits = to_float64(model(inputs_embeds=x, use_cache=False).logits[0, -n:])
            log_p = torch.log_softmax(logits, dim=-1).gather(
                1, targets[:, None].to(logits.device)).sum()
            (grad,) = torch.autograd.grad(log_p, x)
        attribution = (x.detach().double() * grad.double()).sum(-1)[0].cpu().numpy()
        nll -= float(log_p.detach())
        context = set(g.context.tolist())
        for k, pos in enumerate(positions[:-1].tolist()):
            if pos in context:
                per_position[pos] = per_position.get(pos, 0.0) + float(attribution[k])
    units = np.array([sum(per_position.get(int(p), 0.0) for p in u.positions)
                      for u in plan.units])
    return nll, units
