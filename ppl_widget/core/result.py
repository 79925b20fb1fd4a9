"""The scored text: per-token arrays and the metrics derived from them.

Pure numpy: a result can be saved, loaded and summarised without torch.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .jsonable import float_of_json, json_safe
from .metrics import (
    LN2,
    is_pll,
    objective_metrics,
    pseudo_note,
    summarize,
    unigram_normalized_perplexity,
)
from .providers import provider
from .text_units import TextUnits
from .tokens import TOKEN_ARRAYS, empty_token_arrays, tokens_in_span  # importable here too
from .validation import as_count


def model_ref(model: Any) -> Callable[[], Any]:
    """What a result keeps of its model: a weak reference (a kept result never keeps a model
    in memory); an object that takes none is kept as it is."""
    try:
        return weakref.ref(model)
    except TypeError:
        return lambda: model


@dataclass(eq=False)
class ScoreResult:
    """Surprisal of every scored token of ``text``, in text order.

    Arrays (numpy, one row per scored token): ``token_ids``, ``offsets``
    (character spans into ``text``; together with ``unscored_offsets`` they
    tile the text, so every character belongs to exactly one token),
    ``surprisal`` (nats), ``entropy`` (nats), ``rank``, ``context_length``,
    ``topk_ids``/``topk_probs``, ``units`` (words, chars, bytes attributed to
    each token) and ``is_eos``.  ``context``: what the model read before ``text``
    (read, not scored; ``settings["context_tokens"]`` counts the tokens read before the
    first scored one, ``settings["context_bos"]`` says whether a BOS is among them).
    ``probability`` and ``surprisal_bits`` are derived.  ``vocab`` maps every
    token id in the result (targets and alternatives) to its decoded text.
    """

    text: str
    token_ids: np.ndarray
    offsets: np.ndarray
    surprisal: np.ndarray
    entropy: np.ndarray
    rank: np.ndarray
    context_length: np.ndarray
    topk_ids: np.ndarray
    topk_probs: np.ndarray
    units: np.ndarray
    is_eos: np.ndarray
    bow_prob: np.ndarray | None = None  # NaN per token when not given
    vocab: dict[int, str] = field(default_factory=dict)
    unscored_token_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    unscored_offsets: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    settings: dict[str, Any] = field(default_factory=dict)
    partial: bool = False
    total_tokens: int | None = None  # targets the full run would score
    elapsed_s: float = 0.0
    bow_prob_end: float = float("nan")  # b after the last token (word ends there?)
    # what the model read before ``text`` (a string, or a chat: a list of messages);
    # ``context + text`` is what was read when the context is a string
    context: str | list[dict[str, str]] | None = None
    # the scoring model's tokenizer, when scored in this process (not saved)
    tokenizer: Any = field(default=None, repr=False)
    # a weak reference to the scoring model, when scored in this process (not saved, not
    # pickled): what ``explain`` and ``context_curve`` rescore with. Weak, so that a kept
    # result never keeps a model in memory (compare() frees each model before the next)
    model: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.bow_prob is None:
            self.bow_prob = np.full(len(np.asarray(self.token_ids)), np.nan)
        for name, dtype in TOKEN_ARRAYS.items():
            setattr(self, name, np.asarray(getattr(self, name), dtype=dtype))
        self.unscored_token_ids = np.asarray(self.unscored_token_ids, dtype=np.int64)
        self.unscored_offsets = np.asarray(self.unscored_offsets, dtype=np.int64).reshape(-1, 2)
        n = len(self.token_ids)
        for name in TOKEN_ARRAYS:
            if len(getattr(self, name)) != n:
                raise ValueError(f"per-token array {name!r} has {len(getattr(self, name))} rows, "
                                 f"expected {n} (one per scored token)")
        if self.total_tokens is None:
            self.total_tokens = n

    # ---- per-token views -------------------------------------------------
    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def probability(self) -> np.ndarray:
        return np.exp(-self.surprisal)

    @property
    def surprisal_bits(self) -> np.ndarray:
        return self.surprisal / LN2

    @property
    def entropy_bits(self) -> np.ndarray:
        return self.entropy / LN2

    @property
    def tokens(self) -> list[str]:
        """Each scored token's text: its span of ``text`` (the EOS token's own string)."""
        out = []
        for i, (s, e) in enumerate(self.offsets):
            out.append(self.vocab.get(int(self.token_ids[i]), "") if self.is_eos[i]
                       else self.text[s:e])
        return out

    def top_k(self, i: int) -> list[tuple[str, float]]:
        """The most probable alternatives for token ``i``, decoded, with probabilities."""
        return [(self.vocab.get(int(t), f"<{int(t)}>"), float(p))
                for t, p in zip(self.topk_ids[i], self.topk_probs[i], strict=True)]

    # ---- metrics ---------------------------------------------------------
    @cached_property
    def _cumulative(self) -> tuple[np.ndarray, np.ndarray]:
        zero = np.zeros(1)
        nll = np.concatenate([zero, np.cumsum(self.surprisal, dtype=np.float64)])
        units = np.concatenate([np.zeros((1, 3), np.int64), np.cumsum(self.units, axis=0)])
        return nll, units

    def _metrics_of(self, i: int, j: int) -> dict[str, Any]:
        nll, units = self._cumulative
        w, c, b = (units[j] - units[i]).tolist()
        out = summarize(nll[j] - nll[i], j - i, w, c, b)
        n_eos = int(self.is_eos[i:j].sum())
        out.update(n_eos=n_eos, n_unscored_tokens=len(self.unscored_token_ids),
                   partial=self.partial, **objective_metrics(self.settings))
        return out

    def metrics(self, *, upto: int | None = None, span: tuple[int, int] | None = None,
                unigram: Any = None, ci: float | None = None, n_boot: int = 1000,
                seed: int | None = 0, blocks: Any = "sentence") -> dict:
        """Total NLL, unit counts and perplexities of the scored tokens.

        ``upto=k``: over the first ``k`` scored tokens (running values).
        ``span=(a, b)``: over the tokens overlapping characters ``[a, b)``
        (a token that holds only the tail of a character, and EOS, go with
        the token before them).  Denominators count the units of the scored
        text (a word counts where it starts), plus one of each for a scored
        EOS; keys ``n_eos`` and ``n_unscored_tokens`` state the conventions.  A result
        scored by pseudo-log-likelihood (a masked LM) keeps these keys and adds
        ``objective="pll"``, ``pll_metric`` and ``perplexity_label="pseudo-perplexity"``
        (``core/metrics.py``).

        ``unigram=``: a ``Unigram`` (or a text / list of texts, counted with this
        result's tokenizer) adds ``pplu`` and ``unigram_ppl``.  ``ci=0.95`` adds
        bootstrap intervals ``<key>_ci`` = (lo, hi) for every perplexity and bits per
        unit, resampling ``blocks`` (sentences by default; see ``core/statistics.py``).
        """
        if upto is not None and span is not None:
            raise ValueError("pass either upto= or span=, not both")
        if span is not None:
            i, j = self.token_range(*span)
        elif upto is None:
            i, j = 0, len(self)
        else:
            upto = as_count("upto", upto)
            if not 0 <= upto <= len(self):
                raise ValueError(f"upto must be between 0 and the {len(self)} scored tokens, "
                                 f"got {upto}")
            i, j = 0, upto
        out = self._metrics_of(i, j)
        if unigram is not None:
            from .unigram import as_unigram, unigram_metrics

            u = as_unigram(unigram, self.tokenizer, text=self.text)
            out.update(unigram_metrics(self.surprisal[i:j], self.token_ids[i:j], u))
        if ci is not None:
            from .statistics import interval_metrics

            out.update(interval_metrics(self, i, j, ci=ci, n_boot=n_boot, seed=seed,
                                        blocks=blocks))
        return out

    def token_range(self, a: int, b: int) -> tuple[int, int]:
        """Scored tokens ``[i, j)`` overlapping the character span ``[a, b)``."""
        a, b = as_count("span start", a), as_count("span end", b)
        if not 0 <= a <= b <= len(self.text):
            raise ValueError(f"span must satisfy 0 <= start <= end <= len(text)={len(self.text)}, "
                             f"got ({a}, {b})")
        return tokens_in_span(self.offsets, a, b, len(self.text))

    def running_perplexity(self, unit: str = "token") -> np.ndarray:
        """Perplexity after each scored token, per ``unit`` (token/word/char/byte)."""
        nll, units = self._cumulative
        if unit == "token":
            denom = np.arange(len(nll), dtype=np.float64)
        else:
            col = {"word": 0, "char": 1, "byte": 2}.get(unit)
            if col is None:
                raise ValueError(f"unit must be one of token, word, char, byte; got {unit!r}")
            denom = units[:, col].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.exp(nll[1:] / denom[1:])

    def unigram_normalized_ppl(self, unigram_probs: np.ndarray) -> float:
        """PPLu given unigram probabilities indexed by token id (a vocab-sized array)."""
        p = np.asarray(unigram_probs, dtype=np.float64)
        if self.token_ids.size and self.token_ids.max() >= len(p):
            raise ValueError("unigram_probs needs an entry for every token id in the vocabulary")
        with np.errstate(divide="ignore"):
            return unigram_normalized_perplexity(self.surprisal, np.log(p[self.token_ids]))

    def context_gain(self, unigram: Any) -> np.ndarray:
        """Per scored token, ``log P(w|context) - log P_uni(w)`` in nats: how much the
        context helped over the unigram (``unigram`` as for ``metrics``)."""
        from .unigram import as_unigram

        u = as_unigram(unigram, self.tokenizer, text=self.text)
        return -self.surprisal - u.log_prob(self.token_ids)

    def to_frame(self, level: str = "token", *, words: Any = None, sentences: Any = None,
                 **options: Any) -> Any:
        """A pandas DataFrame, one row per unit of ``level`` in text order.

        ``level``: token, word, sentence, line or paragraph.  Columns: text, start,
        end (character offsets), surprisal (nats), surprisal_bits, n_tokens, the unit
        counts attributed to the unit's tokens (n_words, n_chars, n_bytes) and the
        unit's perplexity per token, word, character and byte; token level adds
        every per-token array.  A token belongs to the unit holding its first
        non-whitespace character, a whitespace-only token to the next unit;
        ``frame.attrs["outside"]`` lists the tokens of no unit, so the rows'
        surprisals plus theirs equal the total NLL.  See ``core/levels.py``.

        Options: ``unigram=`` adds unigram NLL, PPL, PPLu and ranks (and per-token
        ``context_gain``); word level adds ``log_freq`` (wordfreq's Zipf scale,
        ``language="en"``) when wordfreq is installed; ``bow_correction=True`` adds the
        word probability corrected for leading whitespace (``surprisal_corrected``).
        """
        from .levels import level_frame

        return level_frame(self, level, words=words, sentences=sentences, **options)

    def conventions(self) -> str:
        """The counting conventions in one line, for labels and screenshots."""
        s = self.settings
        protocol = s.get("protocol", "exact")
        first = (f"protocol {protocol}: {len(self.unscored_token_ids)} tokens not scored by "
                 f"the protocol" if protocol != "exact" else
                 pseudo_note(s) + ", special tokens read, not scored" if is_pll(s) else
                 "first token scored after the context" if self.context is not None else
                 "first token scored after the prefix token"
                 if s.get("prefix") == "bos" else
                 f"{len(self.unscored_token_ids)} first token(s) unscored (no prefix)")
        eos = "EOS scored (+1 unit in every denominator)" if self.is_eos.any() else "no EOS"
        given = (f" · given a context of {s.get('context_tokens')} tokens"
                 f"{context_bos_note(s)}" if self.context is not None else "")
        every = " · prefix token in every window" if s.get("prefix_every_window") else ""
        return (f"{s.get('model', '?')} · max_length {s.get('max_length')} · "
                f"stride {s.get('stride')} · {first}{every} · {eos}{given}")

    def protocol_report(self) -> dict[str, Any]:
        """What the protocol's tool reports for this text, beside this result's own
        perplexity over the same scored tokens (``core/protocols.py``): llama.cpp's
        running perplexity after each chunk; the transformers guide's miscounted number
        (``guide_reported_ppl``) beside the right one (``token_ppl``)."""
        from .protocols import protocol_report

        return protocol_report(self)

    # ---- why a token is surprising (scoring/analyses/explain.py) ----------
    def explain(self, *, token: int | None = None, word: int | None = None,
                unit: Any = "word", method: str = "occlusion", lm: Any = None) -> Any:
        """Attribute the surprisal of token ``token`` (or word ``word``) to the units of
        its context, under this result's settings, with its model (or ``lm``): an
        ``Explanation`` (``ppl_widget.explain``; docs/explain.md)."""
        return provider("explain")(self.text, self._model_for("explain", lm), token=token,
                                   word=word, unit=unit, method=method,
                                   **explain_settings(self))

    def context_curve(self, *, token: int | None = None, word: int | None = None,
                      lengths: Any = None, lm: Any = None) -> Any:
        """The target's surprisal given only its last ``k`` context tokens, under this
        result's settings (``ppl_widget.context_curve``; docs/explain.md)."""
        return provider("context_curve")(self.text, self._model_for("context_curve", lm),
                                         token=token, word=word, lengths=lengths,
                                         **explain_settings(self))

    def _model_for(self, what: str, lm: Any) -> Any:
        if lm is not None:
            return lm
        if self.model is None:
            raise ValueError(f"{what}() rescores the text with its model, and this result "
                             "does not hold one (loaded from a file, or built by hand): "
                             f"pass lm=, the model it was scored with")
        model = self.model()
        if model is None:
            raise ValueError(f"{what}() rescores the text with its model, which is no longer "
                             "in memory (a result does not keep its model alive): pass lm=, "
                             "the model it was scored with")
        return model

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "model": None}  # a pickled result never carries a model

    # ---- building and saving ---------------------------------------------
    @classmethod
    def from_parts(cls, text: str, parts: list[dict[str, np.ndarray]], top_k: int,
                   **meta: Any) -> ScoreResult:
        """Concatenate per-batch arrays (dicts keyed like ``TOKEN_ARRAYS``)."""
        if parts:
            arrays = {k: np.concatenate([p[k] for p in parts]) for k in TOKEN_ARRAYS}
        else:
            arrays = empty_token_arrays(top_k)
        return cls(text=text, **arrays, **meta)

    def to_dict(self) -> dict[str, Any]:
        """Everything, as JSON-ready Python objects (per-token lists, metrics, settings);
        NaN is null and an infinity the string "Infinity" (``core/jsonable.py``)."""
        return json_safe({
            "text": self.text,
            "settings": self.settings,
            "partial": self.partial,
            "total_tokens": self.total_tokens,
            "elapsed_s": self.elapsed_s,
            "bow_prob_end": self.bow_prob_end,
            "context": self.context,
            "metrics": self.metrics(),
            "conventions": self.conventions(),
            "unscored": {"token_ids": self.unscored_token_ids,
                         "offsets": self.unscored_offsets},
            "tokens": {
                "text": self.tokens,
                **{k: getattr(self, k) for k in TOKEN_ARRAYS},
                "surprisal_bits": self.surprisal_bits,
                "probability": self.probability,
            },
            "vocab": self.vocab,
        })

    def to_json(self, path: str | None = None, **kwargs: Any) -> str:
        data = json.dumps(self.to_dict(), ensure_ascii=False, **kwargs)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(data)
        return data

    def to_html(self, path: Any = None, **view: Any) -> str:
        """One self-contained HTML page showing this result as the widget does (no kernel,
        no network); written to ``path`` when given.  See ``views.export.result_to_html``
        (the views' work: registered with ``core/providers.py`` by the package)."""
        return provider("result_to_html")(self, path, **view)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScoreResult:
        tok = data["tokens"]
        top_k = int(data.get("settings", {}).get("top_k", 0))
        # dtype given: null and "Infinity" read back as NaN and infinities (core/jsonable.py)
        arrays = {k: np.asarray(tok[k], dtype=t) for k, t in TOKEN_ARRAYS.items() if k in tok}
        n = len(arrays["token_ids"])
        arrays.setdefault("bow_prob", np.full(n, np.nan))  # saved before b(i) existed
        for k, cols in (("offsets", 2), ("units", 3), ("topk_ids", top_k), ("topk_probs", top_k)):
            arrays[k] = arrays[k].reshape(n, cols)
        return cls(
            text=data["text"], **arrays,
            vocab={int(k): v for k, v in data.get("vocab", {}).items()},
            unscored_token_ids=data["unscored"]["token_ids"],
            unscored_offsets=data["unscored"]["offsets"],
            settings=data.get("settings", {}), partial=data.get("partial", False),
            total_tokens=data.get("total_tokens"),
            elapsed_s=float_of_json(data.get("elapsed_s", 0.0)),
            bow_prob_end=float_of_json(data.get("bow_prob_end")),
            context=data.get("context"),
        )

    def units_of_text(self, words: Any = None) -> TextUnits:
        return TextUnits.of(self.text, words)

    def __repr__(self) -> str:
        m = self.metrics()
        state = "partial " if self.partial else ""
        pseudo = (f" of pseudo-perplexity (PLL, {m['pll_metric']})" if is_pll(self.settings)
                  else "")
        return (f"<{state}ScoreResult{pseudo}: {m['n_tokens']}/{self.total_tokens} tokens, "
                f"token_ppl={m['token_ppl']:.4g}, word_ppl={m['word_ppl']:.4g}, "
                f"bits_per_byte={m['bits_per_byte']:.4g}>")


def explain_settings(result: ScoreResult) -> dict[str, Any]:
    """The ``score()`` settings a result was scored with, to rescore it the same way."""
    s = result.settings
    words = s.get("words")
    if isinstance(words, str) and words.startswith("<"):  # a callable's repr: not a rule
        raise ValueError("this result was scored with words= a function, which its settings "
                         "cannot hold: call ppl_widget.explain(text, lm, words=...) with it")
    out = {k: s[k] for k in ("max_length", "stride", "prefix", "add_eos",
                             "prefix_every_window", "protocol", "pll_metric") if k in s}
    if words is not None:
        out["words"] = words
    if result.context is not None:
        out["context"] = result.context
    return out


def context_bos_note(settings: dict[str, Any]) -> str:
    """" (BOS included)" / " (no BOS)" after a context's token count; "" where the
    settings do not say (results saved before they did)."""
    bos = settings.get("context_bos")
    return "" if bos is None else " (BOS included)" if bos else " (no BOS)"
