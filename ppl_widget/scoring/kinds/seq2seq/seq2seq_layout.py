"""What an encoder-decoder reads for one text: the source's tokens (the encoder's input)
and the decoder's sequence, laid out like a causal model's (``runner/prepare.py``).

The decoder's sequence is ``[decoder start] + label head + target tokens (+ EOS)``:

- the decoder start token (``config.decoder_start_token_id``: T5's and Marian's
  ``<pad>``, BART's ``</s>``) is position 0, the prefix token every window reads first;
- the label head: the special tokens the tokenizer puts before a text when it
  tokenizes labels (BART's ``<s>``; T5 and Marian put none), read, never scored, as
  fine-tuning feeds them (``shift_tokens_right``) and generation forces them;
- the target's (``text``'s) own tokens, each scored once, the first one predicted from
  the start token and the label head;
- the EOS the labels end with (``</s>``), scored only with ``add_eos=True``.

The encoder reads the source tokenized with the model's tokenizer and its special tokens
(``tokenizer(source)``: T5 ``source </s>``, BART ``<s> source </s>``).  Without a
source, it reads the empty source the same way (``tokenizer("")``: T5 ``</s>``, BART
``<s> </s>``); a tokenizer that adds nothing to it reads its EOS alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...runner.context import check_context
from ...runner.encode import encode_with_offsets
from ...runner.prepare import Prepared, _lay_out, check_and_prefix

#: What ``result.settings["objective"]`` says of a result of an encoder-decoder.
OBJECTIVE = "seq2seq"
#: A text the tokenizer keeps as one piece, to find what it adds around a text.
_PROBE = "a"


@dataclass
class Seq2SeqPrepared(Prepared):
    """A target laid out for the decoder, with the source the encoder reads."""

    #: the encoder's input: the source's tokens with the tokenizer's special tokens
    source_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def context_settings(self) -> dict[str, Any]:
        """The settings a result of this text carries: the source's token count (as a
        context's, with whether its first token is the BOS), the objective, and the
        decoder start token read first in every window."""
        bos = self.context_bos
        return {"context_tokens": len(self.source_ids) if self.context is not None else 0,
                **({"context_bos": bos} if self.context is not None else {}),
                "source_tokens": len(self.source_ids), "objective": OBJECTIVE,
                "prefix_every_window": True}


def special_tokens_around(tok: Any) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after a text's own when it adds its special
    tokens (labels are tokenized the same way: ``tokenizer(text_target=...)``)."""
    plain = list(tok(_PROBE, add_special_tokens=False)["input_ids"])
    full = list(tok(_PROBE, add_special_tokens=True)["input_ids"])
    for i in range(len(full) - len(plain) + 1):
        if full[i:i + len(plain)] == plain:
            return full[:i], full[i + len(plain):]
    raise ValueError("the tokenizer changes a text's own tokens when it adds its special "
                     "tokens, so the target's tokens cannot be told apart from them")


def source_ids(tok: Any, source: str | None) -> np.ndarray:
    """What the encoder reads: ``tokenizer(source)`` with its special tokens; no source:
    the empty source, ``tokenizer("")`` (the EOS alone where that adds nothing)."""
    ids = list(tok(source or "", add_special_tokens=True)["input_ids"])
    if not ids:
        if tok.eos_token_id is None:
            raise ValueError("an encoder-decoder's encoder reads at least one token: this "
                             "tokenizer adds none to an empty source and has no EOS, so "
                             "pass a source: score(target, lm, context=source)")
        ids = [int(tok.eos_token_id)]
    return np.asarray(ids, np.int64)


def check_source(context: Any) -> str | None:
    """The source: None or a string (a chat is for chat models)."""
    context = check_context(context)
    if context is not None and not isinstance(context, str):
        raise ValueError("an encoder-decoder reads its source as a string: pass "
                         "context='source text' (a chat context is for causal chat "
                         "models with a chat template)")
    return context


def prepare_seq2seq(text: str, tok: Any, decoder_start: int, *, prefix: str | None,
                    add_eos: bool, words: Any, context: Any,
                    max_source: int | None) -> Seq2SeqPrepared:
    """``text`` laid out for the decoder and ``context`` for the encoder (module docstring).
    ``max_source``: the most tokens the encoder takes (None: no limit)."""
    check_and_prefix(text, tok, "bos", add_eos)  # text, Unicode and EOS rules
    if prefix != "bos":
        raise ValueError(f"an encoder-decoder's decoder reads its start token first, so "
                         f"prefix must be 'bos' (the decoder start token), got {prefix!r} "
                         "(protocols 'llama.cpp' and "
                         "'hf-guide' read no prefix token where the tokenizer adds no BOS: "
                         "use protocol='exact' or 'lm-eval')")
    source = check_source(context)
    src = source_ids(tok, source)
    if max_source is not None and len(src) > max_source:
        raise ValueError(f"the source is {len(src)} tokens and the encoder takes at most "
                         f"{max_source} (its positions): shorten the source (an encoder "
                         "reads its whole source at once; it has no windows)")
    head, _ = special_tokens_around(tok)
    ids, offsets = encode_with_offsets(tok, text)
    prep = _lay_out(text, tok, ids, offsets, [int(decoder_start)], add_eos, words,
                    read=np.asarray(head, np.int64), eos_id=tok.eos_token_id)
    out = Seq2SeqPrepared(**vars(prep), source_ids=src)
    out.prefix_token = tok.convert_ids_to_tokens(int(decoder_start))
    if source is not None:
        out.context = source
        bos = tok.bos_token_id
        out.context_bos = bos is not None and len(src) > 0 and int(src[0]) == bos
    out.n_context_tokens = len(src) if source is not None else 0
    return out
