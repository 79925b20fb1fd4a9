"""compare(): one text, models with different tokenizers, fair per-unit comparison."""

from __future__ import annotations

import copy
import gc
import math
import re
import threading
import weakref

import numpy as np
import pytest

from ppl_widget import compare, score
from ppl_widget.core.metrics import LN2
from ppl_widget.scoring.analyses import compare as compare_mod
from ppl_widget.scoring.analyses.compare import TABLE_COLUMNS, Comparison, ComparisonError

TEXT = ("The quick brown fox jumps over the lazy dog. Surprisal is minus the log "
        "probability of a token given its context.  日本語のテキスト!")


@pytest.fixture(scope="module")
def cmp(tiny_gpt2, tiny_llama):
    return compare(TEXT, [tiny_gpt2, tiny_llama], labels=["gpt2", "llama"], max_length=32,
                   stride=16)


def test_results_equal_single_model_scores(cmp, tiny_gpt2, tiny_llama):
    assert [r.settings["model"] for r in cmp.results] == cmp.models
    for res, lm in zip(cmp.results, (tiny_gpt2, tiny_llama), strict=True):
        alone = score(TEXT, lm, max_length=32, stride=16)
        np.testing.assert_array_equal(res.token_ids, alone.token_ids)
        # compare() runs score()'s stream: the same windows in the same batches, bit for bit
        np.testing.assert_array_equal(res.surprisal, alone.surprisal)


def test_tokenizers_really_differ(cmp):
    a, b = cmp.results
    assert len(a) != len(b) or not np.array_equal(a.offsets, b.offsets)


def test_table_columns_and_same_unit_counts(cmp):
    t = cmp.table()
    assert tuple(t.columns) == TABLE_COLUMNS
    assert list(t["label"]) == ["gpt2", "llama"]
    for col in ("n_words", "n_chars", "n_bytes"):
        assert t[col].nunique() == 1, col
    assert t["n_chars"].iloc[0] == len(TEXT)
    assert t["n_bytes"].iloc[0] == len(TEXT.encode())
    assert t["n_words"].iloc[0] == len(TEXT.split())
    assert t["n_tokens"].nunique() == 2  # per-token denominators differ
    for (_, row), res in zip(t.iterrows(), cmp.results, strict=True):
        m = res.metrics()
        for k in TABLE_COLUMNS[3:]:
            assert row[k] == pytest.approx(m[k])
        assert row["word_ppl"] == pytest.approx(math.exp(row["total_nll"] / row["n_words"]))
        assert row["bits_per_byte"] == pytest.approx(row["total_nll"] / LN2 / row["n_bytes"])
    assert t["vocab_size"].tolist() == [len(r.tokenizer) for r in cmp.results]


def test_table_marks_token_ppl_not_comparable_wherever_shown(cmp):
    t = cmp.table()
    assert t.attrs["not_comparable"] == ["token_ppl"]
    assert "not comparable" in repr(t)
    html = t._repr_html_()
    assert "token_ppl †" in html and "not comparable across tokenizers" in html
    assert "not comparable" in cmp._repr_html_()
    # one column per model, one row per metric: fits a notebook (fifteen metric columns
    # ran past it), the caption under the table, wrapped to the table's width
    heads = re.findall(r'<th id="T_\w+_level0_col\d+" class="col_heading[^"]*" >([^<]*)<', html)
    rows = re.findall(r'<th id="T_\w+_level0_row\d+" class="row_heading[^"]*" >([^<]*)<', html)
    assert heads == list(cmp.labels)
    assert rows == [c if c != "token_ppl" else "token_ppl †" for c in TABLE_COLUMNS[1:]]
    assert "caption-side: bottom" in html and "white-space: normal" in html
    n_words = re.search(r">n_words</th>\s*<td[^>]*>([^<]*)<", html).group(1)
    assert n_words.strip() == f"{len(TEXT.split()):,}"  # a count, not 7.0000
    # a selection without token_ppl carries no note
    assert "not comparable" not in repr(t[["label", "word_ppl"]])


