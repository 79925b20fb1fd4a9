"""A text tokenized once and laid out as the model's input sequence.

``prepare`` does it in one go.  ``prepare_ahead`` is for a GPU: it tokenizes only the
start of a long text, enough for the first batch, and the rest in a thread, so the GPU
scores the first windows while the host is still tokenizing (the scorer submits more
batches as more of the text is final, and waits for the whole text only before it turns
the first batch's results into arrays).  Both give the same ``Prepared``.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.text_units import TextUnits, WordSpec, partition_offsets
from .context import Context, encode_pair
from .encode import (
    PARALLEL_MIN_CHARS,
    cut_is_safe,
    encode_many,
    encode_with_offsets,
    next_cut,
)

#: Characters per token assumed when sizing the start of a text for ``prepare_ahead``
#: (English and code run 3.5-5 with large vocabularies; too many only costs a little
#: time before the first batch, too few only keeps it waiting for the next segment).
AHEAD_CHARS_PER_TOKEN = 5
#: Each segment after the start is this much longer than the one before: short early
#: (the GPU waits for the next batch's tokens), longer later (fewer, larger batch calls).
AHEAD_GROWTH = 1.5
#: ``prepare_ahead`` declines when the start would be more than this share of the text.
AHEAD_MAX_SHARE = 0.5


@dataclass
class Prepared:
    """A text tokenized once, laid out as the model's input sequence."""

    text: str
    sequence: np.ndarray  # prefix token (if any) + text tokens + EOS (if any)
    target_ids: np.ndarray  # sequence[first_target:]
    target_offsets: np.ndarray  # (n, 2) character span of each target
    target_units: np.ndarray  # (n, 3) words, chars, bytes of each target
    target_is_eos: np.ndarray
    unscored_ids: np.ndarray
    unscored_offsets: np.ndarray
    prefix_token: str | None
    #: position of the first target in ``sequence`` (the prefix token and a context
    #: before it are read, never scored)
    first_target: int = 1
    #: the context as read (``scoring/runner/context.py``), None without one
    context: Any = None
    #: tokens read before the first scored one (== first_target): the prefix token, a
    #: chat template's own BOS and the context's tokens; ``context_bos``: a BOS among them
    n_context_tokens: int = 0
    context_bos: bool = False
    #: the context's ``EncodedPair`` (its tokens' spans: explain() takes units there)
    pair: Any = None

    def context_settings(self) -> dict[str, Any]:
        """The one count of a context, as results carry it in ``settings``: every view
        shows this number and says whether the BOS is in it."""
        if self.context is None:
            return {"context_tokens": 0}
        return {"context_tokens": self.n_context_tokens, "context_bos": self.context_bos}


def prepare(text: str, lm: Any, *, prefix: str | None = "bos", add_eos: bool = False,
            words: WordSpec = None, context: Context = None,
            two_sided: bool = False) -> Prepared:
    """Tokenize ``text`` once (no added special tokens; special-token strings
    in the text stay plain text) and attach character spans and units.

    ``context``: a string or a chat the model reads before ``text`` (see
    ``scoring/runner/context.py`` for the seam); only ``text``'s tokens are targets.
    ``two_sided``: a model that reads each token's right side too (a masked LM): every
    token is a target, the first included (``prefix`` must be None).
    A model kind that lays out its own input (``prepare_text``: an encoder-decoder's
    decoder sequence, its source for the encoder) does it instead."""
    own = getattr(lm, "prepare_text", None)
    if own is not None:
        return own(text, prefix=prefix, add_eos=add_eos, words=words, context=context)
    head = check_and_prefix(text, lm.tokenizer, prefix, add_eos)
    if context is not None:
        return _prepare_in_context(text, lm.tokenizer, context, head, add_eos, words)
    ids, raw_offsets = encode_with_offsets(lm.tokenizer, text)  # long texts: all cores
    return _lay_out(text, lm.tokenizer, ids, raw_offsets, head, add_eos, words,
                    two_sided=two_sided)


def prepare_many(texts: list[str], lm: Any, *, prefix: str | None = "bos",
                 add_eos: bool = False, words: WordSpec = None,
                 contexts: list[Context] | None = None) -> list[Prepared]:
    """``prepare`` of each text (``contexts[i]``: its context, or None); the short ones
    without a context (a corpus's documents) are encoded in one batch call, on all cores,
    instead of one call each on one core."""
    tok = lm.tokenizer
    contexts = contexts or [None] * len(texts)
    heads = [check_and_prefix(t, tok, prefix, add_eos) for t in texts]
    short = [i for i, t in enumerate(texts)
             if len(t) < PARALLEL_MIN_CHARS and contexts[i] is None]
    encoded = dict(zip(short, encode_many(tok, [texts[i] for i in short]), strict=True))
    out = []
    for i, (text, head) in enumerate(zip(texts, heads, strict=True)):
        if contexts[i] is not None:  # the seam needs the context and the text together
            out.append(_prepare_in_context(text, tok, contexts[i], head, add_eos, words))
            continue
        ids, raw_offsets = encoded[i] if i in encoded else encode_with_offsets(tok, text)
        out.append(_lay_out(text, tok, ids, raw_offsets, head, add_eos, words))
    return out


