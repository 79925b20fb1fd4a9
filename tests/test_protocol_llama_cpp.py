"""score(protocol="llama.cpp") on the default model against llama-perplexity's own
numbers on the same weights (tests/fixtures/llama_cpp_perplexity.json: recorded with
llama.cpp's binaries on the F32 GGUF of the default model; see docs/protocols.md)."""

from __future__ import annotations

import json
import pathlib

import pytest

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "llama_cpp_perplexity.json"


@pytest.fixture(scope="module")
def recorded():
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_final_ppl_equals_llama_perplexity(default_lm, recorded):
    from ppl_widget import score

    ids = default_lm.tokenizer(recorded["text"], add_special_tokens=False)["input_ids"]
    assert ids == recorded["token_ids"], "the tokenizer no longer gives llama.cpp's tokens"
    r = score(recorded["text"], default_lm, max_length=recorded["n_ctx"], protocol="llama.cpp")
    report = r.protocol_report()
    n_ctx = recorded["n_ctx"]
    n_chunks = len(ids) // n_ctx
    assert report["n_tokens"] == n_chunks * (n_ctx - 1 - n_ctx // 2)
    assert report["n_tokens"] + report["n_unscored_tokens"] == len(ids)
    assert r.settings["prefix"] is None  # this GGUF adds no BOS: llama.cpp reads none
    # 1e-4 relative: the final PPL; llama.cpp prints 4 decimals, and its running values
    # after each chunk agree to 1.5e-4 (measured: ours lower by 0.5-1.4e-4, float noise
    # of two different f32 implementations over 30 layers)
    assert report["final_ppl"] == pytest.approx(recorded["final_ppl"], rel=1e-4)
    assert report["chunk_ppl"] == pytest.approx(recorded["chunk_ppl"], rel=2e-4)
