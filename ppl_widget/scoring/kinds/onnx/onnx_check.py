"""How far an exported ONNX graph's surprisal is from ``score()``'s: the same text, the same
windows (``core.windows.plan_windows``), the graph run by onnxruntime on this machine.
A browser runs the same graph with onnxruntime-web; the page's own measure is
``benchmarks/bench_onnx_page.py``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ....core.extras import require
from ....core.windows import default_stride, plan_windows

#: The text a variant's difference is measured on (about 200 tokens of plain English).
CHECK_TEXT = (
    "The history of the printing press begins in the fifteenth century, when Johannes "
    "Gutenberg combined movable metal type, oil-based ink and a wooden screw press. "
    "Within fifty years, presses were running in more than two hundred European towns, "
    "and the price of a book fell so far that ordinary merchants could own a few. "
    "Scholars argue about how much of the Reformation, the scientific revolution and "
    "the rise of vernacular literature followed from this change; few doubt that it "
    "mattered. Printed pages also fixed spelling, spread maps and tables of numbers "
    "without copying errors, and let a reader in Venice check the same page as a reader "
    "in London. Today a language model reads text much as those readers did: one word "
    "after another, guessing what comes next, and surprised when the guess is wrong. "
    "Measuring that surprise, token by token, shows where a text is predictable and "
    "where it is not. A reader who meets a rare word, an odd turn of phrase or a long "
    "number slows down; in its own way, so does the model."
)


def session(path: Path) -> Any:
    """An onnxruntime CPU session of the graph at ``path``."""
    ort = require("onnxruntime", "checking an ONNX export")
    options = ort.SessionOptions()
    options.log_severity_level = 3  # no warnings about unused initializers
    threads = os.environ.get("OMP_NUM_THREADS", "")
    if threads.isdigit() and int(threads) > 0:  # as torch does: no idle threads spinning
        options.intra_op_num_threads = int(threads)
        options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def window_stats(sess: Any, input_ids: np.ndarray, target_ids: np.ndarray) -> dict:
    """The graph's statistics for one window run from its start (an empty cache), by name."""
    return piece_stats(sess, input_ids, target_ids)[0]


def empty_cache(sess: Any) -> list[np.ndarray]:
    """A cache of no positions for every ``past_*`` input of the graph."""
    return [np.zeros([d if isinstance(d, int) else (1 if i == 0 else 0)
                      for i, d in enumerate(x.shape)], np.float32)
            for x in sess.get_inputs() if x.name.startswith("past_")]


def piece_stats(sess: Any, input_ids: np.ndarray, target_ids: np.ndarray,
                past: list[np.ndarray] | None = None) -> tuple[dict, list[np.ndarray]]:
    """One piece of a window over the cache ``past`` (None: the window's start): its
    targets' statistics by name, and the cache with the piece's positions added."""
    names = [x.name for x in sess.get_inputs() if x.name.startswith("past_")]
    past = empty_cache(sess) if past is None else past
    out = sess.run(None, {"input_ids": np.asarray(input_ids, np.int64)[None],
                          "target_ids": np.asarray(target_ids, np.int64)[None],
                          **dict(zip(names, past, strict=True))})
    named = dict(zip([o.name for o in sess.get_outputs()], out, strict=True))
    present = [named.pop(n.replace("past_", "present_")) for n in names]
    return named, present


def onnx_surprisal(sess: Any, sequence: np.ndarray, max_length: int,
                   stride: int | None = None) -> np.ndarray:
    """Surprisal of positions 1 .. n-1 of ``sequence``, window by window as ``score()``
    plans them."""
    stride = default_stride(max_length) if stride is None else stride
    parts = []
    for w in plan_windows(len(sequence), max_length, stride):
        stats = window_stats(sess, sequence[w.input_start:w.input_end],
                             sequence[w.target_start:w.target_end])
        parts.append(stats["surprisal"])
    return np.concatenate(parts) if parts else np.zeros(0)


def measure_difference(lm: Any, path: Path, *, max_length: int, text: str = CHECK_TEXT,
                       stride: int | None = None) -> dict[str, Any]:
    """Per-token |Δ surprisal| (nats) of the graph at ``path`` against ``score()``."""
    from ...runner.prepare import check_and_prefix
    from ...runner.scorer import score

    max_length = min(max_length, lm.default_max_length())
    ref = score(text, lm, max_length=max_length, stride=stride, top_k=0)
    head = check_and_prefix(text, lm.tokenizer, "bos", add_eos=False)  # score()'s prefix
    sequence = np.concatenate([head, ref.token_ids]).astype(np.int64)
    got = onnx_surprisal(session(path), sequence, max_length, stride)
    diff = np.abs(got.astype(np.float64) - ref.surprisal)
    return {"tokens": int(len(diff)), "mean_abs_nats": float(diff.mean()),
            "max_abs_nats": float(diff.max()), "max_length": max_length,
            "against": "score() in torch, fp32, CPU"}