class PreparingText:
    """A long text tokenized in a thread, a segment at a time, each ``AHEAD_GROWTH`` times the
    one before, so the input sequence's start is final early and grows while the GPU
    scores it.  Segments end at checked cuts, so they join into the tokens of one call."""

    first_target = 1  # no context: the text's own first target

    def __init__(self, text: str, tok: Any, first: tuple[np.ndarray, np.ndarray], cut: int,
                 head: list[int], add_eos: bool, words: WordSpec):
        self._changed = threading.Condition()
        self._known = np.concatenate([np.asarray(head, np.int64), first[0]])
        self._finished = False

        def rest() -> Prepared:
            parts = [first]
            try:
                pos, size = cut, float(cut)
                while pos < len(text):
                    size *= AHEAD_GROWTH
                    c = next_cut(text, pos + int(size))
                    if c is None or not cut_is_safe(tok, text, c):
                        c = len(text)  # the rest in one go (encode_with_offsets checks its cuts)
                    ids, offsets = encode_with_offsets(tok, text[pos:c])
                    parts.append((ids, offsets + pos))
                    with self._changed:
                        self._known = np.concatenate([self._known, ids])
                        self._changed.notify_all()
                    pos = c
                return _lay_out(text, tok, np.concatenate([p[0] for p in parts]),
                                np.concatenate([p[1] for p in parts]), head, add_eos, words)
            finally:
                with self._changed:
                    self._finished = True
                    self._changed.notify_all()

        self._future = _in_thread(rest)

    def known(self) -> np.ndarray:
        """The input sequence's positions that are final so far (prefix token + tokens)."""
        with self._changed:
            return self._known

    @property
    def finished(self) -> bool:
        """Every segment is tokenized (or the thread failed)."""
        with self._changed:
            return self._finished

    def wait_for_more(self, n_known: int) -> None:
        """Block until more than ``n_known`` positions are final, or the text is done."""
        with self._changed:
            self._changed.wait_for(lambda: len(self._known) > n_known or self._finished)

    def result(self) -> Prepared:
        """The whole text prepared (waits for the thread; re-raises its error)."""
        return self._future.result()


def prepare_ahead(text: str, lm: Any, head_positions: int, *, prefix: str | None = "bos",
                  add_eos: bool = False, words: WordSpec = None) -> PreparingText | None:
    """Tokenize about ``head_positions`` tokens of the start of ``text`` now and the
    rest in a thread, in growing segments; ``result()`` equals ``prepare(text, ...)``.

    The start ends at a cut checked like ``encode_with_offsets``'s (the tokens near it
    are those of one call).  None, with nothing started, where that does not pay or
    cannot be done: a short text, a slow tokenizer, no checked cut in the first half.
    Arguments are checked (and errors raised) as ``prepare`` checks them.
    """
    tok = lm.tokenizer
    head = check_and_prefix(text, tok, prefix, add_eos)
    if len(text) < PARALLEL_MIN_CHARS or not getattr(tok, "is_fast", False):
        return None
    c = next_cut(text, int(head_positions * AHEAD_CHARS_PER_TOKEN))
    if c is None or c > len(text) * AHEAD_MAX_SHARE or not cut_is_safe(tok, text, c):
        return None
    return PreparingText(text, tok, encode_with_offsets(tok, text[:c]), c, head, add_eos,
                         words)


def _in_thread(fn: Callable[[], Prepared]) -> Future:
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ppl-widget-prepare")
    future = pool.submit(fn)
    pool.shutdown(wait=False)  # the thread ends with its one task
    return future


def check_encodable(text: str) -> None:
    """A str that is not valid Unicode (a lone surrogate, from a bad decode or
    ``surrogateescape``) cannot be tokenized: name where it is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        raise ValueError(
            f"text is not valid Unicode: lone surrogate U+{ord(bad):04X} at character "
            f"{exc.start} (of {len(text)}); it usually comes from bytes decoded with "
            "errors='surrogateescape' or a broken UTF-16 pair. Decode the source with its "
            "real encoding, or drop it: text.encode('utf-8', 'replace').decode()"
        ) from None


def check_and_prefix(text: str, tok: Any, prefix: str | None, add_eos: bool) -> list[int]:
    """Check the arguments; the prefix token's id (none, or one)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if prefix not in ("bos", None):
        raise ValueError(f"prefix must be 'bos' or None, got {prefix!r}")
    check_encodable(text)
    if add_eos and tok.eos_token_id is None:
        raise ValueError("add_eos=True needs an EOS token, and this tokenizer has none")
    if prefix is None:
        return []
    pid = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    if pid is None:
        raise ValueError("prefix='bos' needs a BOS or EOS token, and this tokenizer has "
                         "neither; pass prefix=None to leave the first token unscored")
    return [int(pid)]


