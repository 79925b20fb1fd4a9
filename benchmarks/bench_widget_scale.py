"""The widget at scale: the size of what a ~250k-token result puts in a notebook.

Kernel side only (the browser side, first paint and tooltip time, is
``tests/browser/test_scale_browser.py``, which imports :func:`stand_in` and
:func:`sizes` from here).  Measured:

* the synced widget state as a saved notebook holds it (JupyterLab's "Save
  Widget State": the manager-state JSON, binary buffers base64), per field;
* every message the widget sends (custom chunk/reset/done messages and state
  updates: JSON plus binary buffers);
* the ``text/html`` fallback output (the static page nbconvert shows).

The model is a fast stand-in, so the measurement takes a minute, not half an hour:
the default model's own tokenizer (SmolLM2, 49,152 ids: real tokens, offsets and
vocabulary strings) in front of a random one-layer GPT-2 of width 32.  The
per-token arrays have the sizes a real model gives; the top-k alternatives of a
random model are spread over the whole vocabulary, so the vocabulary map is a worst
case (a trained model's alternatives repeat far more).

    python benchmarks/bench_widget_scale.py --chars 1000000 --out results.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_memory import make_text  # noqa: E402  (same English-like text)


def stand_in():
    """A LoadedModel: the default model's tokenizer and a random 1-layer GPT-2."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from ppl_widget import load_model

    tokenizer = load_model().tokenizer
    torch.manual_seed(0)
    tiny = GPT2LMHeadModel(GPT2Config(
        vocab_size=len(tokenizer), n_positions=1024, n_embd=32, n_layer=1, n_head=2,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id))
    return load_model((tiny, tokenizer), device="cpu", dtype="float32")


def synthetic_result(text: str, lm, *, max_length: int = 1024, top_k: int = 5, seed: int = 0):
    """A ScoreResult with ``lm``'s real tokenization of ``text`` (ids, offsets, units) and
    synthetic per-token values: surprisal, entropy, rank and top-k alternatives drawn at
    random (alternatives from the text's own tokens, as a trained model's mostly are).
    Seconds to build for 1 MB, where scoring would take minutes: for the page's side."""
    import numpy as np

    from ppl_widget.core.result import ScoreResult
    from ppl_widget.scoring.runner.prepare import prepare

    prep = prepare(text, lm)
    n = len(prep.target_ids)
    rng = np.random.default_rng(seed)
    surprisal = rng.gamma(2.0, 2.0, n).astype(np.float32)  # nats, mean 4
    topk_ids = prep.target_ids[rng.integers(0, n, (n, top_k))]
    rank = rng.geometric(0.3, n).astype(np.int64)
    hit = np.flatnonzero(rank <= top_k)  # a rank within the top k: the target is there
    topk_ids[hit, rank[hit] - 1] = prep.target_ids[hit]
    topk_probs = np.sort(rng.dirichlet(np.ones(top_k + 1), n)[:, :top_k], axis=1)[:, ::-1]
    ids = np.unique(np.concatenate([prep.target_ids, topk_ids.ravel()]))
    tok = lm.tokenizer
    vocab = {int(i): tok.decode([int(i)]) for i in ids}
    return ScoreResult(
        text=text, token_ids=prep.target_ids, offsets=prep.target_offsets,
        surprisal=surprisal, entropy=rng.gamma(2.0, 2.0, n).astype(np.float32),
        rank=rank,
        context_length=np.minimum(np.arange(1, n + 1) % max_length + 1, max_length),
        topk_ids=topk_ids, topk_probs=topk_probs.astype(np.float32),
        units=prep.target_units, is_eos=prep.target_is_eos, vocab=vocab,
        unscored_token_ids=prep.unscored_ids, unscored_offsets=prep.unscored_offsets,
        settings={"model": "synthetic values on SmolLM2's tokenization",
                  "max_length": max_length, "stride": max_length, "prefix": "bos",
                  "top_k": top_k, "add_eos": False, "device": "cpu", "dtype": "float32"},
        total_tokens=n)


def show_result(result, lm):
    """A PerplexityWidget showing ``result`` (not scored by it): the synced state a
    finished run leaves, as ``views.export.result_state`` builds it."""
    from ppl_widget import PerplexityWidget
    from ppl_widget.views.export import result_state

    state = result_state(result)
    w = PerplexityWidget(result.text, lm, max_length=state["max_length"],
                         stride=state["stride"], autostart=False)
    with w.hold_sync():
        w.settings, w.result_data = state["settings"], state["result_data"]
        w.status = state["status"]
    return w


