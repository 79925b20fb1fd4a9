"""An n-gram language model for teaching, usable wherever a model is.

``NGramModel(order, smoothing, unit)`` is fitted on sentences and then scores a text
through the same ``score``/``stream``/widget/``compare`` path as a transformer: it
carries a duck-typed tokenizer (words or characters, with character offsets) and a
forward that gives, per target, the full predictive distribution over the vocabulary.

Conventions (the textbook's, e.g. Jurafsky & Martin ch. 3): every training sentence
is padded with ``order - 1`` START symbols ``<s>`` and one END symbol ``</s>``.  The
outcomes a model predicts are the training words, ``</s>`` and ``<UNK>`` (never
``<s>``), so every distribution sums to 1 over them.  A line break ends a sentence,
in training and in a scored text: it is scored as ``</s>`` and the next line starts
after ``<s>``.

Why the probabilities are computed here and not by ``nltk.lm``: the widget needs the
whole distribution at every position (entropy, rank, top-k), and ``nltk.lm`` scores
one word at a time (its Kneser-Ney rescans every n-gram per call); and its
``KneserNeyInterpolated`` bottoms out in the continuation unigram without the uniform
term, so a word never seen in training gets probability 0 (surprisal infinity) even
under Kneser-Ney, and its ``Laplace`` counts ``<s>`` as an outcome, so the
distribution over what can follow sums to less than 1.  The counts and formulas agree
with ``nltk.lm`` everywhere else; tests/test_ngram.py checks it.
"""

from __future__ import annotations

import math
import re
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

# words: runs of non-whitespace, the scorer's default, so a word-level model's per-word
# and per-token perplexities agree
from ....core.text_units import DEFAULT_WORD_PATTERN
from ..model_kind import HostForward

UNK, START, END = "<UNK>", "<s>", "</s>"
UNK_ID, START_ID, END_ID = 0, 1, 2
SMOOTHINGS = ("mle", "add-k", "kneser-ney")
UNITS = ("word", "char")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_ORDER_NAMES = {1: "unigram", 2: "bigram", 3: "trigram"}
#: Distributions kept per model (each a vector over the vocabulary).
_CACHE_SIZE = 4096