def _prepare_in_context(text: str, tok: Any, context: Context, head: list[int],
                        add_eos: bool, words: WordSpec) -> Prepared:
    pair = encode_pair(tok, context, text)
    if pair.starts_with_bos:  # a chat template that writes the BOS itself
        head = []
    eos = pair.end_of_turn_id if pair.end_of_turn_id is not None else tok.eos_token_id
    prep = _lay_out(pair.text, tok, pair.ids, pair.offsets, head, add_eos, words,
                    read=pair.context_ids, eos_id=eos)
    prep.context, prep.pair = pair.context, pair
    # the same count a token's context_length gives the first scored token
    prep.n_context_tokens = len(head) + len(pair.context_ids)
    prep.context_bos = bool(head) or pair.starts_with_bos
    if pair.starts_with_bos:
        prep.prefix_token = tok.convert_ids_to_tokens(int(pair.context_ids[0]))
    return prep


def _lay_out(text: str, tok: Any, ids: np.ndarray, raw_offsets: np.ndarray, head: list[int],
             add_eos: bool, words: WordSpec, read: np.ndarray | None = None,
             eos_id: int | None = None, two_sided: bool = False) -> Prepared:
    """Spans, units and the input sequence of a tokenized text (``read``: a context's
    tokens, between the prefix token and the text's; ``eos_id``: the EOS to score;
    ``two_sided``: every token a target, as ``prepare`` says)."""
    spans = partition_offsets(raw_offsets, len(text))
    units = TextUnits.of(text, words).per_span(spans)
    prefix_token = tok.convert_ids_to_tokens(head[0]) if head else None
    read = np.zeros(0, np.int64) if read is None else np.asarray(read, np.int64)
    tail = [int(tok.eos_token_id if eos_id is None else eos_id)] if add_eos else []
    sequence = np.concatenate([np.asarray(head, np.int64), read, ids,
                               np.asarray(tail, np.int64)])

    before = len(head) + len(read)  # positions read before the text's first token
    n_unscored = 0 if before or two_sided else min(1, len(ids))
    offsets = spans[n_unscored:]
    tunits = units[n_unscored:]
    is_eos = np.zeros(len(offsets), dtype=bool)
    if tail and len(sequence) > 1:
        end = len(text)
        offsets = np.vstack([offsets, [[end, end]]])
        tunits = np.vstack([tunits, [[1, 1, 1]]])  # EOS counts as one of every unit
        is_eos = np.append(is_eos, True)
    first = before if two_sided else max(1, before)
    return Prepared(text=text, sequence=sequence, target_ids=sequence[first:],
                    target_offsets=offsets.reshape(-1, 2), target_units=tunits.reshape(-1, 3),
                    target_is_eos=is_eos, unscored_ids=ids[:n_unscored],
                    unscored_offsets=spans[:n_unscored], prefix_token=prefix_token,
                    first_target=first)


def keep_scored(prep: Prepared, windows: list[Any]) -> Prepared:
    """``prep`` with only the targets ``windows`` score (a protocol's plan may leave
    positions unscored: ``core/protocols.py``); the others join the unscored tokens, in
    text order, so scored and unscored tokens still tile the text.  Their units count
    nowhere: a metric's denominators are the units of the scored tokens."""
    first, n = prep.first_target, len(prep.target_ids)
    scored = np.zeros(n, bool)
    for w in windows:
        scored[w.target_start - first:w.target_end - first] = True
    if scored.all():
        return prep
    if prep.target_is_eos[~scored].any():  # EOS is the text's last position: never dropped
        raise ValueError("a window plan must score the added EOS")
    ids = np.concatenate([prep.unscored_ids, prep.target_ids[~scored]])
    offsets = np.concatenate([prep.unscored_offsets.reshape(-1, 2),
                              prep.target_offsets[~scored]])
    order = np.argsort(offsets[:, 0], kind="stable")
    return dataclasses.replace(
        prep, target_ids=prep.target_ids[scored], target_offsets=prep.target_offsets[scored],
        target_units=prep.target_units[scored], target_is_eos=prep.target_is_eos[scored],
        unscored_ids=ids[order], unscored_offsets=offsets[order])


def adds_bos(tok: Any) -> bool:
    """The tokenizer puts its BOS token first when it encodes a text with its special
    tokens (llama.cpp's ``llama_vocab_get_add_bos``, read from the tokenizer)."""
    bos = getattr(tok, "bos_token_id", None)
    if bos is None:
        return False
    try:
        ids = tok("a", add_special_tokens=True)["input_ids"]
    except Exception:  # noqa: BLE001 - a tokenizer that cannot say adds none
        return False
    return len(ids) > 0 and int(ids[0]) == int(bos)
