"""score(context=...) and score(prefix_every_window=True) against a float64 brute force
written from the spec: one forward per chunk of targets (or per target), the context
read and never scored, the prefix token in place of every later window's first input."""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from conftest import LONG_TEXT  # noqa: E402
from float64 import float64_copy  # noqa: E402

from ppl_widget import score  # noqa: E402

CONTEXT_SHORT = "Surprisal is minus the log probability of a token "
TEXT = "given its context. The quick brown fox jumps over the lazy dog."
TEMPLATE = ("{% for m in messages %}<|endoftext|>{{ m['role'] }}\n{{ m['content'] }}"
            "<|endoftext|>\n{% endfor %}{% if add_generation_prompt %}<|endoftext|>assistant\n"
            "{% endif %}")


def _ids(tok, text):
    return list(tok(text, add_special_tokens=False, split_special_tokens=True)["input_ids"])


def context_sequence(lm, context, text):
    """BOS + the context's tokens + the joint encoding's tokens after them (the seam
    rule, lm-evaluation-harness's _encode_pair); the first target's position."""
    tok = lm.tokenizer
    read = context.rstrip()
    ctx = _ids(tok, read)
    cont = _ids(tok, read + context[len(read):] + text)[len(ctx):]
    head = [tok.bos_token_id]
    return head + ctx + cont, len(head) + len(ctx)


@pytest.fixture(scope="module")
def f64():
    return float64_copy


@torch.no_grad()
def brute_force(model, seq, first, max_length, stride, every=False):
    """Per target: float64 surprisal and how many positions it read.  Chunks from the
    spec: the first holds the targets the first max_length positions predict (a short
    context read whole), or stride targets when the context alone is longer; later ones
    stride; each reads the max_length positions before its last target, and with
    ``every`` a window not starting at 0 reads the BOS (seq[0]) in place of its first."""
    out, ctx = [], []
    pos = first
    last = min(max_length if first <= max_length else first + stride - 1, len(seq) - 1)
    while pos < len(seq):
        begin = max(0, last - max_length)
        window = seq[begin:last]
        if every and begin > 0:
            window = [seq[0], *window[1:]]
        logp = torch.log_softmax(model(torch.tensor([window])).logits[0].double(), -1)
        for p in range(pos, last + 1):
            out.append(-logp[p - begin - 1, seq[p]].item())
            ctx.append(p - begin)
        pos, last = last + 1, min(last + stride, len(seq) - 1)
    return np.array(out), np.array(ctx)


@pytest.mark.parametrize(("context", "max_length", "stride"), [
    (CONTEXT_SHORT, 64, 32),  # context + continuation fit one window
    (CONTEXT_SHORT, 16, 8),  # the context is longer than the window
    (LONG_TEXT, 64, 32),  # far longer: read only as far back as max_length allows
    (LONG_TEXT, 9, 1),
])
def test_a_continuation_given_a_string_context(tiny_lm, f64, context, max_length, stride):
    res = score(TEXT, tiny_lm, context=context, max_length=max_length, stride=stride)
    seq, first = context_sequence(tiny_lm, context, TEXT)
    want, ctx = brute_force(f64(tiny_lm), seq, first, max_length, stride)
    assert res.token_ids.tolist() == seq[first:]  # only the continuation is scored
    np.testing.assert_allclose(res.surprisal, want, atol=3e-5, rtol=0)
    np.testing.assert_array_equal(res.context_length, ctx)
    if stride == 1:  # every token read as much as max_length allows
        np.testing.assert_array_equal(ctx, np.minimum(np.arange(first, len(seq)), max_length))
    m = res.metrics()  # every denominator is the continuation's
    assert m["n_tokens"] == len(seq) - first and m["n_unscored_tokens"] == 0
    assert m["total_nll"] == pytest.approx(want.sum(), abs=1e-3)
    assert m["n_words"] == len(TEXT.split()) and m["n_chars"] == len(res.text)
    assert res.context + res.text == context + TEXT
    # one count: what the first scored token was predicted from, when it all fits
    assert res.settings["context_tokens"] == first and res.settings["context_bos"] is True
    if first <= max_length:
        assert res.context_length[0] == res.settings["context_tokens"]
    assert f"given a context of {first} tokens (BOS included)" in res.conventions()


def test_the_whole_sequence_in_one_forward_agrees(tiny_gpt2, f64):
    """The simplest reference: one float64 forward over BOS + context + continuation."""
    res = score(TEXT, tiny_gpt2, context="The quick brown fox ", add_eos=True)
    seq, first = context_sequence(tiny_gpt2, "The quick brown fox ", TEXT)
    seq = seq + [tiny_gpt2.tokenizer.eos_token_id]
    with torch.no_grad():
        logp = torch.log_softmax(f64(tiny_gpt2)(torch.tensor([seq])).logits[0], -1)
    want = [-logp[p - 1, seq[p]].item() for p in range(first, len(seq))]
    np.testing.assert_allclose(res.surprisal, want, atol=3e-5, rtol=0)
    assert res.is_eos.tolist() == [False] * (len(seq) - first - 1) + [True]
    assert res.text == " " + TEXT


