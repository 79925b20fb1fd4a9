"""A continuation given a context: the tokens the model reads first, and the seam.

The seam follows lm-evaluation-harness's ``_encode_pair``: the trailing whitespace of a
string context moves to the start of the continuation (a tokenizer attaches a space to
the word after it), the context and the joint text are encoded, and the continuation's
tokens are the joint encoding's tokens after the context's.  The model reads the
context's own tokens, then those.

A chat (a list of ``{"role", "content"}`` messages) is rendered with the tokenizer's
chat template and the generation prompt; the continuation is the assistant's reply, and
its end-of-turn token is the template's (what follows the reply in a rendered turn).
The rendered prompt's special-token strings are special tokens; nothing moves at the
seam (the generation prompt's own newline belongs to the prompt).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: A reply that no template changes, to find what a template puts after a reply.
_SENTINEL = "\u2063ppl-widget-reply\u2063"

Context = str | Sequence[dict[str, str]] | None


@dataclass(frozen=True)
class EncodedPair:
    """The context's tokens and the continuation's, with the continuation as scored."""

    context: str | list[dict[str, str]]  # as read: a string without the moved whitespace
    context_ids: np.ndarray  # what the model reads first (a chat's BOS included)
    text: str  # the continuation as scored (with the moved whitespace)
    ids: np.ndarray  # the continuation's tokens
    offsets: np.ndarray  # (n, 2) their character spans in ``text`` (raw, may overlap)
    end_of_turn_id: int | None  # a chat's end-of-turn token (else None: the EOS)
    starts_with_bos: bool  # the context's first token is the tokenizer's BOS
    #: the string the context's tokens were encoded from (a string context as read, or
    #: the rendered chat) and their character spans in it (explain() takes units there)
    prompt: str = ""
    context_offsets: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros((0, 2), np.int64))


def check_context(context: Any) -> str | list[dict[str, str]] | None:
    """None, a non-empty string, or a chat as a list of plain dicts; else a ValueError
    naming the rule."""
    if context is None or isinstance(context, str):
        if context is not None and not context.strip():
            raise ValueError("context must hold more than whitespace: pass context=None to "
                             "score the text on its own")
        return context
    if isinstance(context, dict) or not isinstance(context, Sequence) or not context:
        raise ValueError(f"context must be a string or a chat (a non-empty list of "
                         f"{{'role': ..., 'content': ...}} messages), got "
                         f"{type(context).__name__}")
    chat = []
    for i, m in enumerate(context):
        if not (isinstance(m, dict) and isinstance(m.get("role"), str)
                and isinstance(m.get("content"), str)):
            raise ValueError(f"chat message {i} must be a dict with string 'role' and "
                             f"'content', got {m!r}")
        chat.append(dict(m))
    return chat


def move_whitespace(context: Any, text: str) -> tuple[Any, str]:
    """The seam's first step: a string context's trailing whitespace moves to the start
    of ``text`` (a chat, or None, is returned as is)."""
    if not isinstance(context, str):
        return context, text
    stripped = context.rstrip()
    return stripped, context[len(stripped):] + text


def render_chat(tokenizer: Any, chat: list[dict[str, str]]) -> str:
    """The chat as its template renders it, ending with the generation prompt."""
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError("this tokenizer has no chat template, so a chat context cannot be "
                         "rendered: pass the context as a string, or set "
                         "tokenizer.chat_template to the model's template")
    return tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)


def end_of_turn_id(tokenizer: Any, chat: list[dict[str, str]]) -> int | None:
    """The token a template puts right after an assistant reply (a special token), else
    the tokenizer's EOS (None when it has none)."""
    try:
        done = tokenizer.apply_chat_template(
            [*chat, {"role": "assistant", "content": _SENTINEL}], tokenize=False)
    except Exception:  # a template that cannot render a reply: the EOS decides
        done = ""
    after = done.split(_SENTINEL, 1)[1] if _SENTINEL in done else ""
    ids = tokenizer(after, add_special_tokens=False)["input_ids"] if after else []
    if ids and ids[0] in set(tokenizer.all_special_ids):
        return int(ids[0])
    return tokenizer.eos_token_id


def _encode(tokenizer: Any, text: str, specials: bool) -> tuple[np.ndarray, np.ndarray]:
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True,
                    split_special_tokens=not specials)
    return (np.asarray(enc["input_ids"], dtype=np.int64),
            np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2))


def encode_pair(tokenizer: Any, context: Context, text: str) -> EncodedPair:
    """The context's tokens and the continuation's, by the seam rule (module docstring)."""
    context = check_context(context)
    if context is None:
        raise ValueError("encode_pair needs a context")
    chat = None if isinstance(context, str) else context
    if chat is None:
        stripped, text = move_whitespace(context, text)
        prompt, specials = stripped, False
    else:
        prompt, specials = render_chat(tokenizer, chat), True
    ctx_ids, ctx_offsets = _encode(tokenizer, prompt, specials)
    whole, offsets = _encode(tokenizer, prompt + text, specials)
    if not np.array_equal(whole[:len(ctx_ids)], ctx_ids):
        warnings.warn("the context's last token and the continuation's first merge into one "
                      "token in the joint encoding; by lm-evaluation-harness's rule the "
                      "continuation's tokens are those after the context's count. End the "
                      "context at a word boundary to avoid it.", stacklevel=3)
    ids, offsets = whole[len(ctx_ids):], offsets[len(ctx_ids):] - len(prompt)
    bos = tokenizer.bos_token_id
    return EncodedPair(
        context=stripped if chat is None else chat, context_ids=ctx_ids, text=text, ids=ids,
        offsets=np.clip(offsets, 0, len(text)),
        end_of_turn_id=None if chat is None else end_of_turn_id(tokenizer, chat),
        starts_with_bos=bool(len(ctx_ids)) and bos is not None and int(ctx_ids[0]) == bos,
        prompt=prompt, context_offsets=ctx_offsets)
