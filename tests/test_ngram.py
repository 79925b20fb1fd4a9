"""NGramModel: the textbook worked example by hand, nltk.lm as the reference, proper
distributions, and the model used through score/stream/compare/the widget."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from nltk.lm import MLE, KneserNeyInterpolated, Lidstone
from nltk.lm.counter import NgramCounter
from nltk.lm.preprocessing import padded_everygram_pipeline
from nltk.lm.vocabulary import Vocabulary
from nltk.util import ngrams

from ppl_widget import NGramModel, score, stream
from ppl_widget.scoring.kinds.ngram.ngram import START_ID

# five short sentences, in the style of Jurafsky & Martin's "I am Sam" corpus
CORPUS = ["I am Sam", "Sam I am", "I do not like green eggs and ham", "I like ham",
          "Sam likes green eggs"]
WORDS = sorted({w for s in CORPUS for w in s.split()})


def close(a: float, b: float | Fraction) -> bool:
    return math.isclose(a, float(b), rel_tol=1e-12, abs_tol=1e-15)


def test_textbook_bigram_worked_example():
    """P(<s> I am Sam </s>) under the MLE bigram, by hand:
    C(<s> I)/C(<s>) = 3/5, C(I am)/C(I) = 2/4, C(am Sam)/C(am) = 1/2,
    C(Sam </s>)/C(Sam) = 1/3; the product is 1/20.  Four predicted words
    (END included): bits per word = log2(20)/4, perplexity = 20^(1/4)."""
    lm = NGramModel(2, "mle").fit(CORPUS)
    by_hand = [Fraction(3, 5), Fraction(2, 4), Fraction(1, 2), Fraction(1, 3)]
    sentence_p = math.prod(by_hand)
    assert sentence_p == Fraction(1, 20)
    res = score("I am Sam", lm, add_eos=True)
    assert res.tokens == ["I", " am", " Sam", "</s>"]
    for got, want in zip(res.probability, by_hand, strict=True):
        assert close(got, want)
    assert close(math.exp(-res.surprisal.sum()), sentence_p)
    m = res.metrics()
    assert m["n_words"] == 4 and m["n_tokens"] == 4  # END counted as one more word
    assert close(m["total_bits"], math.log2(20))
    assert close(m["total_bits"] / m["n_words"], math.log2(20) / 4)
    # perplexity as weighted branching factor: (1/P)^(1/N)
    assert close(m["word_ppl"], 20 ** 0.25)
    assert close(m["word_ppl"], 2 ** (m["total_bits"] / m["n_words"]))
    # the counts the hand arithmetic used
    assert lm.count("<s> I") == 3 and lm.count("I am") == 2 and lm.count("I") == 4
    assert lm.prob("am", "I") == 0.5


def test_textbook_add_one_by_hand():
    """Laplace: (C(w_prev w) + 1) / (C(w_prev) + V), V = 11 words + </s> + <UNK> = 13."""
    lm = NGramModel(2, "add-k", k=1).fit(CORPUS)
    assert lm.vocab_size == 13
    res = score("I am Sam", lm, add_eos=True)
    by_hand = [Fraction(3 + 1, 5 + 13), Fraction(2 + 1, 4 + 13), Fraction(1 + 1, 2 + 13),
               Fraction(1 + 1, 3 + 13)]
    for got, want in zip(res.probability, by_hand, strict=True):
        assert close(got, want)
    # an unseen word gets k / (C(context) + kV), never a crash
    assert close(lm.prob("Bob", ["I"]), Fraction(1, 4 + 13))


def test_kneser_ney_bigram_by_hand():
    """Interpolated KN, d = 3/4, for P(am | I) = (C(I am) - d)/C(I) + d * N1+(I .)/C(I)
    * P_cont(am), with C(I am) = 2, C(I) = 4, N1+(I .) = 3 and the continuation unigram
    P_cont(am) = (N1+(. am) - d)/N1+(. .) + d * N1+(. +)/N1+(. .) / V (uniform below)."""
    lm = NGramModel(2, "kneser-ney", discount=0.75).fit(CORPUS)
    d = Fraction(3, 4)
    bigram_types = {(a, b) for s in CORPUS for a, b in
                    ngrams(["<s>", *s.split(), "</s>"], 2)}
    n_types = len(bigram_types)
    followers = {b for _, b in bigram_types}
    v = 13
    p_cont_am = (max(sum(1 for _, b in bigram_types if b == "am") - d, 0) / n_types
                 + d * len(followers) / n_types / v)
    i_follow = {b for a, b in bigram_types if a == "I"}
    assert len(i_follow) == 3
    want = (Fraction(2) - d) / 4 + d * len(i_follow) / 4 * p_cont_am
    assert close(lm.prob("am", ["I"]), want)


def _nltk_counter(sentences: list[list[str]], order: int) -> NgramCounter:
    padded = [["<s>"] * (order - 1) + s + ["</s>"] for s in sentences]
    return NgramCounter([list(ngrams(p, m)) for p in padded for m in range(1, order + 1)])


@pytest.mark.parametrize("order", [1, 2, 3])
def test_mle_and_add_k_equal_nltk(order):
    sents = [s.split() for s in CORPUS]
    counter = _nltk_counter(sents, order)
    mle = MLE(order, counter=counter)
    # nltk's Lidstone divides by len(vocab); give it our outcomes (words, </s>, <UNK>)
    lid = Lidstone(0.5, order, vocabulary=Vocabulary(WORDS + ["</s>"]), counter=counter)
    ours_mle = NGramModel(order, "mle").fit(CORPUS)
    ours_k = NGramModel(order, "add-k", k=0.5).fit(CORPUS)
    contexts = [()] if order == 1 else [tuple(c) for c in
                                        {tuple(x[-(order - 1):]) for x in
                                         counter[order].keys()}] + [("eggs",) * (order - 1)]
    for ctx in contexts:
        for w in WORDS + ["</s>"]:
            # unseen context: nltk's MLE gives 0 (an empty count), so does ours
            assert close(ours_mle.prob(w, ctx), mle.unmasked_score(w, ctx or None))
            assert close(ours_k.prob(w, ctx), lid.unmasked_score(w, ctx or None))


def test_kneser_ney_matches_nltk_where_they_agree():
    """The top-order discount and interpolation weight equal nltk's alpha and gamma;
    the lowest order differs on purpose: nltk's continuation unigram gives a word never
    seen in training probability 0, ours interpolates it with the uniform 1/V."""
    sents = [s.split() for s in CORPUS]
    train, vocab = padded_everygram_pipeline(2, sents)
    ref = KneserNeyInterpolated(2, discount=0.75)
    ref.fit(train, vocab)
    ours = NGramModel(2, "kneser-ney", discount=0.75).fit(CORPUS)
    lower = ours._vector((), top=False)
    n_types = sum(ref.estimator._continuation_counts(w)[0] for w in WORDS + ["</s>"])
    followers = sum(1 for w in WORDS + ["</s>"] if ref.estimator._continuation_counts(w)[0])
    for ctx in [("<s>",), ("I",), ("Sam",), ("green",)]:
        for w in WORDS + ["</s>"]:
            alpha, gamma = ref.estimator.alpha_gamma(w, ctx)
            wid = ours.tokenizer._index[w]
            assert close(ours.prob(w, ctx), alpha + gamma * lower[wid])
            cont, total = ref.estimator._continuation_counts(w)
            assert total == n_types
            assert close(lower[wid], max(cont - 0.75, 0) / total
                         + 0.75 * followers / total / ours.vocab_size)
    assert ref.score("Bob", ["I"]) == 0.0  # nltk: an unseen word is impossible under KN
    assert ours.prob("Bob", ["I"]) > 0


@pytest.mark.parametrize("smoothing", ["add-k", "kneser-ney"])
@pytest.mark.parametrize("order", [1, 2, 3, 4])
@pytest.mark.parametrize("unit", ["word", "char"])
def test_distributions_are_proper(smoothing, order, unit):
    lm = NGramModel(order, smoothing, unit=unit, k=0.3).fit(CORPUS)
    tok = lm.tokenizer
    contexts = [(), ("<s>",), ("I", "am", "Sam"), ("zzz", "qqq", "I"), ("</s>",)]
    if unit == "char":
        contexts = [(), ("<s>",), tuple("I am"), tuple("xyz")]
    for ctx in contexts:
        dist = lm.distribution(ctx)
        assert "<s>" not in dist and len(dist) == lm.vocab_size == len(tok) - 1
        assert math.isclose(sum(dist.values()), 1.0, rel_tol=1e-12)
        assert all(p > 0 for p in dist.values())


def test_mle_unseen_is_infinite_not_an_error():
    lm = NGramModel(2, "mle").fit(CORPUS)
    res = score("I am Bob", lm, add_eos=True)
    assert res.tokens == ["I", " am", " Bob", "</s>"]
    assert res.surprisal[2] == math.inf and res.rank[2] == lm.vocab_size
    # after an unseen word MLE has no distribution: probability 0, entropy undefined
    assert res.surprisal[3] == math.inf and math.isnan(res.entropy[3])
    m = res.metrics()
    assert m["word_ppl"] == math.inf and m["total_nll"] == math.inf
    assert np.isfinite(res.surprisal[:2]).all()


def test_entropy_rank_topk_from_the_distribution():
    lm = NGramModel(2, "kneser-ney").fit(CORPUS)
    res = score("I like green ham", lm, add_eos=True, top_k=3)
    seq = ["<s>", "I", "like", "green", "ham", "</s>"]
    for i in range(len(res)):
        dist = lm.distribution([seq[i]])
        p = np.array(list(dist.values()))
        assert close(res.entropy[i], -(p * np.log(p)).sum())
        target = seq[i + 1]
        assert res.rank[i] == 1 + sum(q > dist[target] for q in dist.values())
        assert [res.vocab[t] for t in res.topk_ids[i]] == list(dist)[:3]
        assert np.allclose(res.topk_probs[i], list(dist.values())[:3])


def test_trigram_pads_start_and_restarts_after_line_break():
    lm = NGramModel(3, "mle").fit(CORPUS)
    res = score("I am Sam\nSam I am", lm, add_eos=True)
    assert res.tokens == ["I", " am", " Sam", "\n", "Sam", " I", " am", "</s>"]
    # P(I | <s> <s>) = 3/5, P(am | <s> I) = 1/3, P(Sam | I am) = 1/2; the line break is
    # END: P(</s> | am Sam) = 1/1; the next line starts after START again:
    # P(Sam | <s> <s>) = 2/5, P(I | <s> Sam) = 1/2, P(am | Sam I) = 1, P(</s> | I am) = 1/2
    want = [Fraction(3, 5), Fraction(1, 3), Fraction(1, 2), Fraction(1, 1), Fraction(2, 5),
            Fraction(1, 2), Fraction(1, 1), Fraction(1, 2)]
    for got, w in zip(res.probability, want, strict=True):
        assert close(got, w)
    assert res.context_length.tolist()[:3] == [1, 2, 2]


def test_no_prefix_and_windows():
    lm = NGramModel(2, "add-k").fit(CORPUS)
    text = "I am Sam and I like green eggs"
    full = score(text, lm, prefix=None)
    assert len(full) == 7 and full.metrics()["n_unscored_tokens"] == 1
    # windows longer than the order change nothing; a window of 1 predicts from 1 word
    for ml, st in [(2, 1), (3, 2), (8, 8)]:
        r = score(text, lm, prefix=None, max_length=ml, stride=st)
        np.testing.assert_allclose(r.surprisal, full.surprisal)


def test_stream_widget_and_compare_accept_it(tiny_gpt2):
    from ppl_widget import PerplexityWidget
    from ppl_widget.scoring.analyses.compare import compare

    lm = NGramModel(2, "kneser-ney", unit="char").fit(CORPUS)
    text = "Sam likes ham"
    items = list(stream(text, lm, max_length=4, stride=2))
    assert items[-1].finished
    final = items[-1].result
    np.testing.assert_allclose(final.surprisal, score(text, lm).surprisal)
    assert final.settings["model"] == "bigram Kneser-Ney (chars)"
    w = PerplexityWidget(text, lm)
    res = w.wait()
    np.testing.assert_allclose(res.surprisal, final.surprisal[:len(res)])
    # the widget's settings say the model reads no window: the view leaves out the
    # window, device and dtype lines and the window controls (js/test/panels.test.js)
    assert w.settings["windowless"] is True and final.settings["windowless"] is True
    assert "windowless" not in score(text, tiny_gpt2).settings
    cmp = compare(text, [lm, tiny_gpt2], labels=["bigram", "gpt2"])
    table = cmp.table()
    assert table["n_chars"].tolist() == [len(text), len(text)]
    assert math.isclose(table["char_ppl"].iloc[0], final.metrics()["char_ppl"])


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="order must be an integer >= 1"):
        NGramModel(0)
    with pytest.raises(ValueError, match="smoothing must be one of"):
        NGramModel(2, "laplace")
    with pytest.raises(ValueError, match="unit must be 'word' or 'char'"):
        NGramModel(2, unit="byte")
    with pytest.raises(ValueError, match="k must be a positive number"):
        NGramModel(2, "add-k", k=0)
    with pytest.raises(ValueError, match="not fitted"):
        score("I am", NGramModel(2))
    with pytest.raises(ValueError, match="at least one non-empty sentence"):
        NGramModel(2).fit(["", "  "])
    with pytest.raises(TypeError, match="sentence 1 is a int"):
        NGramModel(2).fit(["a b", 3])


def test_fit_text_one_sentence_per_line_and_unk_cutoff():
    a = NGramModel(2).fit("\n".join(CORPUS))
    b = NGramModel(2).fit(CORPUS)
    assert a.symbols == b.symbols and a.n_sentences == 5
    c = NGramModel(2, "mle", unk_cutoff=2).fit(CORPUS)
    # words seen once become <UNK>, which then has counts of its own
    assert "do" not in c.symbols and c.count("<UNK>") > 0
    assert c.prob("<UNK>", ["I"]) > 0
    assert START_ID == c.tokenizer.bos_token_id
