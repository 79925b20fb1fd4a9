"""The view of a ``DivergenceResult``: the main widget's renderer showing the base model's
result, each token coloured by KL(base ‖ other) (the ``kl`` colour mode, its own log
scale), both models' statistics and top-k in the tooltip.  Nothing is scored: the widget
holds the finished result; ``to_html()`` is the same view with no kernel."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.divergence import DivergenceResult
from .assets import bundle_path
from .export import StaticPageOutput, result_state
from .protocol import DIVERGENCE_FIELDS
from .widget_traits import PerplexityTraits

#: the display traits a divergence view starts with (the rest are the widget's defaults)
DEFAULT_VIEW = {"color_mode": "kl", "surprisal_unit": "nats"}


def divergence_payload(result: DivergenceResult) -> dict[str, Any]:
    """``result_data["divergence"]``: the labels and ``DIVERGENCE_FIELDS`` as buffers."""
    other = result.other
    n = len(result)
    top_k = int(result.base.topk_ids.shape[1]) if result.base.topk_ids.ndim == 2 else 0
    arrays = {"kl": result.kl, "same_top": result.same_top,
              "other_surprisal": other.surprisal, "other_entropy": other.entropy,
              "other_rank": other.rank,
              "other_topk_ids": other.topk_ids.reshape(n, -1)[:, :top_k],
              "other_topk_probs": other.topk_probs.reshape(n, -1)[:, :top_k]}
    payload: dict[str, Any] = {"labels": list(result.labels)}
    for name, dtype, _per in DIVERGENCE_FIELDS:
        payload[name] = np.ascontiguousarray(arrays[name], dtype=dtype).tobytes()
    return payload


def divergence_state(result: DivergenceResult, **view: Any) -> dict[str, Any]:
    """The widget's synced state showing ``result`` (``view``: display traits)."""
    if not isinstance(result, DivergenceResult):
        raise TypeError(f"result must be a DivergenceResult, got {type(result).__name__}")
    state = result_state(result.base, **{**DEFAULT_VIEW, **view})
    # the other model's tokens (its top-k) need their text too
    vocab = state["result_data"]["vocab"]
    ids = np.unique(result.other.topk_ids)
    vocab.update({str(int(i)): result.other.vocab[int(i)] for i in ids.tolist()
                  if int(i) in result.other.vocab})
    state["result_data"]["divergence"] = divergence_payload(result)
    base, other = result.labels
    state["settings"] = {**state["settings"], "model": f"{base} (base)",
                         "compared_with": f"{other}: {result.other.settings.get('model', '?')}"}
    return state


class DivergenceWidget(StaticPageOutput, PerplexityTraits):
    """A ``DivergenceResult`` shown by the main widget's renderer: tokens coloured by
    KL(base ‖ other) (switch to surprisal, rank, ... in the toolbar: the base model's),
    both models in each token's tooltip.  ``to_html()`` writes the same view as a page."""

    _esm = bundle_path("widget.js")
    _css = bundle_path("widget.css")

    def __init__(self, result: DivergenceResult, **view: Any) -> None:
        state = divergence_state(result, **view)
        super().__init__(**state)
        self.result = result

    def wait(self, timeout: float | None = None, *,
             raise_error: bool = True) -> DivergenceResult:
        """The result (nothing runs: the widget shows a finished result), so a page
        with no front end (nbconvert, views/headless.py) draws it as the widget does."""
        return self.result

    def _page_state(self) -> dict[str, Any]:
        shown = {k: getattr(self, k) for k in ("color_mode", "show_boundaries", "level",
                                               "surprisal_unit", "bow_correction")}
        return divergence_state(self.result, **shown)

    def _page_title(self, state: dict[str, Any]) -> str:
        return f"ppl-widget · divergence {self.result.labels[1]} vs {self.result.labels[0]}"

    def _page_view(self) -> dict[str, Any]:
        return {"summary": page_summary(self.result)}


def page_summary(result: DivergenceResult) -> str:
    """The page's one line of text until (or unless) the script draws the view."""
    base, other = result.labels
    if not len(result):
        return f"ppl-widget · divergence of {other} from {base} · no tokens"
    s = result.summary()
    return (f"ppl-widget · divergence of {other} from {base} · {len(result)} tokens · mean "
            f"KL {s['mean_kld']:.4g} nats · same top token {100 * s['same_top_p']:.1f}% · "
            f"PPL ratio {s['ppl_ratio']:.4g} (the coloured view needs JavaScript)")


def show_divergence(result: DivergenceResult, **view: Any) -> DivergenceWidget:
    """The divergence view of ``result`` (``result.widget()``)."""
    return DivergenceWidget(result, **view)
