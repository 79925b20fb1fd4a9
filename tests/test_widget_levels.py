"""Word and sentence membership streamed by the widget equals core.levels' rule on the
whole result; unit spans, PPLu's context gain and intervals reach result_data."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("anywidget")

from ppl_widget.core.levels import assign_tokens, unit_spans  # noqa: E402
from ppl_widget.core.text_units import TextUnits  # noqa: E402
from ppl_widget.views import protocol as P  # noqa: E402
from ppl_widget.views.widget import PerplexityWidget  # noqa: E402
from ppl_widget.views.widget_levels import LevelAssigner  # noqa: E402

TEXT = ("Dr. Smith met us at 3 p.m. on Monday. Émoji 🙂🙂 split in bytes!\n\n"
        "A second paragraph, with  two spaces. And a question? Yes.")


def test_chunked_assignment_equals_the_whole_text_rule():
    # offsets with empty spans (tail bytes) right at chunk boundaries
    units = TextUnits.of(TEXT)
    a = LevelAssigner(TEXT, units)
    cuts = list(range(0, len(TEXT), 3))
    offsets = [(s, min(s + 3, len(TEXT))) for s in cuts]
    emoji = TEXT.index("🙂")
    offsets += [(emoji + 1, emoji + 1), (emoji + 1, emoji + 1)]  # two empty tail tokens
    offsets.sort()
    offsets = np.array(offsets)
    eos = np.zeros(len(offsets), bool)
    got = {"word": [], "sentence": []}
    k = [i for i, (s, e) in enumerate(offsets) if s == e][0]
    for lo, hi in ((0, k + 1), (k + 1, k + 2), (k + 2, len(offsets))):  # cut inside the run
        for level, owner in a.owners(offsets[lo:hi], eos[lo:hi]).items():
            got[level].append(owner)
    for level in ("word", "sentence"):
        expected = assign_tokens(TEXT, offsets, unit_spans(TEXT, level), eos)
        np.testing.assert_array_equal(np.concatenate(got[level]), expected)
    # unit spans go out in UTF-16 code units: the emoji counts twice
    ws, we = a.spans16["word"]
    words = unit_spans(TEXT, "word")
    utf16 = TEXT.encode("utf-16-le")
    for (s, e), s16, e16 in zip(words.tolist(), ws, we, strict=True):
        assert utf16[2 * s16:2 * e16].decode("utf-16-le") == TEXT[s:e]


def test_levels_gain_and_intervals_reach_messages_and_result_data(tiny_gpt2, sent):
    from ppl_widget.core.unigram import Unigram

    uni = Unigram.from_texts(["Some reference text about Monday and spaces."], tiny_gpt2)
    w = PerplexityWidget(TEXT, tiny_gpt2, max_length=16, stride=8, unigram=uni, ci=0.9)
    res = w.wait()
    reset, spans = next((c, b) for c, b in sent if c["type"] == P.MSG_RESET)
    words, sentences = unit_spans(TEXT, "word"), unit_spans(TEXT, "sentence")
    assert reset["levels"] == {"word": len(words), "sentence": len(sentences)}
    assert len(spans) == len(P.UNIT_SPAN_FIELDS)
    data = w.result_data
    for level, spans_cp in (("word", words), ("sentence", sentences)):
        owner = np.frombuffer(data[level], "<i4")
        np.testing.assert_array_equal(owner, assign_tokens(TEXT, res.offsets, spans_cp,
                                                           res.is_eos))
        assert len(np.frombuffer(data[f"{level}_start16"], "<i4")) == len(spans_cp)
    gain = np.frombuffer(data["context_gain"], "<f4")
    np.testing.assert_allclose(gain, -uni.log_prob(res.token_ids) - res.surprisal, rtol=1e-5,
                               atol=1e-5)
    m = data["metrics"]
    expected = res.metrics(unigram=uni, ci=0.9)
    assert m["pplu"] == pytest.approx(expected["pplu"])
    assert m["word_ppl_ci"] == pytest.approx(list(expected["word_ppl_ci"]))
    lo, hi = m["word_ppl_ci"]
    assert lo <= m["word_ppl"] <= hi
    assert w.settings["ci"] == 0.9 and w.settings["unigram"] == uni.source


def test_bow_corrected_words_in_result_data_equal_the_word_table(tiny_gpt2, sent):
    w = PerplexityWidget(TEXT, tiny_gpt2, max_length=16, stride=8)
    res = w.wait()
    if np.isnan(res.bow_prob).any():
        assert "word_corrected" not in w.result_data  # no b(i): nothing made up
        pytest.skip("this scorer gives no b(i)")
    got = np.frombuffer(w.result_data["word_corrected"], "<f4")
    frame = res.to_frame("word", bow_correction=True, log_freq=False)
    np.testing.assert_allclose(got, frame["surprisal_corrected"].to_numpy(), rtol=1e-5)
    assert w.result_data["bow_prob_end"] == pytest.approx(res.bow_prob_end)


def test_random_chunking_of_a_long_text_equals_the_whole_text_rule():
    import random

    rng = random.Random(0)
    vocab = "the of and  to in is\n was 🙂 for on. that! ok".split(" ")
    text = " ".join(rng.choice(vocab) for _ in range(3000))
    a = LevelAssigner(text, TextUnits.of(text), sentences=r"[^.!?]+[.!?]?")
    offsets, p = [], 0
    while p < len(text):  # a random tiling, with empty tail-byte tokens here and there
        n = rng.randint(1, 4)
        offsets.append((p, min(p + n, len(text))))
        if rng.random() < 0.1:
            offsets.append((min(p + n, len(text)),) * 2)
        p += n
    offsets = np.array(offsets)
    eos = np.zeros(len(offsets), bool)
    eos[-1] = True
    bounds = [0, *sorted(rng.sample(range(1, len(offsets)), 40)), len(offsets)]
    got = {"word": [], "sentence": []}
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        for level, owner in a.owners(offsets[lo:hi], eos[lo:hi]).items():
            got[level].append(owner)
    for level in got:
        np.testing.assert_array_equal(np.concatenate(got[level]),
                                      assign_tokens(text, offsets, a.spans[level], eos))