def test_words_invariants(cmp):
    w = cmp.words()
    assert list(w["text"]) == TEXT.split()
    for label, res in zip(cmp.labels, cmp.results, strict=True):
        outside = sum(o["surprisal"] for o in w.attrs["outside"][label])
        assert w[f"surprisal:{label}"].sum() + outside == pytest.approx(
            res.metrics()["total_nll"], rel=1e-12)
        # the same rule as the analysis levels (one implementation)
        frame = res.to_frame("word", log_freq=False)
        np.testing.assert_allclose(w[f"surprisal:{label}"], frame["surprisal"])
        np.testing.assert_array_equal(w[f"n_tokens:{label}"], frame["n_tokens"])
        # every token of a word is listed, and its surprisals sum to the word's
        for _, row in w.iterrows():
            assert sum(row[f"token_surprisal:{label}"]) == pytest.approx(
                row[f"surprisal:{label}"])
            assert len(row[f"tokens:{label}"]) == row[f"n_tokens:{label}"]
            joined = "".join(row[f"tokens:{label}"]).strip()
            assert row["text"] in joined or joined in row["text"] or not joined
    np.testing.assert_allclose(w["diff"], w["surprisal:gpt2"] - w["surprisal:llama"])
    np.testing.assert_allclose(w["diff_bits"], w["diff"] / LN2)
    assert w.attrs["a"] == "gpt2" and w.attrs["b"] == "llama"
    w2 = cmp.words("llama", "gpt2")
    np.testing.assert_allclose(w2["diff"], -w["diff"])


def test_eos_is_outside_every_word_and_counted(tiny_gpt2, tiny_llama):
    c = compare("Two words", [tiny_gpt2, tiny_llama], add_eos=True, max_length=32)
    t = c.table()
    assert t["n_words"].tolist() == [3, 3]  # EOS counts as one of every unit
    w = c.words()
    for label, res in zip(c.labels, c.results, strict=True):
        (eos,) = [o for o in w.attrs["outside"][label] if o["reason"] == "EOS"]
        assert eos["surprisal"] == pytest.approx(float(res.surprisal[res.is_eos][0]))
        assert w[f"surprisal:{label}"].sum() + eos["surprisal"] == pytest.approx(
            res.metrics()["total_nll"])


def test_hand_built_words_and_diff():
    """Two fake results over 'ab cd': A = [a][b][ cd], B = [ab][ ][cd]."""
    from ppl_widget.core.result import ScoreResult

    def res(offsets, s):
        n = len(offsets)
        return ScoreResult(text="ab cd", token_ids=np.arange(n), offsets=offsets,
                           surprisal=s, entropy=np.zeros(n), rank=np.ones(n),
                           context_length=np.ones(n), topk_ids=np.zeros((n, 0)),
                           topk_probs=np.zeros((n, 0)), units=np.zeros((n, 3)),
                           is_eos=np.zeros(n, bool), settings={"model": "m"})

    a = res([[0, 1], [1, 2], [2, 5]], [1.0, 2.0, 4.0])
    b = res([[0, 2], [2, 3], [3, 5]], [0.5, 0.25, 8.0])
    c = Comparison("ab cd", [a, b], ["A", "B"])
    w = c.words()
    assert w["surprisal:A"].tolist() == [3.0, 4.0]
    assert w["surprisal:B"].tolist() == [0.5, 8.25]  # the lone space goes to the next word
    assert w["tokens:B"].tolist() == [["ab"], [" ", "cd"]]
    assert w["diff"].tolist() == [2.5, -4.25]


def test_labels_default_and_validation(tiny_gpt2, tiny_llama):
    c = compare("a b", [tiny_gpt2, tiny_gpt2], max_length=16)
    assert len(set(c.labels)) == 2
    with pytest.raises(ValueError, match="one label per model"):
        compare("a b", [tiny_gpt2, tiny_llama], labels=["x"])
    with pytest.raises(ValueError, match="unique"):
        compare("a b", [tiny_gpt2, tiny_llama], labels=["x", "x"])
    with pytest.raises(ValueError, match="at least 2 models"):
        compare("a b", [tiny_gpt2])
    with pytest.raises(TypeError, match="list of models"):
        compare("a b", "gpt2")
    with pytest.raises(TypeError, match="text must be a str"):
        compare(b"a b", [tiny_gpt2, tiny_llama])
    with pytest.raises(ValueError, match="no model labelled"):
        compare("a b", [tiny_gpt2, tiny_llama], labels=["x", "y"]).words("z", "x")


