"""The widget's state and the messages it sends to the front end (send captured)."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("anywidget")

from conftest import LONG_TEXT  # noqa: E402

from ppl_widget import score  # noqa: E402
from ppl_widget.views import protocol as P  # noqa: E402
from ppl_widget.views.widget import PerplexityWidget  # noqa: E402


def decode(content: dict, buffers: list, top_k: int) -> dict[str, np.ndarray]:
    out = {}
    for (name, dtype, per), buf in zip(P.CHUNK_FIELDS, buffers, strict=True):
        arr = np.frombuffer(buf, dtype=dtype)
        out[name] = arr.reshape(content["count"], per or top_k) if (per or top_k) != 1 else arr
    return out


def test_streams_chunks_then_done_and_syncs_the_full_result(tiny_gpt2, sent):
    text = "Émoji 🙂 and <b>bold</b>\n" + LONG_TEXT
    w = PerplexityWidget(text, tiny_gpt2, max_length=16, stride=8, batch_size=1)
    res = w.wait()
    assert w.status == "done" and not res.partial
    types = [c["type"] for c, _ in sent]
    assert types[0] == P.MSG_RESET and types[-1] == P.MSG_DONE
    chunks = [(c, b) for c, b in sent if c["type"] == P.MSG_CHUNK]
    assert len(chunks) == res.settings["n_windows"]  # one message per batch (batch size 1)
    assert [c["start"] for c, _ in chunks] == np.cumsum([0] + [c["count"] for c, _ in
                                                              chunks[:-1]]).tolist()
    got = {k: np.concatenate([decode(c, b, 5)[k] for c, b in chunks]) for k, *_ in
           P.CHUNK_FIELDS}
    np.testing.assert_array_equal(got["token_ids"], res.token_ids)
    np.testing.assert_allclose(got["surprisal"], res.surprisal, rtol=1e-6)
    np.testing.assert_array_equal(got["units"], res.units)
    # UTF-16 offsets: JavaScript's text.slice(start16, end16) is the token's text
    utf16 = text.encode("utf-16-le")
    for i in range(len(res)):
        s, e = got["start16"][i], got["end16"][i]
        assert utf16[2 * s:2 * e].decode("utf-16-le") == res.tokens[i]
    # traffic is linear: each token crosses the comm once while streaming
    per_token = sum(4 * (n or 5) for _, _, n in P.CHUNK_FIELDS)
    assert sum(len(x) for _, b in chunks for x in b) == per_token * len(res)
    # the final state holds everything, for later views, reloads and saved state
    data = w.result_data
    assert data["count"] == len(res) and data["partial"] is False
    assert np.frombuffer(data["surprisal"], "<f4").shape == (len(res),)
    assert data["metrics"]["n_tokens"] == res.metrics()["n_tokens"]
    done = sent[-1][0]
    assert done["metrics"]["total_nll"] == pytest.approx(res.metrics()["total_nll"])
    assert w.settings["max_length"] == 16 and w.settings["n_unscored"] == 0
    all_vocab = {int(k) for c, _ in chunks for k in c["vocab"]}
    assert all_vocab == set(res.vocab)


@pytest.mark.parametrize("unigram", [None, "in-sample"])
def test_final_state_holds_exactly_what_was_streamed(tiny_gpt2, sent, unigram):
    # result_data takes the token arrays from the run's result and joins only the
    # widget's own fields: byte for byte the streamed chunks, field by field
    w = PerplexityWidget(LONG_TEXT, tiny_gpt2, max_length=16, stride=4, unigram=unigram,
                         batch_size=1)  # a window per chunk: many chunks
    w.wait()
    chunks = [b for c, b in sent if c["type"] == P.MSG_CHUNK]
    assert len(chunks) > 3
    data = w.result_data
    compared = 0
    for i, (name, _dtype, _per) in enumerate(P.CHUNK_FIELDS):
        if name in data:
            assert data[name] == b"".join(b[i] for b in chunks), name
            compared += 1
    assert compared >= len(P.CHUNK_FIELDS) - 1  # every field but an absent optional one


def test_replay_resends_everything_for_a_late_view(tiny_gpt2, sent):
    w = PerplexityWidget(LONG_TEXT, tiny_gpt2, max_length=16, stride=8)
    res = w.wait()
    sent.clear()
    w._on_front_end_message(w, {"type": P.MSG_REPLAY}, [])
    types = [c["type"] for c, _ in sent]
    assert types == [P.MSG_RESET, P.MSG_CHUNK, P.MSG_DONE]
    chunk, buffers = sent[1]
    assert chunk["start"] == 0 and chunk["count"] == len(res)
    np.testing.assert_array_equal(decode(chunk, buffers, 5)["rank"], res.rank)


@pytest.fixture
def slow_batches(monkeypatch):
    from ppl_widget.scoring.runner.forward import BatchedForward

    real = BatchedForward.score_batch

    def slow(self, sequence, batch):
        time.sleep(0.05)
        return real(self, sequence, batch)

    monkeypatch.setattr(BatchedForward, "score_batch", slow)


def test_cancel_message_keeps_partial_result(tiny_gpt2, sent, slow_batches):
    w = PerplexityWidget(LONG_TEXT * 3, tiny_gpt2, max_length=8, stride=2)
    deadline = time.time() + 10
    while not any(c["type"] == P.MSG_CHUNK for c, _ in sent) and time.time() < deadline:
        time.sleep(0.01)
    assert w.result.partial  # readable while scoring runs
    w._on_front_end_message(w, {"type": P.MSG_CANCEL}, [])
    res = w.wait()
    assert w.status == "cancelled" and res.partial and 0 < len(res) < res.total_tokens
    assert w.result_data["partial"] is True and w.result_data["count"] == len(res)
    # the bar of a cancelled run reads count / what the whole run would have scored
    assert w.result_data["total_tokens"] == res.total_tokens
    done = sent[-1][0]
    assert (done["type"], done["run_id"], done["partial"]) == (P.MSG_DONE, 1, True)
    assert done["metrics"]["n_tokens"] == len(res)
    assert done["metrics"]["total_nll"] == pytest.approx(res.metrics()["total_nll"])


def test_errors_show_in_the_widget_and_raise_from_wait(tiny_gpt2, sent):
    # a model loaded by the run: its context length is only known there
    lm = (tiny_gpt2.model, tiny_gpt2.tokenizer)
    w = PerplexityWidget(LONG_TEXT, lm, max_length=65)  # beyond the 64-token context
    with pytest.raises(ValueError, match="context length"):
        w.wait()
    assert w.status == "error" and "context length" in w.error
    assert any(c["type"] == P.MSG_ERROR and "context length" in c["message"] for c, _ in sent)


def test_bad_parameters_raise_at_construction(tiny_gpt2):
    with pytest.raises(ValueError, match="stride must not exceed max_length"):
        PerplexityWidget("text", tiny_gpt2, max_length=4, stride=5)
    with pytest.raises(ValueError, match="prefix must be"):
        PerplexityWidget("text", tiny_gpt2, prefix="start")
    with pytest.raises(TypeError, match="text must be a str"):
        PerplexityWidget(None, tiny_gpt2)


def test_changing_a_control_rescores(tiny_gpt2, sent):
    w = PerplexityWidget(LONG_TEXT, tiny_gpt2, max_length=16, stride=8)
    first = w.wait()
    w.stride = 4  # as the front end's control would
    second = w.wait()
    assert second.settings["stride"] == 4 and w.settings["stride"] == 4
    assert w.result_data["run_id"] == 2
    # the widget runs score()'s stream with the same settings: bit for bit
    np.testing.assert_array_equal(second.surprisal,
                                  score(LONG_TEXT, tiny_gpt2, max_length=16, stride=4).surprisal)
    assert len(second) == len(first)
    w.prefix = "none"
    assert len(w.wait()) == len(first) - 1 and w.settings["n_unscored"] == 1


def test_one_front_end_update_of_several_controls_starts_one_run(tiny_gpt2, sent):
    w = PerplexityWidget(LONG_TEXT, tiny_gpt2, max_length=16, stride=8)
    w.wait()
    # what the form's single save_changes() sends: three traits in one update
    w.set_state({"max_length": 32, "stride": 16, "prefix": "none"})
    res = w.wait()
    assert w.result_data["run_id"] == 2  # one new run, not three
    assert res.settings["max_length"] == 32 and res.settings["stride"] == 16
    assert res.settings["prefix"] is None


def test_rescore_from_python_starts_exactly_one_run(tiny_gpt2, sent):
    w = PerplexityWidget(LONG_TEXT, tiny_gpt2, max_length=16, stride=8)
    w.wait()
    w.rescore(max_length=32, stride=4, prefix=None, add_eos=True)
    res = w.wait()
    assert w.result_data["run_id"] == 2
    assert sum(c["type"] == P.MSG_RESET for c, _ in sent) == 2
    assert (res.settings["max_length"], res.settings["stride"]) == (32, 4)
    assert res.settings["prefix"] is None and res.is_eos[-1]
    with pytest.raises(TypeError, match="unknown settings"):
        w.rescore(temperature=2)


def test_a_new_text_is_scored_anew(tiny_gpt2, sent):
    w = PerplexityWidget("First text 🙂.", tiny_gpt2, max_length=16, stride=8)
    w.wait()
    w.text = "Second text, longer, with émoji 🙂🙂 and more words."
    res = w.wait()
    assert res.text == w.text and w.result_data["run_id"] == 2
    chunk, buffers = [(c, b) for c, b in sent if c["type"] == P.MSG_CHUNK][-1]
    got = decode(chunk, buffers, 5)
    utf16 = w.text.encode("utf-16-le")
    assert utf16[2 * got["start16"][-1]:2 * got["end16"][-1]].decode("utf-16-le") == \
        res.tokens[-1]


@pytest.mark.parametrize("unigram", [None, "in-sample"])
def test_final_result_data_is_the_payload_of_its_result(tiny_lm, sent, unigram):
    """The widget's end and the exported page build result_data and settings by one
    function each (protocol.py): with a scored EOS (and a unigram) they agree key for key."""
    from ppl_widget.core.unigram import as_unigram
    from ppl_widget.views import export

    w = PerplexityWidget(LONG_TEXT, tiny_lm, max_length=16, stride=4, add_eos=True,
                         unigram=unigram)
    res = w.wait()
    assert res.is_eos[-1] and not res.partial
    uni = None if unigram is None else as_unigram(unigram, tiny_lm.tokenizer, text=LONG_TEXT)
    assert w.result_data == P.result_data(res, unigram=uni)
    assert ("context_gain" in w.result_data) == (unigram is not None)
    assert w.settings == P.result_settings(res, unigram=uni)
    assert w.settings["eos_scored"] is True
    if unigram is None:  # the page of the bare result shows exactly what the widget holds
        state = export.result_state(res)
        assert state["result_data"] == w.result_data and state["settings"] == w.settings
    done = sent[-1][0]
    assert done["metrics"] == w.result_data["metrics"]


def test_infinite_metrics_travel_as_infinity_strings(sent):
    """An MLE n-gram gives an unseen word probability 0: the metrics are infinite, and
    go out as "Infinity" (core/jsonable.py; JavaScript's Number() reads it), not null."""
    import json
    import math

    from ppl_widget import NGramModel
    from ppl_widget.views import export

    lm = NGramModel(2, "mle").fit(["I am Sam", "Sam I am", "I like ham"])
    w = PerplexityWidget("I am Bob", lm, add_eos=True)
    res = w.wait()
    assert res.metrics()["word_ppl"] == math.inf
    done = sent[-1][0]
    for metrics in (w.result_data["metrics"], done["metrics"]):
        assert metrics["word_ppl"] == "Infinity" and metrics["total_nll"] == "Infinity"
        json.dumps(metrics, allow_nan=False)
    page = export.result_to_html(res)
    assert '"word_ppl":"Infinity"' in page and "per word inf" in page


EXIT_MID_RUN = """
import sys, time
sys.path.insert(0, {tests!r})
from conftest import _tiny
from ppl_widget.views.widget import PerplexityWidget
w = PerplexityWidget("hello there general kenobi " * 2000, _tiny("gpt2"), max_length=32, stride=16)
time.sleep(0.3)
print(w.status, flush=True)  # still scoring as the script ends
"""


def test_a_script_that_exits_mid_run_exits_cleanly():
    """The run's thread is stopped at exit: left inside torch while the interpreter
    finalizes, it aborted the process (exit status 134, "terminate called without an
    active exception")."""
    import subprocess
    import sys
    from pathlib import Path

    code = EXIT_MID_RUN.format(tests=str(Path(__file__).parent))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.stdout.strip() == "scoring", proc.stdout + proc.stderr[-2000:]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "terminate called" not in proc.stderr
