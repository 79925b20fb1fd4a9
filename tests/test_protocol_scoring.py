"""score(protocol=...) on tiny models against each tool's loop run by hand on a float64
copy of the same model (within the float32 tolerance, tests/float64.py): llama-perplexity's
chunks (BOS in place of each chunk's first token), the transformers guide's strided loop
(its printed number and the right one), lm-eval's rolling windows; unscored tokens tile the
text with the scored ones."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import LONG_TEXT
from float64 import TINY_NATS, assert_within, float64_copy

from ppl_widget import score
from ppl_widget.core.result import ScoreResult

SHORT = LONG_TEXT[:300]  # about 100 tokens: the guide's many small windows stay quick

torch = pytest.importorskip("torch")


def nll_of(lm, ids: list[int]) -> np.ndarray:
    """-log p(ids[k+1] | ids[:k+1]) for every k, from one forward of the float64 copy."""
    with torch.no_grad():
        logits = float64_copy(lm)(torch.tensor([ids])).logits[0]
    logp = torch.log_softmax(logits, -1)
    return -logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].numpy()


def text_ids(lm, text):
    return lm.tokenizer(text, add_special_tokens=False)["input_ids"]


def assert_tiles(r: ScoreResult):
    spans = sorted([tuple(o) for o in r.offsets.tolist()] +
                   [tuple(o) for o in r.unscored_offsets.tolist()])
    pos = 0
    for s, e in spans:
        assert s == pos
        pos = e
    assert pos == len(r.text)


@pytest.mark.parametrize("n_ctx", [16, 21])
def test_llama_cpp_equals_its_loop(tiny_gpt2, n_ctx):
    lm = tiny_gpt2
    r = score(LONG_TEXT, lm, max_length=n_ctx, protocol="llama.cpp")
    tokens = text_ids(lm, LONG_TEXT)  # this tokenizer adds no BOS: none is read
    first, nll = n_ctx // 2, []
    for start in range(0, len(tokens) // n_ctx * n_ctx, n_ctx):
        nll.extend(nll_of(lm, tokens[start:start + n_ctx])[first:])
    assert_within(r.surprisal, nll, TINY_NATS)
    assert r.settings["protocol"] == "llama.cpp" and r.settings["prefix"] is None
    assert len(r) + len(r.unscored_token_ids) == len(tokens)
    assert r.metrics()["n_unscored_tokens"] == len(tokens) - len(nll)
    assert_tiles(r)
    report = r.protocol_report()
    assert_within(math.log(report["final_ppl"]), np.mean(nll), TINY_NATS)  # a mean: once
    assert len(report["chunk_ppl"]) == len(tokens) // n_ctx
    assert "not scored by the protocol" in r.conventions()


def test_llama_cpp_reads_bos_first_in_every_chunk(tiny_gpt2, monkeypatch):
    """A tokenizer that adds BOS: llama.cpp reads BOS, then the chunk's positions 1.."""
    lm = tiny_gpt2
    import ppl_widget.scoring.runner.scorer as scorer

    monkeypatch.setattr(scorer, "adds_bos", lambda tok: True)
    n_ctx = 16
    r = score(LONG_TEXT, lm, max_length=n_ctx, protocol="llama.cpp")
    bos = lm.tokenizer.bos_token_id
    tokens = [bos] + text_ids(lm, LONG_TEXT)
    nll = []
    for start in range(0, len(tokens) // n_ctx * n_ctx, n_ctx):
        chunk = [bos] + tokens[start + 1:start + n_ctx]
        nll.extend(nll_of(lm, chunk)[n_ctx // 2:])
    assert_within(r.surprisal, nll, TINY_NATS)
    assert r.settings["prefix"] == "bos"
    assert_tiles(r)


def test_llama_cpp_short_text_names_the_rule(tiny_gpt2):
    with pytest.raises(ValueError, match="at least 2 \\* max_length"):
        score("The quick brown fox.", tiny_gpt2, max_length=16, protocol="llama.cpp")


@pytest.mark.parametrize("max_length,stride", [(16, 8), (16, 5), (16, 16)])
def test_hf_guide_reproduces_the_guide(tiny_gpt2, max_length, stride):
    lm = tiny_gpt2
    ids = torch.tensor([text_ids(lm, SHORT)])
    seq_len = ids.size(1)
    nll_sum, n_tokens, prev_end = 0.0, 0, 0
    for begin in range(0, seq_len, stride):  # the guide's loop, as published
        end = min(begin + max_length, seq_len)
        trg_len = end - prev_end
        input_ids = ids[:, begin:end]
        target_ids = input_ids.clone()
        target_ids[:, :-trg_len] = -100
        with torch.no_grad():
            loss = float64_copy(lm)(input_ids, labels=target_ids).loss
        num_loss_tokens = (target_ids != -100).sum().item() - target_ids.size(0)
        if num_loss_tokens:
            nll_sum += loss * num_loss_tokens
            n_tokens += num_loss_tokens
        prev_end = end
        if end == seq_len:
            break
    r = score(SHORT, lm, max_length=max_length, stride=stride, protocol="hf-guide")
    report = r.protocol_report()
    guide_mean = float(nll_sum) / n_tokens  # a mean: the per-token tolerance once
    assert_within(math.log(report["guide_reported_ppl"]), guide_mean, TINY_NATS)
    assert report["guide_reported_n_tokens"] == n_tokens
    assert report["token_ppl"] == pytest.approx(r.metrics()["token_ppl"])
    if stride < max_length:  # one token short per window after the first
        assert report["n_tokens"] - n_tokens == r.settings["n_windows"] - 1
        assert report["n_tokens"] == seq_len - 1
    assert r.settings["prefix"] is None
    assert_tiles(r)


def test_lm_eval_is_exact_with_disjoint_windows(tiny_llama):
    r = score(LONG_TEXT, tiny_llama, max_length=16, protocol="lm-eval")
    e = score(LONG_TEXT, tiny_llama, max_length=16, stride=16)
    np.testing.assert_array_equal(r.surprisal, e.surprisal)
    assert r.settings["stride"] == 16 and r.settings["protocol"] == "lm-eval"
    with pytest.raises(ValueError, match="stride must equal max_length with protocol='lm-eval'"):
        score(LONG_TEXT, tiny_llama, max_length=16, stride=8, protocol="lm-eval")
    with pytest.raises(ValueError, match="prefix=None is an option of protocol='exact'"):
        score(LONG_TEXT, tiny_llama, max_length=16, prefix=None, protocol="lm-eval")


def test_protocol_metrics_count_scored_tokens_only(tiny_gpt2):
    r = score(LONG_TEXT, tiny_gpt2, max_length=16, protocol="llama.cpp")
    m = r.metrics()
    assert m["n_tokens"] == len(r.surprisal)
    assert m["n_chars"] == int(r.units[:, 1].sum()) < len(LONG_TEXT)
    assert m["token_ppl"] == pytest.approx(math.exp(r.surprisal.mean()))


def test_protocol_survives_save_and_load(tiny_gpt2):
    r = score(SHORT, tiny_gpt2, max_length=16, stride=5, protocol="hf-guide")
    back = ScoreResult.from_dict(r.to_dict())
    assert back.settings["protocol"] == "hf-guide"
    np.testing.assert_array_equal(back.unscored_token_ids, r.unscored_token_ids)
    assert back.protocol_report() == r.protocol_report()
    assert back.conventions() == r.conventions()


def test_reuse_is_refused_where_the_plan_moves(tiny_gpt2):
    r = score(LONG_TEXT, tiny_gpt2, max_length=16, protocol="llama.cpp")
    with pytest.raises(ValueError, match="reuse= keeps the windows before an edit"):
        score(LONG_TEXT + " more", tiny_gpt2, max_length=16, protocol="llama.cpp", reuse=r)
    e = score(SHORT, tiny_gpt2, max_length=16, protocol="lm-eval")
    again = score(SHORT + " more", tiny_gpt2, max_length=16, protocol="lm-eval", reuse=e)
    assert again.settings["reused_tokens"] > 0
