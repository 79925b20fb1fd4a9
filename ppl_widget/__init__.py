"""ppl-widget: exact sliding-window surprisal and perplexity for causal LMs, in Jupyter.

Importing the package is cheap: torch, transformers and the widget load only
when something that needs them is used.
"""

from __future__ import annotations

import sys
from typing import Any

from .core.metrics import convert_perplexity, unigram_normalized_perplexity
from .core.providers import provide, resolve
from .core.result import ScoreResult
from .core.windows import Window, plan_windows

__version__ = "0.1.0"

# name -> "module:attribute" that defines it, imported on first use
_LAZY = {
    "load_model": "ppl_widget.scoring.kinds.models:load_model",
    "load_tokenizer": "ppl_widget.scoring.kinds.models:load_tokenizer",
    "LoadedModel": "ppl_widget.scoring.kinds.models:LoadedModel",
    "ModelLoadError": "ppl_widget.scoring.kinds.models:ModelLoadError",
    "score": "ppl_widget.scoring.runner.scorer:score",
    "stream": "ppl_widget.scoring.runner.scorer:stream",
    "ScoreProgress": "ppl_widget.scoring.runner.scorer:ScoreProgress",
    "ScoringError": "ppl_widget.scoring.runner.scorer:ScoringError",
    "PerplexityWidget": "ppl_widget.views.widget:PerplexityWidget",
    "ComparisonWidget": "ppl_widget.views.compare_widget:ComparisonWidget",
    "StaticWidgetOutputs": "ppl_widget.views.offline_notebook:StaticWidgetOutputs",
    "compare": "ppl_widget.scoring.analyses.compare:compare",
    "Comparison": "ppl_widget.core.comparison:Comparison",
    "Unigram": "ppl_widget.core.unigram:Unigram",
    "NGramModel": "ppl_widget.scoring.kinds.ngram.ngram:NGramModel",
    "score_corpus": "ppl_widget.scoring.corpus:score_corpus",
    "open_corpus": "ppl_widget.core.corpus:open_corpus",
    "CorpusResults": "ppl_widget.core.corpus:CorpusResults",
    "score_words": "ppl_widget.scoring.analyses.words:score_words",
    "WordListError": "ppl_widget.core.reading.word_list:WordListError",
    "score_pairs": "ppl_widget.scoring.analyses.pairs:score_pairs",
    "PairsInputError": "ppl_widget.core.pairs:PairsInputError",
    "show_pairs": "ppl_widget.views.pairs_view:show_pairs",
    "PairsWidget": "ppl_widget.views.pairs_view:PairsWidget",
    "show_words": "ppl_widget.views.words_view:show_words",
    "show_reading": "ppl_widget.views.reading_view:show_reading",
    "ReadingWidget": "ppl_widget.views.reading_view:ReadingWidget",
    "pairs_accuracy_chart": "ppl_widget.views.charts.charts_pairs:pairs_accuracy_chart",
    "linking_chart": "ppl_widget.views.charts.charts_reading:linking_chart",
    "quality_power_chart": "ppl_widget.views.charts.charts_reading:quality_power_chart",
    "protocol_context_chart": "ppl_widget.views.charts.charts_protocols:protocol_context_chart",
    "export_live_page": "ppl_widget.views.live_page:export_live_page",
    "divergence": "ppl_widget.scoring.analyses.divergence:divergence",
    "DivergenceResult": "ppl_widget.core.divergence:DivergenceResult",
    "VocabularyMismatchError": "ppl_widget.core.divergence:VocabularyMismatchError",
    "show_divergence": "ppl_widget.views.divergence_view:show_divergence",
    "DivergenceWidget": "ppl_widget.views.divergence_view:DivergenceWidget",
    "quantized_copy": "ppl_widget.scoring.kinds.gguf.quantize:quantized_copy",
    "OnnxLiveModel": "ppl_widget.scoring.kinds.onnx.onnx_files:OnnxLiveModel",
    "delta_ll": "ppl_widget.core.reading.predictive_power:delta_ll",
    "DeltaLL": "ppl_widget.core.reading.predictive_power:DeltaLL",
    "link_shape": "ppl_widget.core.reading.link_shape:link_shape",
    "LinkShape": "ppl_widget.core.reading.link_shape:LinkShape",
    "LinkMethods": "ppl_widget.core.reading.link_shape:LinkMethods",
    "link_effects": "ppl_widget.core.reading.link_shape:link_effects",
    "link_chart": "ppl_widget.views.charts.charts_link:link_chart",
    "link_dll_chart": "ppl_widget.views.charts.charts_link:link_dll_chart",
    "ReadingTimeError": "ppl_widget.core.reading.spillover:ReadingTimeError",
    "ReadingTimeWarning": "ppl_widget.core.reading.spillover:ReadingTimeWarning",
    "predictive_power": "ppl_widget.scoring.analyses.predictive_power:predictive_power",
    "explain": "ppl_widget.scoring.analyses.explain:explain",
    "iter_explain": "ppl_widget.scoring.analyses.explain:iter_explain",
    "context_curve": "ppl_widget.scoring.analyses.explain:context_curve",
    "Explanation": "ppl_widget.core.explain.explanation:Explanation",
    "ExplainProgress": "ppl_widget.core.explain.explanation:ExplainProgress",
    "ExplainError": "ppl_widget.core.explain.target:ExplainError",
    "load_meco": "ppl_widget.scoring.datasets:load_meco",
    "load_xlang": "ppl_widget.scoring.datasets:load_xlang",
    "meco_published": "ppl_widget.scoring.datasets:meco_published",
    "ReadingDataError": "ppl_widget.scoring.datasets:ReadingDataError",
}

