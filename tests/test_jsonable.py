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


def test_a_result_with_an_infinite_surprisal_saves_as_strict_json_and_loads_back() -> None:
    from ppl_widget import ScoreResult

    # an MLE n-gram model gives an unseen word probability 0: surprisal +inf
    surprisal = np.array([1.5, math.inf, 0.25])
    res = ScoreResult(text="abc", token_ids=[1, 2, 3], offsets=[[0, 1], [1, 2], [2, 3]],
                      surprisal=surprisal, entropy=[1.0, 2.0, math.inf], rank=[1, 2, 1],
                      context_length=[1, 2, 3], topk_ids=[[1], [2], [3]],
                      topk_probs=[[0.5], [0.0], [1.0]], units=[[1, 1, 1]] * 3,
                      is_eos=[False] * 3, bow_prob=[0.5, np.nan, 0.25],
                      settings={"top_k": 1}, bow_prob_end=math.nan)
    data = res.to_dict()
    assert data["tokens"]["surprisal"] == [1.5, "Infinity", 0.25]
    assert data["tokens"]["bow_prob"] == [0.5, None, 0.25]
    assert data["metrics"]["total_nll"] == "Infinity" and data["bow_prob_end"] is None

    def refuse(literal: str) -> None:
        raise AssertionError(f"not strict JSON: {literal}")

    back = ScoreResult.from_dict(json.loads(res.to_json(), parse_constant=refuse))
    np.testing.assert_array_equal(back.surprisal, surprisal)
    np.testing.assert_array_equal(back.entropy, res.entropy)
    np.testing.assert_array_equal(back.bow_prob, res.bow_prob)  # NaN where it was NaN
    assert math.isnan(back.bow_prob_end) and back.surprisal.dtype == np.float64
    assert back.metrics()["total_nll"] == math.inf
