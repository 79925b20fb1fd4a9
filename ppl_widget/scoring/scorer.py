"""Exact strided sliding-window scoring of a text with a causal LM.

``stream`` yields a ``ScoreProgress`` per finished batch of windows;
``score`` runs it to the end and returns the ``ScoreResult``.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.result import TOKEN_ARRAYS, ScoreResult, empty_token_arrays
from ..core.text_units import DEFAULT_WORD_PATTERN, WordSpec
from ..core.validation import as_count
from ..core.windows import Window, check_window_params, plan_windows, plan_windows_of_start
from .context import Context, check_context
from .models import LoadedModel, as_loaded
from .prepare import Prepared, PreparingText, prepare, prepare_ahead

#: Most fp32 logits (rows x vocabulary) alive at once: 64 Mi floats = 256 MiB.
MAX_LOGIT_ELEMENTS = 1 << 26
#: The same on a GPU: 512 MiB, fewer and larger head products.
MAX_LOGIT_ELEMENTS_CUDA = 1 << 27
#: Input positions per GPU batch at most: enough to saturate a large GPU.
MAX_BATCH_POSITIONS = 1 << 15
#: Batches in flight at most while a long text is still being tokenized (prepare_ahead):
#: on the device they hold only their outputs, and the GPU should not wait for the host.
AHEAD_IN_FLIGHT = 8

# Config attributes of models whose logits are transformed after the LM head
# (soft-capping, scaling); those are scored through the model's own forward.
_POST_HEAD_ATTRS = ("final_logit_softcapping", "logit_scale", "logits_scaling",
                    "output_multiplier_scale")

CancelFlag = threading.Event | Callable[[], bool] | None


class ScoringError(RuntimeError):
    """Scoring stopped on an error; ``partial_result`` keeps what was scored."""

    def __init__(self, message: str, partial_result: ScoreResult | None = None):
        super().__init__(message)
        self.partial_result = partial_result


@dataclass
class ScoreProgress:
    """One finished batch: the new tokens and how far the run is."""

    start: int  # index, among scored tokens, of this chunk's first token
    chunk: dict[str, np.ndarray]  # arrays keyed like result.TOKEN_ARRAYS
    new_vocab: dict[int, str]  # decoded text of token ids first seen in this chunk
    done: int
    total: int
    elapsed_s: float
    finished: bool = False  # every token scored
    cancelled: bool = False
    _build: Callable[[], ScoreResult] = field(default=None, repr=False)  # type: ignore[assignment]
    _result: ScoreResult | None = field(default=None, repr=False, compare=False)

    @property
    def tokens_per_s(self) -> float:
        return self.done / self.elapsed_s if self.elapsed_s > 0 else math.nan

    @property
    def eta_s(self) -> float:
        rate = self.tokens_per_s
        return (self.total - self.done) / rate if rate and rate > 0 else math.nan

    @property
    def result(self) -> ScoreResult:
        """Everything scored up to this point (``partial`` unless finished); built on
        first use and kept (a widget's last message and ``wait()`` share one)."""
        if self._result is None:
            self._result = self._build()
        return self._result


def _is_cancelled(cancel: CancelFlag) -> bool:
    if cancel is None:
        return False
    if isinstance(cancel, threading.Event):
        return cancel.is_set()
    return bool(cancel())


class _Forward:
    """Model calls that pass only target positions through the LM head.

    ``submit`` enqueues a batch's device work and returns a function that waits for it;
    ``score_batch`` does both.  On a CUDA GPU the head returns fp32 logits directly and
    one Triton pass per row gives the statistics (``gpu_stats``); elsewhere one fused
    torch softmax pass does.
    """

    def __init__(self, lm: LoadedModel, top_k: int):
        self.lm = lm
        self.top_k = top_k
        model = lm.model
        cfg = model.config
        self.head = model.get_output_embeddings()
        base = getattr(model, "base_model", None)
        post_head = any(getattr(cfg, a, None) not in (None, 1, 1.0) for a in _POST_HEAD_ATTRS)
        self.base = None if (base is None or base is model or post_head) else base
        self.vocab_size = self.head.weight.shape[0]
        self.cuda = getattr(lm.device, "type", None) == "cuda"
        self.bow_mask = _bow_mask(lm, self.vocab_size)  # for b(i), the begin-of-word prob
        # max_length of the run: a text that fits one window gets b after its last token
        # from the same forward (one more input position), see ``submit``
        self.end_row_limit: int | None = None
        self.max_logits = MAX_LOGIT_ELEMENTS_CUDA if self.cuda else MAX_LOGIT_ELEMENTS
        self.fused = False
        self.head_fp32 = None
        if self.cuda:
            from . import gpu_stats

            self.fused = gpu_stats.fused_available(lm.device.index or 0)
            self.head_fp32 = gpu_stats.head_fp32(self.head) if self.base is not None else None

    def target_logits(self, inputs: Any, n_targets: list[int]) -> Iterator[Any]:
        """Yield fp32 logits for the target rows, a bounded slab at a time."""
        rows_per_slab = max(1, self.max_logits // self.vocab_size)
        if self.base is not None:
            hidden = self.base(input_ids=inputs, use_cache=False).last_hidden_state
            rows = _last_rows(hidden, n_targets)
            head = self.head_fp32 or (lambda r: self.head(r).float())
            for i in range(0, rows.shape[0], rows_per_slab):
                yield head(rows[i:i + rows_per_slab])
        else:  # the model's own forward, keeping only the last positions' logits
            keep = max(n_targets)
            logits = self.lm.model(input_ids=inputs, use_cache=False, logits_to_keep=keep).logits
            rows = _last_rows(logits, n_targets)
            for i in range(0, rows.shape[0], rows_per_slab):
                yield rows[i:i + rows_per_slab].float()

    def slab_stats(self, logits: Any, tgt: Any) -> dict[str, Any]:
        """Statistics of one slab of fp32 logits (modified in place), on its device."""
        import torch

        if self.fused:
            from . import gpu_stats

            # the begin-of-word mass is one more sum in the same single read of each row
            return gpu_stats.slab_stats(logits, tgt, self.top_k, weights=self.bow_mask)
        out: dict[str, Any] = {}
        # Shift in place so the max logit is 0: then log Z = -log(max prob) and the
        # entropy below adds two non-negative terms, with no cancellation in fp32.
        logits -= logits.amax(dim=-1, keepdim=True)
        # one fused softmax pass serves everything (~2x faster on CPU than
        # log_softmax followed by exp)
        probs = torch.softmax(logits, dim=-1)
        log_z = -probs.amax(dim=-1).log()
        tgt_logit = logits.gather(1, tgt[:, None])[:, 0]
        out["surprisal"] = log_z - tgt_logit
        # entropy = log Z - E_p[logit] = log Z + E_p[|logit|]
        out["entropy"] = log_z - torch.einsum("rv,rv->r", probs, logits)
        # float sum of the comparison is ~40% faster than summing bools
        greater = (logits > tgt_logit[:, None]).to(torch.float32).sum(dim=-1)
        out["rank"] = greater.to(torch.int64) + 1
        if self.bow_mask is not None:  # one matrix-vector product per slab
            out["bow_prob"] = probs @ self.bow_mask
        if self.top_k:
            top_p, top_idx = probs.topk(self.top_k, dim=-1)
            out["topk_ids"] = top_idx
            out["topk_probs"] = top_p
        return out

    def submit(self, sequence: Any, batch: list[Window]) -> Callable[[], dict[str, np.ndarray]]:
        """Enqueue one batch; the returned function waits for it and gives its arrays.

        On a GPU nothing here waits for the device: results are copied to pinned host
        memory asynchronously, so the host can finish the previous batch meanwhile."""
        import torch

        inputs = torch.stack([window_inputs(sequence, w) for w in batch])
        targets = torch.cat([sequence[w.target_start:w.target_end] for w in batch])
        n_targets = [w.n_targets for w in batch]
        # b after the last token: in the last window, feed the last token too (causal
        # attention: the targets' rows are unchanged) and keep one more row, when the
        # model's context has room for one more position; else one more forward later
        last = batch[-1]
        end_row = (self.bow_mask is not None and len(batch) == 1
                   and last.target_end == len(sequence)
                   and last.n_inputs + 1 <= (self.end_row_limit or 0))
        if end_row:
            inputs = window_inputs(sequence, last, len(sequence))[None]
            n_targets = [n_targets[0] + 1]
        parts: dict[str, list] = {}
        row = 0
        for logits in self.target_logits(inputs, n_targets):
            n = logits.shape[0]
            if end_row and row + n > len(targets):  # the extra last row: only b from it
                parts["bow_end"] = [torch.softmax(logits[-1:], dim=-1) @ self.bow_mask]
                logits, n = logits[:-1], n - 1
            for key, value in (self.slab_stats(logits, targets[row:row + n]) if n else {}).items():
                parts.setdefault(key, []).append(value)
            row += n
            del logits
        device_arrays = {k: torch.cat(v) if len(v) > 1 else v[0] for k, v in parts.items()}
        ready = _copy_to_host(device_arrays, self.cuda)
        n = len(targets)
        top_k = self.top_k
        contexts = np.concatenate([np.arange(w.target_start - w.input_start,
                                             w.target_end - w.input_start) for w in batch])

        def finish() -> dict[str, np.ndarray]:
            arrays = {k: v.numpy() for k, v in ready().items()}
            if not top_k:
                arrays["topk_ids"] = np.zeros((n, 0), np.int64)
                arrays["topk_probs"] = np.zeros((n, 0), np.float64)
            arrays["context_length"] = contexts
            return arrays

        return finish

    def score_batch(self, sequence: Any, batch: list[Window]) -> dict[str, np.ndarray]:
        return self.submit(sequence, batch)()

    def bow_after_last(self, sequence: Any, max_length: int, prefixed: bool = False) -> float:
        """b at the position after the last token: one more row, from the last
        ``max_length`` positions (so the last word's end is paid for); ``prefixed``:
        the prefix token in place of the first of them, as every window reads it."""
        import torch

        if self.bow_mask is None or len(sequence) == 0:
            return math.nan
        start = max(0, len(sequence) - max_length)
        inputs = window_inputs(sequence, Window(start, len(sequence), len(sequence),
                                                len(sequence) + 1, prefixed and start > 0))[None]
        with torch.inference_mode():
            logits = next(iter(self.target_logits(inputs, [1])))
            probs = torch.softmax(logits.float(), dim=-1)
            return float((probs @ self.bow_mask)[0])


def window_inputs(sequence: Any, w: Window, end: int | None = None) -> Any:
    """What the model reads for window ``w`` (up to position ``end``, default its
    ``input_end``): a prefixed window reads position 0, the prefix token, first."""
    import torch

    inputs = sequence[w.input_start:w.input_end if end is None else end]
    if w.prefixed:
        inputs = torch.cat([sequence[:1], inputs[1:]])
    return inputs


def _bow_mask(lm: LoadedModel, vocab_size: int) -> Any:
    """The begin-of-word mask as an fp32 vector on the model's device (None if unknown)."""
    import torch

    from .word_boundary import boundary_mask

    mask = boundary_mask(lm.tokenizer, vocab_size)
    if mask is None:
        return None
    return torch.as_tensor(mask, dtype=torch.float32, device=lm.device)


def _last_rows(states: Any, n_targets: list[int]) -> Any:
    """The last ``n_targets[b]`` positions of each row ``b``, stacked."""
    import torch

    k = n_targets[0]
    if all(n == k for n in n_targets):  # the usual batch: one strided view, no concatenation
        return states[:, states.shape[1] - k:].reshape(-1, states.shape[-1])
    return torch.cat([states[b, states.shape[1] - n:] for b, n in enumerate(n_targets)])


def _copy_to_host(tensors: dict[str, Any], cuda: bool) -> Callable[[], dict[str, Any]]:
    """Start copying device tensors to the host; the returned function waits for them.
    On CUDA: pinned buffers, non-blocking copies and one event (one wait per batch)."""
    import torch

    if not cuda:
        host = {k: v.cpu() for k, v in tensors.items()}
        return lambda: host
    host = {k: torch.empty(v.shape, dtype=v.dtype, pin_memory=True) for k, v in tensors.items()}
    for k, v in tensors.items():
        host[k].copy_(v, non_blocking=True)
    done = torch.cuda.Event()
    if tensors:  # on the stream of the tensors' device, which need not be the current one
        done.record(torch.cuda.current_stream(next(iter(tensors.values())).device))

    def wait() -> dict[str, Any]:
        done.synchronize()
        return host

    return wait


def auto_batch_size(lm: LoadedModel, max_length: int) -> int:
    """Windows per batch.  On a CPU one window already fills the cores, and
    smaller batches stream sooner.  On a GPU: what ~40% of free memory holds,
    at most ``MAX_BATCH_POSITIONS`` input positions (more does not run faster,
    and smaller batches stream sooner)."""
    if lm.device.type != "cuda":
        return 1
    import torch

    cfg = lm.model.config
    hidden = getattr(cfg, "hidden_size", None) or getattr(cfg, "n_embd", 1024)
    inter = getattr(cfg, "intermediate_size", None) or getattr(cfg, "n_inner", None) or 4 * hidden
    heads = getattr(cfg, "num_attention_heads", None) or getattr(cfg, "n_head", 16)
    elem = torch.finfo(lm.dtype).bits // 8
    per_window = max_length * (3 * inter + 8 * hidden) * elem
    if getattr(cfg, "_attn_implementation", "eager") in (None, "eager"):
        per_window += heads * max_length**2 * 4  # eager attention materialises the scores
    free, _ = torch.cuda.mem_get_info(lm.device)
    budget = 0.4 * free - 3 * 4 * MAX_LOGIT_ELEMENTS_CUDA  # logit slab, top-k and stats
    cap = max(1, MAX_BATCH_POSITIONS // max_length)
    return int(max(1, min(cap, budget // per_window)))


def _is_oom(exc: BaseException) -> bool:
    import torch

    oom = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
    return isinstance(exc, oom) or "out of memory" in str(exc).lower()


def resolve_window(lm: LoadedModel, max_length: int | None, stride: int | None,
                   prefix_every_window: bool = False) -> tuple[int, int]:
    """Defaults: the model's context length (capped on CPU), stride half of it; checked by
    the one window rule (``core.windows.check_window_settings``)."""
    if max_length is None:
        max_length = lm.default_max_length()
    return check_window_params(max_length, stride, context_length=lm.context_length,
                               prefix_every_window=prefix_every_window)


def stream(text: str, lm: Any = None, *, max_length: int | None = None, stride: int | None = None,
           prefix: str | None = "bos", add_eos: bool = False, top_k: int = 5,
           batch_size: int | str = "auto", words: WordSpec = None,
           cancel: CancelFlag = None, reuse: ScoreResult | None = None,
           context: Context = None, prefix_every_window: bool = False,
           ) -> Iterator[ScoreProgress]:
    """Score ``text`` window by window, yielding a ``ScoreProgress`` per batch.

    The last item has ``finished`` (or ``cancelled``) set and its ``result``
    equals ``score(...)`` with the same arguments.  ``cancel`` (an Event or a
    callable) is checked before every batch.  On an error a ``ScoringError``
    carries the partial result.

    ``reuse``: a result of an earlier version of this text, scored by the same
    model with the same settings (complete or partial).  The leading windows an
    edit cannot change keep their results (the first item holds them); scoring
    starts at the first window holding a changed token (scoring/incremental.py).
    ``result.settings["reused_tokens"]`` says how many were kept.

    ``context`` and ``prefix_every_window``: see ``score``.
    """
    lm = as_loaded(lm)
    top_k = as_count("top_k", top_k, minimum=0, rule="a non-negative integer")
    max_length, stride = resolve_window(lm, max_length, stride, prefix_every_window)
    context = check_context(context)
    if prefix_every_window and prefix is None:
        raise ValueError("prefix_every_window=True reads the prefix token in every window: "
                         "it needs prefix='bos'")
    if prefix_every_window and hasattr(lm, "make_forward"):
        raise ValueError("prefix_every_window=True is for neural models (an n-gram model "
                         "reads no prefix token)")
    if batch_size == "auto":
        batch_size = auto_batch_size(lm, max_length)
    batch_size = as_count("batch_size", batch_size, minimum=1,
                          rule="'auto' or a positive integer")
    if hasattr(lm, "make_forward"):  # another model kind (scoring/ngram.py) brings its own
        forward = lm.make_forward(top_k)
    else:
        forward = _Forward(lm, min(top_k, lm.model.get_output_embeddings().weight.shape[0]))
        # one more input position must fit the model's context (else a second forward)
        forward.end_row_limit = lm.context_length or max_length
    settings = {  # prefix_token and n_windows are filled in once the text is tokenized
        "model": lm.name, "max_length": max_length, "stride": stride, "prefix": prefix,
        "prefix_token": None, "add_eos": add_eos, "top_k": forward.top_k,
        "device": str(lm.device), "dtype": str(lm.dtype).replace("torch.", ""),
        "words": str(words) if words is not None else DEFAULT_WORD_PATTERN, "n_windows": 0,
        "prefix_every_window": prefix_every_window, "context_tokens": 0,
    }
    plan = {"prefix_every_window": prefix_every_window}
    depth = _pipeline_depth(lm, forward)
    if depth > 1 and reuse is None and context is None:
        # a GPU: it scores the first batches while the host tokenizes the rest of a long
        # text; the start holds one batch (its windows' targets, and the first's context)
        ahead = prepare_ahead(text, lm, batch_size * stride + max_length,
                              prefix=prefix, add_eos=add_eos, words=words)
        if ahead is not None:
            yield from _run(ahead, None, forward, lm, settings, batch_size, depth, cancel)
            return
    prep = prepare(text, lm, prefix=prefix, add_eos=add_eos, words=words, context=context)
    windows = plan_windows(len(prep.sequence), max_length, stride,
                           first_target=prep.first_target, **plan)
    settings.update(prefix_token=prep.prefix_token, n_windows=len(windows),
                    context_tokens=prep.n_context_tokens)
    kept = None
    if reuse is not None and context is None and not prefix_every_window:
        from .incremental import plan_reuse

        kept = plan_reuse(reuse, prep, windows, settings)
        settings["reused_tokens"] = kept.tokens if kept is not None else 0
    yield from _run(prep, windows, forward, lm, settings, batch_size, depth, cancel, kept)


def _run(prep: Prepared | PreparingText, windows: list[Window] | None, forward: _Forward,
         lm: LoadedModel, settings: dict, batch_size: int, depth: int, cancel: CancelFlag,
         kept: Any = None) -> Iterator[ScoreProgress]:
    """Submit batches of ``windows`` (up to ``depth`` in flight) and yield each as it
    finishes.  ``prep`` may still be preparing (``prepare_ahead``): then ``windows`` is
    None, full batches are submitted as more of the text's tokens are final (up to
    ``AHEAD_IN_FLIGHT``), and the whole text is waited for before the first batch's
    results are turned into arrays."""
    import torch

    max_length, stride = settings["max_length"], settings["stride"]
    plan = {"prefix_every_window": settings["prefix_every_window"]}
    ahead = prep if isinstance(prep, PreparingText) else None
    if ahead is not None:  # the device holds the positions final so far
        sequence = _extend_on_device(None, ahead.known(), lm.device)
        windows = plan_windows_of_start(len(sequence), max_length, stride, **plan)
        total = -1  # not known until the whole text is tokenized
    else:
        sequence = torch.as_tensor(prep.sequence, device=lm.device)
        total = len(prep.target_ids)
    assert windows is not None
    parts: list[dict[str, np.ndarray]] = []
    vocab: dict[int, str] = {}
    done = 0
    t0 = time.perf_counter()
    cancelled = False
    bow_end = [math.nan]  # b after the last token, computed once every token is scored

    def snapshot(n_parts: int, scored: int, elapsed: float) -> Callable[[], ScoreResult]:
        """The result as it stands now, built only if asked for."""
        def build() -> ScoreResult:
            kept = parts[:n_parts]
            ids = _ids_in(kept)
            return ScoreResult.from_parts(
                prep.text, kept, forward.top_k, vocab={i: vocab[i] for i in ids.tolist()},
                unscored_token_ids=prep.unscored_ids, unscored_offsets=prep.unscored_offsets,
                settings={**settings, "batch_size": batch_size},
                partial=scored < total, total_tokens=total, elapsed_s=elapsed,
                tokenizer=lm.tokenizer, context=getattr(prep, "context", None),
                bow_prob_end=bow_end[0] if scored == total else math.nan)
        return build

    # On a GPU, batch i+1 is enqueued before batch i's results are turned into arrays
    # and yielded: the host work (and the consumer's) overlaps the device's.
    in_flight: deque[tuple[list[Window], Callable[[], dict[str, np.ndarray]]]] = deque()
    i = 0

    def grow() -> None:
        """Take in what the thread has tokenized since: more windows are final."""
        nonlocal windows, sequence
        positions = ahead.known()
        if len(positions) > len(sequence):
            windows = plan_windows_of_start(len(positions), max_length, stride, **plan)
            sequence = _extend_on_device(sequence, positions, lm.device)

    def settle() -> None:
        """Wait for the whole text prepared ahead; its windows go on from those in flight."""
        nonlocal prep, ahead, windows, sequence, total
        assert ahead is not None
        prep, ahead = ahead.result(), None
        full = plan_windows(len(prep.sequence), max_length, stride, **plan)
        assert full[:i] == windows[:i], "the start's windows are the whole text's"
        windows = full
        sequence = _extend_on_device(sequence, prep.sequence, lm.device)
        total = len(prep.target_ids)
        settings.update(prefix_token=prep.prefix_token, n_windows=len(full))

    def failed(exc: BaseException) -> ScoringError:
        if ahead is not None:
            settle()  # the partial result (empty) needs the text's units
        return ScoringError(f"scoring failed after {done} of {total} tokens: "
                            f"{type(exc).__name__}: {exc}",
                            snapshot(len(parts), done, time.perf_counter() - t0)())

    if kept is not None:  # the windows an edit left unchanged: their results, as one chunk
        windows = windows[kept.windows:]
        vocab.update(kept.vocab)
        missing = [t for t in _ids_in([kept.arrays]).tolist() if t not in vocab]
        vocab.update(_decode_each(lm.tokenizer, missing))
        parts.append(kept.arrays)
        done = kept.tokens
        if done == total:
            bow_end[0] = kept.bow_prob_end
        yield ScoreProgress(start=0, chunk=kept.arrays, new_vocab=dict(vocab), done=done,
                            total=total, elapsed_s=0.0, finished=done == total,
                            _build=snapshot(1, done, 0.0))

    def can_submit() -> bool:
        if ahead is not None:  # full batches only: the batches are those of the whole text
            return len(windows) - i >= batch_size and len(in_flight) < AHEAD_IN_FLIGHT
        return i < len(windows) and len(in_flight) < depth

    while i < len(windows) or in_flight or ahead is not None:
        if ahead is not None:
            grow()
        if can_submit():
            if _is_cancelled(cancel):
                cancelled = True  # what is still in flight is dropped: a stop within one batch
                break
            batch = windows[i:i + batch_size]
            try:
                with torch.inference_mode():
                    if depth > 1:
                        pending = forward.submit(sequence, batch)
                    else:
                        arrays = forward.score_batch(sequence, batch)
                        pending = (lambda a: lambda: a)(arrays)
            except Exception as exc:
                if _is_oom(exc) and batch_size > 1:
                    batch_size = max(1, batch_size // 2)  # retry the same windows, smaller
                    if lm.device.type == "cuda":
                        torch.cuda.empty_cache()
                    continue
                raise failed(exc) from exc
            in_flight.append((batch, pending))
            i += len(batch)
            continue
        if ahead is not None:
            if len(in_flight) < AHEAD_IN_FLIGHT and not ahead.finished:
                ahead.wait_for_more(len(sequence))  # too little text for a full batch yet
            else:  # the batches in flight need their tokens' spans: the whole text
                settle()
            continue
        batch, pending = in_flight.popleft()
        try:
            arrays = pending()
        except Exception as exc:  # an asynchronous device error surfaces here
            raise failed(exc) from exc
        first = prep.first_target  # a sequence position; targets are counted from it
        start, stop = batch[0].target_start - first, batch[-1].target_end - first
        arrays.update(token_ids=prep.target_ids[start:stop],
                      offsets=prep.target_offsets[start:stop],
                      units=prep.target_units[start:stop], is_eos=prep.target_is_eos[start:stop])
        end = arrays.pop("bow_end", None)  # b after the last token, from the same forward
        arrays.setdefault("bow_prob", np.full(stop - start, np.nan))  # model kinds without b
        arrays = {k: np.asarray(arrays[k], dtype=TOKEN_ARRAYS[k]) for k in TOKEN_ARRAYS}
        if end is not None:
            bow_end[0] = float(np.asarray(end).reshape(-1)[0])
        elif stop == total and hasattr(forward, "bow_after_last"):  # one more forward
            try:
                bow_end[0] = forward.bow_after_last(sequence, settings["max_length"],
                                                    plan["prefix_every_window"])
            except Exception as exc:
                raise failed(exc) from exc
        new_ids = [i for i in _ids_in([arrays]).tolist() if i not in vocab]
        new_vocab = _decode_each(lm.tokenizer, new_ids)
        vocab.update(new_vocab)
        parts.append(arrays)
        done = stop
        elapsed = time.perf_counter() - t0
        yield ScoreProgress(start=start, chunk=arrays, new_vocab=new_vocab, done=done,
                            total=total, elapsed_s=elapsed, finished=done == total,
                            _build=snapshot(len(parts), done, elapsed))
    if ahead is not None:  # cancelled before the rest of the text was tokenized
        settle()
    if done < total or total == 0:
        # a final marker: cancelled, or a text with nothing to score
        elapsed = time.perf_counter() - t0
        yield ScoreProgress(start=done, chunk=empty_token_arrays(forward.top_k), new_vocab={},
                            done=done, total=total, elapsed_s=elapsed, finished=done == total,
                            cancelled=cancelled, _build=snapshot(len(parts), done, elapsed))


def _extend_on_device(sequence: Any, positions: np.ndarray, device: Any) -> Any:
    """``positions`` as a device tensor, given ``sequence``, a device copy of its start
    (or None).  On CUDA only the new positions are copied, through pinned memory and
    without waiting: a plain copy from host memory waits for every batch in flight."""
    import torch

    start = 0 if sequence is None else len(sequence)
    new = torch.from_numpy(np.ascontiguousarray(positions[start:], dtype=np.int64))
    if device.type == "cuda":
        new = new.pin_memory().to(device, non_blocking=True)
    else:
        new = new.to(device)
    return new if sequence is None else torch.cat([sequence, new])


def _pipeline_depth(lm: LoadedModel, forward: Any) -> int:
    """Batches in flight: 2 on a GPU (host work overlaps device work), else 1.  A model
    kind's own forward with ``submit`` may say how many it takes (``pipeline_depth``;
    the simulated device of benchmarks/bench_prepare_ahead.py does)."""
    if hasattr(forward, "submit") and getattr(forward, "pipeline_depth", None):
        return int(forward.pipeline_depth)
    return 2 if (lm.device.type == "cuda" and hasattr(forward, "submit")) else 1


def _ids_in(parts: list[dict[str, np.ndarray]]) -> np.ndarray:
    """Sorted distinct token ids (targets and alternatives) of ``parts``: a presence
    mask, O(n + vocabulary), where ``np.unique`` sorts or hashes (~0.1 s a batch)."""
    arrays = [a for p in parts for a in (p["token_ids"], p["topk_ids"].ravel()) if len(a)]
    if not arrays:
        return np.zeros(0, np.int64)
    present = np.zeros(max(int(a.max()) for a in arrays) + 1, dtype=bool)
    for a in arrays:
        present[a] = True
    return np.flatnonzero(present)


def _decode_each(tokenizer: Any, ids: list[int]) -> dict[int, str]:
    """Each id's own decoded text (a lone byte of a multi-byte character shows as U+FFFD)."""
    if not ids:  # batch_decode([]) returns [''], not []
        return {}
    singles = [[t] for t in ids]
    if _plain_fast_decode(tokenizer):  # the Rust decoder, batched, without per-id Python
        return dict(zip(ids, tokenizer._tokenizer.decode_batch(singles,
                                                               skip_special_tokens=False),
                        strict=True))
    return dict(zip(ids, tokenizer.batch_decode(singles), strict=True))


def _plain_fast_decode(tokenizer: Any) -> bool:
    """``batch_decode`` would only call the Rust decoder: a fast tokenizer with no
    clean-up of spaces and none of the decode methods overridden."""
    try:
        from transformers import PreTrainedTokenizerFast
    except ImportError:  # pragma: no cover
        return False
    cls = type(tokenizer)
    return (isinstance(tokenizer, PreTrainedTokenizerFast)
            and getattr(tokenizer, "_tokenizer", None) is not None
            and getattr(tokenizer, "clean_up_tokenization_spaces", True) is False
            and all(getattr(cls, m, None) is getattr(PreTrainedTokenizerFast, m, None)
                    for m in ("decode", "batch_decode", "_decode")))


def score(text: str, lm: Any = None, *, max_length: int | None = None, stride: int | None = None,
          prefix: str | None = "bos", add_eos: bool = False, top_k: int = 5,
          batch_size: int | str = "auto", words: WordSpec = None,
          reuse: ScoreResult | None = None, context: Context = None,
          prefix_every_window: bool = False) -> ScoreResult:
    """Score every token of ``text`` exactly once with strided sliding windows.

    ``lm``: anything ``load_model`` takes (default: the embedded SmolLM2).
    ``max_length``: window length (default: the model's context length, capped
    at 1024 on CPU); ``stride``: new targets per window after the first
    (default ``max_length // 2``); each target sees at least
    ``max_length - stride + 1`` positions of context when the text has them.
    ``prefix="bos"`` scores the first token after the BOS (else EOS) token;
    ``prefix=None`` leaves it unscored.  ``add_eos`` also scores an EOS token.
    ``reuse``: the result of an earlier version of the text (see ``stream``).

    ``context``: a string or a chat (a list of ``{"role", "content"}`` messages) the model
    reads before ``text``; only ``text``'s tokens are scored and counted, and a context
    longer than the window is read as far back as ``max_length`` allows.  A string's
    trailing whitespace moves to the start of ``text`` (``result.text``); a chat is
    rendered with the tokenizer's chat template and ``text`` is the assistant's reply
    (``add_eos`` then scores the template's end-of-turn token).  See docs/context.md.
    ``prefix_every_window``: every window reads the prefix token first, then up to
    ``max_length - 1`` tokens (llama.cpp's layout); each token is still scored once.
    """
    progress = stream(text, lm, max_length=max_length, stride=stride, prefix=prefix,
                      add_eos=add_eos, top_k=top_k, batch_size=batch_size, words=words,
                      reuse=reuse, context=context, prefix_every_window=prefix_every_window)
    last = deque(progress, maxlen=1)  # stream always yields; the last item is complete
    return last[0].result