class NGramTokenizer:
    """The model's segmentation, shaped like a Hugging Face tokenizer for the scorer:
    one token per word (or character); a line break (with the whitespace after it)
    is one ``</s>`` token; other whitespace belongs to no token."""

    is_fast = False
    bos_token, eos_token, unk_token = START, END, UNK
    bos_token_id, eos_token_id, unk_token_id = START_ID, END_ID, UNK_ID

    def __init__(self, symbols: list[str], unit: str, pattern: str):
        self.symbols = symbols
        self.unit = unit
        self._index = {s: i for i, s in enumerate(symbols)}
        item = "." if unit == "char" else pattern
        self._regex = re.compile(rf"(?P<nl>[\r\n]\s*)|(?P<sym>{item})", re.DOTALL)
        self.all_special_ids = [UNK_ID, START_ID, END_ID]

    def __len__(self) -> int:
        return len(self.symbols)

    def segment(self, text: str) -> list[tuple[str | None, int, int]]:
        """``(symbol, start, end)`` per token; ``None`` for a line break (END)."""
        out = []
        for m in self._regex.finditer(text):
            if m.end() == m.start():
                continue
            out.append((None if m.lastgroup == "nl" else m.group(), m.start(), m.end()))
        return out

    def encode(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        ids, offsets = [], []
        for sym, s, e in self.segment(text):
            ids.append(END_ID if sym is None else self._index.get(sym, UNK_ID))
            offsets.append((s, e))
        return ids, offsets

    def __call__(self, text: str | list[str], add_special_tokens: bool = False,
                 return_offsets_mapping: bool = False, **_: Any) -> dict[str, Any]:
        # no special tokens are ever added; special-token strings stay text
        if isinstance(text, str):
            ids, offsets = self.encode(text)
            out: dict[str, Any] = {"input_ids": ids}
            if return_offsets_mapping:
                out["offset_mapping"] = offsets
            return out
        encoded = [self.encode(t) for t in text]
        out = {"input_ids": [e[0] for e in encoded]}
        if return_offsets_mapping:
            out["offset_mapping"] = [e[1] for e in encoded]
        return out

    def convert_ids_to_tokens(self, ids: int | Sequence[int]) -> str | list[str]:
        if isinstance(ids, int | np.integer):
            return self.symbols[int(ids)]
        return [self.symbols[int(i)] for i in ids]

    def decode(self, ids: Sequence[int], **_: Any) -> str:
        return ("" if self.unit == "char" else " ").join(self.convert_ids_to_tokens(list(ids)))

    def batch_decode(self, batch: Sequence[Sequence[int]], **_: Any) -> list[str]:
        return [self.decode(ids) for ids in batch]


class NGramModel:
    """A word- or character-level n-gram model: MLE, add-k or interpolated Kneser-Ney.

    ``order``: n (1 = unigram, 2 = bigram, ...).  ``smoothing``: ``"mle"`` (relative
    frequencies; an unseen event has probability 0, surprisal infinity), ``"add-k"``
    (``k`` added to every count; ``k=1`` is Laplace) or ``"kneser-ney"`` (interpolated,
    absolute ``discount``, continuation counts for the lower orders, the uniform
    distribution below the unigrams).  ``unit``: ``"word"`` (matches of ``pattern``,
    default whitespace-separated) or ``"char"``.  Words seen fewer than
    ``unk_cutoff`` times in training become ``<UNK>``.
    """

    def __init__(self, order: int, smoothing: str = "mle", unit: str = "word", k: float = 1.0,
                 *, discount: float = 0.75, unk_cutoff: int = 1,
                 pattern: str = DEFAULT_WORD_PATTERN) -> None:
        if isinstance(order, bool) or not isinstance(order, int | np.integer) or order < 1:
            raise ValueError(f"order must be an integer >= 1 (1 = unigram, 2 = bigram), "
                             f"got {order!r}")
        if smoothing not in SMOOTHINGS:
            raise ValueError(f"smoothing must be one of {', '.join(SMOOTHINGS)}; "
                             f"got {smoothing!r}")
        if unit not in UNITS:
            raise ValueError(f"unit must be 'word' or 'char', got {unit!r}")
        if not (isinstance(k, int | float) and k > 0 and math.isfinite(k)):
            raise ValueError(f"k must be a positive number (add-k adds k to every count), "
                             f"got {k!r}")
        if not (isinstance(discount, int | float) and 0 < discount <= 1):
            raise ValueError(f"discount must satisfy 0 < discount <= 1, got {discount!r}")
        if isinstance(unk_cutoff, bool) or not isinstance(unk_cutoff, int) or unk_cutoff < 1:
            raise ValueError(f"unk_cutoff must be an integer >= 1, got {unk_cutoff!r}")
        re.compile(pattern)
        self.order, self.smoothing, self.unit = int(order), smoothing, unit
        self.k, self.discount, self.unk_cutoff, self.pattern = float(k), float(discount), \
            unk_cutoff, pattern
        self.symbols: list[str] = [UNK, START, END]
        self.tokenizer = NGramTokenizer(self.symbols, unit, pattern)
        self.n_sentences = 0
        self._counts: list[dict[tuple, Counter]] = []  # [m]: context (m symbols) -> next
        self._cont: list[dict[tuple, Counter]] = []  # continuation counts N1+(. c w)
        self._tables: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
        self._cache: OrderedDict[tuple, dict[str, Any]] = OrderedDict()

    # ---- fitting ---------------------------------------------------------
    def fit(self, sentences: str | Iterable[str]) -> NGramModel:
        """Count n-grams of ``sentences`` (a list of strings, or one text with one
        sentence per line; a line break always ends a sentence).  Returns the model."""
        if isinstance(sentences, str):
            sentences = [sentences]
        try:
            items = list(sentences)
        except TypeError:
            raise TypeError("fit() takes a list of sentences (strings) or one text, one "
                            f"sentence per line; got {type(sentences).__name__}") from None
        lines: list[list[str]] = []
        for i, s in enumerate(items):
            if not isinstance(s, str):
                raise TypeError(f"sentence {i} is a {type(s).__name__}, not a str")
            for line in _LINE_BREAK.split(s):
                seg = [sym for sym, _, _ in self.tokenizer.segment(line)]
                if seg:
                    lines.append(seg)
        if not lines:
            raise ValueError("fit() needs at least one non-empty sentence")
        freq = Counter(w for line in lines for w in line)
        kept = sorted((w for w, c in freq.items() if c >= self.unk_cutoff and w not in
                       (UNK, START, END)), key=lambda w: (-freq[w], w))
        self.symbols[:] = [UNK, START, END, *kept]
        self.tokenizer = NGramTokenizer(self.symbols, self.unit, self.pattern)
        index = self.tokenizer._index
        n = self.order
        counts: list[dict[tuple, Counter]] = [{} for _ in range(n)]
        for line in lines:
            seq = [START_ID] * (n - 1) + [index.get(w, UNK_ID) for w in line] + [END_ID]
            for t in range(n - 1, len(seq)):
                for m in range(n):  # context of m symbols
                    counts[m].setdefault(tuple(seq[t - m:t]), Counter())[seq[t]] += 1
        cont: list[dict[tuple, Counter]] = [{} for _ in range(n)]
        for m in range(1, n):  # N1+(. c w): distinct symbols before c w
            for ctx, nxt in counts[m].items():
                table = cont[m - 1].setdefault(ctx[1:], Counter())
                for w in nxt:
                    table[w] += 1
        self._counts, self._cont = counts, cont
        self._tables, self._cache = {}, OrderedDict()
        self.n_sentences = len(lines)
        return self

    @property
    def fitted(self) -> bool:
        return bool(self._counts)

    def _check_fitted(self) -> None:
        if not self.fitted:
            raise ValueError("this NGramModel is not fitted: call .fit(sentences) first")

    # ---- what the scorer reads -----------------------------------------
    @property
    def name(self) -> str:
        kind = _ORDER_NAMES.get(self.order, f"{self.order}-gram")
        smooth = {"mle": "MLE", "add-k": f"add-{self.k:g}", "kneser-ney": "Kneser-Ney"}
        return f"{kind} {smooth[self.smoothing]} ({self.unit}s)"

    @property
    def device(self) -> Any:
        import torch

        return torch.device("cpu")

    dtype = "float64"
    #: An n-gram model reads only the last order-1 symbols: no limit on the input.
    context_length = None
    #: ... and no window worth showing: views leave out the window, device and dtype
    #: (``settings["windowless"]``) and the window controls
    windowless = True

    def default_max_length(self) -> int:
        return 1024

    @property
    def vocab_size(self) -> int:
        """Outcomes: the training words, ``</s>`` and ``<UNK>`` (not ``<s>``)."""
        return len(self.symbols) - 1

    def make_forward(self, top_k: int, max_length: int | None = None) -> NGramForward:
        """The forward of one run (an n-gram reads no more than ``order - 1`` symbols
        back, whatever the window length)."""
        self._check_fitted()
        return NGramForward(self, min(top_k, self.vocab_size))

    # ---- probabilities ---------------------------------------------------
    def _ids(self, symbols: Sequence[str]) -> tuple[int, ...]:
        index = self.tokenizer._index
        return tuple(index.get(s, UNK_ID) for s in symbols)

    def _split(self, context: str | Sequence[str]) -> list[str]:
        if isinstance(context, str):
            return [s or END for s, _, _ in self.tokenizer.segment(context)]
        return list(context)

    def prob(self, word: str, context: str | Sequence[str] = ()) -> float:
        """P(word | context).  ``context``: symbols (a list) or a string segmented like
        a text; write ``"<s>"`` for START, ``"</s>"`` for END.  Only the last
        ``order - 1`` symbols are used; a context starting with ``<s>`` is padded."""
        self._check_fitted()
        ctx = self._context(list(self._ids(self._split(context))))
        wid = self._ids([word])[0]
        return float(self._stats(ctx)["p"][wid])

    def distribution(self, context: str | Sequence[str] = ()) -> dict[str, float]:
        """The predictive distribution after ``context``, most probable first."""
        self._check_fitted()
        p = self._stats(self._context(list(self._ids(self._split(context)))))["p"]
        order = np.argsort(-p, kind="stable")
        return {self.symbols[i]: float(p[i]) for i in order if i != START_ID}

    def count(self, ngram: str | Sequence[str]) -> int:
        """How often the n-gram (up to ``order`` symbols) occurred in training."""
        self._check_fitted()
        ids = self._ids(self._split(ngram))
        if not 1 <= len(ids) <= self.order:
            raise ValueError(f"an n-gram of this model has 1 to {self.order} symbols, "
                             f"got {len(ids)}")
        return self._counts[len(ids) - 1].get(ids[:-1], Counter())[ids[-1]]

    def _context(self, ctx: list[int]) -> tuple[int, ...]:
        """The n-gram context of a run of preceding ids: after the last END the
        sentence restarts at START; a context that begins at START is padded."""
        n = self.order
        if n == 1:
            return ()
        if END_ID in ctx:
            cut = len(ctx) - 1 - ctx[::-1].index(END_ID)
            ctx = [START_ID] + ctx[cut + 1:]
        if ctx and ctx[0] == START_ID and len(ctx) < n - 1:
            ctx = [START_ID] * (n - 1 - len(ctx)) + ctx
        return tuple(ctx[-(n - 1):])

    def _table(self, m: int, ctx: tuple, raw: bool) -> tuple[np.ndarray, np.ndarray] | None:
        key = (m, ctx, raw)
        if key not in self._tables:
            nxt = (self._counts if raw else self._cont)[m].get(ctx)
            self._tables[key] = (None if not nxt else
                                 (np.fromiter(nxt.keys(), np.int64, len(nxt)),
                                  np.fromiter(nxt.values(), np.float64, len(nxt))))
        return self._tables[key]

    def _vector(self, ctx: tuple, top: bool = True) -> np.ndarray | None:
        """P(. | ctx) over all symbols (START's entry 0); None: MLE, unseen context."""
        size = len(self.symbols)
        outcomes = size - 1
        table = self._table(len(ctx), ctx, raw=top or self.smoothing != "kneser-ney")
        if self.smoothing == "mle":
            if table is None:
                return None
            p = np.zeros(size)
            p[table[0]] = table[1] / table[1].sum()
            return p
        if self.smoothing == "add-k":
            p = np.full(size, self.k)
            p[START_ID] = 0.0
            total = 0.0
            if table is not None:
                p[table[0]] += table[1]
                total = table[1].sum()
            return p / (total + self.k * outcomes)
        # interpolated Kneser-Ney: raw counts at the top, continuation counts below
        if ctx:
            lower = self._vector(ctx[1:], top=False)
        else:
            lower = np.full(size, 1.0 / outcomes)
            lower[START_ID] = 0.0
        if table is None:
            return lower  # unseen context: all weight on the lower order
        ids, c = table
        total = c.sum()
        d = self.discount
        p = (d * len(ids) / total) * lower
        p[ids] += np.maximum(c - d, 0.0) / total
        return p

    def _stats(self, ctx: tuple) -> dict[str, Any]:
        """Distribution, entropy, sorted probabilities and top list of one context."""
        hit = self._cache.get(ctx)
        if hit is not None:
            self._cache.move_to_end(ctx)
            return hit
        p = self._vector(ctx)
        if p is None:  # MLE, context never seen: no distribution (0/0)
            p = np.zeros(len(self.symbols))
            entropy = math.nan
        else:
            nz = p[p > 0]
            entropy = float(-(nz * np.log(nz)).sum())
        order = np.argsort(-p, kind="stable")
        order = order[order != START_ID]
        stats = {"p": p, "entropy": entropy, "order": order, "desc": -p[order]}
        self._cache[ctx] = stats
        if len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return stats

    def __repr__(self) -> str:
        state = (f"{self.n_sentences} sentences, vocabulary {self.vocab_size}" if self.fitted
                 else "not fitted")
        return f"<NGramModel {self.name}: {state}>"


class NGramForward(HostForward):
    """The scorer's forward for an ``NGramModel``: per target, the distribution given
    the last ``order - 1`` symbols inside the window."""

    def __init__(self, lm: NGramModel, top_k: int):
        self.lm = lm
        self.top_k = top_k

    def score_batch(self, sequence: Any, batch: list[Any]) -> dict[str, np.ndarray]:
        seq = np.asarray(sequence.cpu() if hasattr(sequence, "cpu") else sequence, np.int64)
        lm, k = self.lm, self.top_k
        outcomes = lm.vocab_size
        rows: dict[str, list] = {key: [] for key in ("surprisal", "entropy", "rank",
                                                     "topk_ids", "topk_probs",
                                                     "context_length")}
        for w in batch:
            for t in range(w.target_start, w.target_end):
                lo = max(w.input_start, t - (lm.order - 1))
                stats = lm._stats(lm._context(seq[lo:t].tolist()))
                target = int(seq[t])
                p_t = stats["p"][target]
                if p_t > 0:  # rank: 1 + symbols strictly more probable
                    rank = int(np.searchsorted(stats["desc"], -p_t, "left")) + 1
                else:  # probability 0: tied last
                    rank = outcomes
                top = stats["order"][:k]
                rows["surprisal"].append(0.0 - math.log(p_t) if p_t > 0 else math.inf)
                rows["entropy"].append(stats["entropy"])
                rows["rank"].append(rank)
                rows["topk_ids"].append(top)
                rows["topk_probs"].append(stats["p"][top])
                rows["context_length"].append(t - lo)
        out = {key: np.asarray(v) for key, v in rows.items()}
        n = len(out["surprisal"])
        out["topk_ids"] = np.asarray(rows["topk_ids"], np.int64).reshape(n, k)
        out["topk_probs"] = np.asarray(rows["topk_probs"], np.float64).reshape(n, k)
        return out
