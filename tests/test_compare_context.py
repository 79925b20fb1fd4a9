"""compare() and the ComparisonWidget with a context every model reads first: the words
compared are those of the continuation as scored, and the context is shown, never scored."""

from __future__ import annotations

import numpy as np
import pytest

from ppl_widget import ComparisonWidget, compare, score

CONTEXT = "The quick brown fox "  # its trailing space moves to the continuation (the seam)
TEXT = "jumps over the lazy dog. Surprisal is minus the log probability."
OPTS = {"max_length": 32, "stride": 16}


@pytest.fixture(scope="module")
def cmp(tiny_gpt2, tiny_llama):
    return compare(TEXT, [tiny_gpt2, tiny_llama], labels=["gpt2", "llama"], context=CONTEXT,
                   **OPTS)


def test_each_model_equals_score_with_the_context(cmp, tiny_gpt2, tiny_llama):
    for lm, res in zip((tiny_gpt2, tiny_llama), cmp.results, strict=True):
        ref = score(TEXT, lm, context=CONTEXT, **OPTS)
        np.testing.assert_array_equal(res.token_ids, ref.token_ids)
        # compare() runs score()'s stream: the same windows in the same batches, bit for bit
        np.testing.assert_array_equal(res.surprisal, ref.surprisal)
        assert res.context == "The quick brown fox" and res.settings["context_tokens"] > 0


def test_words_are_those_of_the_continuation_as_scored(cmp):
    assert cmp.text == " " + TEXT and cmp.context == "The quick brown fox"
    w = cmp.words()
    assert list(w["text"]) == TEXT.split()  # aligned: no word cut by the moved space
    for label, res in zip(cmp.labels, cmp.results, strict=True):
        outside = sum(o["surprisal"] for o in w.attrs["outside"][label])
        assert w[f"surprisal:{label}"].sum() + outside == pytest.approx(
            res.metrics()["total_nll"], rel=1e-12)
        for _, row in w.iterrows():  # each word's tokens spell it
            assert "".join(row[f"tokens:{label}"]).strip() == row["text"]


def test_the_widget_shows_the_context_and_compares_the_same_words(cmp, tiny_gpt2, tiny_llama):
    w = ComparisonWidget(TEXT, [tiny_gpt2, tiny_llama], labels=["gpt2", "llama"],
                         context=CONTEXT, **OPTS)
    w.wait()
    assert w.status == "done" and w.context == "The quick brown fox" and w.text == " " + TEXT
    got = w.comparison
    assert got.context == cmp.context and got.text == cmp.text
    for a, b in zip(got.results, cmp.results, strict=True):
        np.testing.assert_array_equal(a.surprisal, b.surprisal)  # compare()'s stream: bit for bit
    again = ComparisonWidget.from_comparison(cmp)
    assert again.context == cmp.context and again.text == cmp.text
    assert w.words == again.words
    with pytest.raises(ValueError, match="chat message 0 must be a dict"):
        ComparisonWidget(TEXT, [tiny_gpt2, tiny_llama], context=[{"role": "user"}])