def test_prefix_none_with_different_tokenizers_is_refused_keeping_results(tiny_gpt2,
                                                                          tiny_llama):
    with pytest.raises(ComparisonError, match="prefix='bos'") as info:
        compare("Surprisal is " + TEXT, [tiny_gpt2, tiny_llama], prefix=None, max_length=32)
    kept = info.value.comparison
    assert kept is not None and len(kept.results) == 2


def test_a_failing_model_keeps_the_ones_before(tiny_gpt2, tiny_llama):
    with pytest.raises(ComparisonError, match="'bad'") as info:
        compare(TEXT, [tiny_gpt2, "/nonexistent/model/dir"], labels=["ok", "bad"],
                max_length=32)
    assert [r.settings["model"] for r in info.value.comparison.results] == [tiny_gpt2.name]


def test_one_model_in_memory_at_a_time(monkeypatch, tiny_gpt2, tiny_llama):
    """Models given by name are loaded one at a time and freed before the next loads."""
    alive: list[weakref.ref] = []
    sources = {"m1": tiny_gpt2, "m2": tiny_llama, "m3": tiny_gpt2}

    def fake_load(spec, *, device="auto", dtype="auto"):
        gc.collect()
        assert all(r() is None for r in alive), "a previous model is still in memory"
        lm = copy.deepcopy(sources[spec])
        lm.name = spec
        alive.append(weakref.ref(lm.model))
        return lm

    monkeypatch.setattr(compare_mod, "load_model", fake_load)
    c = compare(TEXT, ["m1", "m2", "m3"], max_length=32)
    gc.collect()
    assert len(alive) == 3 and all(r() is None for r in alive)
    assert c.labels == ["m1", "m2", "m3"] and c.loaded == []

    alive.clear()
    kept_models = {}

    def keeping_load(spec, *, device="auto", dtype="auto"):
        lm = copy.deepcopy(sources[spec])
        lm.name = spec
        alive.append(weakref.ref(lm.model))
        kept_models[spec] = True
        return lm

    monkeypatch.setattr(compare_mod, "load_model", keeping_load)
    c = compare(TEXT, ["m1", "m2"], keep_models=True, max_length=32)
    gc.collect()
    assert [lm.name for lm in c.loaded] == ["m1", "m2"]
    assert all(r() is not None for r in alive)


def test_cancel_stops_and_skips_the_rest(tiny_gpt2, tiny_llama):
    from ppl_widget.scoring.analyses.compare import iter_compare

    cancel = threading.Event()
    kinds = []
    for ev in iter_compare(TEXT * 4, [tiny_gpt2, tiny_llama], cancel=cancel, max_length=16,
                           stride=4, batch_size=1):  # a window per chunk: several chunks
        kinds.append((ev.k, ev.kind))
        if ev.kind == "progress":
            cancel.set()
        if ev.kind == "done":
            assert ev.result.partial
    assert (1, "loaded") not in kinds and (0, "done") in kinds


def test_bits_nats_consistency(cmp):
    w = cmp.words()
    for label in cmp.labels:
        np.testing.assert_allclose(w[f"surprisal_bits:{label}"], w[f"surprisal:{label}"] / LN2)


def test_an_ngram_model_compares_with_a_transformer(tiny_gpt2):
    ngram = pytest.importorskip("ppl_widget.scoring.kinds.ngram.ngram")
    from tests.conftest import CORPUS

    lm = ngram.NGramModel(2, "kneser-ney").fit(CORPUS)
    text = "The quick brown fox jumps over the lazy dog."
    c = compare(text, [tiny_gpt2, lm], labels=["gpt2", "bigram"], max_length=32)
    t = c.table()
    for col in ("n_words", "n_chars", "n_bytes"):
        assert t[col].nunique() == 1, col
    w = c.words()
    for label, res in zip(c.labels, c.results, strict=True):
        outside = sum(o["surprisal"] for o in w.attrs["outside"][label])
        assert w[f"surprisal:{label}"].sum() + outside == pytest.approx(
            res.metrics()["total_nll"])