class SentBytes:
    """Counts what every widget sends (``Widget._send``: custom messages and state
    updates alike), JSON plus buffers, whether or not a front end is attached."""

    def __init__(self) -> None:
        self.json = self.buffers = self.messages = 0

    def __enter__(self) -> SentBytes:
        import ipywidgets

        self._orig = orig = ipywidgets.Widget._send

        def counting(widget, msg, buffers=None):
            self.messages += 1
            self.json += len(json.dumps(msg, default=str).encode())
            self.buffers += sum(memoryview(b).nbytes for b in buffers or ())
            return orig(widget, msg, buffers)

        ipywidgets.Widget._send = counting
        return self

    def __exit__(self, *exc) -> None:
        import ipywidgets

        ipywidgets.Widget._send = self._orig


def _b64(n: int) -> int:
    return 4 * math.ceil(n / 3)


def sizes(widget) -> dict:
    """Bytes of the widget's saved state (as JupyterLab saves it), per field, and of its
    text/html fallback output."""
    state = widget.get_manager_state(widgets=[widget])
    saved = len(json.dumps(state).encode())
    # per field of result_data: JSON or base64 bytes
    data = widget.get_state().get("result_data") or {}
    fields = {}
    for key, value in data.items():
        if isinstance(value, bytes | bytearray | memoryview):
            fields[key] = _b64(memoryview(value).nbytes)
        else:
            fields[key] = len(json.dumps(value).encode())
    bundle = widget._repr_mimebundle_()
    bundle = bundle[0] if isinstance(bundle, tuple) else bundle
    return {"saved_state": saved, "result_data_fields": fields,
            "text_html": len(bundle.get("text/html", "").encode())}


def run(chars: int, *, max_length: int, stride: int, top_k: int) -> dict:
    from ppl_widget import PerplexityWidget

    text = make_text(chars)
    lm = stand_in()
    with SentBytes() as sent:
        t0 = time.perf_counter()
        w = PerplexityWidget(text, lm, max_length=max_length, stride=stride, top_k=top_k)
        res = w.wait()
        elapsed = time.perf_counter() - t0
    n = len(res)
    s = sizes(w)
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
        "chars": len(text), "bytes": len(text.encode()), "tokens": n,
        "settings": {"max_length": max_length, "stride": stride, "top_k": top_k},
        "vocab_entries": len((w.result_data or {}).get("vocab", {})),
        "seconds": round(elapsed, 1),
        "saved_state_bytes": s["saved_state"],
        "saved_state_bytes_per_token": round(s["saved_state"] / n, 1),
        "sent_bytes": sent.json + sent.buffers, "sent_messages": sent.messages,
        "sent_bytes_per_token": round((sent.json + sent.buffers) / n, 1),
        "text_html_bytes": s["text_html"],
        "text_html_bytes_per_token": round(s["text_html"] / n, 1),
        "result_data_bytes_per_token": {k: round(v / n, 2) for k, v in
                                        sorted(s["result_data_fields"].items(),
                                               key=lambda kv: -kv[1])},
    }


ROWS = (("tokens", "tokens"), ("saved_state_bytes_per_token", "saved state, B/token"),
        ("sent_bytes_per_token", "messages sent, B/token"),
        ("text_html_bytes_per_token", "text/html output, B/token"),
        ("first_paint_ms", "first paint, ms"), ("hover_to_tooltip_ms", "hover -> tooltip, ms"),
        ("end_key_to_tooltip_ms", "End key -> tooltip, ms"))


def table(before: dict, after: dict) -> str:
    """Two runs' figures side by side (this script's JSON or the browser test's
    test-artifacts/scale.json); rows either lacks are left out."""
    lines = [f"{'':28} {'before':>14} {'after':>14}"]
    for key, label in ROWS:
        if key in before or key in after:
            cells = [("never" if key.endswith("_ms") else "-") if d.get(key) is None
                     else f"{d[key]:,}" for d in (before, after)]
            lines.append(f"{label:28} {cells[0]:>14} {cells[1]:>14}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--chars", type=int, default=1_000_000)
    p.add_argument("--max-length", type=int, default=1024)
    p.add_argument("--stride", type=int, default=1024)
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--out", help="write the figures here as JSON")
    p.add_argument("--table", nargs=2, metavar=("BEFORE", "AFTER"),
                   help="print two runs' JSON side by side, and measure nothing")
    args = p.parse_args(argv)
    if args.table:
        print(table(*(json.loads(Path(f).read_text()) for f in args.table)))
        return
    out = run(args.chars, max_length=args.max_length, stride=args.stride, top_k=args.top_k)
    text = json.dumps(out, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
