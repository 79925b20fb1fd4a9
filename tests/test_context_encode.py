"""The seam between a context and its continuation (lm-evaluation-harness's
``_encode_pair``), chat rendering, the end-of-turn token, and bad contexts."""

from __future__ import annotations

import copy

import numpy as np
import pytest

pytest.importorskip("transformers")

from ppl_widget.scoring.runner.context import check_context, encode_pair  # noqa: E402
from ppl_widget.scoring.runner.prepare import prepare  # noqa: E402

#: a ChatML-like template over the tiny GPT-2 tokenizer's one special token
TEMPLATE = ("{% for m in messages %}<|endoftext|>{{ m['role'] }}\n{{ m['content'] }}"
            "<|endoftext|>\n{% endfor %}{% if add_generation_prompt %}<|endoftext|>assistant\n"
            "{% endif %}")
CHAT = [{"role": "user", "content": "What does the fox do?"}]


@pytest.fixture(scope="module")
def chat_tok(tiny_gpt2):
    tok = copy.deepcopy(tiny_gpt2.tokenizer)
    tok.chat_template = TEMPLATE
    return tok


def _ids(tok, text):
    return tok(text, add_special_tokens=False, split_special_tokens=True)["input_ids"]


@pytest.mark.parametrize("lm", ["tiny_gpt2", "tiny_llama"])
@pytest.mark.parametrize(("context", "text", "read", "scored"), [
    ("The quick brown ", "fox jumps.", "The quick brown", " fox jumps."),
    ("The quick brown", " fox jumps.", "The quick brown", " fox jumps."),
    ("Surprisal is\n\n  ", "minus the log", "Surprisal is", "\n\n  minus the log"),
])
def test_trailing_whitespace_moves_and_the_joint_encoding_splits(request, lm, context, text,
                                                                  read, scored):
    tok = request.getfixturevalue(lm).tokenizer
    pair = encode_pair(tok, context, text)
    assert (pair.context, pair.text) == (read, scored)
    assert pair.context + pair.text == context + text
    # lm-evaluation-harness: context alone, then the joint encoding's tokens after it
    whole = _ids(tok, read + scored)
    assert pair.context_ids.tolist() == _ids(tok, read)
    assert pair.ids.tolist() == whole[len(pair.context_ids):]
    spans = pair.offsets
    assert spans.min() >= 0 and spans.max() <= len(scored)


def test_a_chat_is_rendered_with_the_generation_prompt(chat_tok):
    pair = encode_pair(chat_tok, CHAT, "It jumps.")
    rendered = chat_tok.apply_chat_template(CHAT, add_generation_prompt=True, tokenize=False)
    assert rendered.endswith("<|endoftext|>assistant\n")
    want = chat_tok(rendered, add_special_tokens=False)["input_ids"]
    assert pair.context_ids.tolist() == want  # the template's special tokens are special
    assert pair.context == CHAT and pair.text == "It jumps."  # nothing moves at a chat's seam
    assert pair.starts_with_bos and pair.end_of_turn_id == chat_tok.eos_token_id


def test_the_chat_prepared_reads_no_second_bos_and_scores_the_end_of_turn(chat_tok, tiny_gpt2):
    class LM:
        tokenizer = chat_tok

    prep = prepare("It jumps.", LM(), add_eos=True, context=CHAT)
    ctx = encode_pair(chat_tok, CHAT, "It jumps.")
    assert prep.sequence.tolist() == [*ctx.context_ids.tolist(), *ctx.ids.tolist(),
                                      chat_tok.eos_token_id]
    assert prep.first_target == len(ctx.context_ids)
    assert prep.target_is_eos.tolist() == [False] * len(ctx.ids) + [True]
    assert prep.unscored_ids.size == 0 and prep.n_context_tokens == len(ctx.context_ids)
    assert prep.context_bos  # the template's own BOS, in the count once


@pytest.mark.parametrize("prefix", ["bos", None])
def test_a_string_context_sits_between_the_prefix_and_the_text(tiny_llama, prefix):
    prep = prepare("fox jumps.", tiny_llama, prefix=prefix, context="The quick brown ")
    tok = tiny_llama.tokenizer
    head = [tok.bos_token_id] if prefix else []
    read = _ids(tok, "The quick brown")
    assert prep.sequence[:len(head) + len(read)].tolist() == head + read
    assert prep.first_target == len(head) + len(read)
    # one count of the context: everything read before the first target, BOS said
    assert prep.context_settings() == {"context_tokens": prep.first_target,
                                       "context_bos": bool(prefix)}
    assert len(prep.target_ids) == len(prep.target_offsets) == len(prep.sequence) - \
        prep.first_target
    # every character of the continuation belongs to one scored token: no unscored start
    assert prep.unscored_ids.size == 0 and prep.target_offsets[0, 0] == 0
    assert prep.target_offsets[-1, 1] == len(" fox jumps.") == len(prep.text)
    assert np.all(prep.target_offsets[1:, 0] == prep.target_offsets[:-1, 1])


def test_a_chat_without_a_template_names_the_fix(tiny_gpt2):
    tok = copy.deepcopy(tiny_gpt2.tokenizer)
    tok.chat_template = None
    with pytest.raises(ValueError, match="no chat template.*pass the context as a string, or "
                                         "set tokenizer.chat_template"):
        encode_pair(tok, CHAT, "It jumps.")


@pytest.mark.parametrize(("context", "rule"), [
    ("", "context must hold more than whitespace"),
    ("  \n", "context must hold more than whitespace"),
    (42, "context must be a string or a chat"),
    ({"role": "user", "content": "hi"}, "context must be a string or a chat"),
    ([], "context must be a string or a chat"),
    ([{"role": "user"}], "chat message 0 must be a dict with string 'role' and 'content'"),
    ([{"role": "user", "content": "hi"}, "hello"], "chat message 1 must be a dict"),
])
def test_bad_contexts_name_the_rule(context, rule):
    with pytest.raises(ValueError, match=rule):
        check_context(context)
