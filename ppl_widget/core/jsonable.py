"""The one rule for numbers that JSON cannot hold, for every payload the package writes
(the widget's messages and synced state, exported pages, ``ScoreResult.to_dict``).

NaN (a value that does not exist: an empty denominator, a bound not computed) becomes
null, which the front end shows as a dash.  An infinity is a real value (an MLE
n-gram model gives an unseen word probability 0) and becomes the string
``"Infinity"`` / ``"-Infinity"``, which JavaScript's ``Number()`` and numpy read back.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def json_number(value: Any) -> Any:
    """One number as JSON can hold it (numpy scalars become Python numbers)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            return None
        return "Infinity" if value > 0 else "-Infinity"
    return value


def json_safe(value: Any) -> Any:
    """``value`` with every number made JSON-safe by ``json_number``, recursively through
    dicts (keys become strings), lists, tuples and numpy arrays; bytes pass unchanged
    (widget buffers)."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biu" or (value.dtype.kind == "f" and np.isfinite(value).all()):
            return value.tolist()  # nothing to replace: per-token arrays go in one call
        return [json_safe(v) for v in value.tolist()]
    return json_number(value)


def float_of_json(value: Any) -> float:
    """One number as ``json_number`` wrote it, read back: null is NaN, ``"Infinity"`` and
    ``"-Infinity"`` are infinities (numpy reads lists of them with ``dtype=float``)."""
    return math.nan if value is None else float(value)
