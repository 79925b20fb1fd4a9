"""Word, sentence, line and paragraph tables: the token -> unit rule, by hand and on models."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppl_widget import ScoreResult
from ppl_widget.core.levels import assign_tokens, unit_spans, word_spans
from ppl_widget.core.text_units import TextUnits

LN2 = math.log(2)


def make_result(text, offsets, surprisal, is_eos=None):
    """A ScoreResult built by hand (no model): one id per token, top-1 = itself."""
    offsets = np.asarray(offsets).reshape(-1, 2)
    n = len(offsets)
    is_eos = np.zeros(n, bool) if is_eos is None else np.asarray(is_eos)
    units = TextUnits.of(text).per_span(offsets)
    units[is_eos] = 1
    ids = np.arange(n)
    return ScoreResult(
        text=text, token_ids=ids, offsets=offsets, surprisal=np.asarray(surprisal, float),
        entropy=np.ones(n), rank=np.ones(n, int), context_length=np.arange(1, n + 1),
        topk_ids=ids[:, None], topk_probs=np.full((n, 1), 0.5), units=units, is_eos=is_eos,
        vocab={int(i): f"t{i}" for i in ids}, settings={"prefix": "bos"})


# "Hi", " ", "there", ".", " Go", " now", EOS
TEXT = "Hi there. Go now"
OFFSETS = [[0, 2], [2, 3], [3, 8], [8, 9], [9, 12], [12, 16], [16, 16]]
SURPRISAL = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.5]
EOS = [False] * 6 + [True]


def test_assign_tokens_by_hand():
    words = word_spans(TEXT)
    assert words.tolist() == [[0, 2], [3, 9], [10, 12], [13, 16]]
    # the lone space goes to the next word; EOS is outside every word
    assert assign_tokens(TEXT, OFFSETS, words, EOS).tolist() == [0, 1, 1, 1, 2, 3, -1]


def test_word_table_by_hand():
    res = make_result(TEXT, OFFSETS, SURPRISAL, EOS)
    frame = res.to_frame("word")
    assert frame["text"].tolist() == ["Hi", "there.", "Go", "now"]
    assert frame["surprisal"].tolist() == [1.0, 9.0, 5.0, 6.0]
    assert frame["n_tokens"].tolist() == [1, 3, 1, 1]
    assert frame["n_chars"].tolist() == [2, 7, 3, 4]  # characters of the unit's tokens
    assert frame["n_words"].tolist() == [1, 1, 1, 1]
    assert frame["surprisal_bits"].tolist() == pytest.approx([1 / LN2, 9 / LN2, 5 / LN2, 6 / LN2])
    assert frame["token_ppl"][1] == pytest.approx(math.exp(3.0))
    assert frame["char_ppl"][1] == pytest.approx(math.exp(9 / 7))
    assert frame["start"].tolist() == [0, 3, 10, 13]
    outside = frame.attrs["outside"]
    assert [o["reason"] for o in outside] == ["EOS"] and outside[0]["surprisal"] == 0.5
    assert frame["surprisal"].sum() + 0.5 == pytest.approx(res.metrics()["total_nll"])


def test_sentence_table_by_hand():
    frame = make_result(TEXT, OFFSETS, SURPRISAL, EOS).to_frame("sentence")
    assert frame["text"].tolist() == ["Hi there.", "Go now"]
    assert frame["surprisal"].tolist() == [10.0, 11.0]
    assert frame["n_words"].tolist() == [2, 2]
    assert frame["word_ppl"][0] == pytest.approx(math.exp(5.0))


def test_empty_spans_go_with_the_token_before_and_trailing_space_is_outside():
    text = "a 😀 "
    offsets = [[0, 1], [1, 3], [3, 3], [3, 4]]  # "a", " 😀" (first byte), tail byte, " "
    owner = assign_tokens(text, offsets, word_spans(text))
    assert owner.tolist() == [0, 1, 1, -1]


def test_leading_whitespace_goes_to_the_first_word():
    text = "  Hi"
    owner = assign_tokens(text, [[0, 2], [2, 4]], word_spans(text))
    assert owner.tolist() == [0, 0]


def test_token_table_has_every_per_token_array():
    res = make_result(TEXT, OFFSETS, SURPRISAL, EOS)
    frame = res.to_frame("token")
    for col in ("text", "start", "end", "surprisal", "surprisal_bits", "probability", "entropy",
                "rank", "context_length", "top1", "top1_prob", "token_id", "n_tokens",
                "n_words", "n_chars", "n_bytes", "token_ppl", "word_ppl", "char_ppl",
                "byte_ppl"):
        assert col in frame.columns, col
    assert frame["top1"][2] == "t2"
    assert len(frame) == len(res)


def test_bad_level_names_the_rule():
    res = make_result(TEXT, OFFSETS, SURPRISAL, EOS)
    with pytest.raises(ValueError, match="level must be one of token, word, sentence"):
        res.to_frame("morpheme")


def test_custom_words_pattern_and_callable():
    text = "don't stop"
    assert [text[a:b] for a, b in word_spans(text, r"\w+").tolist()] == ["don", "t", "stop"]
    assert word_spans(text, lambda t: [0, 6]).tolist() == [[0, 5], [6, 10]]
    with pytest.raises(TypeError, match="words must be"):
        unit_spans(text, "word", words=5)


@pytest.mark.parametrize("level", ["word", "sentence", "line", "paragraph"])
@pytest.mark.parametrize("options", [{}, {"prefix": None}, {"add_eos": True}])
def test_conservation_on_models(tiny_lm, level, options):
    from ppl_widget import score

    text = "  Dr. Smith came at 3 p.m. today.\n\nIt rained, 日本語 too… \n 😀 end.  "
    res = score(text, tiny_lm, max_length=16, stride=8, **options)
    frame = res.to_frame(level)
    outside = sum(o["surprisal"] for o in frame.attrs["outside"])
    assert frame["surprisal"].sum() + outside == pytest.approx(res.metrics()["total_nll"],
                                                               rel=1e-12, abs=1e-9)
    assert frame["n_tokens"].sum() + len(frame.attrs["outside"]) == len(res)
    # every unit's text is the text between its offsets
    assert all(res.text[a:b] == t for a, b, t in zip(frame["start"], frame["end"],
                                                     frame["text"], strict=True))
