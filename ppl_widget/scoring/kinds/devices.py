"""Where a model runs and in which precision: ``device``/``dtype`` settings as torch
objects, or an error naming what this machine or torch build lacks."""

from __future__ import annotations

from typing import Any

from .model_errors import ModelLoadError, ModelSettingError, one_line

DEVICE_HELP = "use 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'"
#: Default window length on a CPU: longer windows cost quadratic attention
#: memory and make the first result wait for a whole window.
CPU_MAX_LENGTH_CAP = 1024


def default_window(context_length: int | None, device: Any) -> int:
    """A model's window when ``max_length`` is not given: its ``context_length``, capped
    at ``CPU_MAX_LENGTH_CAP`` on a CPU (and that cap where the length is unknown)."""
    ctx = context_length or CPU_MAX_LENGTH_CAP
    return min(ctx, CPU_MAX_LENGTH_CAP) if device.type == "cpu" else ctx


def resolve_device(device: str | Any = "auto") -> Any:
    """``torch.device`` for ``device``, or a ``ModelLoadError`` if this torch build
    or this machine does not have it."""
    import torch

    if device is None or device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ModelSettingError(f"unknown device {device!r}: {DEVICE_HELP}") from None
    fallback = "use device='cpu', or 'auto' (a GPU only when there is one)"
    if dev.type == "cuda":
        if torch.version.cuda is None and torch.version.hip is None:
            raise ModelLoadError(f"device={device!r}, but this torch build ({torch.__version__}) "
                                 f"has no CUDA support; {fallback}, or install a CUDA build "
                                 "of torch")
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            raise ModelLoadError(f"device={device!r}, but no CUDA GPU is visible on this "
                                 "machine (check nvidia-smi and CUDA_VISIBLE_DEVICES); "
                                 f"{fallback}")
        if dev.index is not None and dev.index >= n:
            raise ModelLoadError(f"device={device!r}, but this machine has {n} CUDA GPU(s), "
                                 f"cuda:0 to cuda:{n - 1}")
    elif dev.type == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise ModelLoadError(f"device={device!r}, but MPS (Apple GPU) is not available "
                                 f"here; {fallback}")
    elif dev.type != "cpu":
        try:
            torch.empty(0, device=dev)
        except Exception as exc:
            raise ModelLoadError(f"device={device!r} is not usable with this torch build or "
                                 f"machine ({one_line(exc)}); {fallback}") from None
    return dev


def cpu_bf16(dtype: Any, device: Any) -> bool:
    """bfloat16 on a CPU, where the faster of torch's bf16 products and float32 ones is
    measured (``bf16_products.py``): AVX512-BF16 or AMX alone does not say which."""
    import torch

    return device.type == "cpu" and dtype == torch.bfloat16


def precision_settings(lm: Any) -> dict[str, Any]:
    """What a result's settings say of the model's precision: its dtype and, for bf16 on
    a CPU, which matrix products ran (``bf16_products``: ``native`` or ``float32``)."""
    out: dict[str, Any] = {"dtype": str(lm.dtype).replace("torch.", "")}
    products = getattr(lm, "bf16_products", None)
    if products is not None:
        out["bf16_products"] = products
    return out


def resolve_dtype(dtype: str | Any, device: Any) -> Any:
    """``torch.dtype`` for ``dtype``; ``"auto"`` is bfloat16 on GPUs that support it,
    else float32."""
    import torch

    if dtype is None or dtype == "auto":
        if device.type == "cuda" and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    if isinstance(dtype, str):
        names = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
                 "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}
        if dtype not in names:
            raise ModelSettingError(
                f"dtype must be 'auto' or one of {sorted(names)}, got {dtype!r}")
        return names[dtype]
    return dtype
