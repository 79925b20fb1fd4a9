"""The optional parts of ppl-widget, and the one error a missing one raises.

A plain ``pip install ppl-widget`` runs the main job (the widget and its levels, the
export, the extension, charts drawn live). What is left out is imported here when first
used, so a missing part fails only where it is used, saying which extra installs it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: top-level module -> (the distribution that provides it, the extra that installs it);
#: pyproject.toml's optional-dependencies must list each (tests/test_extras.py checks)
OPTIONAL: dict[str, tuple[str, str]] = {
    "wordfreq": ("wordfreq", "analysis"),
    "vl_convert": ("vl-convert-python", "charts"),
    "pyarrow": ("pyarrow", "corpus"),
    "datasets": ("datasets", "corpus"),
    # a transformer scoring in the browser of a live page (scoring/kinds/onnx/onnx_export.py)
    "onnx": ("onnx", "live"),
    "onnxscript": ("onnxscript", "live"),
    "onnxruntime": ("onnxruntime", "live"),
}


class MissingExtraError(ImportError):
    """An optional part is used but the package it needs is not installed."""


def install_hint(module: str) -> str:
    """``pip install "ppl-widget[extra]"`` for the extra that provides ``module``."""
    _, extra = OPTIONAL[module.partition(".")[0]]
    return f'pip install "ppl-widget[{extra}]"'


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module`` (one of OPTIONAL, or a submodule of one) for ``purpose``, or raise
    MissingExtraError naming the extra to install."""
    top = module.partition(".")[0]
    if top not in OPTIONAL:
        raise ValueError(f"{module!r} is not an optional dependency; OPTIONAL lists "
                         f"{sorted(OPTIONAL)}")
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        dist, _ = OPTIONAL[top]
        raise MissingExtraError(f"{purpose} needs {dist}, which is not installed: "
                                f"{install_hint(module)}") from exc
