"""explain(..., context=...) against an independent deletion reference: the context and
the text are laid out again in the test (the seam of lm-evaluation-harness's
``_encode_pair``, written out; a chat rendered by its template), each unit's token ids
deleted from context + text, and the target rescored with a plain transformers forward
in float32.  The context's tokens are units (a string context: its words or tokens; a
chat: one unit per message); the text's units and the defaults are as without one."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from test_explain import ref_nll, ref_word_of

from ppl_widget import context_curve, explain, load_model, score

TOL = 1e-4  # nats
CONTEXT = "When the tide turned, the old ferry crossed the bay. "
TEXT = "Gulls followed its wake home."
TEMPLATE = ("{% for m in messages %}<s>{{ m['role'] }}\n{{ m['content'] }}</s>\n{% endfor %}"
            "{% if add_generation_prompt %}<s>assistant\n{% endif %}")
CHAT = [{"role": "system", "content": "Be brief."},
        {"role": "user", "content": "And the gulls?"}]
REPLY = "Home."


def ref_string_layout(tok, context: str, text: str):
    """(ids with the BOS first, index of the text's first token, the context's token
    spans in the context as read): the trailing whitespace moves to the text."""
    stripped = context.rstrip()
    enc = tok(stripped, add_special_tokens=False, return_offsets_mapping=True)
    whole = tok(stripped + context[len(stripped):] + text, add_special_tokens=False)["input_ids"]
    ctx = list(enc["input_ids"])
    assert whole[:len(ctx)] == ctx
    ids = [tok.bos_token_id] + list(whole)
    return ids, 1 + len(ctx), [tuple(s) for s in enc["offset_mapping"]], stripped


def ref_deltas(model, ids: list[int], target: int, units: list[list[int]], start: int = 0):
    """The target's surprisal and, per unit (positions), its surprisal with them deleted
    minus it; the window reads positions ``start``.. (and the BOS at 0 when start is 0)."""
    reads = list(range(start, target + 1))
    base = ref_nll(model, [ids[q] for q in reads], 1)
    return base, [ref_nll(model, [ids[q] for q in reads if q not in set(u)], 1) - base
                  for u in units]


@pytest.mark.parametrize("unit", ["word", "token"])
def test_a_string_context_is_units_too(tiny_lm, unit):
    tok = tiny_lm.tokenizer
    ids, first, spans, stripped = ref_string_layout(tok, CONTEXT, TEXT)
    e = explain(TEXT, tiny_lm, token=-1, unit=unit, context=CONTEXT)
    r = score(TEXT, tiny_lm, context=CONTEXT)
    assert e.text == r.text and e.context == r.context == stripped
    target = len(ids) - 1
    # the reference's units: the context's words (or tokens), then the text's
    if unit == "token":
        ctx_units = [[q] for q in range(1, first)]
    else:
        owner = ref_word_of(stripped, spans)
        ctx_units = []
        for q in range(1, first):
            if ctx_units and owner[q - 1] == owner[ctx_units[-1][-1] - 1]:
                ctx_units[-1].append(q)
            else:
                ctx_units.append([q])
    n_ctx = len(ctx_units)
    parts = np.array(e.parts)
    assert (parts[:n_ctx] == "context").all() and (parts[n_ctx:] == "text").all()
    text_units = [list(e_unit) for e_unit in _text_unit_positions(e, first)]
    base, want = ref_deltas(tiny_lm.model, ids, target, ctx_units + text_units)
    assert abs(e.target_surprisal_nats - base) < TOL
    assert abs(e.target_surprisal_nats - r.surprisal[-1]) < TOL
    assert len(e.delta_nats) == len(want)
    assert np.abs(e.delta_nats - np.array(want)).max() < TOL
    frame = e.frame
    ctx = frame[frame.part == "context"]
    assert all(stripped[s:t] == u for u, s, t in zip(ctx.unit, ctx.start, ctx.end, strict=True))
    if unit == "word":
        assert list(ctx.unit) == stripped.split()
    text_rows = frame[frame.part == "text"]
    assert all(e.text[s:t] == u for u, s, t in
               zip(text_rows.unit, text_rows.start, text_rows.end, strict=True))


def _text_unit_positions(e, first: int):
    """The text's units as input positions: the text's tokens are scored in order, token
    i at position first - 1 + i (the reference's layout), so a unit of k tokens ending
    before the target takes the next k positions from ``first``."""
    q = first
    for k, part in zip(e.tokens, e.parts, strict=True):
        if part == "text":
            yield list(range(q, q + int(k)))
            q += int(k)


def test_a_window_that_cuts_into_the_context_and_the_fast_and_plain_paths(tiny_llama):
    long_context = CONTEXT * 4
    tok = tiny_llama.tokenizer
    ids, first, _, _ = ref_string_layout(tok, long_context, TEXT)
    kw = {"max_length": 24, "stride": 8, "context": long_context}
    e = explain(TEXT, tiny_llama, token=-1, unit="token", **kw)
    target = len(ids) - 1
    r = score(TEXT, tiny_llama, **kw)
    start = target - e.context_tokens
    assert e.context_tokens == r.context_length[-1] and start > 1  # no BOS: cut
    base, want = ref_deltas(tiny_llama.model, ids, target,
                            [[q] for q in range(start, target)], start=start)
    assert abs(e.target_surprisal_nats - base) < TOL
    assert np.abs(e.delta_nats - np.array(want)).max() < TOL
    from ppl_widget import iter_explain

    plain = list(iter_explain(TEXT, tiny_llama, token=-1, unit="token", fast=False,
                              **kw))[-1].explanation
    np.testing.assert_allclose(e.delta_nats, plain.delta_nats, atol=TOL)
    curve = context_curve(TEXT, tiny_llama, token=-1, lengths=[3, e.context_tokens], **kw)
    assert abs(curve.surprisal_nats.iloc[-1] - base) < TOL
    assert abs(curve.surprisal_nats.iloc[0]
               - ref_nll(tiny_llama.model, ids[target - 3:target + 1], 1)) < TOL


@pytest.fixture(scope="module")
def chat_lm(tiny_llama):
    tok = copy.deepcopy(tiny_llama.tokenizer)
    tok.chat_template = TEMPLATE
    return load_model((tiny_llama.model, tok), device="cpu", dtype="float32")


def test_a_chat_is_split_per_message(chat_lm):
    tok = chat_lm.tokenizer
    rendered = tok.apply_chat_template(CHAT, add_generation_prompt=True, tokenize=False)
    enc = tok(rendered, add_special_tokens=False, return_offsets_mapping=True)
    ctx = list(enc["input_ids"])
    whole = tok(rendered + REPLY, add_special_tokens=False)["input_ids"]
    ids = [tok.bos_token_id] + list(whole)  # the template does not start with the BOS
    if ctx[0] == tok.bos_token_id:  # a template that writes the BOS: no second one
        ids = list(whole)
    shift = len(ids) - len(whole)
    units = []
    for m in CHAT:
        at = rendered.index(m["content"])
        end = at + len(m["content"])
        units.append([shift + k for k, (s, t) in enumerate(enc["offset_mapping"])
                      if s < end and t > at])
    e = explain(REPLY, chat_lm, token=-1, context=CHAT)
    r = score(REPLY, chat_lm, context=CHAT)
    assert list(e.parts[:2]) == ["message 0", "message 1"] and e.context == CHAT
    assert list(e.units[:2]) == [m["content"] for m in CHAT]
    target = len(ids) - 1
    first = shift + len(ctx)
    text_units = list(_text_unit_positions(e, first))
    assert len(ids) <= 64  # one window: the whole chat is read
    base, want = ref_deltas(chat_lm.model, ids, target, units + text_units)
    assert abs(e.target_surprisal_nats - r.surprisal[-1]) < TOL
    assert abs(e.target_surprisal_nats - base) < TOL
    assert np.abs(e.delta_nats - np.array(want)).max() < TOL
    # the template's own tokens (role names, <s>, the generation prompt) are no unit
    assert sum(e.tokens[:2]) < len(ctx) - 1


def test_results_pass_their_context_on_and_the_defaults_stay(tiny_gpt2):
    r = score(TEXT, tiny_gpt2, context=CONTEXT)
    e = r.explain(token=-1, unit="token")
    direct = explain(TEXT, tiny_gpt2, token=-1, unit="token", context=CONTEXT)
    np.testing.assert_allclose(e.delta_nats, direct.delta_nats, atol=1e-9)
    assert e.settings["context_tokens"] == r.settings["context_tokens"]
    c = r.context_curve(token=-1)
    assert c.context_tokens.iloc[-1] == e.context_tokens
    plain = explain(TEXT, tiny_gpt2, token=-1)
    assert set(plain.parts) == {"text"} and plain.context is None
    assert plain.settings["context_tokens"] == 0
    back = type(e).from_dict(e.to_dict())
    assert back.parts == e.parts and back.context == e.context


def test_the_view_gets_context_units_with_no_span_in_the_text(tiny_gpt2):
    from ppl_widget.views import protocol as P

    e = explain(TEXT, tiny_gpt2, token=-1, context=CONTEXT)
    data = P.explanation_data(e)
    units = data["units"]
    n_ctx = e.parts.count("context")
    assert n_ctx > 0 and units["part"] == e.parts
    assert units["start16"][:n_ctx] == [-1] * n_ctx == units["end16"][:n_ctx]
    text16 = [(s, t) for s, t in zip(units["start16"][n_ctx:], units["end16"][n_ctx:],
                                     strict=True)]
    assert all(0 <= s < t <= len(e.text) for s, t in text16)  # ASCII: UTF-16 = characters
