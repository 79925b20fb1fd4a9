"""score_pairs: each sentence's total against score() and a float64 brute force, the
packing (no attention across sequences), the seam rule for a context, bad input."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
from float64 import DEFAULT_MODEL_NATS, TINY_NATS, assert_within, float64_copy, float64_scores

from ppl_widget import PairsInputError, score, score_pairs
from ppl_widget.core.pairs import accuracy, first_difference
from ppl_widget.scoring.analyses.pairs import split_seam
from ppl_widget.scoring.runner import packed

PAIRS = [
    ("The quick brown fox jumps over the dog.", "The quick brown fox jump over the dog."),
    ("Perplexity is the exponential.", "Perplexity are the exponential."),
    ("Surprisal is minus the log probability.", "Surprisal are minus the log probability."),
    ("A", "Sliding windows score every token exactly once, with context."),
    ("Les modèles prédisent.", "Les modèles prédit."),
]


def _reference_nll(lm, ids: list[int], n_scored: int) -> float:
    """float64 brute force: the whole sequence through a float64 copy of the model,
    log-softmax over the full vocabulary, the last ``n_scored`` targets summed."""
    import torch

    model = float64_copy(lm)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0].double()
    logp = torch.log_softmax(logits, dim=-1)
    targets = torch.tensor(ids[1:])
    per_token = -logp[:-1].gather(1, targets[:, None])[:, 0]
    return float(per_token[len(per_token) - n_scored:].sum())


def assert_total_within(lm, nll: float, result) -> None:
    """A score_pairs total and score()'s ``result`` of the same sentence, each within the
    float32 tolerance of the float64 copy over score()'s windows (tests/float64.py): packed
    rows and score()'s windows round differently, so not held to each other."""
    want = float64_scores(lm, result)["surprisal"].sum()
    assert_within([nll, result.metrics()["total_nll"]], want, TINY_NATS, len(result))


def _ids(lm, text: str) -> list[int]:
    return lm.tokenizer(text, add_special_tokens=False)["input_ids"]


def test_totals_equal_score_and_float64_brute_force(tiny_lm):
    df = score_pairs(PAIRS, tiny_lm)
    bos = tiny_lm.tokenizer.bos_token_id
    for side in ("good", "bad"):
        for text, nll, n in zip(df[side], df[f"{side}_nll"], df[f"{side}_tokens"], strict=True):
            result = score(text, tiny_lm, top_k=0)
            assert n == len(result.surprisal) == len(_ids(tiny_lm, text))
            ids = [bos, *_ids(tiny_lm, text)]
            # both float32 paths against float64 (tests/float64.py), not against each other
            assert_within([nll, result.metrics()["total_nll"]], _reference_nll(tiny_lm, ids, n),
                          TINY_NATS, n)


def test_columns_and_criteria(tiny_gpt2):
    frame = pd.DataFrame({"good": [p[0] for p in PAIRS], "bad": [p[1] for p in PAIRS],
                          "phenomenon": list("aabbc")}, index=[10, 11, 12, 13, 14])
    df = score_pairs(frame, tiny_gpt2)
    assert list(df.index) == [10, 11, 12, 13, 14]
    assert list(df["phenomenon"]) == list("aabbc")
    np.testing.assert_allclose(df["delta"], df["bad_nll"] - df["good_nll"])
    assert (df["correct"] == (df["delta"] > 0)).all()
    np.testing.assert_allclose(df["good_mean_nll"], df["good_nll"] / df["good_tokens"])
    np.testing.assert_allclose(df["delta_mean"], df["bad_mean_nll"] - df["good_mean_nll"])
    assert (df["correct_mean"] == (df["delta_mean"] > 0)).all()
    acc = accuracy(df, "phenomenon")
    assert list(acc["n_pairs"]) == [2, 2, 1]
    assert acc["accuracy"].iloc[0] == df["correct"].iloc[:2].mean()


def test_many_sentences_in_several_packed_batches(tiny_llama, monkeypatch):
    """Small rows and batches: several sequences share each row, several passes run;
    each total is still its own (no attention leaks across sequences)."""
    monkeypatch.setattr(packed, "PACK_POSITIONS", 24)
    monkeypatch.setattr(packed, "BATCH_POSITIONS_CPU", 48)
    rng = np.random.default_rng(0)
    words = "the a fox dog runs sleeps quick lazy over under modèles".split()
    pairs = [(" ".join(rng.choice(words, rng.integers(1, 9))),
              " ".join(rng.choice(words, rng.integers(1, 9)))) for _ in range(12)]
    seqs, n_scored = _layout(tiny_llama, [t for p in pairs for t in p])
    batches = packed.plan_batches(seqs, n_scored, pack_positions=24, batch_positions=48)
    assert len(batches) > 2 and any(len(set(s[s >= 0])) > 2 for b in batches
                                    for s in b.segments)
    df = score_pairs(pairs, tiny_llama)
    for side in ("good", "bad"):
        for text, nll in zip(df[side], df[f"{side}_nll"], strict=True):
            assert_total_within(tiny_llama, nll, score(text, tiny_llama, top_k=0))


