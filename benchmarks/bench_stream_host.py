"""What streaming into a widget costs the host, apart from the model.

``PerplexityWidget`` does work ``score`` does not: UTF-16 offsets and word/sentence spans
before the first batch, each token's word and sentence and the chunk message per batch,
and the whole result once more in ``result_data`` at the end.  On a GPU the per-batch part
runs while the next batch computes; what runs before the first batch and after the last
cannot hide, and with few batches (stride 1024 over 300,000 tokens: 9 batches of 32 windows
on an H100, ``score`` in 2.75 s for the Llama shape) it decides whether ``stream`` stays
within 5% of ``score`` (0.14 s there).

Here the model is taken out of the measurement: the text is scored once (a tiny fp32
GPT-2-shaped model, the text and tokenizer of ``bench_gpu.py``), and the widget is then
fed those batches again from memory, as fast as it takes them, with its messages sent to
a comm with no front end.  Printed per stride (median of ``--repeats``): the widget's host
time before its first chunk message, across the chunks, after the last chunk (the final
``result_data``), and the total.

    python benchmarks/bench_stream_host.py              # 300,000 tokens, stride 1024 and 512
    python benchmarks/bench_stream_host.py --smoke      # 3,000 tokens, seconds (CI)
"""

from __future__ import annotations

import argparse
import math
import pathlib
import platform
import statistics
import sys
import time
from typing import Any

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_gpu import build_model, cut_to_tokens, stdlib_text, train_tokenizer  # noqa: E402

from ppl_widget import load_model, stream  # noqa: E402
from ppl_widget.views import protocol as P  # noqa: E402
from ppl_widget.views import widget as widget_module  # noqa: E402


def replayed_widget_run(text: str, lm: Any, items: list, max_length: int,
                        stride: int) -> dict[str, float]:
    """A widget scoring ``text`` whose scorer hands it ``items`` (recorded batches) at
    once; seconds before the first chunk message, across the chunks and after the last."""
    stamps: dict[str, float] = {"first": math.nan, "last": math.nan, "done": math.nan}
    real_stream = widget_module.stream
    widget_module.stream = lambda *_a, **_k: iter(items)
    try:
        w = widget_module.PerplexityWidget(text, lm, max_length=max_length, stride=stride,
                                           autostart=False)

        def send(content: dict, buffers: list | None = None) -> None:
            now = time.perf_counter()
            if content.get("type") == P.MSG_CHUNK:
                stamps["last"] = now
                if math.isnan(stamps["first"]):
                    stamps["first"] = now
            elif content.get("type") == P.MSG_DONE:
                stamps["done"] = now

        w.send = send
        t0 = time.perf_counter()
        w.start()
        w.wait()
    finally:
        widget_module.stream = real_stream
    return {"before": stamps["first"] - t0, "chunks": stamps["last"] - stamps["first"],
            "after": stamps["done"] - stamps["last"], "total": stamps["done"] - t0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="3,000 tokens, one repeat")
    parser.add_argument("--tokens", type=int, default=None, help="default 300000")
    parser.add_argument("--max-length", type=int, default=1024)
    parser.add_argument("--batch-size", type=int, default=32, help="windows a batch "
                        "(32: what the H100 run used; the number of chunks follows)")
    parser.add_argument("--strides", default="1024,512")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n_tokens = args.tokens or (3000 if args.smoke else 300_000)
    repeats = 1 if args.smoke else args.repeats

    raw = stdlib_text(int(n_tokens * 4.5) + 10_000)
    tokenizer = train_tokenizer(raw, 500)
    text = cut_to_tokens(raw, tokenizer, n_tokens)
    model = build_model("gpt2-large", True, tokenizer, torch.device("cpu")).float()
    lm = load_model((model, tokenizer))
    L = args.max_length
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}; "
          f"{len(text):,} characters, {n_tokens:,} tokens; max_length {L}, batches of "
          f"{args.batch_size} windows; widget host seconds, median of {repeats}", flush=True)
    print("| stride | chunks | before first chunk | across chunks | after last chunk | total |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for stride in (int(s) for s in args.strides.split(",")):
        items = list(stream(text, lm, max_length=L, stride=stride, batch_size=args.batch_size))
        replayed_widget_run(text, lm, items[:2], L, stride)  # warm-up
        runs = [replayed_widget_run(text, lm, items, L, stride) for _ in range(repeats)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(f"| {stride} | {len(items)} | {med['before']:.3f} s | {med['chunks']:.3f} s | "
              f"{med['after']:.3f} s | {med['total']:.3f} s |", flush=True)


if __name__ == "__main__":
    main()
