"""The live page's shared cases (written by generate.py): Python's window plans
(windows.json), text units of tokenizations (text_units.json) and the n-gram model's
scores (ngram.json), which the browser's copies (js/src/live/) must reproduce.

Every expected value is computed here by the Python rules: ``plan_windows``,
``partition_offsets`` and ``TextUnits``, and ``score()`` with an ``NGramModel``.
"""

from __future__ import annotations

import itertools
import random
from collections import deque
from typing import Any

import numpy as np

from ppl_widget.core.levels import unit_spans
from ppl_widget.core.text_units import TextUnits, partition_offsets
from ppl_widget.core.windows import plan_windows


def window_cases() -> list[dict[str, Any]]:
    """plan_windows over a grid of sizes and settings, edges and refusals included."""
    cases = []
    grid = itertools.product([0, 1, 2, 3, 5, 8, 13], range(1, 6), [1, 2, 5], [False, True])
    for n, max_length, first, every in grid:
        for stride in range(1, max_length + 1):
            cases.append(_window_case(n, max_length, stride, first, every))
    for n, max_length, stride, first in [(1000, 128, 64, 1), (1000, 128, 128, 1),
                                         (777, 100, 33, 250), (513, 512, 1, 1)]:
        for every in (False, True):
            cases.append(_window_case(n, max_length, stride, first, every))
    for bad in [(10, 0, 1), (10, 4, 5), (10, 4, 0), (10, 1, 1)]:  # refused settings
        cases.append(_window_case(bad[0], bad[1], bad[2], 1, bad == (10, 1, 1)))
    return cases


def _window_case(n: int, max_length: int, stride: int, first: int, every: bool) -> dict:
    case: dict[str, Any] = {"n_positions": n, "max_length": max_length, "stride": stride,
                            "first_target": first, "prefix_every_window": every}
    try:
        windows = plan_windows(n, max_length, stride, first_target=first,
                               prefix_every_window=every)
    except ValueError as exc:
        case["error"] = str(exc)
        return case
    case["windows"] = [[w.input_start, w.input_end, w.target_start, w.target_end,
                        w.prefixed] for w in windows]
    return case


UNIT_TEXTS = [
    "plain words here",
    "  leading and trailing  ",
    "héllo wörld — naïve café",
    "a😀b c 🙂🙂 d",
    "tab\tand\nnew\r\nlines",
    "Python's whitespace: a\x1cb c\x85d e\u3000f g\u2028h",
    "not whitespace in Python: a\ufeffb c\u200bd",
    "",
    "中文 的 字符 和 emoji 👩‍👩‍👧",
]


def text_unit_cases(seed: int = 11) -> list[dict[str, Any]]:
    """Random tokenizations (gaps, overlaps, zero-width, out of range) of each text: the
    spans that tile it and the units of each, in UTF-16 offsets as the browser has them."""
    rng = random.Random(seed)
    # first row: every code point Python calls whitespace (the words' rule)
    cases: list[dict[str, Any]] = [{"whitespace": [c for c in range(0x110000)
                                                   if chr(c).isspace()]}]
    for text in UNIT_TEXTS:
        units = TextUnits.of(text)
        n_cp = len(text)
        for _ in range(6):
            n_tok = rng.randint(0, 8)
            ends = sorted(rng.randint(0, n_cp) for _ in range(n_tok))
            raw = [[max(0, e - rng.randint(0, 3)), e] for e in ends]
            rng.shuffle(raw) if rng.random() < 0.2 else None  # now and then out of order
            off = np.asarray(raw, np.int64).reshape(-1, 2)
            spans = partition_offsets(off, n_cp)
            cases.append({
                "text": text,
                "offsets16": units.to_utf16(off).tolist(),
                "spans16": units.to_utf16(spans).tolist(),
                "units": units.per_span(spans).tolist(),
            })
    return cases