def _layout(lm, texts):
    from ppl_widget.scoring.analyses.pairs import layout

    laid = layout(texts, lm)
    return laid.sequences, laid.n_scored


def test_pack_rows_places_every_sequence_once_within_capacity():
    rng = np.random.default_rng(1)
    lengths = [int(x) for x in rng.integers(1, 40, 200)] + [70]
    rows = packed.pack_rows(lengths, 64)
    placed = sorted(i for row in rows for i in row)
    assert placed == list(range(len(lengths)))
    assert all(sum(lengths[i] for i in row) <= 64 for row in rows if len(row) > 1)
    # best fit: no more rows than the total length needs plus a little
    assert len(rows) <= sum(lengths) / 64 + 3


@pytest.mark.parametrize("options", [dict(prefix=None), dict(add_eos=True)])
def test_score_options_as_score_takes_them(tiny_gpt2, options):
    df = score_pairs(PAIRS[:3], tiny_gpt2, **options)
    for text, nll, n in zip(df["good"], df["good_nll"], df["good_tokens"], strict=True):
        result = score(text, tiny_gpt2, top_k=0, **options)
        assert n == len(result.surprisal)
        assert_total_within(tiny_gpt2, nll, result)


def test_sentence_longer_than_the_window_is_scored_by_windows(tiny_gpt2):
    long = " ".join(["Sliding windows score every token exactly once."] * 3)
    df = score_pairs([(long, "Short one.")], tiny_gpt2, max_length=16, stride=8)
    result = score(long, tiny_gpt2, max_length=16, stride=8, top_k=0)
    assert df["good_tokens"].iloc[0] == len(result.surprisal) > 16
    assert_total_within(tiny_gpt2, df["good_nll"].iloc[0], result)


def test_seam_rule():
    assert split_seam("The cat ", "sat") == ("The cat", " sat")
    assert split_seam("The cat", " sat") == ("The cat", " sat")
    assert split_seam("Q:\n\n", "A") == ("Q:", "\n\nA")


def test_context_scores_only_the_continuation(tiny_lm):
    frame = pd.DataFrame({"context": ["The quick brown fox ", "Perplexity", ""],
                          "good": ["jumps over the dog.", " is the exponential.", "Ok."],
                          "bad": ["jump over the dog.", " are the exponential.", "Ko."]})
    df = score_pairs(frame, tiny_lm)
    bos = tiny_lm.tokenizer.bos_token_id
    for row in df.itertuples():
        for side in ("good", "bad"):
            ctx, cont = split_seam(row.context, getattr(row, side))
            whole, head = _ids(tiny_lm, ctx + cont), _ids(tiny_lm, ctx) if ctx else []
            n = len(whole) - len(head)
            assert getattr(row, f"{side}_tokens") == n
            ref = _reference_nll(tiny_lm, [bos, *whole], n)
            assert_within(getattr(row, f"{side}_nll"), ref, TINY_NATS, n)
    # an empty context is no context: score() of the sentence alone
    assert_total_within(tiny_lm, df["good_nll"].iloc[2], score("Ok.", tiny_lm, top_k=0))


def test_context_longer_than_the_window_is_an_error(tiny_gpt2):
    frame = pd.DataFrame({"context": ["word " * 40], "good": ["a"], "bad": ["b"]})
    with pytest.raises(PairsInputError, match="row 0.*max_length=16"):
        score_pairs(frame, tiny_gpt2, max_length=16)


def test_ngram_model_kind():
    from ppl_widget import NGramModel

    lm = NGramModel(2, "add-k").fit(["I am Sam", "Sam I am", "I like ham"])
    df = score_pairs([("I am Sam", "Sam am I"), ("I like ham", "ham like I")], lm)
    for text, nll in zip(df["bad"], df["bad_nll"], strict=True):
        assert nll == pytest.approx(score(text, lm).metrics()["total_nll"], rel=1e-12)
    assert df["correct"].all()


