"""Long texts are tokenized in parallel pieces, exactly as one call; ids decode fast."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from conftest import CORPUS, _byte_level_tokenizer, _metaspace_tokenizer  # noqa: E402

from ppl_widget.scoring.runner import encode  # noqa: E402
from ppl_widget.scoring.runner.vocab import decode_each, plain_fast_decode  # noqa: E402

# lines of varied indentation, blank lines, non-ASCII and special-token strings
LINES = [f"{'    ' * (i % 3)}{CORPUS[i % 5]} #{i} <|endoftext|> 🙂" for i in range(1500)]
LONG = "\n".join(line if i % 7 else "\n" + line for i, line in enumerate(LINES))


def one_call(tok, text):
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True,
              split_special_tokens=True)
    return np.asarray(enc["input_ids"]), np.asarray(enc["offset_mapping"]).reshape(-1, 2)


@pytest.mark.parametrize("make", [_byte_level_tokenizer, _metaspace_tokenizer])
def test_parallel_pieces_equal_one_call(make, monkeypatch):
    tok = make()
    calls = []
    real = encode._encode
    monkeypatch.setattr(encode, "_encode", lambda t, texts: calls.append(len(texts)) or
                        real(t, texts))
    monkeypatch.setattr(encode, "PIECE_CHARS", 20_000)
    assert len(LONG) > encode.PARALLEL_MIN_CHARS
    cuts = encode.cut_points(LONG, 20_000)
    assert len(cuts) >= 3
    assert all(LONG[c - 1] == "\n" and not LONG[c].isspace() for c in cuts)
    ids, offsets = encode.encode_with_offsets(tok, LONG)
    ref_ids, ref_offsets = one_call(tok, LONG)
    np.testing.assert_array_equal(ids, ref_ids)
    np.testing.assert_array_equal(offsets, ref_offsets)
    if make is _byte_level_tokenizer:  # pieces are independent: one batch of them
        assert calls == [3, 2 * len(cuts) + 1]
    else:  # metaspace marks the start of every input: the first check sends it to one call
        assert calls == [3, 1]


def test_a_failed_check_at_any_cut_falls_back_to_one_call(monkeypatch):
    tok = _byte_level_tokenizer()
    monkeypatch.setattr(encode, "PIECE_CHARS", 20_000)
    real = encode._same_near
    seen = []

    def fail_third(c, window, ids, offsets):
        seen.append(c)
        return len(seen) != 3 and real(c, window, ids, offsets)

    monkeypatch.setattr(encode, "_same_near", fail_third)
    ids, offsets = encode.encode_with_offsets(tok, LONG)
    assert len(seen) == 3
    np.testing.assert_array_equal(ids, one_call(tok, LONG)[0])


def test_short_texts_take_one_call():
    assert encode.cut_points("a\nb" * 10, 20_000) == []
    tok = _byte_level_tokenizer()
    ids, offsets = encode.encode_with_offsets(tok, "Short text.\nTwo lines.")
    np.testing.assert_array_equal(ids, one_call(tok, "Short text.\nTwo lines.")[0])


@pytest.mark.parametrize("make", [_byte_level_tokenizer, _metaspace_tokenizer])
def test_fast_decode_equals_batch_decode(make):
    tok = make()
    ids = list(range(len(tok)))
    assert plain_fast_decode(tok)
    assert decode_each(tok, ids) == dict(zip(ids, tok.batch_decode([[i] for i in ids]),
                                              strict=True))
    tok.clean_up_tokenization_spaces = True  # then batch_decode may clean up: use it
    assert not plain_fast_decode(tok)


@pytest.mark.parametrize("make", [_byte_level_tokenizer, _metaspace_tokenizer])
def test_prepare_many_equals_prepare_each(make, monkeypatch):
    from ppl_widget.scoring.runner import prepare as prep_mod

    class Lm:
        tokenizer = make()

    calls = []
    real = encode._encode
    monkeypatch.setattr(encode, "_encode", lambda t, texts: calls.append(len(texts)) or
                        real(t, texts))
    texts = ["", "Hi", "  \n", *CORPUS[:7], LONG, "<|endoftext|> 🙂 é"]
    for kw in (dict(prefix="bos"), dict(prefix=None, add_eos=True)):
        calls.clear()
        many = prep_mod.prepare_many(texts, Lm(), **kw)
        assert calls[0] == len(texts) - 1  # the short ones in one batch call
        for text, got in zip(texts, many, strict=True):
            ref = prep_mod.prepare(text, Lm(), **kw)
            for f in ("sequence", "target_offsets", "target_units", "target_is_eos",
                      "unscored_ids", "unscored_offsets"):
                np.testing.assert_array_equal(getattr(got, f), getattr(ref, f), err_msg=f)
            assert got.text == text and got.prefix_token == ref.prefix_token
    with pytest.raises(ValueError, match="lone surrogate"):
        prep_mod.prepare_many(["fine", "bad \ud800"], Lm())
