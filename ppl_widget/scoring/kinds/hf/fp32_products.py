"""bfloat16 weights on a CPU where torch's own bfloat16 matrix products are slower
(``bf16_products.py`` measures which): each linear layer multiplies in float32, from
exact upcasts of its bf16 input and weight, and rounds its output to bf16.  That is the
arithmetic of a native bf16 product (float32 accumulation, one rounding of the output)
and what llama.cpp's kernels do with a BF16 file on a CPU without native bf16; torch's
own bf16 product there is emulated and ran ~6x slower than this on SmolLM2 (2 AVX2
cores, benchmarks/bench_llama_cpp.py).  The weights stay bf16 in memory: one layer's
float32 copy lives only during its product."""

from __future__ import annotations

from functools import cache
from typing import Any


def fp32_linear(x: Any, weight: Any, bias: Any = None) -> Any:
    """``linear(x, weight, bias)`` multiplied in float32 from exact upcasts, rounded to
    ``x``'s dtype once."""
    import torch

    bias = None if bias is None else bias.float()
    return torch.nn.functional.linear(x.float(), weight.float(), bias).to(x.dtype)


@cache
def fp32_product_linear() -> type:
    """The ``torch.nn.Linear`` subclass whose product is float32 (``fp32_products`` marks
    it: the LM head's own blocked product, ``forward.blocked_head``, reads the mark)."""
    import torch

    class Fp32ProductLinear(torch.nn.Linear):
        fp32_products = True

        def forward(self, x: Any) -> Any:
            return fp32_linear(x, self.weight, self.bias)

    return Fp32ProductLinear


def use_fp32_products(model: Any) -> int:
    """Give every plain ``torch.nn.Linear`` of ``model`` float32 products, in place (its
    parameters, hooks and state-dict keys unchanged); how many.  Subclasses (quantized
    layers) keep their own products."""
    import torch

    cls = fp32_product_linear()
    n = 0
    for module in model.modules():
        if type(module) is torch.nn.Linear:
            module.__class__ = cls
            n += 1
    return n
