"""A quantized copy of a loaded model, in memory: every linear layer of the transformer
body rounded to a GGUF block format (Q4_0, Q8_0, ...) and back to fp32 with the ``gguf``
package's reference quantizers (those of ggml), as ``llama-quantize`` writes them and
transformers reads them back.  For ``divergence()`` without a GGUF file or llama.cpp: a
course notebook, a test in CI.

What llama-quantize does for a small plain-type target, and so what this does: the
token embedding and the output head keep their precision (llama.cpp gives them Q8_0 or
better; the default model's tied embedding is already Q8_0), norms stay fp32, and each
linear weight is quantized in blocks of 32 along its input dimension.  A row permutation
(transformers' reordering of Llama's q/k heads) moves whole rows, so it does not change
what a row's blocks become.  Checked against transformers reading a llama-quantize Q4_0
file of the default model: the same weights (docs/divergence.md).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from .models import LoadedModel, as_loaded

#: block formats along rows that the gguf package quantizes and dequantizes in numpy
BLOCK_TYPES = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0")


def round_trip(weight: np.ndarray, kind: str) -> np.ndarray:
    """``weight`` (rows x input dim, fp32) quantized to ``kind`` and dequantized back."""
    from gguf import GGMLQuantizationType, quants

    qtype = GGMLQuantizationType[kind]
    data = np.ascontiguousarray(weight, dtype=np.float32)
    return quants.dequantize(quants.quantize(data, qtype), qtype).reshape(weight.shape)


def quantized_copy(lm: Any = None, kind: str = "Q4_0", *, name: str | None = None) -> LoadedModel:
    """A copy of ``lm`` (anything ``load_model`` takes; default: the embedded model) with
    every linear layer of its body quantized to ``kind`` (one of ``BLOCK_TYPES``) and back
    to fp32; the embedding, the output head and the norms unchanged.  The original is
    left as it was.  ``name``: the copy's name (default ``"<name> (<kind> copy)"``)."""
    import torch

    if kind not in BLOCK_TYPES:
        raise ValueError(f"kind must be one of {', '.join(BLOCK_TYPES)}, got {kind!r}")
    lm = as_loaded(lm)
    model = copy.deepcopy(lm.model)
    head = model.get_output_embeddings()
    head_weight = head.weight if head is not None else None
    n = 0
    with torch.no_grad():
        for module in model.modules():
            if not isinstance(module, torch.nn.Linear) or module.weight is head_weight:
                continue
            weight = module.weight
            if weight.shape[1] % 32:  # not whole blocks: llama.cpp keeps another type
                continue
            done = round_trip(weight.detach().float().cpu().numpy(), kind)
            weight.copy_(torch.from_numpy(done).to(weight.dtype))
            n += 1
    if n == 0:
        raise ValueError(f"{lm.name} has no linear layer with whole blocks of 32 inputs "
                         "to quantize")
    return LoadedModel(model=model, tokenizer=lm.tokenizer,
                       name=name or f"{lm.name} ({kind} copy)", device=lm.device,
                       dtype=lm.dtype)
