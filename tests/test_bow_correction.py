"""The leading-whitespace (BOW) correction against a brute-force computation:
full float64 softmax over one forward pass, the begin-of-word vocabulary found from the
token strings (not by decoding), and the corrected word surprisal by plain loops."""

from __future__ import annotations

import math

import numpy as np
import pytest
from float64 import DEFAULT_MODEL_NATS, assert_within, float64_copy

from ppl_widget import score
from ppl_widget.scoring.runner.word_boundary import boundary_mask


def brute_mask(tok, vocab_size):
    """From the token strings: byte-level pieces mapped back to their bytes (GPT-2's
    byte <-> unicode table) and read as UTF-8 (a lone continuation byte such as 0xA0 is
    not a space), SentencePiece pieces by their "▁" marker."""
    byte_of = {c: b for b, c in bytes_to_unicode().items()}
    mask = np.zeros(vocab_size, bool)
    for i, piece in enumerate(tok.convert_ids_to_tokens(list(range(len(tok))))):
        if piece.startswith("▁"):
            mask[i] = True
        elif BYTE_LEVEL[id(tok)]:
            raw = bytes(byte_of[c] for c in piece if c in byte_of)
            mask[i] = raw.decode("utf-8", errors="replace")[:1].isspace()
        else:
            mask[i] = piece[:1].isspace()
    for i in tok.all_special_ids:
        mask[i] = False
    mask[tok.eos_token_id] = True
    return mask


BYTE_LEVEL: dict[int, bool] = {}


