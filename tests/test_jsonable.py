"""The one JSON rule for non-finite numbers (core/jsonable.py)."""

from __future__ import annotations

import json
import math

import numpy as np

from ppl_widget.core.jsonable import json_number, json_safe


def test_nan_is_null_and_infinities_are_strings_javascript_reads() -> None:
    assert json_number(math.nan) is None
    assert json_number(np.float32("nan")) is None
    assert json_number(math.inf) == "Infinity"
    assert json_number(-np.inf) == "-Infinity"
    assert json_number(np.int64(3)) == 3 and type(json_number(np.int64(3))) is int
    assert json_number(1.5) == 1.5


def test_nested_values_become_strict_json() -> None:
    value = {1: (math.nan, 2.0), "a": [np.float64(math.inf), {"b": np.array([1.0, np.nan])}],
             "raw": b"\x00\x01"}
    safe = json_safe(value)
    assert safe == {"1": [None, 2.0], "a": ["Infinity", {"b": [1.0, None]}], "raw": b"\x00\x01"}
    del safe["raw"]
    text = json.dumps(safe, allow_nan=False)  # strict JSON: no NaN or Infinity literals
    back = json.loads(text)
    assert float(back["a"][0]) == math.inf
    assert np.asarray(["-Infinity", 1.0], dtype=np.float64)[0] == -math.inf
