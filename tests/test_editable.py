"""Re-scoring an edited text: only the windows an edit can change are scored again,
and the result equals a full score() of the new text."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from float64 import TINY_NATS, assert_scores_within, assert_within

from ppl_widget import score, stream
from ppl_widget.core.result import TOKEN_ARRAYS
from ppl_widget.scoring.runner.incremental import common_prefix

BASE = ("The quick brown fox jumps over the lazy dog. Surprisal is minus the log probability "
        "of a token given its context, and perplexity is its exponentiated mean. " * 3)

EDITS = {
    "append": lambda t: t + " And more.",
    "append one char": lambda t: t + "x",
    "delete last": lambda t: t[:-1],
    "edit near end": lambda t: t[:-30] + "zebra" + t[-25:],
    "insert middle": lambda t: t[:200] + " new words " + t[200:],
    "delete middle": lambda t: t[:150] + t[170:],
    "replace start": lambda t: "A" + t[1:],
    "unchanged": lambda t: t,
    "emoji near end": lambda t: t[:-10] + "🙂" + t[-10:],
}
SETTINGS = [dict(max_length=32, stride=16), dict(max_length=24, stride=24),
            dict(max_length=32, stride=8, prefix=None), dict(max_length=32, stride=16,
                                                             add_eos=True)]


def assert_same(a, b, lm) -> None:
    """``a`` (re-scored from reuse) lays out what ``b`` (a full score()) does, and its numbers
    are within the float32 tolerance of the float64 copy: its reused windows were batched
    in another run than ``b``'s (``b``'s own numbers: tests/test_scorer_exact.py)."""
    floats = [k for k in TOKEN_ARRAYS if getattr(a, k).dtype.kind == "f"]
    for key in TOKEN_ARRAYS:
        if key not in floats:
            np.testing.assert_array_equal(getattr(a, key), getattr(b, key), err_msg=key)
    want = assert_scores_within(a, lm, TINY_NATS)
    assert_within(a.metrics()["total_nll"], want["surprisal"].sum(), TINY_NATS, len(a))
    assert np.isnan(a.bow_prob_end) == np.isnan(b.bow_prob_end)
    # the other metrics: the same function of the same counts (b with a's numbers)
    same = dataclasses.replace(b, **{k: getattr(a, k) for k in floats},
                               bow_prob_end=a.bow_prob_end)
    for key, value in same.metrics().items():
        assert a.metrics()[key] == pytest.approx(value, rel=1e-12, nan_ok=True), key
    assert not a.partial and a.vocab.keys() >= set(a.token_ids.tolist())


@pytest.mark.parametrize("opts", SETTINGS, ids=lambda o: "-".join(f"{k}{v}" for k, v in o.items()))
def test_incremental_equals_full_score(tiny_lm, opts):
    old = score(BASE, tiny_lm, **opts)
    for name, edit in EDITS.items():
        new_text = edit(BASE)
        full = score(new_text, tiny_lm, **opts)
        inc = score(new_text, tiny_lm, reuse=old, **opts)
        assert_same(inc, full, tiny_lm)
        reused = inc.settings["reused_tokens"]
        assert 0 <= reused <= len(full.token_ids), name
        if name == "unchanged":
            assert reused == len(full.token_ids)
        if name in ("append", "edit near end"):
            assert 0 < reused < len(full.token_ids), name  # only the last windows again
        if name == "replace start":
            assert reused == 0


def test_reused_windows_come_first_then_only_new_windows(tiny_gpt2):
    old = score(BASE, tiny_gpt2, max_length=32, stride=16)
    items = list(stream(BASE + " Appended.", tiny_gpt2, max_length=32, stride=16, reuse=old))
    first = items[0]
    reused = items[-1].result.settings["reused_tokens"]
    assert first.start == 0 and first.done == reused == len(first.chunk["token_ids"])
    assert first.elapsed_s == 0.0
    new_windows = items[-1].result.settings["n_windows"]
    assert len(items) - 1 < new_windows  # fewer batches than a full run (batch_size 1 on CPU)


def test_partial_old_result_is_reused_up_to_what_it_scored(tiny_gpt2):
    import threading

    cancel = threading.Event()
    items = []
    for item in stream(BASE, tiny_gpt2, max_length=32, stride=16, batch_size=1, cancel=cancel):
        items.append(item)
        if len(items) == 3:
            cancel.set()
    partial = items[-1].result
    assert partial.partial
    new_text = BASE + " tail"
    inc = score(new_text, tiny_gpt2, max_length=32, stride=16, reuse=partial)
    assert_same(inc, score(new_text, tiny_gpt2, max_length=32, stride=16), tiny_gpt2)
    assert 0 < inc.settings["reused_tokens"] <= len(partial.token_ids)


def test_other_settings_or_model_reuse_nothing(tiny_gpt2, tiny_llama):
    old = score(BASE, tiny_gpt2, max_length=32, stride=16)
    other = score(BASE + "!", tiny_gpt2, max_length=32, stride=8, reuse=old)
    assert other.settings["reused_tokens"] == 0
    assert_same(other, score(BASE + "!", tiny_gpt2, max_length=32, stride=8), tiny_gpt2)
    llama = score(BASE, tiny_llama, max_length=32, stride=16, reuse=old)
    assert llama.settings["reused_tokens"] == 0


def test_common_prefix():
    assert common_prefix("abcdef", "abcxef") == 3
    assert common_prefix("abc", "abc") == 3
    assert common_prefix("abc", "abcd") == 3
    assert common_prefix("", "x") == 0
    assert common_prefix("x", "y") == 0


def test_widget_rescores_an_edit_from_the_first_changed_window(tiny_gpt2):
    from ppl_widget.views.widget import PerplexityWidget

    w = PerplexityWidget(BASE, tiny_gpt2, max_length=32, stride=16, editable=True)
    w.wait()
    assert w.editable and w.result.settings.get("reused_tokens") is None  # a first run
    new_text = BASE + " Typed at the end."
    w.text = new_text  # what the front end's text box does after the debounce
    res = w.wait()
    assert_same(res, score(new_text, tiny_gpt2, max_length=32, stride=16), tiny_gpt2)
    reused = res.settings["reused_tokens"]
    assert 0 < reused < len(res.token_ids)
    assert w.settings["reused_tokens"] == reused  # the view's note reads it
    assert w.result_data["count"] == len(res.token_ids)
    w.rescore()  # an explicit re-score scores everything again
    assert w.wait().settings.get("reused_tokens") is None
