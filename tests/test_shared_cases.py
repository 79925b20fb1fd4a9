"""The shared table of cases (tests/cases/*.json) against the Python rules; the front end
runs the same table (js/test/shared_cases.test.js), so the two agree case by case."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from ppl_widget.core.jsonable import float_of_json
from ppl_widget.core.metrics import summarize
from ppl_widget.core.tokens import tokens_in_span

CASES = Path(__file__).parent / "cases"
sys.path.insert(0, str(CASES))
import generate  # noqa: E402  (tests/cases/generate.py: how the table was made)

TOKEN_RANGES = json.loads((CASES / "token_ranges.json").read_text(encoding="utf-8"))
METRICS = json.loads((CASES / "metrics.json").read_text(encoding="utf-8"))


def same(got: float, want: float) -> bool:
    if math.isnan(want):
        return math.isnan(got)
    if math.isinf(want):
        return got == want
    return math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12)


def test_the_table_is_the_one_generate_writes() -> None:
    # a rule that changed must regenerate the table (and the front end must follow)
    assert json.loads(json.dumps(generate.json_safe(generate.token_range_cases()))) == TOKEN_RANGES
    assert json.loads(json.dumps(generate.json_safe(generate.metric_cases()))) == METRICS


def test_table_covers_the_edges() -> None:
    names = {c["name"] for c in TOKEN_RANGES}
    assert {"zero-width first", "scored EOS at the end", "empty text, EOS only",
            "empty text, nothing scored"} <= names
    assert any(c["span"][0] == c["span"][1] for c in TOKEN_RANGES)  # empty spans
    values = [v for c in METRICS for v in c["expected"].values()]
    assert None in values and "Infinity" in values  # NaN and an infinity
    assert any(True in c.get("is_eos", []) for c in METRICS)


@pytest.mark.parametrize("case", TOKEN_RANGES, ids=lambda c: f"{c['name']} {c['span']}")
def test_token_range(case: dict) -> None:
    a, b = case["span"]
    off = np.asarray(case["offsets"], dtype=np.int64).reshape(-1, 2)
    assert list(tokens_in_span(off, a, b, case["text_length"])) == case["expected"]
    # and through ScoreResult.token_range, which checks the span first
    n = len(off)
    res = generate.result_of([0.0] * n, [[0, 0, 0]] * n, [False] * n)
    res.text = "x" * case["text_length"]
    res.offsets = off
    assert list(res.token_range(a, b)) == case["expected"]


@pytest.mark.parametrize("case", METRICS, ids=lambda c: c["name"])
def test_metrics(case: dict) -> None:
    if case["kind"] == "totals":
        nll, (tokens, words, chars, nbytes) = float_of_json(case["total_nll"]), case["counts"]
        got = summarize(nll, tokens, words, chars, nbytes)
    else:
        k = case["upto"]
        res = generate.result_of([float_of_json(v) for v in case["surprisal"]], case["units"],
                                 case["is_eos"])
        got = res.metrics(upto=k)
        # brute force in float64: the sums and the formulas written out
        nll = math.fsum(float_of_json(v) for v in case["surprisal"][:k])
        tokens = k
        words, chars, nbytes = (sum(u[j] for u in case["units"][:k]) for j in range(3))
    counts = {"token": tokens, "word": words, "char": chars, "byte": nbytes}
    for unit, n in counts.items():
        want = math.nan if n <= 0 or math.isnan(nll) else (
            math.inf if nll / n > 709.78 else math.exp(nll / n))
        assert same(got[f"{unit}_ppl"], want), unit
        if unit != "word":
            want_bits = math.nan if n <= 0 else nll / math.log(2) / n
            assert same(got[f"bits_per_{unit}"], want_bits), unit
    for key, want in case["expected"].items():
        assert same(float(got[key]), float_of_json(want)), key


# ---- the live page's tables (tests/cases/live_cases.py): js/src/live/ copies these rules --
WINDOWS = json.loads((CASES / "windows.json").read_text(encoding="utf-8"))
TEXT_UNITS = json.loads((CASES / "text_units.json").read_text(encoding="utf-8"))
NGRAM = json.loads((CASES / "ngram.json").read_text(encoding="utf-8"))
LOGS = json.loads((CASES / "log.json").read_text(encoding="utf-8"))


def test_the_live_tables_are_the_ones_generate_writes() -> None:
    for cases, rows in ((generate.window_cases(), WINDOWS),
                        (generate.text_unit_cases(), TEXT_UNITS),
                        (generate.ngram_cases(), NGRAM), (generate.log_cases(), LOGS)):
        assert json.loads(json.dumps(generate.json_safe(cases))) == rows


def test_window_cases_score_every_target_once() -> None:
    # the table's plans, read back: each target once, inputs = the max_length before it
    planned = [c for c in WINDOWS if "windows" in c]
    assert len(planned) > 500 and any("error" in c for c in WINDOWS)
    for c in planned:
        targets = [t for w in c["windows"] for t in range(w[2], w[3])]
        assert targets == list(range(c["first_target"], c["n_positions"]))
        for start, end, t0, t1, prefixed in c["windows"]:
            assert t1 == end + 1 and end - start <= c["max_length"] and t0 > start
            assert prefixed == (c["prefix_every_window"] and start > 0)


def test_text_unit_cases_add_up_to_the_text() -> None:
    from ppl_widget.core.text_units import TextUnits

    for c in TEXT_UNITS[1:]:
        spans, units = np.asarray(c["spans16"]).reshape(-1, 2), np.asarray(c["units"])
        if len(spans):
            assert spans[0, 0] == 0 and spans[-1, 1] == len(c["text"].encode("utf-16-le")) // 2
            whole = TextUnits.of(c["text"])
            assert units[:, 1].sum() == len(c["text"])
            assert units[:, 2].sum() == len(c["text"].encode("utf-8"))
            assert units[:, 0].sum() == len(whole.word_start_index)


# ---- the reuse rule after an edit (tests/cases/reuse_cases.py): js/src/live/reuse.js ------
REUSE = json.loads((CASES / "reuse.json").read_text(encoding="utf-8"))


def test_the_reuse_table_is_the_one_plan_reuse_gives() -> None:
    assert json.loads(json.dumps(generate.json_safe(generate.reuse_cases()))) == REUSE


def test_reuse_cases_cover_the_edits_and_keep_only_windows_before_the_change() -> None:
    from ppl_widget.core.windows import plan_windows

    names = " ".join(c["name"] for c in REUSE)
    for edit in ("append", "delete", "edit in the middle", "across a window boundary", "undo",
                 "cancelled", "EOS", "unscored"):
        assert edit in names, edit
    for c in REUSE:
        want = c["expected"]
        windows = plan_windows(len(c["new"]["ids"]) + 1, c["max_length"], c["stride"])
        if want["windows"]:
            # the kept targets are those of the kept windows, all before the first change
            assert want["tokens"] == windows[want["windows"] - 1].target_end - 1
            assert want["tokens"] <= want["changed"]
        else:
            assert want["tokens"] == 0
# ---- the live page's sentences (tests/cases/sentence_cases.py): js/src/live/sentences.js --
SENTENCES = json.loads((CASES / "sentences.json").read_text(encoding="utf-8"))


def test_the_sentence_table_is_the_one_generate_writes() -> None:
    assert json.loads(json.dumps(generate.json_safe(generate.sentence_cases()))) == SENTENCES


def test_sentence_cases_are_pysbds_spans() -> None:
    from ppl_widget.core.sentences import sentence_spans

    assert len(SENTENCES) > 60 and any(c.get("differs") for c in SENTENCES)
    for c in SENTENCES:
        text = c["text"]
        units16 = [len(text[:i].encode("utf-16-le")) // 2 for i in range(len(text) + 1)]
        want = [[units16[a], units16[b]] for a, b in sentence_spans(text).tolist()]
        assert c["spans16"] == want, text
    # the table holds texts beyond the BMP (UTF-16 offsets differ from code points)
    assert any(len(c["text"].encode("utf-16-le")) // 2 > len(c["text"]) for c in SENTENCES)


# ---- what a result's numbers are called (core/metrics.py, js/src/objective.js) ---------
OBJECTIVE = json.loads((CASES / "objective.json").read_text(encoding="utf-8"))


def test_the_objective_table_is_the_one_generate_writes() -> None:
    assert json.loads(json.dumps(generate.json_safe(generate.objective_cases()))) == OBJECTIVE
    pseudo = [c for c in OBJECTIVE if c["expected"]["pseudo"]]
    assert pseudo and len(pseudo) < len(OBJECTIVE)  # both kinds, and every metric named
    assert {c["expected"]["pll_metric"] for c in pseudo} >= {"within_word_l2r", "original"}


@pytest.mark.parametrize("case", OBJECTIVE, ids=lambda c: c["name"])
def test_objective_labels(case: dict) -> None:
    from ppl_widget.core.metrics import objective_labels

    assert objective_labels(case["settings"]) == case["expected"]
