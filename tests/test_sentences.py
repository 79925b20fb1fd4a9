"""Sentence, line and paragraph spans."""

from __future__ import annotations

import re

import pytest

from ppl_widget.core.sentences import line_spans, paragraph_spans, sentence_spans


def texts(text, spans):
    return [text[a:b] for a, b in spans.tolist()]


def test_abbreviations_and_times_do_not_end_a_sentence():
    text = "Dr. Smith arrived at 3 p.m. yesterday. Mr. Jones, e.g. the baker, stayed."
    assert texts(text, sentence_spans(text)) == [
        "Dr. Smith arrived at 3 p.m. yesterday.", "Mr. Jones, e.g. the baker, stayed."]


def test_decimals_quotes_and_ellipses():
    text = 'He paid $3.14 for it... Then he left! "Really?" she asked. Fine.'
    assert texts(text, sentence_spans(text)) == [
        "He paid $3.14 for it...", "Then he left!", '"Really?" she asked.', "Fine."]


def test_sentences_never_cross_a_blank_line_and_spans_index_the_text():
    text = "  First one\n\nSecond one. Third one.\n"
    spans = sentence_spans(text)
    assert texts(text, spans) == ["First one", "Second one.", "Third one."]
    assert spans[0, 0] == 2  # leading whitespace excluded


def test_repeated_sentences_get_their_own_spans():
    text = "The cat sat. The cat sat. The cat sat."
    assert sentence_spans(text).tolist() == [[0, 12], [13, 25], [26, 38]]


def test_regex_and_callable_overrides():
    text = "a; b; c"
    assert texts(text, sentence_spans(text, r"[^;]+")) == ["a", "b", "c"]
    assert texts(text, sentence_spans(text, re.compile(r"[^;]+"))) == ["a", "b", "c"]
    assert texts(text, sentence_spans(text, lambda t: [(0, 4), (5, 7)])) == ["a; b", "c"]
    with pytest.raises(ValueError, match="must not overlap"):
        sentence_spans(text, lambda t: [(0, 4), (2, 7)])
    with pytest.raises(TypeError, match="sentences must be"):
        sentence_spans(text, 3)


def test_lines_and_paragraphs():
    text = "one\r\ntwo  \n\n  \nthree\nfour\n"
    assert texts(text, line_spans(text)) == ["one", "two", "three", "four"]
    assert texts(text, paragraph_spans(text)) == ["one\r\ntwo", "three\nfour"]
    assert paragraph_spans("").shape == (0, 2)
    assert sentence_spans("   ").shape == (0, 2)


def test_pysbd_spans_are_cached_per_text_and_callers_get_their_own_copy():
    text = "One here. Two there."
    first = sentence_spans(text)
    first[0, 0] = 99  # a caller changing its array does not change the next answer
    assert sentence_spans(text).tolist() == [[0, 9], [10, 20]]
    assert sentence_spans(text, language="en") is not sentence_spans(text, language="en")


def test_pysbd_spans_are_right_when_threads_segment_at_once():
    """Widgets scoring at once segment in their own threads; pysbd's segmenter is shared
    and keeps state while it works (without the lock: 'pysbd changed the text')."""
    import threading

    pytest.importorskip("pysbd")
    texts = [f"Dr. Smith went home. He said <b>{i}</b>! Then ${{x}} left. " * 8
             for i in range(64)]
    got: dict[int, list] = {}
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            got[i] = sentence_spans(texts[i]).tolist()
        except BaseException as exc:  # noqa: BLE001 - collected, asserted below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for i, text in enumerate(texts):
        assert [text[a:b] for a, b in got[i]] == [
            "Dr. Smith went home.", "He said <b>" + str(i) + "</b>!", "Then ${x} left."] * 8
