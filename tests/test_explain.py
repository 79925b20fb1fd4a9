"""explain() and context_curve() against an independent implementation (float32; a float64
copy for the default model, tests/float64.py): plain transformers, the window plan written
out again from its rule (docs/explain.md), the ids deleted and the target rescored; no
package code computes the reference.  Texts here were not used while the package was
written."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from float64 import DEFAULT_MODEL_NATS, float64_copy

from ppl_widget import context_curve, explain, iter_explain, score

TOL = 1e-4  # nats

SHORT = "After a winter of heavy snow, the valley rivers rose and the spring floods came early."
LONG = ("The lighthouse keeper counted the ships each night. When fog rolled over the "
        "harbour he lit the second lamp, and the fishermen knew to wait. Years later his "
        "daughter kept the same log, noting every vessel, every storm and every quiet "
        "morning when the sea lay flat as slate beneath the cliffs.")


# ---- the reference: nothing from ppl_widget below this line until the tests -------
def ref_windows(n_positions: int, max_length: int, stride: int) -> list[tuple[int, int, int]]:
    """(input_start, first target, last target + 1) per window: first chunk up to
    max_length targets, then stride each, the window reading the max_length positions
    before its last target."""
    out, first, last = [], 1, n_positions - 1
    end = min(max_length, last)
    while True:
        out.append((max(0, end - max_length), first, end + 1))
        if end == last:
            return out
        first, end = end + 1, min(end + stride, last)


def ref_layout(lm, text: str, prefix: bool = True):
    tok = lm.tokenizer
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    ids = list(enc["input_ids"])
    spans = [tuple(s) for s in enc["offset_mapping"]]
    head = [tok.bos_token_id] if prefix else []
    return head + ids, [None] * len(head) + spans


def ref_nll(model, ids: list[int], n: int) -> float:
    """Summed surprisal of the last n of ids, each after everything before it (fp32)."""
    with torch.no_grad():
        logits = model(torch.tensor([ids[:-1]])).logits[0, -n:].double()
    lp = torch.log_softmax(logits, -1)
    return float(-lp.gather(1, torch.tensor(ids[-n:])[:, None]).sum())


def ref_word_of(text: str, spans) -> list[int]:
    """The word holding each token's first non-space character; a space-only token goes
    to the next word."""
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    out = []
    for span in spans:
        if span is None:
            out.append(-1)
            continue
        s, e = span
        first = next((c for c in range(s, len(text)) if not text[c].isspace()), len(text))
        out.append(next((k for k, (ws, we) in enumerate(words) if ws <= first < we), -1))
    return out


def ref_context(windows, p: int, head: int):
    """(reads the prefix, first context position) of the window scoring position p."""
    start = next(w[0] for w in windows if w[1] <= p < w[2])
    return (start == 0 and head == 1), max(start, head)


def ref_occlusion(lm, text: str, targets: list[int], unit: str, max_length: int,
                  stride: int, prefix: bool = True, model=None):
    """(target surprisal, [(unit text start, delta)]) for target positions ``targets``,
    from ``model`` (default: ``lm``'s own)."""
    model = lm.model if model is None else model
    seq, spans = ref_layout(lm, text, prefix)
    head = 1 if prefix else 0
    windows = ref_windows(len(seq), max_length, stride)
    first = targets[0]

    def reads(p: int, deleted: set[int]) -> list[int]:
        bos, start = ref_context(windows, p, head)
        return ([0] if bos else []) + [q for q in range(start, p + 1) if q not in deleted]

    def total(deleted: set[int]) -> float:
        return sum(ref_nll(model, [seq[q] for q in reads(p, deleted)], 1) for p in targets)

    base = total(set())
    context = list(range(ref_context(windows, first, head)[1], first))
    if unit == "token":
        groups = [[q] for q in context]
    else:
        owner = ref_word_of(text, spans)
        groups = []
        for q in context:
            if groups and owner[q] == owner[groups[-1][-1]] and owner[q] >= 0:
                groups[-1].append(q)
            else:
                groups.append([q])
    return base, [(spans[g[0]][0], total(set(g)) - base) for g in groups]


# ---- the tests ------------------------------------------------------------------
def _check(lm, text, *, token=None, word=None, unit, max_length, stride, prefix=True,
           tol=TOL, reference=None, **extra):
    e = explain(text, lm, token=token, word=word, unit=unit, max_length=max_length,
                stride=stride, prefix="bos" if prefix else None, **extra)
    r = score(text, lm, max_length=max_length, stride=stride,
              prefix="bos" if prefix else None)
    first_pos = 1 if prefix else 1  # scored token i sits at position i + 1 either way
    tokens = e.target["tokens"]
    base, ref = ref_occlusion(lm, text, [first_pos + t for t in tokens], unit, max_length,
                              stride, prefix, model=reference)
    assert abs(e.target_surprisal_nats - base) < tol
    assert abs(r.surprisal[tokens].sum() - base) < tol
    assert len(e.frame) == len(ref)
    got = e.frame.delta_nats.to_numpy()
    want = np.array([d for _, d in ref])
    assert np.abs(got - want).max() < tol, np.abs(got - want).max()
    assert not e.partial and e.exact
    return e, np.abs(got - want).max()


@pytest.mark.parametrize("unit", ["token", "word"])
def test_occlusion_equals_deleting_ids_and_rescoring_at_the_default_settings(tiny_lm, unit):
    n = len(score(SHORT, tiny_lm))
    for token in (n - 1, n // 2):
        e, _ = _check(tiny_lm, SHORT, token=token, unit=unit, max_length=64, stride=32)
        assert e.settings["max_length"] == 64 == score(SHORT, tiny_lm).settings["max_length"]


@pytest.mark.parametrize("unit", ["token", "word"])
def test_occlusion_with_a_window_that_cuts_the_context(tiny_lm, unit):
    r = score(LONG, tiny_lm, max_length=64, stride=32)
    assert len(r) > 64
    for token in (len(r) - 1, 70, 45):
        e, _ = _check(tiny_lm, LONG, token=token, unit=unit, max_length=64, stride=32)
        if token >= 64:  # a later window: no BOS, the context starts where it starts
            assert e.context_tokens == r.context_length[token]


def test_a_word_target_is_the_sum_of_its_tokens_even_across_windows(tiny_gpt2):
    r = score(LONG, tiny_gpt2, max_length=16, stride=8)
    words = r.to_frame("word")
    multi = [i for i in range(1, len(words)) if words.n_tokens[i] > 1]
    assert multi
    for j in multi[:4]:
        e, _ = _check(tiny_gpt2, LONG, word=j, unit="word", max_length=16, stride=8)
        assert abs(e.target_surprisal_nats - words.surprisal[j]) < TOL


def test_occlusion_with_no_prefix_token_and_the_fast_and_plain_paths_agree(tiny_llama):
    _check(tiny_llama, SHORT, token=-1, unit="word", max_length=64, stride=32, prefix=False)
    fast = explain(LONG, tiny_llama, token=-3, unit="token", max_length=32, stride=16)
    plain = list(iter_explain(LONG, tiny_llama, token=-3, unit="token", max_length=32,
                              stride=16, fast=False))[-1].explanation
    np.testing.assert_allclose(fast.delta_nats, plain.delta_nats, atol=TOL)


def test_the_context_curve_equals_rescoring_the_last_k_tokens(tiny_lm):
    for text, kw in ((SHORT, {}), (LONG, {"max_length": 64, "stride": 32})):
        r = score(text, tiny_lm, **kw)
        p = len(r)  # the last token's position (BOS at 0)
        curve = context_curve(text, tiny_lm, token=-1, **kw)
        seq, _ = ref_layout(tiny_lm, text)
        windows = ref_windows(len(seq), kw.get("max_length", 64), kw.get("stride", 32))
        bos, start = ref_context(windows, p, 1)
        full = p - start
        assert curve.context_tokens.iloc[-1] == full == r.context_length[-1] - bos
        assert list(curve.context_tokens)[:3] == ([0, 1, 2] if bos else [1, 2, 4])
        for k, s in zip(curve.context_tokens, curve.surprisal_nats, strict=True):
            ids = ([seq[0]] if bos else []) + seq[p - k:p + 1]
            assert abs(s - ref_nll(tiny_lm.model, ids, 1)) < TOL
        assert abs(curve.surprisal_nats.iloc[-1] - r.surprisal[-1]) < TOL


def test_streaming_goes_nearest_unit_first_and_can_be_cancelled(tiny_gpt2):
    steps = list(iter_explain(LONG, tiny_gpt2, token=-1, unit="token", max_length=64,
                              stride=32))
    first = steps[0]
    assert first.done == 0 and np.isnan(first.explanation.delta_nats).all()
    assert np.isfinite(first.explanation.target_surprisal_nats)
    order = np.concatenate([s.new for s in steps])
    n = len(steps[-1].explanation.units)
    assert sorted(order.tolist()) == list(range(n))
    assert order[0] == n - 1 and (np.diff(order) < 0).all()  # nearest first
    assert steps[-1].finished and not steps[-1].explanation.partial

    import threading

    stop = threading.Event()
    seen = []
    for step in iter_explain(LONG, tiny_gpt2, token=-1, unit="token", cancel=stop,
                             max_length=64, stride=32):
        seen.append(step)
        if step.done:
            stop.set()
    last = seen[-1]
    assert last.cancelled and last.explanation.partial and last.explanation.cancelled
    assert 0 < last.done < n
    assert np.isfinite(last.explanation.delta_nats).sum() == last.done


def test_result_explain_uses_its_settings_and_its_model(tiny_llama):
    r = score(LONG, tiny_llama, max_length=32, stride=16)
    e = r.explain(token=-1, unit="token")
    direct = explain(LONG, tiny_llama, token=-1, unit="token", max_length=32, stride=16)
    np.testing.assert_allclose(e.delta_nats, direct.delta_nats, atol=1e-9)
    assert e.settings["max_length"] == 32
    c = r.context_curve(token=-1, lengths=[1, 5])
    assert list(c.context_tokens) == [1, 5]
    loaded = type(r).from_dict(r.to_dict())
    with pytest.raises(ValueError, match="pass lm="):
        loaded.explain(token=-1)
    assert loaded.explain(token=-1, lm=tiny_llama).frame.equals(r.explain(token=-1).frame)


def test_the_frame_and_top(tiny_llama):
    e = explain(SHORT, tiny_llama, word=-1)
    f = e.frame
    assert list(f.columns) == ["unit", "start", "end", "tokens", "delta_nats", "delta_bits",
                               "part"]
    assert set(f.part) == {"text"}
    words = [m.group() for m in re.finditer(r"\S+", SHORT)]
    assert list(f.unit) == words[:-1]
    assert all(SHORT[s:t] == u for u, s, t in zip(f.unit, f.start, f.end, strict=True))
    np.testing.assert_allclose(f.delta_bits, f.delta_nats / np.log(2))
    top = e.top(2)
    helped = top[top.effect == "helped"].delta_nats.to_numpy()
    hurt = top[top.effect == "hurt"].delta_nats.to_numpy()
    assert (helped > 0).all() and (hurt < 0).all()
    assert len(helped) == min(2, (f.delta_nats > 0).sum())
    assert helped[0] == f.delta_nats.max() and (not len(hurt) or hurt[0] == f.delta_nats.min())
    from ppl_widget import Explanation

    back = Explanation.from_dict(e.to_dict())
    assert back.frame.equals(f) and back.target == e.target


def test_custom_span_units(tiny_gpt2):
    span = (SHORT.index("winter"), SHORT.index("winter") + len("winter of heavy snow"))
    e = explain(SHORT, tiny_gpt2, token=-1, unit=[span])
    assert list(e.frame.unit) == ["winter of heavy snow"]
    seq, spans = ref_layout(tiny_gpt2, SHORT)
    gone = {q for q, s in enumerate(spans) if s and span[0] <= next(
        c for c in range(s[0], s[1] + 1) if c == s[1] or not SHORT[c].isspace()) < span[1]}
    base = ref_nll(tiny_gpt2.model, seq, 1)
    want = ref_nll(tiny_gpt2.model, [t for q, t in enumerate(seq) if q not in gone], 1) - base
    assert abs(e.delta_nats[0] - want) < TOL


def test_explain_on_the_default_model_end_to_end(default_lm):
    text = "The baker ran out of flour, so the shop closed early."
    r = score(text, default_lm)
    word = len(r.to_frame("word")) - 1
    # against a float64 copy, within the float32 tolerance per token (tests/float64.py):
    # a delta is two totals of the target's tokens apart
    n = int(r.to_frame("word")["n_tokens"].iloc[word])
    e, err = _check(default_lm, text, word=word, unit="word",
                    max_length=r.settings["max_length"], stride=r.settings["stride"],
                    tol=2 * n * DEFAULT_MODEL_NATS, reference=float64_copy(default_lm))
    assert len(e.target["tokens"]) == n


def test_prefix_every_window_reads_the_prefix_and_is_never_a_unit(tiny_llama):
    kw = {"max_length": 32, "stride": 16, "prefix_every_window": True}
    r = score(LONG, tiny_llama, **kw)
    e = explain(LONG, tiny_llama, token=-1, unit="token", **kw)
    assert abs(e.target_surprisal_nats - r.surprisal[-1]) < TOL
    assert e.context_tokens == r.context_length[-1] - 1  # the prefix counts there, not here
    seq, _ = ref_layout(tiny_llama, LONG)
    p = len(seq) - 1
    reads = [0] + list(range(p - e.context_tokens, p + 1))
    base = ref_nll(tiny_llama.model, [seq[q] for q in reads], 1)
    want = [ref_nll(tiny_llama.model, [seq[q] for q in reads if q != d], 1) - base
            for d in reads[1:-1]]
    assert np.abs(e.delta_nats - np.array(want)).max() < TOL
    curve = context_curve(LONG, tiny_llama, token=-1, **kw)
    assert curve.context_tokens.iloc[0] == 0