@pytest.mark.parametrize("pairs, message", [
    (pd.DataFrame({"good": ["a"]}), "missing \\['bad'\\]"),
    (pd.DataFrame({"good": ["a", "b"], "bad": ["c", None]}), "row 1: 'bad' must be text.*NaN"),
    (pd.DataFrame({"good": ["a", np.nan], "bad": ["c", "d"]}), "row 1: 'good'.*missing"),
    (pd.DataFrame({"good": ["a", "  "], "bad": ["c", "d"]}, index=[5, 6]),
     "row 1 \\(index 6\\): 'good' is empty"),
    ([("a", "b"), ("c",)], "pair 1 must be a \\(good, bad\\) tuple"),
    ("good bad", "iterable of \\(good, bad\\) tuples"),
])
def test_bad_input_names_the_row(tiny_gpt2, pairs, message):
    with pytest.raises(PairsInputError, match=message):
        score_pairs(pairs, tiny_gpt2)


def test_unknown_option_is_refused(tiny_gpt2):
    with pytest.raises(TypeError, match="top_k"):
        score_pairs(PAIRS[:1], tiny_gpt2, top_k=5)


def test_first_difference():
    assert first_difference("The cat sat.", "The cats sat.") == 7
    assert first_difference("abc", "abc") == 3
    assert first_difference("ab", "abc") == 2


@pytest.mark.default_model
def test_default_model_agrees_with_score_and_float64(default_lm):
    df = score_pairs(PAIRS[:3], default_lm)
    bos = default_lm.tokenizer.bos_token_id
    for side in ("good", "bad"):
        for text, nll, n in zip(df[side], df[f"{side}_nll"], df[f"{side}_tokens"], strict=True):
            total = score(text, default_lm, top_k=0).metrics()["total_nll"]
            want = _reference_nll(default_lm, [bos, *_ids(default_lm, text)], n)
            assert_within([nll, total], want, DEFAULT_MODEL_NATS, n)


@pytest.mark.parametrize("options", [{}, dict(prefix=None, add_eos=True), dict(max_length=8)])
def test_sentence_tokens_join_into_the_text_and_sum_to_the_totals(tiny_llama, options):
    from ppl_widget.scoring.analyses.pairs import sentence_tokens

    texts = ["Les modèles prédisent.", "The quick brown fox jumps over the lazy dog.", "A"]
    contexts = ["Yesterday ", "", ""] if not options else None
    pieces = sentence_tokens(texts, tiny_llama, contexts=contexts, **options)
    frame = pd.DataFrame({"good": texts, "bad": texts, **({"context": contexts}
                                                          if contexts else {})})
    totals = score_pairs(frame, tiny_llama, **options)
    for text, sentence, total in zip(texts, pieces, totals["good_nll"], strict=True):
        assert "".join(p for p, _ in sentence) == text
        scored = [v for _, v in sentence if not np.isnan(v)]
        eos = score(text, tiny_llama, top_k=0, **options).surprisal[-1] \
            if options.get("add_eos") else 0.0
        assert sum(scored) + eos == pytest.approx(total, rel=1e-6, abs=1e-4)


def test_eager_attention_reads_the_same_block_mask(tiny_lm):
    from ppl_widget import load_model

    model = copy.deepcopy(tiny_lm.model)
    model.set_attn_implementation("eager")
    eager = load_model((model, tiny_lm.tokenizer), device="cpu", dtype="float32")
    pairs = PAIRS[:3] * 2  # shorter and longer sentences share rows
    df = score_pairs(pairs, eager)
    for text, nll in zip(df["bad"], df["bad_nll"], strict=True):  # eager and sdpa kernels
        assert_total_within(tiny_lm, nll, score(text, tiny_lm, top_k=0))


def test_an_ngram_model_scores_pairs_in_context_as_score_does():
    """A context column works with every model kind (issue #44: it was refused for all but
    transformers): the n-gram's numbers are score(sentence, lm, context=...)'s."""
    from ppl_widget import NGramModel, score

    lm = NGramModel(2, "kneser-ney").fit(["the cat sat on the mat .", "the dog sat on the rug ."])
    frame = pd.DataFrame({"context": ["the cat"], "good": [" sat on the mat."],
                          "bad": [" sat the on mat."]})
    got = score_pairs(frame, lm)
    for side in ("good", "bad"):
        ref = score(frame[side][0], lm, context="the cat", top_k=0)
        assert got[f"{side}_nll"][0] == pytest.approx(float(np.sum(ref.surprisal)), abs=1e-9)
        assert got[f"{side}_tokens"][0] == len(ref.surprisal)
    assert got["good_nll"][0] < got["bad_nll"][0]  # 'sat on' was seen, 'sat the' was not
