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

What llama.cpp computes with such a file, and so what ``activations="Q8_0"`` (the
default) adds: ggml multiplies a block-quantized weight by activations quantized to Q8_0
(``vec_dot_q4_0_q8_0`` and kin: blocks of 32, scale max|x|/127 stored as fp16, rounded to
nearest), the output head too when its weight is block-quantized.  Transformers reading
the file (``load_model("x.gguf")``) multiplies by fp32 activations: ``activations=None``.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ..models import LoadedModel, as_loaded

#: block formats along rows that the gguf package quantizes and dequantizes in numpy
BLOCK_TYPES = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0")


def round_trip(weight: np.ndarray, kind: str) -> np.ndarray:
    """``weight`` (rows x input dim, fp32) quantized to ``kind`` and dequantized back."""
    from gguf import GGMLQuantizationType, quants

    qtype = GGMLQuantizationType[kind]
    data = np.ascontiguousarray(weight, dtype=np.float32)
    return quants.dequantize(quants.quantize(data, qtype), qtype).reshape(weight.shape)


def q8_0_round_trip(x: Any) -> Any:
    """``x`` quantized to Q8_0 along its last dimension and back, as ggml quantizes the
    activations of a product with a block-quantized weight: per block of 32, d =
    max|x|/127 (kept as fp16), q = round(x/d) to nearest even (ggml's AVX path)."""
    import torch

    blocks = x.reshape(-1, 32)
    d = blocks.abs().amax(dim=-1, keepdim=True) / 127
    inv = torch.where(d > 0, 1 / d, torch.zeros_like(d))
    q = torch.round(blocks * inv)
    return (q * d.half().float()).reshape(x.shape).to(x.dtype)


def _quantize_input(module: Any, args: tuple) -> tuple:
    return (q8_0_round_trip(args[0]), *args[1:])


def quantized_copy(lm: Any = None, kind: str = "Q4_0", *, activations: str | None = "Q8_0",
                   name: str | None = None) -> LoadedModel:
    """A copy of ``lm`` (anything ``load_model`` takes; default: the embedded model) with
    every linear layer of its body quantized to ``kind`` (one of ``BLOCK_TYPES``) and back
    to fp32; the embedding, the output head and the norms unchanged.  The original is
    left as it was.  ``activations="Q8_0"``: those layers (and the head, where ``lm``'s
    head holds block-quantized values, as the default model's Q8_0 embedding does) read
    their input rounded to Q8_0 blocks, as llama.cpp computes; None: fp32 inputs, as
    transformers computes with a GGUF file.  ``name``: the copy's name (default
    ``"<name> (<kind> copy)"``)."""
    import torch

    if kind not in BLOCK_TYPES:
        raise ValueError(f"kind must be one of {', '.join(BLOCK_TYPES)}, got {kind!r}")
    if activations not in (None, "Q8_0"):
        raise ValueError(f"activations must be 'Q8_0' or None, got {activations!r}")
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
            if activations:
                module.register_forward_pre_hook(_quantize_input)
            n += 1
    if n == 0:
        raise ValueError(f"{lm.name} has no linear layer with whole blocks of 32 inputs "
                         "to quantize")
    if activations and head is not None and head.weight.shape[1] % 32 == 0 \
            and _is_block_quantized(head.weight.detach().float().cpu().numpy()):
        head.register_forward_pre_hook(_quantize_input)
    return LoadedModel(model=model, tokenizer=lm.tokenizer,
                       name=name or f"{lm.name} ({kind} copy)", device=lm.device,
                       dtype=lm.dtype)


def _is_block_quantized(weight: np.ndarray) -> bool:
    """``weight`` already holds values of a block format (its Q8_0 round trip leaves it
    unchanged): llama.cpp then multiplies it by quantized activations too."""
    rows = weight[:64]  # a sample of rows is enough to tell
    return bool(np.array_equal(round_trip(rows, "Q8_0"), rows))
