"""``score_pairs``: minimal pairs scored in few forward passes.

Each sentence is laid out as ``score()`` lays it out (the prefix token, then the
sentence's tokens, an EOS with ``add_eos``), so its total equals
``score(sentence, lm, ...)``'s total NLL.  All sentences go through packed forward
passes (``packed.py``); a sentence longer than the window, and every sentence of a
model kind without a transformers body (the n-gram model), is scored by ``score()``.

With a ``context`` column both sentences are continuations of it (the "prefix
method"), split at the seam as lm-evaluation-harness's ``_encode_pair`` does: the
context's trailing whitespace moves to the start of the continuation, the context and
context + continuation are encoded, and the continuation's tokens are the joint
encoding's tokens after the context's.  Only those are scored and counted.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...core.metrics import objective_labels
from ...core.pairs import MAX_SHOWN, SIDES, PairsInputError, add_score_columns, pairs_frame
from ...core.text_units import partition_offsets
from ..kinds.model_kind import kind_run_settings
from ..kinds.models import LoadedModel, as_loaded
from ..runner.context import move_whitespace as split_seam  # the one seam rule (context.py)
from ..runner.encode import encode_many
from ..runner.packed import PACKED_OPTIONS
from ..runner.prepare import check_and_prefix


def score_pairs(pairs: Any, lm: Any = None, **score_options: Any) -> pd.DataFrame:
    """Score minimal pairs: which sentence of each pair does the model prefer?

    ``pairs``: a DataFrame with text columns ``good`` and ``bad`` (every other column is
    kept; an optional ``context`` makes both sentences continuations of it), or an
    iterable of ``(good, bad)`` tuples.  ``lm``: anything ``load_model`` takes.
    ``score_options``: ``max_length``, ``stride``, ``prefix``, ``add_eos`` as ``score()``
    takes them (defaults alike: the first token is scored after the BOS token), and for
    a masked LM ``pll_metric``: each sentence's NLL is then its negated
    pseudo-log-likelihood, and ``correct`` says the grammatical sentence has the higher
    PLL, the accuracy Salazar et al. (2020) report on BLiMP (``frame.attrs["measure"]``).

    Adds, per pair (NLL in nats): ``good_nll``, ``bad_nll`` (total of each sentence,
    equal to ``score(sentence, lm).metrics()["total_nll"]``), ``good_tokens``,
    ``bad_tokens`` (tokens scored), ``delta = bad_nll - good_nll`` and ``correct =
    delta > 0`` (BLiMP's criterion: the grammatical sentence is the more probable);
    and the per-token variant ``good_mean_nll``, ``bad_mean_nll`` (NLL per token),
    ``delta_mean`` and ``correct_mean = delta_mean > 0``.

    Bad input (a missing column, NaN, an empty sentence) raises ``PairsInputError``
    (a ValueError) naming the row.
    """
    pll_metric = score_options.pop("pll_metric", None)
    unknown = sorted(set(score_options) - set(PACKED_OPTIONS))
    if unknown:
        raise TypeError(f"score_pairs takes the score() options {list(PACKED_OPTIONS)} "
                        f"(and pll_metric for a masked LM); got {unknown} (it computes only "
                        "each sentence's NLL)")
    frame = pairs_frame(pairs)
    lm = as_loaded(lm)
    # the kind's rules (a masked LM: its pll_metric; a causal model takes none), checked
    # before anything is scored
    kind = kind_run_settings(lm, pll_metric=pll_metric)
    if kind:
        score_options["pll_metric"] = kind["pll_metric"]
    texts = [t for good, bad in zip(frame["good"], frame["bad"], strict=True)
             for t in (good, bad)]
    contexts = (None if "context" not in frame.columns
                else [c for c in frame["context"] for _ in SIDES])
    kept: dict[str, Any] = {}
    nll, tokens = sentence_nlls(texts, lm, contexts=contexts, keep=kept, **score_options)
    out = add_score_columns(frame, nll, tokens)
    labels = objective_labels(kind)  # a masked LM's NLL is its negated PLL
    out.attrs.update(objective=labels["objective"], measure=labels["nll"],
                     pll_metric=labels["pll_metric"])
    if "pieces" in kept:  # show_pairs colours the tokens from these, scoring nothing again
        out.attrs[TOKEN_PIECES] = TokenPieces(lm, kept["options"], texts, contexts,
                                              kept["pieces"])
    return out


#: ``score_pairs``' frame.attrs key of the scored tokens of its first ``MAX_SHOWN`` pairs
#: (``show_pairs`` sends no more to the front end).
TOKEN_PIECES = "token_pieces"


class TokenPieces:
    """The pieces (``sentence_tokens``' form) of the sentences ``score_pairs`` scored,
    with the model and options that scored them.  Immutable, so pandas' deep copy of a
    frame's attrs on every operation shares it instead of copying it.  The model is held
    weakly (a frame must not keep a model in memory) and checked by identity: an id could
    be reused by another model loaded after this one is freed.  A pickled copy has no
    model, so it never matches one: its frame's tokens are scored again."""

    def __init__(self, lm: Any, options: dict[str, Any], texts: list[str],
                 contexts: list[str] | None, pieces: list[list[tuple[str, float]]]):
        self._model = weakref.ref(lm)  # a LoadedModel: only the packed path keeps pieces
        self.options = dict(options)
        # pieces covers the first MAX_SHOWN pairs' texts only: zip stops where it ends
        self._by_text = {(context, text): tuple(p) for context, text, p
                         in zip(contexts or [""] * len(texts), texts, pieces, strict=False)}

    def __deepcopy__(self, memo: dict[int, Any]) -> TokenPieces:
        return self

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_model": _no_model}

    def lookup(self, texts: list[str], contexts: list[str] | None, lm: Any,
               options: dict[str, Any]) -> list[list[tuple[str, float]]] | None:
        """The pieces of ``texts`` if all were scored by this very ``lm`` with the same
        ``options`` (window resolved as ``sentence_tokens`` resolves it), else None."""
        if self._model() is not lm or options != self.options:
            return None
        keys = [(contexts[i] if contexts else "", t) for i, t in enumerate(texts)]
        if not all(k in self._by_text for k in keys):
            return None
        return [list(self._by_text[k]) for k in keys]


def _no_model() -> None:
    return None


def sentence_nlls(texts: list[str], lm: Any, *, contexts: list[str] | None = None,
                  max_length: int | None = None, stride: int | None = None,
                  prefix: str | None = "bos", add_eos: bool = False,
                  pll_metric: str | None = None,
                  keep: dict[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Total NLL (nats) and number of scored tokens of each text, as ``score()`` gives
    them (given ``contexts[i]`` where there is one: the seam rule above).  A kind other
    than a causal transformers model (a masked LM, an n-gram model, a vLLM server) scores
    each text by ``score()``: its own windows (``pll_metric``: a masked LM's).
    ``keep``: where every text fits one packed window, gets ``pieces`` (each text's, as
    ``sentence_tokens`` gives them, from the same forward passes) and the ``options``."""
    from ..runner.scorer import resolve_window, score

    lm = as_loaded(lm)
    max_length, stride = resolve_window(lm, max_length, stride)
    options = dict(max_length=max_length, stride=stride, prefix=prefix, add_eos=add_eos)
    nll = np.zeros(len(texts), dtype=np.float64)
    tokens = np.zeros(len(texts), dtype=np.int64)
    if not isinstance(lm, LoadedModel):  # another kind (n-gram, vLLM): score() each, with
        # its context where it has one (score's seam rule, the same as the packed layout's)
        for i, text in enumerate(texts):
            context = contexts[i] if contexts is not None and contexts[i] else None
            nll[i], tokens[i] = _score_one(score(text, lm, top_k=0, context=context,
                                                 pll_metric=pll_metric, **options))
        return nll, tokens
    laid = layout(texts, lm, contexts, prefix=prefix, add_eos=add_eos)
    sequences, n_scored = laid.sequences, list(laid.n_scored)
    too_long = [i for i, s in enumerate(sequences) if len(s) - 1 > max_length]
    for i in too_long:  # checked before anything is scored
        if contexts is not None and contexts[i]:
            raise PairsInputError(
                f"row {i // 2}: context + {SIDES[i % 2]} sentence is {len(sequences[i]) - 1} "
                f"tokens, more than max_length={max_length}; pass a larger max_length or "
                "a shorter context")
    for i in too_long:  # longer than one window: score()'s windows
        nll[i], tokens[i] = _score_one(score(texts[i], lm, top_k=0, **options))
        n_scored[i] = 0  # not packed
    from ..runner.packed import PackedNLL

    per_token = PackedNLL(lm).token_nlls(sequences, n_scored)
    # summed in token order from zero, as PackedNLL.nlls sums them
    packed = np.array([np.cumsum(t)[-1] if len(t) else 0.0 for t in per_token])
    fits = np.ones(len(texts), dtype=bool)
    fits[too_long] = False
    nll[fits] = packed[fits]
    tokens[fits] = np.asarray(n_scored, dtype=np.int64)[fits]
    if keep is not None and not too_long:
        keep["options"] = options
        keep["pieces"] = [_fit_pieces(laid, i, text, per_token[i])
                          for i, text in enumerate(texts[:2 * MAX_SHOWN])]
    return nll, tokens


def _score_one(result: Any) -> tuple[float, int]:
    return float(np.sum(result.surprisal, dtype=np.float64)), len(result.surprisal)


@dataclass
class Layout:
    """Sentences laid out as score() lays out a text that fits one window."""

    sequences: list[np.ndarray]  # prefix token, [context tokens], tokens, [EOS]
    n_scored: list[int]  # how many of the last tokens of each are scored
    offsets: list[np.ndarray]  # raw character offsets of the joint text's tokens
    joint: list[str]  # context + sentence, as encoded
    n_eos: int  # 1 with add_eos (the last scored token is the EOS), else 0


def layout(texts: list[str], lm: Any, contexts: list[str] | None = None, *,
           prefix: str | None = "bos", add_eos: bool = False) -> Layout:
    """Each text's input sequence and how many of its last tokens are scored, from one
    batch tokenizer call (the seam rule where a text has a context)."""
    tok = lm.tokenizer
    head = np.asarray(check_and_prefix("", tok, prefix, add_eos), dtype=np.int64)
    tail = np.asarray([tok.eos_token_id] if add_eos else [], dtype=np.int64)
    contexts = contexts or [""] * len(texts)
    seams = [split_seam(c, t) if c else ("", t) for c, t in zip(contexts, texts, strict=True)]
    with_context = [i for i, (c, _) in enumerate(seams) if c]
    joint = [c + t for c, t in seams]
    encoded = encode_many(tok, joint + [seams[i][0] for i in with_context])
    context_ids = dict(zip(with_context, encoded[len(texts):], strict=True))
    out = Layout([], [], [], joint, len(tail))
    for i, (ids, offsets) in enumerate(encoded[:len(texts)]):
        n_context = len(context_ids[i][0]) if i in context_ids else 0
        if n_context >= len(ids):
            raise PairsInputError(f"row {i // 2}: the {SIDES[i % 2]} sentence adds no token "
                                  "to its context (the joint encoding is no longer)")
        seq = np.concatenate([head, ids, tail])
        out.sequences.append(seq)
        out.n_scored.append(min(len(ids) - n_context + len(tail), len(seq) - 1))
        out.offsets.append(offsets)
    return out


def sentence_tokens(texts: list[str], lm: Any, *, contexts: list[str] | None = None,
                    max_length: int | None = None, stride: int | None = None,
                    prefix: str | None = "bos", add_eos: bool = False,
                    pll_metric: str | None = None,
                    scored: TokenPieces | None = None) -> list[list[tuple[str, float]]]:
    """Each text cut into its scored tokens' pieces with their NLL (nats); text no
    scored token holds (an unscored first token, whitespace the context's tokens took)
    is a piece with NaN.  The pieces of a text join into the text; an EOS is left out.
    ``scored``: ``score_pairs``' kept pieces (``frame.attrs[TOKEN_PIECES]``), used
    instead of scoring again where they hold every text, by this ``lm`` and options."""
    from ..runner.scorer import resolve_window, score

    lm = as_loaded(lm)
    max_length, stride = resolve_window(lm, max_length, stride)
    options = dict(max_length=max_length, stride=stride, prefix=prefix, add_eos=add_eos)
    known = None if scored is None else scored.lookup(texts, contexts, lm, options)
    if known is not None:
        return known
    packed = isinstance(lm, LoadedModel)  # another model kind: score() each text
    if not packed or contexts is None:
        contexts = [""] * len(texts)
    if not packed:
        laid = None
    else:
        laid = layout(texts, lm, contexts, prefix=prefix, add_eos=add_eos)
        fits = [len(s) - 1 <= max_length for s in laid.sequences]
        from ..runner.packed import PackedNLL

        per_token = PackedNLL(lm).token_nlls(
            laid.sequences, [n if f else 0 for n, f in zip(laid.n_scored, fits, strict=True)])
    out = []
    for i, text in enumerate(texts):
        if laid is not None and fits[i]:
            out.append(_fit_pieces(laid, i, text, per_token[i]))
            continue
        if contexts[i]:
            raise PairsInputError(f"row {i // 2}: context + sentence does not fit "
                                  f"max_length={max_length}")
        result = score(text, lm, top_k=0, pll_metric=pll_metric, **options)
        keep = ~result.is_eos
        spans, nll = result.offsets[keep], result.surprisal[keep]
        out.append(_pieces(text, np.clip(spans, 0, len(text)), nll))
    return out


def _fit_pieces(laid: Layout, i: int, text: str, nll: np.ndarray) -> list[tuple[str, float]]:
    """Text ``i`` of a packed layout cut into its scored tokens' pieces (the EOS left
    out), ``nll`` its scored tokens' NLL."""
    k = laid.n_scored[i] - laid.n_eos
    spans = partition_offsets(laid.offsets[i], len(laid.joint[i]))
    spans = spans[len(spans) - k:] - (len(laid.joint[i]) - len(text))
    return _pieces(text, np.clip(spans, 0, len(text)), nll[:k])


def _pieces(text: str, spans: np.ndarray, nll: np.ndarray) -> list[tuple[str, float]]:
    pieces, pos = [], 0
    for (start, end), value in zip(spans.tolist(), nll.tolist(), strict=True):
        if start > pos:
            pieces.append((text[pos:start], math.nan))
        pieces.append((text[max(start, pos):end], value))
        pos = max(pos, end)
    if pos < len(text):
        pieces.append((text[pos:], math.nan))
    return pieces
