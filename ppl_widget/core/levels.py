"""Words, sentences, lines and paragraphs, and which scored token belongs to which.

Pure numpy (pandas only inside ``level_frame``).

The rule, one implementation for tables, the widget and comparisons: a token
belongs to the unit holding its first non-whitespace character.  A token made
only of whitespace belongs to the unit it lies in (a space inside a sentence),
else to the next unit (with tokenizers that attach the space to the following
word, predicting the space is part of predicting that word).  A token holding
only the tail bytes of a character (an empty span) goes with the token before
it.  Tokens with no such unit (trailing whitespace, a non-space character
outside every unit of a custom pattern, EOS) get -1: they are listed as
"outside", and a level's surprisals plus the outside tokens' add up to the
total NLL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .extras import MissingExtraError
from .metrics import LN2, objective_labels
from .reading.word_frequency import zipf_frequencies
from .sentences import SentenceSpec, line_spans, paragraph_spans, sentence_spans
from .text_units import WordSpec, whitespace_mask, word_spans  # noqa: F401  (word_spans: public)

if TYPE_CHECKING:
    import pandas as pd

    from .tokens import ScoredTokens

LEVELS = ("token", "word", "sentence", "line", "paragraph")


def unit_spans(text: str, level: str, *, words: WordSpec = None,
               sentences: SentenceSpec = None) -> np.ndarray:
    """(n, 2) code-point spans of the units of ``level``, in text order."""
    if level == "word":
        return word_spans(text, words)
    if level == "sentence":
        return sentence_spans(text, sentences)
    if level == "line":
        return line_spans(text)
    if level == "paragraph":
        return paragraph_spans(text)
    raise ValueError(f"level must be one of {', '.join(LEVELS)}; got {level!r}")


def _next_non_space(text: str) -> np.ndarray:
    """``nxt[i]`` = the first index >= i holding a non-whitespace character (len if none)."""
    n = len(text)
    is_text = ~whitespace_mask(text)
    idx = np.where(is_text, np.arange(n), n)
    nxt = np.minimum.accumulate(idx[::-1])[::-1] if n else idx
    return np.append(nxt, n)


def assign_tokens(text: str, offsets: np.ndarray, spans: np.ndarray,
                  is_eos: np.ndarray | None = None) -> np.ndarray:
    """Index of the unit each token belongs to (see the module's rule), or -1."""
    offsets = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    n = len(offsets)
    out = np.full(n, -1, dtype=np.int64)
    if n == 0 or len(spans) == 0:
        return out
    s, e = offsets[:, 0], offsets[:, 1]
    first = _next_non_space(text)[s]
    has_text = first < e
    # the unit holding the first non-whitespace character, if any holds it
    k = np.searchsorted(spans[:, 0], first, side="right") - 1
    inside = (k >= 0) & (first < spans[np.maximum(k, 0), 1])
    out[has_text & inside] = k[has_text & inside]
    # whitespace-only tokens: the unit they lie in (a space inside a sentence), else the
    # first unit starting at or after the token's end (the space before a word)
    blank = ~has_text & (e > s)
    k = np.searchsorted(spans[:, 0], s, side="right") - 1
    within = blank & (k >= 0) & (s < spans[np.maximum(k, 0), 1])
    out[within] = k[within]
    nxt = np.searchsorted(spans[:, 0], e, side="left")
    ahead = blank & ~within & (nxt < len(spans))
    out[ahead] = nxt[ahead]
    # empty spans (tail bytes of a character) go with the token before them
    for i in np.flatnonzero(s == e):
        out[i] = out[i - 1] if i > 0 else -1
    if is_eos is not None:
        out[np.asarray(is_eos, dtype=bool)] = -1
    return out


def _per_unit_ppl(nll: np.ndarray, counts: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(counts > 0, np.exp(nll / np.maximum(counts, 1)), np.nan)


def level_frame(result: ScoredTokens, level: str = "token", *, words: WordSpec = None,
                sentences: SentenceSpec = None, unigram: Any = None,
                log_freq: bool | None = None, language: str = "en",
                bow_correction: bool = False) -> pd.DataFrame:
    """One row per unit of ``level`` in text order (see ``ScoreResult.to_frame``)."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}; got {level!r}")
    if bow_correction and level != "word":
        raise ValueError("bow_correction applies to the word level: use to_frame('word', "
                         "bow_correction=True)")
    if log_freq and level != "word":
        raise ValueError("log_freq (word frequency) applies to the word level")
    if level == "token":
        frame = _token_frame(result)
        owner = np.arange(len(result))
    else:
        frame, owner = _unit_frame(result, level, words, sentences)
    if unigram is not None:
        _add_unigram(frame, result, owner, unigram)
    if level == "word" and log_freq is not False:
        _add_log_freq(frame, language, required=bool(log_freq))
    if bow_correction:
        from .word_probability import corrected_word_surprisal

        frame["surprisal_corrected"] = corrected_word_surprisal(result, owner, len(frame))
        frame["surprisal_corrected_bits"] = frame["surprisal_corrected"] / LN2
    _name_measure(frame, getattr(result, "settings", None))
    return frame


def _name_measure(frame: pd.DataFrame, settings: Any) -> None:
    """Say what the numbers are (core/metrics.py): ``attrs["measure"]`` (surprisal or
    pseudo-surprisal) and ``attrs["objective"]``; a PLL table also names it over its
    columns, where a printed table shows it (the column names stay those of every table)."""
    labels = objective_labels(settings)
    frame.attrs.update(objective=labels["objective"], measure=labels["surprisal"])
    if labels["pseudo"]:
        frame.attrs["pll_metric"] = labels["pll_metric"]
        frame.columns.name = f"{labels['surprisal']} ({labels['metric']})"


def _add_unigram(frame: pd.DataFrame, result: ScoredTokens, owner: np.ndarray,
                 unigram: Any) -> None:
    """Unigram NLL, PPL and PPLu per unit, and their ranks (1 = lowest perplexity)."""
    from .unigram import as_unigram

    u = as_unigram(unigram, result.tokenizer, text=result.text)
    lp = u.log_prob(result.token_ids)
    inside = owner >= 0
    uni_nll = np.bincount(owner[inside], weights=-lp[inside], minlength=len(frame))
    n = frame["n_tokens"].to_numpy()
    s = frame["surprisal"].to_numpy()
    frame["unigram_nll"] = uni_nll
    frame["unigram_ppl"] = _per_unit_ppl(uni_nll, n)
    frame["pplu"] = _per_unit_ppl(s - uni_nll, n)
    if frame.attrs.get("level") == "token":
        frame["context_gain"] = uni_nll - s  # log P(w|context) - log P_uni(w), nats
    frame["ppl_rank"] = frame["token_ppl"].rank(method="min").astype("Int64")
    frame["pplu_rank"] = frame["pplu"].rank(method="min").astype("Int64")
    frame.attrs["unigram"] = "in-sample" if u.in_sample else u.source


def _add_log_freq(frame: pd.DataFrame, language: str, *, required: bool) -> None:
    """Zipf frequency (log10 per billion words, wordfreq) of each word, as psycholinguists
    put it beside surprisal; 0 for words wordfreq does not know."""
    try:
        cache = zipf_frequencies(frame["text"].unique(), language, purpose="log_freq")
    except MissingExtraError:
        if required:
            raise
        return
    frame["log_freq"] = frame["text"].map(cache)
    frame.attrs["log_freq"] = f"wordfreq Zipf frequency ({language})"


def _unit_frame(result: ScoredTokens, level: str, words: WordSpec,
                sentences: SentenceSpec) -> tuple[pd.DataFrame, np.ndarray]:
    import pandas as pd

    spans = unit_spans(result.text, level, words=words, sentences=sentences)
    owner = assign_tokens(result.text, result.offsets, spans, result.is_eos)
    n_units = len(spans)
    inside = owner >= 0
    nll = np.bincount(owner[inside], weights=result.surprisal[inside], minlength=n_units)
    n_tokens = np.bincount(owner[inside], minlength=n_units)
    units = np.stack([np.bincount(owner[inside], weights=result.units[inside, c],
                                  minlength=n_units) for c in range(3)], axis=1).astype(np.int64)
    first_token = np.full(n_units, -1, dtype=np.int64)
    if inside.any():
        idx = np.flatnonzero(inside)[::-1]  # reversed: the first assignment wins below
        first_token[owner[idx]] = idx
    frame = pd.DataFrame({
        "text": [result.text[a:b] for a, b in spans.tolist()],
        "start": spans[:, 0], "end": spans[:, 1],
        "surprisal": nll, "surprisal_bits": nll / LN2,
        "n_tokens": n_tokens, "n_words": units[:, 0], "n_chars": units[:, 1],
        "n_bytes": units[:, 2],
        "token_ppl": _per_unit_ppl(nll, n_tokens), "word_ppl": _per_unit_ppl(nll, units[:, 0]),
        "char_ppl": _per_unit_ppl(nll, units[:, 1]), "byte_ppl": _per_unit_ppl(nll, units[:, 2]),
        "first_token": first_token,
    })
    frame.index.name = level
    # the scored tokens of no unit of this level: with these, surprisals add up to the total
    frame.attrs["outside"] = outside_tokens(result, owner)
    frame.attrs["level"] = level
    frame.attrs["conventions"] = result.conventions()
    return frame, owner


def outside_tokens(result: ScoredTokens, owner: np.ndarray) -> list[dict[str, Any]]:
    """The scored tokens that belong to no unit, with why."""
    rows = []
    tokens = result.tokens
    for i in np.flatnonzero(owner < 0).tolist():
        reason = "EOS" if result.is_eos[i] else "whitespace or text outside every unit"
        rows.append({"token": i, "text": tokens[i], "surprisal": float(result.surprisal[i]),
                     "reason": reason})
    return rows


def _token_frame(result: ScoredTokens) -> pd.DataFrame:
    import pandas as pd

    s = result.surprisal
    units = result.units
    top1 = [result.vocab.get(int(t), f"<{int(t)}>") for t in result.topk_ids[:, 0]] \
        if result.topk_ids.shape[1] else [None] * len(result)
    frame = pd.DataFrame({
        "text": result.tokens,
        "start": result.offsets[:, 0], "end": result.offsets[:, 1],
        "surprisal": s, "surprisal_bits": s / LN2,
        "n_tokens": np.ones(len(result), dtype=np.int64),
        "n_words": units[:, 0], "n_chars": units[:, 1], "n_bytes": units[:, 2],
        "token_ppl": np.exp(s), "word_ppl": _per_unit_ppl(s, units[:, 0]),
        "char_ppl": _per_unit_ppl(s, units[:, 1]), "byte_ppl": _per_unit_ppl(s, units[:, 2]),
        "token_id": result.token_ids, "probability": result.probability,
        "entropy": result.entropy, "entropy_bits": result.entropy / LN2, "rank": result.rank,
        "context_length": result.context_length,
        "top1": top1,
        "top1_prob": result.topk_probs[:, 0] if result.topk_probs.shape[1] else np.nan,
        "is_eos": result.is_eos,
    })
    if "bow_prob" in getattr(result, "__dataclass_fields__", {}):
        frame["bow_prob"] = result.bow_prob
    frame.index.name = "token"
    frame.attrs["outside"] = [{"token": None, "text": result.text[a:b], "surprisal": None,
                               "reason": "unscored (no prefix token)"}
                              for a, b in result.unscored_offsets.tolist()]
    frame.attrs["level"] = "token"
    frame.attrs["conventions"] = result.conventions()
    return frame
