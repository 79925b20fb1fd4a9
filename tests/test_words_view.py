"""show_words: a word-list group in the single-model widget at the word level, the list's
own words as the units, each word's surprisal there equal to score_words'."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")
pytest.importorskip("anywidget")

from float64 import TINY_NATS, assert_within  # noqa: E402
from test_words import brute_words  # noqa: E402

from ppl_widget import WordListError, score_words, show_words  # noqa: E402
from ppl_widget.core.levels import assign_tokens  # noqa: E402


def widget_word_surprisals(w):
    res = w.wait()
    spans = w._run.levels.spans["word"]
    owner = assign_tokens(res.text, res.offsets, spans, res.is_eos)
    inside = owner >= 0
    return spans, np.bincount(owner[inside], weights=res.surprisal[inside],
                              minlength=len(spans))


@pytest.mark.parametrize("sep", [" ", ""])
def test_the_groups_words_are_the_widgets_words(tiny_gpt2, sep):
    frame = pd.DataFrame({"item": [1, 1, 1, 2, 2, 2, 2],
                          "word": ["\"Hello,\"", "she", "said", "don't", "stop", "(e.g.", "ok."]})
    w = show_words(frame, tiny_gpt2, group=2, by="item", sep=sep, max_length=32, stride=16)
    assert w.level == "word" and w.text == sep.join(["don't", "stop", "(e.g.", "ok."])
    spans, per_word = widget_word_surprisals(w)
    assert [w.text[a:b] for a, b in spans] == ["don't", "stop", "(e.g.", "ok."]
    out = score_words(frame, tiny_gpt2, by="item", sep=sep, max_length=32, stride=16)
    group = out.loc[out["item"] == 2]
    # the widget scores the group's text, score_words packs the groups: each path within
    # the float32 tolerance of the float64 brute force, not of the other
    want, n, _ = brute_words(tiny_gpt2, ["don't", "stop", "(e.g.", "ok."], sep=sep,
                             max_length=32, stride=16)
    np.testing.assert_array_equal(group["n_tokens"], n)
    assert_within([per_word, group["surprisal"]], [want, want], TINY_NATS, [n, n])
    assert "<html" in w.to_html().lower()  # the static page comes with the widget


def test_default_group_and_bad_groups(tiny_gpt2):
    w = show_words(["Hello", "world."], tiny_gpt2, max_length=16, stride=8)
    assert w.text == "Hello world."
    w.wait()
    frame = pd.DataFrame({"item": [1, 2], "word": ["a", "b"]})
    with pytest.raises(WordListError, match="group 3: no such group"):
        show_words(frame, tiny_gpt2, by="item", group=3)
    with pytest.raises(WordListError, match="empty"):
        show_words([], tiny_gpt2)
    with pytest.raises(WordListError, match="contains whitespace"):
        show_words(["two words"], tiny_gpt2)