def bytes_to_unicode():
    """GPT-2's table: printable bytes map to themselves, the rest to U+0100 onwards."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs), strict=True))


def brute_force(lm, text, byte_level):
    """b at every position of [BOS] + tokens (last entry: after the last token), from a
    float64 copy of the model."""
    import torch

    BYTE_LEVEL[id(lm.tokenizer)] = byte_level
    tok = lm.tokenizer
    ids = tok(text, add_special_tokens=False)["input_ids"]
    seq = torch.tensor([[tok.bos_token_id, *ids]])
    with torch.no_grad():
        logits = float64_copy(lm)(seq).logits[0]
    probs = torch.softmax(logits, dim=-1).numpy()
    mask = brute_mask(tok, probs.shape[1])
    return probs[:, mask].sum(axis=1), mask


def corrected_by_loops(res, b_all):
    """Per word (\\S+): sum s - log b(after) + [starts with space] log b(first)."""
    text = res.text
    words, pos = [], 0
    for part in text.split():
        start = text.index(part, pos)
        words.append((start, start + len(part)))
        pos = start + len(part)
    owner = []
    for s, e in res.offsets.tolist():
        chars = [k for k in range(s, e) if not text[k].isspace()]
        if chars:
            owner.append(next(w for w, (a, b) in enumerate(words) if a <= chars[0] < b))
        else:  # whitespace only: the next word
            later = [w for w, (a, _) in enumerate(words) if a >= e]
            owner.append(later[0] if later else -1)
    out = []
    for w in range(len(words)):
        toks = [t for t, o in enumerate(owner) if o == w]
        i, j = toks[0], toks[-1]
        value = sum(res.surprisal[t] for t in toks) - math.log(b_all[j + 1])
        if text[res.offsets[i, 0]].isspace():
            value += math.log(b_all[i])
        out.append(value)
    return out


TEXT = "The quick brown fox jumps over the lazy dog.\nSurprisal is  minus the log probability."


@pytest.mark.parametrize("which", ["gpt2", "llama"])
def test_mask_b_and_correction_match_brute_force(which, tiny_gpt2, tiny_llama, monkeypatch):
    from ppl_widget.scoring.runner.forward import BatchedForward

    lm = {"gpt2": tiny_gpt2, "llama": tiny_llama}[which]

    def no_second_forward(*args):
        raise AssertionError("a text that fits one window needs no second forward for b")

    monkeypatch.setattr(BatchedForward, "bow_after_last", no_second_forward)
    res = score(TEXT, lm, max_length=64, stride=64)
    assert len(res) + 1 <= 64  # one window: the brute force sees the same context
    b_all, mask = brute_force(lm, TEXT, byte_level=which == "gpt2")
    np.testing.assert_array_equal(boundary_mask(lm.tokenizer, len(mask)), mask)
    assert mask.sum() > 5 and not mask.all()
    # b(i) at the position predicting token i, for every scored token, and after the last
    np.testing.assert_allclose(res.bow_prob, b_all[:-1], rtol=1e-5, atol=1e-7)
    assert res.bow_prob_end == pytest.approx(b_all[-1], rel=1e-5)
    frame = res.to_frame("word", bow_correction=True, log_freq=False)
    np.testing.assert_allclose(frame["surprisal_corrected"], corrected_by_loops(res, b_all),
                               rtol=1e-6)
    # the plain column stays the plain sum
    assert frame["surprisal"].sum() == pytest.approx(res.metrics()["total_nll"])


def b_after(lm, text, n_context):
    """Brute force: b after the last token, predicted from its last ``n_context`` positions
    by a float64 copy of the model."""
    import torch

    tok = lm.tokenizer
    seq = [tok.bos_token_id, *tok(text, add_special_tokens=False)["input_ids"]][-n_context:]
    with torch.no_grad():
        last = float64_copy(lm)(torch.tensor([seq])).logits[0, -1]
    BYTE_LEVEL[id(tok)] = True
    return torch.softmax(last, -1).numpy()[brute_mask(tok, last.shape[0])].sum()


def test_b_is_kept_through_strided_windows_and_json(tiny_gpt2, monkeypatch):
    from ppl_widget import ScoreResult
    from ppl_widget.scoring.runner.forward import BatchedForward

    calls = []
    monkeypatch.setattr(BatchedForward, "bow_after_last",
                        lambda *a: calls.append(a) or math.nan)
    res = score(TEXT * 3, tiny_gpt2, max_length=16, stride=8)
    assert np.all((res.bow_prob > 0) & (res.bow_prob <= 1))
    # several windows, and the context (64) has room: the last window reads one more
    # position (the last token) and gives b after it, with no second forward
    assert not calls
    assert res.bow_prob_end == pytest.approx(b_after(tiny_gpt2, TEXT * 3, 17), rel=1e-5)
    back = ScoreResult.from_dict(res.to_dict())
    np.testing.assert_allclose(back.bow_prob, res.bow_prob)
    assert back.bow_prob_end == res.bow_prob_end
    corrected = res.to_frame("word", bow_correction=True, log_freq=False)["surprisal_corrected"]
    assert np.all(np.isfinite(corrected))


def test_results_without_b_say_so():
    from ppl_widget import ScoreResult

    res = ScoreResult(text="a b", token_ids=[0, 1], offsets=[[0, 1], [1, 3]],
                      surprisal=[1.0, 2.0], entropy=[1, 1], rank=[1, 1],
                      context_length=[1, 2], topk_ids=np.zeros((2, 0)),
                      topk_probs=np.zeros((2, 0)), units=[[1, 1, 1], [1, 2, 2]],
                      is_eos=[False, False])
    with pytest.raises(ValueError, match="begin-of-word probability"):
        res.to_frame("word", bow_correction=True)
    with pytest.raises(ValueError, match="applies to the word level"):
        res.to_frame("sentence", bow_correction=True)


@pytest.mark.default_model
def test_default_model_matches_brute_force(default_lm):
    text = "Dr. Smith arrived at 3 p.m. yesterday, and the meeting began."
    res = score(text, default_lm, max_length=128, stride=64)
    b_all, mask = brute_force(default_lm, text, byte_level=True)
    np.testing.assert_array_equal(boundary_mask(default_lm.tokenizer, len(mask)), mask)
    # b is a probability: its relative error is the error of its log, in nats
    assert_within(np.log(res.bow_prob), np.log(b_all[:-1]), DEFAULT_MODEL_NATS)
    assert_within(np.log(res.bow_prob_end), np.log(b_all[-1]), DEFAULT_MODEL_NATS)
    frame = res.to_frame("word", bow_correction=True, log_freq=False)
    # the loops take the same float32 surprisals: only the two log b terms differ
    assert_within(frame["surprisal_corrected"], corrected_by_loops(res, b_all),
                  DEFAULT_MODEL_NATS, 2)


def test_b_after_the_last_token_when_the_window_fills_the_context(tiny_gpt2):
    """max_length == the model's context (64): no room for one more position, so b after
    the last token comes from a second forward over the last 64 positions."""
    text = TEXT * 4
    res = score(text, tiny_gpt2, max_length=64, stride=32)
    assert res.settings["n_windows"] > 1
    assert res.bow_prob_end == pytest.approx(b_after(tiny_gpt2, text, 64), rel=1e-5)
