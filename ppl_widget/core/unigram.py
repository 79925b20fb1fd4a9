"""Unigram distributions over a model's vocabulary, for unigram-normalized perplexity.

PPLu = (prod_t P(w_t | context) / P_uni(w_t)) ** (-1/T)  (Roh et al., 2020): how much
better than a unigram model the LM predicts the text.  Dividing out each token's
unigram probability removes what a model gets for free from token frequency, which
makes the figure robust to vocabulary size.  Pure numpy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True, eq=False)
class Unigram:
    """Natural-log unigram probabilities indexed by token id (one per vocabulary item).

    ``source`` says where the counts came from; ``in_sample`` marks a unigram estimated
    from the very text being scored (then PPLu is labelled "in-sample").
    """

    log_probs: np.ndarray
    source: str = "probabilities"
    in_sample: bool = False
    n_tokens: int = 0  # tokens counted (0 when built from probabilities)
    alpha: float = field(default=0.0)

    def __post_init__(self) -> None:
        lp = np.asarray(self.log_probs, dtype=np.float64)
        if lp.ndim != 1 or lp.size == 0:
            raise ValueError("a unigram needs one probability per vocabulary item (a 1-d array)")
        object.__setattr__(self, "log_probs", lp)

    @property
    def vocab_size(self) -> int:
        return len(self.log_probs)

    @classmethod
    def from_probs(cls, probs: Any, *, source: str = "probabilities") -> Unigram:
        """An array of probabilities over the vocabulary, used as given (must sum to 1)."""
        p = np.asarray(probs, dtype=np.float64)
        if p.ndim != 1 or p.size == 0:
            raise ValueError("probs must be a 1-d array with one entry per vocabulary item")
        if np.any(p < 0) or not np.all(np.isfinite(p)):
            raise ValueError("probs must be finite and non-negative")
        if not math.isclose(float(p.sum()), 1.0, rel_tol=0, abs_tol=1e-6):
            raise ValueError(f"probs must sum to 1 (a distribution), got {float(p.sum()):.6g}")
        with np.errstate(divide="ignore"):
            return cls(np.log(p), source=source)

    @classmethod
    def from_counts(cls, counts: Mapping[int, int] | Any, alpha: float = 1.0, *,
                    vocab_size: int | None = None, source: str = "counts",
                    in_sample: bool = False) -> Unigram:
        """Counts (a mapping id -> count, or an array over the vocabulary) with add-alpha
        smoothing: ``(count + alpha) / (N + alpha * V)``, so unseen tokens keep p > 0."""
        if isinstance(alpha, bool) or not isinstance(alpha, int | float) or alpha < 0:
            raise ValueError(f"alpha must be a non-negative number, got {alpha!r}")
        if isinstance(counts, Mapping):
            ids = np.fromiter((int(k) for k in counts), dtype=np.int64, count=len(counts))
            size = vocab_size if vocab_size is not None else int(ids.max(initial=-1)) + 1
            if ids.size and (ids.min() < 0 or ids.max() >= size):
                raise ValueError(f"token ids must lie in [0, vocab_size={size})")
            arr = np.zeros(size, dtype=np.float64)
            arr[ids] = np.fromiter((float(v) for v in counts.values()), dtype=np.float64,
                                   count=len(counts))
        else:
            arr = np.asarray(counts, dtype=np.float64)
            if vocab_size is not None and vocab_size != arr.size:
                raise ValueError(f"counts has {arr.size} entries but vocab_size={vocab_size}")
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError("counts must cover a vocabulary of at least one token")
        if np.any(arr < 0):
            raise ValueError("counts must be non-negative")
        total = arr.sum() + alpha * arr.size
        if total <= 0:
            raise ValueError("counts are all zero and alpha is 0: no distribution to estimate")
        with np.errstate(divide="ignore"):
            lp = np.log(arr + alpha) - math.log(total)
        return cls(lp, source=source, in_sample=in_sample, n_tokens=int(arr.sum()),
                   alpha=float(alpha))

    @classmethod
    def from_texts(cls, texts: str | Iterable[str], lm: Any, alpha: float = 1.0, *,
                   in_sample: bool = False) -> Unigram:
        """Token counts of reference texts under the model's own tokenizer (``lm`` is a
        loaded model, or a tokenizer), add-alpha smoothed.  Tokenized as the scorer
        does: no added special tokens."""
        tokenizer = getattr(lm, "tokenizer", lm)
        if isinstance(texts, str):
            texts = [texts]
        texts = list(texts)
        if not texts or not all(isinstance(t, str) for t in texts):
            raise TypeError("texts must be a str or a non-empty list of str")
        vocab_size = _vocab_size(lm, tokenizer)
        counts = np.zeros(vocab_size, dtype=np.float64)
        for text in texts:
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            counts += np.bincount(np.asarray(ids, dtype=np.int64), minlength=vocab_size)
        label = "in-sample" if in_sample else f"{len(texts)} reference text(s)"
        return cls.from_counts(counts, alpha, source=label, in_sample=in_sample)

    @classmethod
    def from_result(cls, result: Any, alpha: float = 1.0) -> Unigram:
        """Estimated from the scored text itself (all its tokens): labelled "in-sample".

        Only on request: a unigram fitted to the very text it normalises flatters PPLu."""
        ids = np.concatenate([np.asarray(result.unscored_token_ids, dtype=np.int64),
                              np.asarray(result.token_ids, dtype=np.int64)])
        tokenizer = getattr(result, "tokenizer", None)
        size = len(tokenizer) if tokenizer is not None else int(ids.max(initial=-1)) + 1
        size = max(size, int(ids.max(initial=-1)) + 1)
        return cls.from_counts(np.bincount(ids, minlength=size), alpha, source="in-sample",
                               in_sample=True)

    def log_prob(self, token_ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(token_ids, dtype=np.int64)
        if ids.size and ids.max() >= self.vocab_size:
            raise ValueError(f"token id {int(ids.max())} is outside this unigram's vocabulary "
                             f"of {self.vocab_size}: build it with the scoring model's tokenizer")
        return self.log_probs[ids]

    def __repr__(self) -> str:
        tag = ", in-sample" if self.in_sample else ""
        return f"<Unigram over {self.vocab_size} tokens from {self.source}{tag}>"


def _vocab_size(lm: Any, tokenizer: Any) -> int:
    """Rows of the model's output layer when known (it may exceed the tokenizer's size)."""
    model = getattr(lm, "model", None)
    head = getattr(model, "get_output_embeddings", lambda: None)() if model is not None else None
    size = len(tokenizer)
    if head is not None and getattr(head, "weight", None) is not None:
        size = max(size, int(head.weight.shape[0]))
    return size


def as_unigram(unigram: Any, tokenizer: Any = None, *, text: str | None = None) -> Unigram:
    """A ``Unigram`` from what ``metrics(unigram=...)`` accepts: a Unigram, or a text / list
    of texts (``from_texts`` with the result's tokenizer, which the result must carry)."""
    if isinstance(unigram, Unigram):
        return unigram
    if isinstance(unigram, str) or (isinstance(unigram, list | tuple) and unigram
                                    and all(isinstance(t, str) for t in unigram)):
        if tokenizer is None:
            raise ValueError("unigram= as text needs the scoring model's tokenizer, which this "
                             "result does not carry (loaded from disk?): pass "
                             "Unigram.from_texts(texts, lm) instead")
        texts = [unigram] if isinstance(unigram, str) else list(unigram)
        in_sample = text is not None and texts == [text]
        return Unigram.from_texts(texts, tokenizer, in_sample=in_sample)
    raise TypeError("unigram must be a Unigram, a text or a list of texts; "
                    f"got {type(unigram).__name__}")


def unigram_metrics(surprisal: np.ndarray, token_ids: np.ndarray, unigram: Unigram) -> dict:
    """``pplu``, ``unigram_ppl`` and where the unigram came from, over the given tokens."""
    s = np.asarray(surprisal, dtype=np.float64)
    lp = unigram.log_prob(token_ids)
    if s.size == 0:
        pplu = uni = math.nan
    else:
        if not np.all(np.isfinite(lp)):
            raise ValueError("every scored token needs a unigram probability above 0: use "
                             "add-alpha smoothing (alpha > 0)")
        pplu = math.exp(float(np.mean(s + lp)))
        uni = math.exp(-float(np.mean(lp)))
    return {"pplu": pplu, "unigram_ppl": uni,
            "unigram_source": "in-sample" if unigram.in_sample else unigram.source}
