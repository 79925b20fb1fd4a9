"""Widget settings are checked exactly as score() checks them (issue 11, item 2).

A rejected value, from Python (trait assignment, ``rescore``) or from the front
end's controls, raises (or is reported) with score()'s message, starts no run,
and leaves the last good result where it was.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("anywidget")
import traitlets  # noqa: E402
from conftest import LONG_TEXT  # noqa: E402

from ppl_widget import score  # noqa: E402
from ppl_widget.views import protocol as P  # noqa: E402
from ppl_widget.views import widget as widget_module  # noqa: E402
from ppl_widget.views.widget import PerplexityWidget  # noqa: E402


@pytest.fixture
def sent(monkeypatch):
    """Every custom message the widget sends, and every state push, in order."""
    log: list[tuple[str, object]] = []
    lock = threading.Lock()

    def record(self, content, buffers=None):
        with lock:
            log.append(("msg", content))

    def record_state(self, key=None):
        with lock:
            keys = [key] if isinstance(key, str) else list(key or [])
            log.append(("state", {k: getattr(self, k, None) for k in keys}))

    monkeypatch.setattr(PerplexityWidget, "send", record)
    monkeypatch.setattr(PerplexityWidget, "send_state", record_state)
    return log


def score_message(**kwargs) -> str:
    """The message score() gives for these settings."""
    from ppl_widget.scoring.runner.scorer import resolve_window

    with pytest.raises(ValueError) as info:
        resolve_window(kwargs.pop("lm"), kwargs.get("max_length"), kwargs.get("stride"))
    return str(info.value)


@pytest.fixture
def done(tiny_gpt2, sent):
    w = PerplexityWidget(LONG_TEXT, tiny_gpt2, max_length=16, stride=8)
    w.wait()
    return w


def resets(sent) -> int:
    return sum(1 for kind, c in sent if kind == "msg" and c["type"] == P.MSG_RESET)


def assert_untouched(w, result, sent, n_resets=1):
    """Nothing re-scored: same result object, same synced result, same settings."""
    assert w.wait() is result and w.result_data["run_id"] == 1
    assert (w.max_length, w.stride, w.prefix) == (16, 8, "bos")
    assert resets(sent) == n_resets and w.status == "done"


REJECTED = [
    ("stride", 0, "stride must be at least 1 (1 <= stride <= max_length), got 0"),
    ("stride", 17, "stride must not exceed max_length (1 <= stride <= max_length), "
                   "got stride=17 > max_length=16: tokens would be skipped"),
    ("stride", 2.5, "stride must be an integer, got 2.5"),
    ("stride", True, "stride must be an integer, got True"),
    ("max_length", 0, "max_length must be at least 1, got 0"),
    ("max_length", 4, "stride must not exceed max_length (1 <= stride <= max_length), "
                      "got stride=8 > max_length=4: tokens would be skipped"),
    ("max_length", 65, "max_length must not exceed the model's context length (64), got 65"),
    ("max_length", "16", "max_length must be an integer, got '16'"),
]


def test_a_rejected_window_setting_raises_scores_message_and_keeps_the_result(
        done, sent, tiny_gpt2):
    result = done.result
    for name, value, expected in REJECTED:
        window = {"max_length": 16, "stride": 8, name: value}
        assert score_message(lm=tiny_gpt2, **window) == expected  # the rule is score()'s
        with pytest.raises(traitlets.TraitError) as info:
            setattr(done, name, value)
        assert str(info.value) == expected
        assert isinstance(info.value, ValueError)  # what score() raises, too
        assert_untouched(done, result, sent)


def test_numpy_integers_are_counts(done):
    done.stride = np.int64(4)
    res = done.wait()
    assert done.stride == 4 and type(done.stride) is int
    assert res.settings["stride"] == 4 and done.result_data["run_id"] == 2


def test_prefix_takes_only_the_documented_values(done, sent):
    result = done.result
    for bad in ("BOS", "", "start", 1):
        with pytest.raises(traitlets.TraitError, match=f"prefix must be 'bos' or None, got "
                                                       f"{bad!r}"):
            done.prefix = bad
    assert_untouched(done, result, sent)
    with pytest.raises(ValueError) as info:
        score("x", done._lm, prefix="BOS")
    assert str(info.value) == "prefix must be 'bos' or None, got 'BOS'"
    done.prefix = None  # the documented spelling; "none" is the front end's
    assert done.prefix == "none" and done.wait().settings["prefix"] is None


def test_rescore_checks_everything_before_it_starts(done, sent):
    result = done.result
    for bad, message in (({"stride": 0}, "stride must be at least 1"),
                         ({"max_length": 4, "stride": 5}, "stride must not exceed max_length"),
                         ({"prefix": "BOS"}, "prefix must be 'bos' or None"),
                         ({"top_k": -1}, "top_k must be a non-negative integer, got -1"),
                         ({"batch_size": 0}, "batch_size must be 'auto' or a positive integer"),
                         ({"stride": np.float64(4)}, "stride must be an integer")):
        with pytest.raises(traitlets.TraitError, match=message):
            done.rescore(**bad)
    with pytest.raises(TypeError, match="words must be"):
        done.rescore(words=5)
    assert_untouched(done, result, sent)
    assert done._options["top_k"] == 5
    done.rescore(max_length=np.int32(8), stride=np.int64(4), top_k=np.int16(3))
    res = done.wait()
    assert (res.settings["max_length"], res.settings["stride"], res.settings["top_k"]) == \
        (8, 4, 3)


def test_front_end_values_are_reported_beside_the_control(done, sent):
    result = done.result
    for state, field, message in (
            ({"stride": 0}, "stride", "stride must be at least 1 (1 <= stride <= max_length), "
                                      "got 0"),
            ({"stride": "abc"}, "stride", "stride must be an integer, got 'abc'"),
            ({"max_length": 4, "stride": 8, "prefix": "bos"}, "stride",
             "stride must not exceed max_length"),
            ({"max_length": 99, "stride": 8}, "max_length",
             "max_length must not exceed the model's context length (64), got 99"),
            ({"prefix": "BOS"}, "prefix", "prefix must be 'bos' or None, got 'BOS'")):
        sent.clear()
        done.set_state(state)  # what the front end's save_changes() delivers
        (kind, msg), (kind2, pushed) = sent
        assert kind == "msg" and msg["type"] == P.MSG_SETTINGS_ERROR
        assert msg["field"] == field and msg["message"].startswith(message)
        # the front end's copy is set back to the values the kernel kept
        assert kind2 == "state" and pushed == {k: getattr(done, k) for k in state}
        assert_untouched(done, result, sent, n_resets=0)
    done.set_state({"max_length": 32, "stride": 16, "prefix": "none"})
    res = done.wait()
    assert (res.settings["max_length"], res.settings["stride"], res.settings["prefix"]) == \
        (32, 16, None)


def test_a_run_that_fails_before_scoring_anything_keeps_the_last_result(done, sent,
                                                                         monkeypatch):
    result, data = done.result, done.result_data

    def failing(*args, **kwargs):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(widget_module, "stream", failing)
    done.stride = 4
    with pytest.raises(RuntimeError, match="disk is full"):
        done.wait()
    assert done.status == "error" and "disk is full" in done.error
    assert done.result is result and done.result_data is data  # still there, on screen too
    assert resets(sent) == 1  # the front end was never told to drop what it shows


def test_construction_checks_like_score(tiny_gpt2):
    with pytest.raises(traitlets.TraitError, match="max_length must not exceed the model's "
                                                   "context length"):
        PerplexityWidget("text", tiny_gpt2, max_length=65, autostart=False)
    with pytest.raises(ValueError, match="top_k must be a non-negative integer"):
        PerplexityWidget("text", tiny_gpt2, top_k=-2, autostart=False)
    w = PerplexityWidget("text", tiny_gpt2, max_length=np.int64(16), stride=np.int32(8),
                         prefix=None, autostart=False)
    assert (w.max_length, w.stride, w.prefix) == (16, 8, "none")
