"""score_words against a float64 brute force: a float64 copy of the model, windows written
from the spec, the text tokenized by the tokenizer itself, and each token given to its word
by plain loops over the words' positions (first non-whitespace character; a
whitespace-only token to the next word)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from float64 import float64_copy  # noqa: E402

from ppl_widget import WordListError, score, score_words  # noqa: E402

STORY_1 = ("The quick brown fox jumps over the lazy dog. Perplexity is the exponential "
           "of the average negative log-likelihood.").split()
STORY_2 = "Surprisal is minus the log probability of a token, given its context.".split()
#: punctuation attached as given, contractions, brackets, dashes (byte-level only: the
#: Llama-shaped test tokenizer maps unseen characters to <unk>)
PUNCTUATED = ["\"Hello,\"", "she", "said", "--", "(e.g.", "don't", "stop!)", "3.5%", "ok."]


@torch.no_grad()
def surprisal64(lm, seq, max_length, stride):
    """Float64 surprisal of seq[1:]: the first window holds up to max_length targets,
    each later one stride, each reading the max_length positions before its last target."""
    model = float64_copy(lm)
    out, pos, size = [], 1, max_length
    while pos < len(seq):
        last = min(pos + size - 1, len(seq) - 1)
        begin = max(0, last - max_length)
        logp = torch.log_softmax(model(torch.tensor([seq[begin:last]])).logits[0], -1)
        k = last - pos + 1
        out += (-logp[-k:].gather(1, torch.tensor(seq[pos:last + 1])[:, None])[:, 0]).tolist()
        pos, size = last + 1, stride
    return np.array(out)


def brute_words(lm, words, sep=" ", add_eos=False, max_length=64, stride=32):
    """(per-word surprisal, per-word token count, EOS surprisal) by loops."""
    tok = lm.tokenizer
    text = sep.join(words)
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    seq = [tok.bos_token_id, *enc["input_ids"]] + ([tok.eos_token_id] if add_eos else [])
    s = surprisal64(lm, seq, max_length, stride)
    spans, pos = [], 0
    for w in words:
        spans.append((pos, pos + len(w)))
        pos += len(w) + len(sep)
    per, n = [0.0] * len(words), [0] * len(words)
    for k, (a, b) in enumerate(enc["offset_mapping"]):
        chars = [c for c in range(a, b) if not text[c].isspace()]
        if chars:
            w = next(i for i, (x, y) in enumerate(spans) if x <= chars[0] < y)
        else:
            w = next(i for i, (x, _) in enumerate(spans) if x >= b)
        per[w] += s[k]
        n[w] += 1
    return np.array(per), np.array(n), (float(s[-1]) if add_eos else 0.0)


def check_conservation(frame):
    """Per group: the words' surprisals + a scored EOS = the group text's total NLL."""
    keys = frame.attrs["by"]
    for g in frame.attrs["groups"]:
        if keys is None:
            rows = frame
        else:
            want = g["group"] if len(keys) > 1 else (g["group"],)
            rows = frame[(frame[keys] == pd.Series(want, index=keys)).all(axis=1)]
        assert len(rows) == g["n_words"]
        assert rows["surprisal"].sum() + g["eos_surprisal"] == pytest.approx(g["total_nll"],
                                                                             rel=1e-12)


@pytest.mark.parametrize("add_eos", [False, True])
def test_groups_match_brute_force(tiny_lm, add_eos):
    # two stories, rows interleaved: each story is read in its own input order
    rows = [("a", w) for w in STORY_1[:len(STORY_2)]]
    rows = [r for pair in zip(rows, [("b", w) for w in STORY_2], strict=True) for r in pair]
    rows += [("a", w) for w in STORY_1[len(STORY_2):]]
    frame = pd.DataFrame({"story": [r[0] for r in rows], "word": [r[1] for r in rows],
                          "rt": np.arange(len(rows)) * 10.0 + 250})
    original = frame.copy()
    out = score_words(frame, tiny_lm, by="story", add_eos=add_eos, max_length=64, stride=32)
    pd.testing.assert_frame_equal(frame, original)  # the input is left as it was
    pd.testing.assert_frame_equal(out[["story", "word", "rt"]], original)
    for story in ("a", "b"):
        mine = out[out["story"] == story]
        per, n, eos = brute_words(tiny_lm, mine["word"].tolist(), add_eos=add_eos)
        np.testing.assert_allclose(mine["surprisal"], per, atol=2e-4, rtol=0)
        np.testing.assert_array_equal(mine["n_tokens"], n)
        g = next(g for g in out.attrs["groups"] if g["group"] == story)
        assert g["eos_surprisal"] == pytest.approx(eos, abs=2e-4)
        assert (g["outside"] != []) is add_eos
    assert (out["n_tokens"] > 1).any()  # multi-token words
    np.testing.assert_allclose(out["surprisal_bits"], out["surprisal"] / np.log(2))
    check_conservation(out)


def test_punctuation_stays_with_its_word(tiny_gpt2):
    out = score_words(PUNCTUATED, tiny_gpt2, add_eos=True)
    assert out["word"].tolist() == PUNCTUATED
    per, n, _ = brute_words(tiny_gpt2, PUNCTUATED, add_eos=True)
    np.testing.assert_allclose(out["surprisal"], per, atol=2e-4, rtol=0)
    np.testing.assert_array_equal(out["n_tokens"], n)
    assert (out["n_tokens"] > 1).all()  # the tiny vocabulary splits every one of them
    check_conservation(out)


def test_a_long_group_is_scored_through_windows(tiny_lm):
    words = (STORY_1 + STORY_2) * 3
    out = score_words(words, tiny_lm, max_length=16, stride=5)
    assert out.attrs["settings"]["n_windows"] > 5
    per, n, _ = brute_words(tiny_lm, words, max_length=16, stride=5)
    np.testing.assert_allclose(out["surprisal"], per, atol=2e-4, rtol=0)
    np.testing.assert_array_equal(out["n_tokens"], n)
    check_conservation(out)


def test_groups_by_several_columns(tiny_gpt2):
    frame = pd.DataFrame({"subject": [1, 1, 1, 2, 2, 2], "item": [7, 7, 8, 7, 7, 8],
                          "word": ["The", "dog.", "Hi.", "The", "dog.", "Hi."]})
    out = score_words(frame, tiny_gpt2, by=["subject", "item"])
    assert [g["group"] for g in out.attrs["groups"]] == [(1, 7), (1, 8), (2, 7), (2, 8)]
    assert [g["text"] for g in out.attrs["groups"]] == ["The dog.", "Hi.", "The dog.", "Hi."]
    # the same text for two subjects: the same surprisals
    np.testing.assert_array_equal(out["surprisal"][:3], out["surprisal"][3:])
    per, _, _ = brute_words(tiny_gpt2, ["The", "dog."])
    np.testing.assert_allclose(out["surprisal"][:2], per, atol=2e-4, rtol=0)
    check_conservation(out)


@pytest.mark.parametrize("sep", [" ", "\n", "  "])
def test_bow_correction_is_to_frames(tiny_lm, sep):
    words = STORY_1
    out = score_words(words, tiny_lm, sep=sep, bow_correction=True, add_eos=True)
    frame = score(sep.join(words), tiny_lm, add_eos=True).to_frame(
        "word", bow_correction=True, log_freq=False)
    assert frame["text"].tolist() == words
    for col in ("surprisal", "surprisal_corrected", "surprisal_corrected_bits", "n_tokens"):
        np.testing.assert_array_equal(out[col], frame[col])
    per, n, _ = brute_words(tiny_lm, words, sep=sep, add_eos=True)
    np.testing.assert_allclose(out["surprisal"], per, atol=2e-4, rtol=0)
    np.testing.assert_array_equal(out["n_tokens"], n)
    check_conservation(out)


def test_no_separator_a_token_straddling_words_goes_to_the_first(tiny_gpt2):
    tok = tiny_gpt2.tokenizer
    text = "Perplexity"
    pieces = [tok.decode([i]) for i in tok(text, add_special_tokens=False)["input_ids"]]
    long_piece = max(range(len(pieces)), key=lambda k: len(pieces[k]))
    assert len(pieces[long_piece]) >= 3
    # cut the text inside its longest token: that token straddles the two words
    cut = sum(len(p) for p in pieces[:long_piece]) + 1
    words = [text[:cut], text[cut:]]
    out = score_words(words, tiny_gpt2, sep="", bow_correction=True)
    assert "".join(out["word"]) == text
    per, n, _ = brute_words(tiny_gpt2, words, sep="")
    np.testing.assert_allclose(out["surprisal"], per, atol=2e-4, rtol=0)
    np.testing.assert_array_equal(out["n_tokens"], n)
    check_conservation(out)
    # the second word starts inside the straddling token: it gets only the tokens after it
    assert out["n_tokens"][0] == long_piece + 1
    assert out["n_tokens"].sum() == len(pieces)


def test_no_separator_a_word_with_no_token_of_its_own(tiny_gpt2):
    tok = tiny_gpt2.tokenizer
    ids = tok("Perplexity", add_special_tokens=False)["input_ids"]
    last = tok.decode([ids[-1]])
    assert len(last) >= 2
    head = tok.decode(ids[:-1])
    words = [head + last[:1], last[1:]]  # the second word lies inside the last token
    out = score_words(words, tiny_gpt2, sep="", bow_correction=True)
    assert out["n_tokens"].tolist() == [len(ids), 0]
    assert out["surprisal"][1] == 0.0 and np.isnan(out["surprisal_corrected"][1])
    check_conservation(out)


def test_empty_list_gives_an_empty_frame(tiny_gpt2):
    out = score_words([], tiny_gpt2)
    assert len(out) == 0 and {"word", "surprisal", "n_tokens"} <= set(out.columns)
    assert out.attrs["groups"] == []


@pytest.mark.parametrize("words,message", [
    (["a", "", "b"], "row 1: the word is empty"),
    (["a", "two words"], "row 1: the word 'two words' contains whitespace"),
    (["a\tb"], "row 0: .*contains whitespace"),
    (["ok", None], "row 1: the word is missing"),
    (["ok", float("nan")], "row 1: the word is missing"),
    (["ok", 1990], "row 1: a word must be a string"),
    ("a text", "not one string"),
])
def test_bad_words_name_the_row(tiny_gpt2, words, message):
    with pytest.raises(WordListError, match=message):
        score_words(words, tiny_gpt2)


def test_bad_frames_name_the_row_and_change_nothing(tiny_gpt2):
    frame = pd.DataFrame({"story": [1, 1, 2], "word": ["a", np.nan, "c"]},
                         index=["r1", "r2", "r3"])
    original = frame.copy()
    with pytest.raises(WordListError, match="row 'r2': the word is missing"):
        score_words(frame, tiny_gpt2, by="story")
    pd.testing.assert_frame_equal(frame, original)
    frame = pd.DataFrame({"story": [1, None, 2], "word": ["a", "b", "c"]})
    with pytest.raises(WordListError, match=r"row 1: the group column\(s\) \['story'\]"):
        score_words(frame, tiny_gpt2, by="story")
    with pytest.raises(WordListError, match="does not have"):
        score_words(frame, tiny_gpt2, by="item")
    with pytest.raises(WordListError, match="needs a 'word' column"):
        score_words(frame.rename(columns={"word": "token"}), tiny_gpt2)
    with pytest.raises(WordListError, match="already has column"):
        score_words(frame.assign(surprisal=1.0), tiny_gpt2)


@pytest.mark.parametrize("options,error,message", [
    ({"sep": "|"}, WordListError, "sep must be '' or whitespace only"),
    ({"sep": None}, WordListError, "sep must be a string"),
    ({"prefix": None}, WordListError, "prefix=None"),
    ({"words": r"\w+"}, TypeError, "words= is not an option"),
])
def test_bad_options(tiny_gpt2, options, error, message):
    with pytest.raises(error, match=message):
        score_words(["a", "b"], tiny_gpt2, **options)


@pytest.mark.default_model
def test_default_model_matches_brute_force(default_lm):
    frame = pd.DataFrame({
        "sentence": [1] * 9 + [2] * 7,
        "word": ["\"Well,", "I", "don't", "think", "so,\"", "said", "Dr.", "Smith", "--",
                 "The", "unbelievably", "tall", "giraffe", "(a", "male)", "left."]})
    out = score_words(frame, default_lm, by="sentence", add_eos=True, bow_correction=True,
                      max_length=128, stride=64)
    for k in (1, 2):
        mine = out[out["sentence"] == k]
        per, n, _ = brute_words(default_lm, mine["word"].tolist(), add_eos=True,
                                max_length=128, stride=64)
        np.testing.assert_allclose(mine["surprisal"], per, atol=2e-3, rtol=1e-4)
        np.testing.assert_array_equal(mine["n_tokens"], n)
        res = score(" ".join(mine["word"]), default_lm, add_eos=True, max_length=128,
                    stride=64)
        ref = res.to_frame("word", bow_correction=True, log_freq=False)
        np.testing.assert_array_equal(mine["surprisal_corrected"], ref["surprisal_corrected"])
    assert (out["n_tokens"] > 1).any()
    check_conservation(out)


@pytest.mark.default_model
def test_default_model_the_docs_boundary_example(default_lm):
    """docs/words.md: "intotheroom" is int · othe · room; "the" gets no token."""
    out = score_words(["in", "to", "the", "room"], default_lm, sep="")
    assert out["n_tokens"].tolist() == [1, 1, 0, 1]
    per, n, _ = brute_words(default_lm, ["in", "to", "the", "room"], sep="",
                            max_length=128, stride=64)
    np.testing.assert_allclose(out["surprisal"], per, atol=2e-3, rtol=1e-4)
    np.testing.assert_allclose(out["surprisal"], [11.111, 8.879, 0.0, 13.593], atol=2e-3)