def test_a_chat_is_read_through_its_template_and_its_end_of_turn_scored(tiny_gpt2, f64):
    lm = copy.copy(tiny_gpt2)
    lm.tokenizer = copy.deepcopy(tiny_gpt2.tokenizer)
    lm.tokenizer.chat_template = TEMPLATE
    chat = [{"role": "user", "content": "What does the fox do?"}]
    res = score("It jumps over the dog.", lm, context=chat, add_eos=True)
    rendered = "<|endoftext|>user\nWhat does the fox do?<|endoftext|>\n<|endoftext|>assistant\n"
    tok = lm.tokenizer
    ctx = tok(rendered, add_special_tokens=False)["input_ids"]  # specials are special
    assert ctx[0] == tok.bos_token_id  # the template writes the BOS: no second one
    whole = tok(rendered + "It jumps over the dog.", add_special_tokens=False)["input_ids"]
    seq = whole + [tok.eos_token_id]  # the template's end of turn
    with torch.no_grad():
        logp = torch.log_softmax(f64(tiny_gpt2)(torch.tensor([seq])).logits[0], -1)
    want = [-logp[p - 1, seq[p]].item() for p in range(len(ctx), len(seq))]
    np.testing.assert_allclose(res.surprisal, want, atol=3e-5, rtol=0)
    assert res.context == chat and res.text == "It jumps over the dog."
    assert res.settings["context_tokens"] == len(ctx) and res.is_eos[-1]
    assert res.settings["context_bos"] is True  # the template's own BOS, counted once
    assert res.context_length[0] == len(ctx)


@pytest.mark.parametrize(("max_length", "stride"), [(16, 8), (16, 16), (9, 3), (2, 1)])
@pytest.mark.parametrize("context", [None, CONTEXT_SHORT])
def test_the_prefix_token_in_every_window(tiny_lm, f64, max_length, stride, context):
    res = score(LONG_TEXT, tiny_lm, max_length=max_length, stride=stride,
                prefix_every_window=True, context=context)
    if context is None:
        seq, first = [tiny_lm.tokenizer.bos_token_id, *_ids(tiny_lm.tokenizer, LONG_TEXT)], 1
    else:
        seq, first = context_sequence(tiny_lm, context, LONG_TEXT)
    want, ctx = brute_force(f64(tiny_lm), seq, first, max_length, stride, every=True)
    np.testing.assert_allclose(res.surprisal, want, atol=3e-5, rtol=0)
    np.testing.assert_array_equal(res.context_length, ctx)
    assert res.settings["prefix_every_window"] is True
    plain = score(LONG_TEXT, tiny_lm, max_length=max_length, stride=stride, context=context)
    assert len(plain) == len(res) and not np.allclose(plain.surprisal, res.surprisal)


def test_prefix_every_window_with_the_bow_after_the_last_token(tiny_gpt2):
    """b after the last token, from its own forward, reads the prefix token too."""
    res = score(LONG_TEXT, tiny_gpt2, max_length=16, stride=8, prefix_every_window=True)
    assert np.isfinite(res.bow_prob_end) and np.isfinite(res.bow_prob).all()


@pytest.mark.parametrize(("options", "rule"), [
    ({"prefix_every_window": True, "prefix": None}, "it needs prefix='bos'"),
    ({"prefix_every_window": True, "max_length": 1},
     "max_length must be at least 2 with prefix_every_window=True"),
    ({"context": ""}, "context must hold more than whitespace"),
    ({"context": 3}, "context must be a string or a chat"),
    ({"context": [{"role": "user", "content": "hi"}]}, "this tokenizer has no chat template"),
])
def test_bad_options_are_clear_errors(tiny_gpt2, options, rule):
    with pytest.raises(ValueError, match=rule):
        score(TEXT, tiny_gpt2, **options)


def test_a_result_with_a_context_round_trips(tiny_gpt2):
    from ppl_widget import ScoreResult

    res = score(TEXT, tiny_gpt2, context="The quick ", prefix_every_window=True, max_length=8)
    back = ScoreResult.from_dict(res.to_dict())
    assert back.context == "The quick" and back.text == res.text
    assert back.settings["prefix_every_window"] is True
    np.testing.assert_array_equal(back.surprisal, res.surprisal)


def test_the_default_model_given_a_context_and_a_chat(default_lm, f64):
    """SmolLM2-Instruct: a string context longer than the window, and a chat through the
    model's own template with its end-of-turn token (<|im_end|>) scored."""
    res = score(TEXT, default_lm, context=LONG_TEXT[:400], max_length=32, stride=8)
    seq, first = context_sequence(default_lm, LONG_TEXT[:400], TEXT)
    assert first > 32  # the context alone overflows the window
    want, ctx = brute_force(f64(default_lm), seq, first, 32, 8)
    np.testing.assert_allclose(res.surprisal, want, atol=2e-4, rtol=0)
    np.testing.assert_array_equal(res.context_length, ctx)

    tok = default_lm.tokenizer
    chat = [{"role": "user", "content": "Say something about foxes."}]
    reply = "The quick brown fox jumps over the lazy dog."
    res = score(reply, default_lm, context=chat, add_eos=True)
    rendered = tok.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    ctx_ids = tok(rendered, add_special_tokens=False)["input_ids"]
    whole = tok(rendered + reply, add_special_tokens=False)["input_ids"]
    seq = whole + tok.convert_tokens_to_ids(["<|im_end|>"])
    with torch.no_grad():
        logp = torch.log_softmax(f64(default_lm)(torch.tensor([seq])).logits[0], -1)
    want = [-logp[p - 1, seq[p]].item() for p in range(len(ctx_ids), len(seq))]
    np.testing.assert_allclose(res.surprisal, want, atol=2e-4, rtol=0)
    assert res.is_eos[-1] and res.token_ids[-1] == seq[-1]
    assert res.settings["context_tokens"] == len(ctx_ids)
