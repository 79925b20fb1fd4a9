"""Which matrix products a bfloat16 model uses on a CPU: torch's own bf16 products
("native") or float32 products from the bf16 weights ("float32", ``fp32_products.py``),
whichever measured faster on this CPU.  Whether a CPU has AVX512-BF16 or AMX does not
say which is faster (an Intel Xeon with AVX512-BF16 and no AMX ran torch's bf16 product
at 76 GFLOP/s, float32 at 86), so the first bf16 load times both on one of the model's
own products, on the threads torch will use, and the choice is kept in the cache per
CPU, torch version, thread count and product shape (a tiny model's product, all
overhead, never decides for a large one's).  ``$PPL_WIDGET_BF16_PRODUCTS`` (``native`` or
``float32``) forces either; both round each product's output to bf16 once."""

from __future__ import annotations

import contextlib
import math
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model_cache import _read_json, _write_json, cache_root
from ..model_errors import ModelSettingError
from .fp32_products import fp32_linear

#: Forces a path for every bf16 model on a CPU: ``native``, ``float32`` (``auto``: measure).
ENV = "PPL_WIDGET_BF16_PRODUCTS"
PATHS = ("native", "float32")
#: The measured choices, one per ``cpu_key``, in the package's cache folder.
CACHE_FILE = "bf16_products.json"
#: The product timed: a typical CPU batch of positions through one of the model's largest
#: linear layers, its rows cut so the product stays under ``MAX_MACS`` (a fraction of a
#: second even where torch emulates bf16 ~6x slower than float32).
POSITIONS = 256
MAX_MACS = 1 << 28
#: Timed runs of each path, alternating (after one warm-up each); the fastest counts.
REPEATS = 3
#: CPU flags that can change which path is faster (x86: AVX512-BF16, AMX; Arm: BF16).
BF16_FLAGS = ("avx512_bf16", "amx_bf16", "amx_tile", "bf16")


def native_linear(x: Any, weight: Any) -> Any:
    """torch's own product in the inputs' dtype (bf16: as fast as this CPU makes it)."""
    import torch

    return torch.nn.functional.linear(x, weight)


#: name -> product(x, weight): what ``time_products`` times, by ``clock`` (tests put a
#: fake clock and products that advance it here)
PRODUCTS: dict[str, Callable[[Any, Any], Any]] = {"native": native_linear,
                                                  "float32": fp32_linear}
clock: Callable[[], float] = time.perf_counter


@dataclass(frozen=True)
class Bf16Choice:
    """The path chosen and why: ``how`` is ``measured``, ``cached``, ``forced`` or ``no
    linear layer``;
    ``seconds``: each path's fastest timed product (empty when forced)."""

    path: str
    how: str
    seconds: dict[str, float] = field(default_factory=dict)

    def native_slowdown(self) -> float:
        """How many times slower the native product measured than the float32 one."""
        if not self.seconds:
            return math.nan
        return self.seconds["native"] / self.seconds["float32"]


def choose_bf16_products(model: Any) -> Bf16Choice:
    """The faster path for ``model`` (bf16, on the CPU) here: forced by ``$ENV``, else read
    from the cache, else measured now (``time_products``) and cached."""
    forced = os.environ.get(ENV, "auto").strip().lower()
    if forced in PATHS:
        return Bf16Choice(forced, "forced")
    if forced not in ("", "auto"):
        raise ModelSettingError(f"${ENV} must be 'auto', 'native' or 'float32', got "
                                f"{os.environ[ENV]!r}")
    import torch

    weight = typical_weight(model)
    if weight is None:  # no linear layer: nothing to choose
        return Bf16Choice("native", "no linear layer")
    key = cpu_key(torch.get_num_threads(), tuple(weight.shape))
    path = cache_root() / CACHE_FILE
    known = _read_json(path)
    entry = known.get(key)
    if isinstance(entry, dict) and entry.get("path") in PATHS:
        return Bf16Choice(entry["path"], "cached", dict(entry.get("seconds") or {}))
    seconds = time_products(weight)
    choice = Bf16Choice(min(PATHS, key=lambda p: seconds[p]), "measured", seconds)
    known[key] = {"path": choice.path, "seconds": seconds, "measured": time.strftime("%F %T")}
    with contextlib.suppress(OSError):  # a read-only cache: measured again next time
        _write_json(path, known)
    return choice


def typical_weight(model: Any) -> Any:
    """The weight of the model's largest plain linear layer other than its LM head (an
    MLP projection: most of a forward's products), else the head's; rows cut so that
    ``POSITIONS`` of them stay under ``MAX_MACS``.  None when it has no linear layer."""
    import torch

    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    linears = [m for m in model.modules()  # those fp32_products converts, or did
               if type(m) is torch.nn.Linear or getattr(m, "fp32_products", False)]
    body = [m for m in linears if m is not head] or linears
    if not body:
        return None
    weight = max(body, key=lambda m: m.weight.numel()).weight.detach()
    rows = max(1, min(weight.shape[0], MAX_MACS // (POSITIONS * weight.shape[1])))
    return weight[:rows]


def time_products(weight: Any, repeats: int = REPEATS) -> dict[str, float]:
    """Each path's fastest time (seconds) for ``POSITIONS`` rows times ``weight``: one
    warm-up each, then ``repeats`` rounds taking turns, so a busy spell of a shared
    machine falls on both."""
    import torch

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(POSITIONS, weight.shape[1], generator=gen).to(weight.dtype)
    with torch.inference_mode():
        for product in PRODUCTS.values():
            product(x, weight)
        best = dict.fromkeys(PRODUCTS, math.inf)
        for _ in range(repeats):
            for name, product in PRODUCTS.items():
                start = clock()
                product(x, weight)
                best[name] = min(best[name], clock() - start)
    return best


def cpu_key(threads: int, shape: tuple[int, int]) -> str:
    """What the choice depends on: the CPU model, its bf16 flags, torch, the threads and
    the weight's shape (``typical_weight``) that ``POSITIONS`` rows were multiplied by."""
    import torch

    name, flags = _cpu_info()
    bf16 = ",".join(f for f in BF16_FLAGS if f in flags) or "no bf16 flags"
    rows, cols = shape
    return (f"{name} | {bf16} | torch {torch.__version__} | {threads} threads | "
            f"{POSITIONS}x{cols} @ {cols}x{rows}")


def _cpu_info(cpuinfo: Path = Path("/proc/cpuinfo")) -> tuple[str, set[str]]:
    """The CPU's model name and flags (Linux's /proc/cpuinfo; elsewhere the platform's
    processor name and no flags)."""
    name, flags = "", set()
    with contextlib.suppress(OSError):
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            label, _, value = line.partition(":")
            label = label.strip().lower()
            if label == "model name" and not name:
                name = value.strip()
            elif label in ("flags", "features") and not flags:
                flags = set(value.split())
    return name or platform.processor() or platform.machine() or "unknown CPU", flags
