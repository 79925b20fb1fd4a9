"""The ways bench_gpu.py compares ppl_widget with: lm-evaluation-harness (its own HFLM,
or a faithful batched reimplementation where it is not installed), ``stream()`` consumed as
it yields, and a widget scoring with its messages sent to a comm with no front end."""

from __future__ import annotations

import math
import time
from typing import Any

import torch

from ppl_widget.core.windows import plan_windows


def lm_eval_native(model: Any, tokenizer: Any, batch_size: int, max_length: int,
                   device: torch.device) -> Any:
    """lm-evaluation-harness's own HFLM on the loaded model, or None if not installed."""
    try:
        from lm_eval.api.instance import Instance
        from lm_eval.models.huggingface import HFLM
    except ImportError:
        return None
    hf = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=batch_size,
              max_length=max_length, device=str(device))

    def run(text: str) -> float:
        req = Instance(request_type="loglikelihood_rolling", doc={}, arguments=(text,), idx=0)
        return -float(hf.loglikelihood_rolling([req], disable_tqdm=True)[0])

    return run


def lm_eval_reimplementation(model: Any, tokenizer: Any, batch_size: int,
                             max_length: int) -> Any:
    """lm-eval's rolling windows (prefix token, disjoint windows of max_length), batched
    as HFLM does: full logits over every input position, log_softmax, gather."""
    def run(text: str) -> float:
        ids = [tokenizer.bos_token_id] + tokenizer(text, add_special_tokens=False)["input_ids"]
        seq = torch.tensor(ids, device=model.device)
        windows = plan_windows(len(ids), max_length, max_length)
        total = 0.0
        with torch.no_grad():
            for i in range(0, len(windows), batch_size):
                batch = windows[i:i + batch_size]
                width = max(w.n_inputs for w in batch)
                inp = torch.zeros((len(batch), width), dtype=torch.long, device=model.device)
                for b, w in enumerate(batch):
                    inp[b, :w.n_inputs] = seq[w.input_start:w.input_end]
                logp = torch.log_softmax(model(inp).logits, dim=-1)
                for b, w in enumerate(batch):
                    lp = logp[b, w.n_inputs - w.n_targets:w.n_inputs]
                    tgt = seq[w.target_start:w.target_end]
                    total -= float(lp.gather(1, tgt[:, None]).float().sum())
        return total

    return run


def compiled_lm(model: Any, tokenizer: Any, warm: str, max_length: int,
                backend: str = "inductor") -> Any:
    """The same model object with ``lm.compile()``, compiled by scoring ``warm`` (its full
    batches: the shape every stride's full batches have).  ``backend``: torch.compile's,
    for lm.compile()'s own call (--smoke: "aot_eager", the same graph capture with no C++
    compile; the real inductor one is tests/test_corpus_compile.py's)."""
    import functools
    from unittest import mock

    from ppl_widget import load_model, score

    lm = load_model((model, tokenizer))
    with mock.patch.object(torch, "compile", functools.partial(torch.compile, backend=backend)):
        lm.compile()
    t = time.perf_counter()
    score(warm, lm, max_length=max_length, stride=max_length // 2, batch_size=2)
    print(f"   lm.compile(): compiled in {time.perf_counter() - t:.1f} s", flush=True)
    return lm


def stream_pace(text: str, lm: Any, max_length: int, stride: int) -> dict:
    """``stream()`` consumed as it yields: seconds to its first chunk, the largest gap
    between two chunks (the pace a reader sees), and the whole run."""
    from ppl_widget import stream

    t0 = last = time.perf_counter()
    first, gap = math.nan, 0.0
    for item in stream(text, lm, max_length=max_length, stride=stride):
        now = time.perf_counter()
        if item.chunk["surprisal"].size:
            first = now - t0 if math.isnan(first) else first
            gap = max(gap, now - last)
            last = now
    return {"first_chunk_s": first, "largest_gap_s": gap, "total_s": time.perf_counter() - t0}


def widget_run(text: str, lm: Any, max_length: int, stride: int) -> tuple[Any, dict]:
    """A PerplexityWidget scoring ``text`` with its messages sent to a comm with no
    front end; returns its result and message counts."""
    from ppl_widget.views import protocol as P
    from ppl_widget.views.widget import PerplexityWidget

    w = PerplexityWidget(text, lm, max_length=max_length, stride=stride, autostart=False)
    sent = {"messages": 0, "bytes": 0, "first_chunk_s": math.nan, "largest_gap_s": 0.0}
    t0 = time.perf_counter()
    last = [t0]

    def send(content: dict, buffers: list | None = None) -> None:
        sent["messages"] += 1
        sent["bytes"] += sum(len(b) for b in buffers or ())
        if content.get("type") == P.MSG_CHUNK:
            now = time.perf_counter()
            if math.isnan(sent["first_chunk_s"]):
                sent["first_chunk_s"] = now - t0
            sent["largest_gap_s"] = max(sent["largest_gap_s"], now - last[0])
            last[0] = now

    w.send = send
    w.start()
    res = w.wait()
    return res, sent