__all__ = [
    "ScoreResult", "Window", "convert_perplexity", "plan_windows",
    "unigram_normalized_perplexity", *_LAZY,
]


#: sub-modules reachable as attributes (``ppl_widget.charts``), imported on first use
_LAZY_MODULES = {"charts": "ppl_widget.views.charts.charts",
                 "datasets": "ppl_widget.scoring.datasets"}

# The views' work that core objects offer (core/providers.py): the core never imports a
# view; these references are imported the first time they are asked for.
provide("result_to_html", "ppl_widget.views.export:result_to_html")  # ScoreResult.to_html
provide("comparison_chart", "ppl_widget.views.charts.charts:comparison")  # Comparison.chart
# Comparison.widget (and through the widget, Comparison.to_html)
provide("comparison_widget", "ppl_widget.views.compare_widget:ComparisonWidget.from_comparison")
provide("divergence_widget", "ppl_widget.views.divergence_view:DivergenceWidget")  # .widget()
provide("divergence_chart", "ppl_widget.views.charts.charts_divergence:divergence")  # .chart()
# the scoring side's work that ScoreResult offers (result.explain, result.context_curve)
provide("explain", "ppl_widget.scoring.analyses.explain:explain")
provide("context_curve", "ppl_widget.scoring.analyses.explain:context_curve")
provide("explanation_chart", "ppl_widget.views.charts.charts_explain:explanation_chart")


def _altair_charts_offline_in_ipython() -> None:
    """In an IPython kernel every Altair chart, the user's own too, is drawn with no
    network (views/charts/chart_renderer.py); outside IPython nothing is imported."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None and hasattr(shell, "display_formatter"):
        from .views.charts.chart_renderer import draw_altair_charts_offline

        draw_altair_charts_offline(shell)


_altair_charts_offline_in_ipython()


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext ppl_widget``: the %%surprisal, %surprisal and %ppl_config magics
    (ppl_widget/magics.py; loading them imports neither torch nor transformers)."""
    from .magics import load_ipython_extension as load

    load(ipython)


def __getattr__(name: str) -> Any:
    if name in _LAZY_MODULES:
        return resolve(_LAZY_MODULES[name])
    if name in _LAZY:
        return resolve(_LAZY[name])
    raise AttributeError(f"module 'ppl_widget' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
