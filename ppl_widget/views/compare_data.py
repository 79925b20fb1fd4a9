"""What the comparison view is sent: each model's tokens and the text's words, as
binary buffers in UTF-16 offsets (JavaScript's string indices), and the table.

Kept apart from the widget so the live widget and a finished ``Comparison``
(``Comparison.widget()``, the static page) build the very same state.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.jsonable import json_number
from ..core.levels import assign_tokens
from ..core.result import ScoreResult
from ..core.text_units import TextUnits
from ..scoring.analyses.compare import NOT_COMPARABLE, TABLE_COLUMNS

#: Per-token buffers of one model, in the order the front end decodes them.
MODEL_FIELDS = (("start16", "<i4"), ("end16", "<i4"), ("surprisal", "<f4"), ("word", "<i4"))
#: Metrics shown in the table (besides label, model, vocab size and status).
TABLE_METRICS = TABLE_COLUMNS[3:]


def words_state(units: TextUnits, spans: np.ndarray) -> dict[str, Any]:
    """The words of the text (the unit the colours and the word metrics use)."""
    return {"count": len(spans),
            "start16": np.ascontiguousarray(units.to_utf16(spans[:, 0]), "<i4").tobytes(),
            "end16": np.ascontiguousarray(units.to_utf16(spans[:, 1]), "<i4").tobytes()}


def model_state(result: ScoreResult | None, units: TextUnits, spans: np.ndarray, *,
                label: str, model: str, status: str, vocab_size: int | None = None,
                done: int = 0, total: int | None = None) -> dict[str, Any]:
    """One model's entry: its status, progress and (once it has any) its scored tokens
    with the word each belongs to (-1: no word, e.g. an EOS), by ``core.levels``' rule."""
    entry: dict[str, Any] = {"label": label, "model": model, "status": status,
                             "vocab_size": vocab_size, "done": int(done),
                             "total": None if total is None else int(total), "count": 0}
    if result is None:
        return entry
    offsets = np.asarray(result.offsets, dtype=np.int64).reshape(-1, 2)
    owner = assign_tokens(units.text, offsets, spans, result.is_eos)
    arrays = {"start16": units.to_utf16(offsets[:, 0]), "end16": units.to_utf16(offsets[:, 1]),
              "surprisal": result.surprisal, "word": owner}
    entry["count"] = len(offsets)
    entry["partial"] = bool(result.partial)
    for name, dtype in MODEL_FIELDS:
        entry[name] = np.ascontiguousarray(arrays[name], dtype=dtype).tobytes()
    return entry


def table_row(result: ScoreResult, *, label: str, model: str, status: str,
              vocab_size: int | None) -> dict[str, Any]:
    """One row of the table panel: the metrics of what the model has scored."""
    m = result.metrics()
    row = {"label": label, "model": model, "vocab_size": vocab_size, "status": status,
           "partial": bool(result.partial), "conventions": result.conventions()}
    row.update({k: json_number(m[k]) for k in TABLE_METRICS})
    # a masked LM's row holds pseudo-perplexities: its objective keys say so (the front
    # end names them by core/metrics.py's rule)
    row.update({k: m[k] for k in ("objective", "pll_metric") if k in m})
    return row


def not_comparable() -> list[str]:
    return list(NOT_COMPARABLE)
