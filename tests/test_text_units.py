"""Character spans that tile the text, and the units each token owns."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ppl_widget.core.text_units import TextUnits, partition_offsets, word_starts


def test_partition_repairs_overlap_gap_and_tail():
    # byte tokens of one emoji all claim chars 3-4; a gap at 5; text longer than offsets
    raw = [(0, 1), (1, 3), (3, 4), (3, 4), (3, 4), (6, 8)]
    spans = partition_offsets(np.array(raw), 10)
    assert spans.tolist() == [[0, 1], [1, 3], [3, 4], [4, 4], [4, 4], [4, 10]]


def test_partition_tiles_text():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(1, 20))
        ends = np.sort(rng.integers(0, 30, n))
        raw = np.stack([np.maximum(ends - rng.integers(0, 3, n), 0), ends], 1)
        spans = partition_offsets(raw, 30)
        assert spans[0, 0] == 0 and spans[-1, 1] == 30
        assert (spans[1:, 0] == spans[:-1, 1]).all()
        assert (spans[:, 1] >= spans[:, 0]).all()


def test_units_count_chars_bytes_words():
    text = "héllo wörld 🙂!"
    u = TextUnits.of(text)
    assert u.counts(0, len(text)) == (3, len(text), len(text.encode("utf-8")))
    # a word belongs to the span holding its first character
    assert u.counts(0, 3) == (1, 3, 4)
    assert u.counts(3, 8) == (1, 5, 6)  # "lo wö": only "wörld" starts here; ö is 2 bytes
    assert u.to_utf16(np.array([len(text)])).tolist() == [len(text.encode("utf-16-le")) // 2]


def test_per_span_sums_to_whole():
    text = "a\tbc  déf\r\nghi 日本語 x"
    u = TextUnits.of(text)
    spans = partition_offsets(np.array([(0, 2), (2, 5), (5, 9), (9, 16), (16, len(text))]),
                              len(text))
    total = u.per_span(spans).sum(0).tolist()
    assert total == [len(text.split()), len(text), len(text.encode())]


def test_word_spec_regex_and_callable():
    text = "don't stop-me now"
    assert word_starts(text).tolist() == [0, 6, 14]
    assert word_starts(text, r"\w+").tolist() == [0, 4, 6, 11, 14]
    assert word_starts(text, re.compile(r"[a-z]+")).tolist() == [0, 4, 6, 11, 14]
    assert word_starts(text, lambda t: [(0, 5), (6, 13)]).tolist() == [0, 6]
    with pytest.raises(TypeError, match="regex pattern"):
        word_starts(text, 42)
    with pytest.raises(ValueError, match="inside the text"):
        word_starts(text, lambda t: [99])


def test_one_parser_of_words_for_counts_and_tables():
    """word_starts (the counts) and word_spans (the word tables) read ``words=`` alike,
    and refuse the same bad specs."""
    import pytest

    from ppl_widget.core.levels import word_spans as level_spans
    from ppl_widget.core.text_units import word_spans, word_starts

    text = "New York is big"
    specs = [None, r"\w+", lambda t: [(0, 8), (9, 11), (12, 15)], lambda t: [0, 9, 12]]
    for spec in specs:
        assert word_starts(text, spec).tolist() == word_spans(text, spec)[:, 0].tolist()
        assert level_spans is word_spans
    assert word_spans(text, lambda t: [0, 9, 12]).tolist() == [[0, 3], [9, 11], [12, 15]]
    for bad in (lambda t: [len(t)], lambda t: [(0, len(t) + 1)], lambda t: [-1]):
        for fn in (word_starts, word_spans):
            with pytest.raises(ValueError, match="inside the text"):
                fn(text, bad)


def test_whitespace_mask_is_str_isspace_for_every_code_point():
    from ppl_widget.core.text_units import whitespace_mask

    every = "".join(map(chr, range(0x110000)))  # lone surrogates included
    expected = np.fromiter((c.isspace() for c in every), dtype=bool, count=len(every))
    assert np.array_equal(whitespace_mask(every), expected)
    assert whitespace_mask("").shape == (0,)


def test_default_words_equal_the_regex_on_unicode_text():
    """The default ``\\S+`` is computed in numpy; it must give re's matches exactly."""
    from ppl_widget.core.text_units import word_spans

    spaces = [chr(c) for c in range(0x110000) if chr(c).isspace()]  # 29, up to U+3000
    rng = np.random.default_rng(0)
    alphabet = spaces + list("ab.,'") + ["\u00e9", "\U0001f600", "\ud800", "\u200b", "\ufeff"]
    texts = ["", " ", "a", " a ", "a\u3000b\u00a0c\u2028d", "\U0001f600 \U0001f600"]
    texts += ["".join(rng.choice(alphabet, size=int(n))) for n in rng.integers(1, 300, 200)]
    for text in texts:
        regex = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
        for spec in (None, r"\S+", re.compile(r"\S+")):
            assert word_spans(text, spec).tolist() == [list(s) for s in regex], (text, spec)
    # re.ASCII makes \S match U+00A0: that pattern is the regex's, not the fast path's
    text = "a\u00a0b c"
    assert word_spans(text, re.compile(r"\S+", re.ASCII)).tolist() == [[0, 3], [4, 5]]
    assert word_spans(text).tolist() == [[0, 1], [2, 3], [4, 5]]
