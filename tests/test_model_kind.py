"""The ScoringModel protocol is what the scorer uses: both kinds satisfy it, and a
third kind written here (uniform over a small vocabulary) scores through score() with
perplexity equal to its vocabulary size, computed by hand in float64."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ppl_widget import NGramModel, score  # noqa: E402
from ppl_widget.core.text_units import DEFAULT_WORD_PATTERN  # noqa: E402
from ppl_widget.scoring.kinds.model_kind import PendingStats, ScoringForward, ScoringModel  # noqa: E402
from ppl_widget.scoring.kinds.ngram.ngram import NGramTokenizer  # noqa: E402
from ppl_widget.scoring.runner.forward import BatchedForward  # noqa: E402

SYMBOLS = ["<UNK>", "<s>", "</s>", "red", "green", "blue", "cat", "dog", "runs"]


class UniformForward:
    """Every outcome equally likely, written from the protocol alone (no base class)."""

    supports_async = False
    pipeline_depth = None

    def __init__(self, vocab_size: int, top_k: int):
        self.vocab_size, self.top_k = vocab_size, top_k

    def score_batch(self, sequence, batch):
        n = sum(w.n_targets for w in batch)
        v, k = self.vocab_size, self.top_k
        return {"surprisal": np.full(n, math.log(v)), "entropy": np.full(n, math.log(v)),
                "rank": np.ones(n, np.int64),
                "topk_ids": np.tile(np.arange(k, dtype=np.int64), (n, 1)),
                "topk_probs": np.full((n, k), 1.0 / v),
                "context_length": np.concatenate([np.arange(w.target_start - w.input_start,
                                                            w.target_end - w.input_start)
                                                  for w in batch])}

    def submit(self, sequence, batch):
        arrays = self.score_batch(sequence, batch)
        return PendingStats(lambda: arrays)

    def bow_after_last(self, sequence, max_length):
        return math.nan


class UniformModel:
    """A third model kind: uniform over ``len(SYMBOLS)`` outcomes."""

    name = "uniform"
    dtype = "float64"
    context_length = None
    device = torch.device("cpu")

    def __init__(self):
        self.tokenizer = NGramTokenizer(SYMBOLS, "word", DEFAULT_WORD_PATTERN)
        self.forwards = []

    @property
    def vocab_size(self) -> int:
        return len(SYMBOLS)

    def default_max_length(self) -> int:
        return 8

    def make_forward(self, top_k: int, max_length: int) -> UniformForward:
        forward = UniformForward(self.vocab_size, min(top_k, self.vocab_size))
        self.forwards.append((top_k, max_length))
        return forward


def test_both_model_kinds_satisfy_the_protocol(tiny_gpt2):
    ngram = NGramModel(2, "add-k").fit(["red cat runs", "green dog runs"])
    assert isinstance(tiny_gpt2, ScoringModel) and isinstance(ngram, ScoringModel)
    assert tiny_gpt2.vocab_size == tiny_gpt2.model.get_output_embeddings().weight.shape[0]
    gpt2_forward = tiny_gpt2.make_forward(5, 32)
    assert isinstance(gpt2_forward, BatchedForward) and isinstance(gpt2_forward, ScoringForward)
    assert gpt2_forward.supports_async
    assert isinstance(ngram.make_forward(5, 32), ScoringForward)
    assert not ngram.make_forward(5, 32).supports_async
    assert not isinstance("gpt2", ScoringModel) and not isinstance((1, 2), ScoringModel)


def test_a_third_kind_scores_through_the_protocol():
    lm = UniformModel()
    assert isinstance(lm, ScoringModel)
    text = "red cat runs\ngreen dog runs blue cat"
    res = score(text, lm, max_length=4, stride=2, top_k=3, add_eos=True)
    assert lm.forwards == [(3, 4)]  # the scorer asked the kind for its forward
    n = len(res)
    assert n == 10  # eight words, the line break (</s>) and the EOS, all after the BOS
    # float64 by hand: total NLL n * ln V, perplexity exp(total / n) = V
    total = n * math.log(len(SYMBOLS))
    m = res.metrics()
    assert m["n_tokens"] == n
    assert m["total_nll"] == pytest.approx(total, rel=1e-12)
    assert m["token_ppl"] == pytest.approx(len(SYMBOLS), rel=1e-12)
    assert res.settings["model"] == "uniform" and res.settings["top_k"] == 3
    np.testing.assert_array_equal(res.rank, np.ones(n))
