"""ppl-widget: exact sliding-window surprisal and perplexity for causal LMs, in Jupyter.

Importing the package is cheap: torch, transformers and the widget load only
when something that needs them is used.
"""

from __future__ import annotations

import importlib
from typing import Any

from .core.metrics import convert_perplexity, unigram_normalized_perplexity
from .core.result import ScoreResult
from .core.windows import Window, plan_windows

__version__ = "0.1.0"

# name -> module that defines it, imported on first use
_LAZY = {
    "load_model": "scoring.models",
    "LoadedModel": "scoring.models",
    "ModelLoadError": "scoring.models",
    "score": "scoring.scorer",
    "stream": "scoring.scorer",
    "ScoreProgress": "scoring.scorer",
    "ScoringError": "scoring.scorer",
    "PerplexityWidget": "views.widget",
    "ComparisonWidget": "views.compare_widget",
    "StaticWidgetOutputs": "views.offline_notebook",
    "compare": "scoring.compare",
    "Comparison": "core.comparison",
    "Unigram": "core.unigram",
    "NGramModel": "scoring.ngram",
    "score_corpus": "scoring.corpus",
    "open_corpus": "core.corpus",
    "CorpusResults": "core.corpus",
}

__all__ = [
    "ScoreResult", "Window", "convert_perplexity", "plan_windows",
    "unigram_normalized_perplexity", *_LAZY,
]


#: sub-modules reachable as attributes (``ppl_widget.charts``), imported on first use
_LAZY_MODULES = {"charts": "views.charts"}


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext ppl_widget``: the %%surprisal, %surprisal and %ppl_config magics
    (ppl_widget/magics.py; loading them imports neither torch nor transformers)."""
    from .magics import load_ipython_extension as load

    load(ipython)


def __getattr__(name: str) -> Any:
    if name in _LAZY_MODULES:
        return importlib.import_module(f".{_LAZY_MODULES[name]}", __name__)
    if name in _LAZY:
        module = importlib.import_module(f".{_LAZY[name]}", __name__)
        return getattr(module, name)
    raise AttributeError(f"module 'ppl_widget' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
