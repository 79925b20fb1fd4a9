"""score_words' packed path: every group that fits one window is scored in packed forward
passes; it must lay out every word and group as the one-score()-per-group path does, and
both paths' surprisals must match the float64 brute force of tests/test_words.py within the
float32 tolerance measured on every CPU kernel set (tests/float64.py), conservation per
group exact.  The two float32 paths are not held to each other: their difference is the
CPU's rounding (1.5e-5 nats on a Xeon with AMX, where a 1e-5 tolerance failed)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from float64 import DEFAULT_MODEL_NATS, TINY_NATS, assert_within  # noqa: E402
from test_words import PUNCTUATED, STORY_1, STORY_2, brute_words, check_conservation  # noqa: E402

from ppl_widget import score, score_words  # noqa: E402
from ppl_widget.scoring.runner import packed_texts  # noqa: E402

ITEMS = [
    "The horse raced past the barn fell.",
    "The old man the boats.",
    "While the man hunted the deer ran into the woods.",
    "The author that the critics praised wrote a book.",
    "Time flies like an arrow; fruit flies like a banana.",
    "\"Hello,\" she said -- (e.g. don't stop!)",
    "A",
]


def item_frame(n_items: int) -> pd.DataFrame:
    rows = [(k, j, w) for k in range(n_items)
            for j, w in enumerate(ITEMS[k % len(ITEMS)].split())]
    return pd.DataFrame({"item": [r[0] for r in rows], "position": [r[1] for r in rows],
                         "word": [r[2] for r in rows]})


def assert_same_as_score_path(fast, slow, lm, nats_per_token, add_eos=False, **window):
    """The same words, groups and tokens as the score() path, and both paths' surprisals
    within ``nats_per_token`` per token of the float64 brute force."""
    pd.testing.assert_frame_equal(fast.drop(columns=["surprisal", "surprisal_bits"]),
                                  slow.drop(columns=["surprisal", "surprisal_bits"]))
    for g_fast, g_slow in zip(fast.attrs["groups"], slow.attrs["groups"], strict=True):
        assert g_fast["group"] == g_slow["group"] and g_fast["text"] == g_slow["text"]
        assert g_fast["n_tokens"] == g_slow["n_tokens"]
        assert [t["token"] for t in g_fast["outside"]] == [t["token"] for t in g_slow["outside"]]
        assert [t["text"] for t in g_fast["outside"]] == [t["text"] for t in g_slow["outside"]]
    keys = fast.attrs["by"]
    groups = [fast] if keys is None else [rows for _, rows in fast.groupby(keys, sort=False)]
    brute: dict[tuple, tuple] = {}
    for rows in groups:
        words = tuple(rows["word"].tolist())
        if words not in brute:  # a repeated group's words: the same float64 forward
            brute[words] = brute_words(lm, list(words), add_eos=add_eos, **window)
        per, n, eos = brute[words]
        np.testing.assert_array_equal(rows["n_tokens"], n)
        for path in (fast, slow):  # a word's surprisal sums its tokens'
            assert_within(path.loc[rows.index, "surprisal"], per, nats_per_token, n)
    for g_fast, g_slow in zip(fast.attrs["groups"], slow.attrs["groups"], strict=True):
        # the groups' totals: both paths sum the same tokens, each within the tolerance
        tol = nats_per_token * g_fast["n_tokens"]
        assert g_fast["total_nll"] == pytest.approx(g_slow["total_nll"], abs=2 * tol)


@pytest.mark.parametrize("add_eos", [False, True])
def test_packed_equals_one_score_per_group(tiny_lm, add_eos):
    frame = item_frame(30).sample(frac=1.0, random_state=0)  # rows in any order
    fast = score_words(frame, tiny_lm, by="item", add_eos=add_eos, max_length=64, stride=32)
    slow = score_words(frame, tiny_lm, by="item", add_eos=add_eos, max_length=64, stride=32,
                       packed=False)
    assert fast.attrs["packed_groups"] == 30 and slow.attrs["packed_groups"] == 0
    assert_same_as_score_path(fast, slow, tiny_lm, TINY_NATS, add_eos=add_eos)
    check_conservation(fast)
    assert (fast["n_tokens"] > 1).any()


def test_packed_matches_float64_brute_force(tiny_gpt2):
    out = score_words(PUNCTUATED, tiny_gpt2, add_eos=True)
    assert out.attrs["packed_groups"] == 1
    per, n, eos = brute_words(tiny_gpt2, PUNCTUATED, add_eos=True)
    assert_within(out["surprisal"], per, TINY_NATS, n)
    np.testing.assert_array_equal(out["n_tokens"], n)
    assert out.attrs["groups"][0]["eos_surprisal"] == pytest.approx(eos, abs=TINY_NATS)
    check_conservation(out)


def test_long_groups_keep_windows_short_ones_are_packed(tiny_llama):
    long = (STORY_1 + STORY_2) * 2
    short = STORY_2[:4]
    frame = pd.DataFrame({"story": ["long"] * len(long) + ["short"] * len(short),
                          "word": long + short})
    n_short = len(tiny_llama.tokenizer(" ".join(short), add_special_tokens=False)["input_ids"])
    assert n_short <= 16
    fast = score_words(frame, tiny_llama, by="story", max_length=16, stride=8)
    slow = score_words(frame, tiny_llama, by="story", max_length=16, stride=8, packed=False)
    assert fast.attrs["packed_groups"] == 1
    assert fast.attrs["settings"]["n_windows"] > 1  # the long group's score() settings
    assert_same_as_score_path(fast, slow, tiny_llama, TINY_NATS, max_length=16, stride=8)
    check_conservation(fast)


def test_a_group_of_exactly_one_window_is_packed(tiny_gpt2):
    words = STORY_1
    n = len(tiny_gpt2.tokenizer(" ".join(words), add_special_tokens=False)["input_ids"])
    assert score_words(words, tiny_gpt2, max_length=n).attrs["packed_groups"] == 1
    assert score_words(words, tiny_gpt2, max_length=n - 1,
                       stride=4).attrs["packed_groups"] == 0
    fast = score_words(words, tiny_gpt2, max_length=n)
    ref = score(" ".join(words), tiny_gpt2, max_length=n).to_frame("word", log_freq=False)
    per, n_tokens, _ = brute_words(tiny_gpt2, words, max_length=n)
    for path in (fast, ref):  # the packed path and score()'s, each against float64
        assert_within(path["surprisal"], per, TINY_NATS, n_tokens)


def test_bow_correction_and_other_options_go_through_score(tiny_gpt2):
    frame = item_frame(3)
    out = score_words(frame, tiny_gpt2, by="item", bow_correction=True)
    assert out.attrs["packed_groups"] == 0
    assert score_words(frame, tiny_gpt2, by="item", batch_size=2).attrs["packed_groups"] == 0
    assert not packed_texts.can_pack(tiny_gpt2, {"words": r"\w+"})
    assert packed_texts.can_pack(tiny_gpt2, {"max_length": 8, "add_eos": True})
    with pytest.raises(ValueError, match="top_k"):
        score_words(frame, tiny_gpt2, by="item", top_k=-1)


@pytest.mark.default_model
def test_default_model_packed_and_score_path_match_float64(default_lm):
    frame = item_frame(len(ITEMS))  # each item once: the tiny models' tests repeat them
    fast = score_words(frame, default_lm, by="item", add_eos=True)
    slow = score_words(frame, default_lm, by="item", add_eos=True, packed=False)
    assert fast.attrs["packed_groups"] == len(ITEMS)
    assert_same_as_score_path(fast, slow, default_lm, DEFAULT_MODEL_NATS, add_eos=True)
    check_conservation(fast)
