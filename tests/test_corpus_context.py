"""Corpora whose records carry a context (a string or a chat): each document equals
score(text, lm, context=...), the context comes back from the file, and bad contexts are
named before anything is scored."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from conftest import CORPUS, LONG_TEXT

pytest.importorskip("torch")
pytest.importorskip("pyarrow")

from float64 import TINY_NATS, assert_scores_within  # noqa: E402
from test_context_encode import CHAT, TEMPLATE  # noqa: E402
from test_corpus import assert_same  # noqa: E402

from ppl_widget import load_model, score, score_corpus  # noqa: E402
from ppl_widget.cli import main as cli_main  # noqa: E402

OPTS = dict(max_length=32, stride=16, progress=False)


def records(chat: bool) -> list[dict]:
    recs = [
        {"id": "plain", "text": CORPUS[0]},  # no context field at all
        {"id": "null", "text": CORPUS[1], "context": None},
        {"id": "short", "text": " jumps over the dog.", "context": "The quick brown fox"},
        {"id": "space", "text": "over the dog.", "context": "The fox jumps "},  # seam moves
        {"id": "long", "text": LONG_TEXT[:300], "context": LONG_TEXT[300:700]},  # many windows
    ]
    if chat:
        recs.append({"id": "chat", "text": "It jumps over the dog.", "context": CHAT})
    return recs


@pytest.fixture(scope="module")
def chat_lm(tiny_gpt2):
    tok = copy.deepcopy(tiny_gpt2.tokenizer)
    tok.chat_template = TEMPLATE
    return load_model((tiny_gpt2.model, tok), device="cpu", dtype="float32")


def test_each_document_equals_score_with_its_context(chat_lm, tmp_path):
    recs = records(chat=True)
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    res = score_corpus(src, tmp_path / "out.parquet", chat_lm, context_field="context",
                       batch_size=3, **OPTS)
    assert list(res) == [r["id"] for r in recs]
    for r in recs:
        ref = score(r["text"], chat_lm, max_length=32, stride=16, context=r.get("context"))
        got = res[r["id"]]
        assert_same(got, ref, chat_lm)
        assert got.context == ref.context  # the context as read comes back from the file
        assert got.settings["context_tokens"] == ref.settings["context_tokens"]
        assert (got.context is None) is (r.get("context") is None)
    assert res["long"].settings["context_tokens"] > 32  # longer than a window: read, not scored
    # without the field the same file scores the texts alone
    alone = score_corpus(src, tmp_path / "alone.parquet", chat_lm, **OPTS)
    assert alone["short"].context is None
    assert alone["short"].metrics()["n_tokens"] > 0


def test_python_records_and_the_command_line(tiny_llama, tmp_path):
    recs = {r["id"]: r for r in records(chat=False)}
    res = score_corpus(recs, tmp_path / "py.parquet", tiny_llama, context_field="context",
                       **OPTS)
    ref = score(recs["short"]["text"], tiny_llama, max_length=32, stride=16,
                context=recs["short"]["context"])
    assert_same(res["short"], ref, tiny_llama)
    model = tmp_path / "model"
    tiny_llama.model.save_pretrained(model)
    tiny_llama.tokenizer.save_pretrained(model)
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in recs.values()), encoding="utf-8")
    code = cli_main(["score-corpus", str(src), "--out", str(tmp_path / "cli.parquet"),
                     "--model", str(model), "--device", "cpu", "--max-length", "32",
                     "--stride", "16", "--context-field", "context"])
    assert code == 0
    from ppl_widget import open_corpus

    cli = open_corpus(tmp_path / "cli.parquet")
    np.testing.assert_array_equal(cli["short"].token_ids, ref.token_ids)
    assert_scores_within(cli["short"], tiny_llama, TINY_NATS)  # float64, not the ref
    assert cli["short"].context == recs["short"]["context"]


@pytest.mark.parametrize("bad, rule", [
    (123, "context must be a string or a chat"),
    ("   ", "context must hold more than whitespace"),
    ([{"role": "user"}], "chat message 0 must be a dict with string 'role' and"),
])
def test_a_bad_context_is_named_before_anything_is_scored(tiny_gpt2, tmp_path, bad, rule):
    src = tmp_path / "docs.jsonl"
    lines = [{"id": "a", "text": "fine", "context": "ok"}, {"id": "b", "text": "x", "context": bad}]
    src.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    with pytest.raises(ValueError, match=rf"docs.jsonl:2: the context field 'context': {rule}"):
        score_corpus(src, tmp_path / "out.parquet", tiny_gpt2, context_field="context",
                     **OPTS)
    assert not (tmp_path / "out.parquet").exists()


def test_a_folder_has_no_context_field(tiny_gpt2, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("text", encoding="utf-8")
    with pytest.raises(ValueError, match="a folder of text files has no context field"):
        score_corpus(tmp_path / "docs", tmp_path / "out.parquet", tiny_gpt2,
                     context_field="context", **OPTS)