def log_cases(seed: int = 3) -> list[dict[str, Any]]:
    """Natural logs rounded correctly (mpmath at 200 bits): what js/src/live/float64.js's
    log must give, bit for bit; probabilities as the n-gram makes them, and the edges
    (subnormals, next to 1, the largest double).  Values as float.hex() strings."""
    import mpmath

    rng = random.Random(seed)
    xs = [rng.randint(1, 10**6) / rng.randint(10**6, 10**8) for _ in range(300)]
    xs += [rng.random() for _ in range(150)] + [1 + rng.random() * 1e-6 for _ in range(30)]
    xs += [1 - rng.random() * 1e-9 for _ in range(20)] + [rng.random() * 1e300 for _ in range(10)]
    xs += [5e-324, 1e-310, 2.2250738585072014e-308, 0.5, 2.0, 1.7976931348623157e308,
           float.fromhex("0x1.6a09e667f3bcdp+0"), float.fromhex("0x1.6a09e667f3bccp+0")]
    with mpmath.workprec(200):
        return [{"x": x.hex(), "log": float(mpmath.log(mpmath.mpf(x))).hex()} for x in xs]


TRAIN = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog met",
         "the mat was red", "naïve café owners sat down 😀", "the cat saw the dog"]
NGRAM_MODELS = [  # (order, smoothing, unit, keywords)
    (2, "kneser-ney", "word", {}),
    (3, "add-k", "word", {"k": 0.5}),
    (1, "mle", "word", {}),
    (2, "mle", "word", {}),
    (3, "kneser-ney", "char", {"discount": 0.6}),
    (2, "add-k", "word", {"unk_cutoff": 2}),
]
NGRAM_TEXTS = [
    "the cat sat on the mat",
    "the dog ran\nto the red mat, naïve 😀 owners",
    "  unseen words appear here\n\n a cat  ",
    "",
]
NGRAM_SETTINGS = [  # score()'s keywords
    {},
    {"prefix": None, "add_eos": True},
    {"max_length": 3, "stride": 2, "add_eos": True},
    {"max_length": 2, "stride": 1, "prefix": None},
]


def ngram_cases() -> list[dict[str, Any]]:
    """score() of each text with each model and settings: every per-token array (each
    model's exported counts once, in a "model" row before its "score" rows)."""
    from ppl_widget.scoring.kinds.ngram.ngram import NGramModel
    from ppl_widget.scoring.kinds.ngram.ngram_export import ngram_to_json
    from ppl_widget.scoring.runner.scorer import stream_any_text
    from ppl_widget.views.widget_levels import LevelAssigner

    cases: list[dict[str, Any]] = []
    for index, (order, smoothing, unit, kw) in enumerate(NGRAM_MODELS):
        lm = NGramModel(order, smoothing, unit, **kw).fit(TRAIN)
        cases.append({"kind": "model", "id": index, "model": ngram_to_json(lm)})
        for text, settings in itertools.product(NGRAM_TEXTS, NGRAM_SETTINGS):
            # score(), but an empty text gives its empty result: the page, like the
            # editable widget, shows an empty text rather than refusing it
            r = deque(stream_any_text(text, lm, top_k=4, **settings), maxlen=1)[0].result
            u = TextUnits.of(text)
            cases.append({
                "kind": "score", "model": index, "text": text,
                "settings": {"prefix": "none" if settings.get("prefix", "bos") is None
                             else "bos", **{k: v for k, v in settings.items()
                                            if k != "prefix"}, "top_k": 4},
                "token_ids": r.token_ids.tolist(),
                "start16": u.to_utf16(r.offsets[:, 0]).tolist(),
                "end16": u.to_utf16(r.offsets[:, 1]).tolist(),
                "units": r.units.tolist(), "is_eos": r.is_eos.tolist(),
                "surprisal": r.surprisal.tolist(), "entropy": r.entropy.tolist(),
                "rank": r.rank.tolist(), "context_length": r.context_length.tolist(),
                "topk_ids": r.topk_ids.tolist(), "topk_probs": r.topk_probs.tolist(),
                # the word level as the widget's payload has it (result_data)
                "word": LevelAssigner.for_result(r).assign(r.offsets, r.is_eos)["word"]
                .tolist(),
                "word_spans16": u.to_utf16(unit_spans(text, "word")).tolist(),
            })
    return cases
