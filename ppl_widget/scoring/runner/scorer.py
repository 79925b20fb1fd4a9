"""Exact strided sliding-window scoring of a text with a causal LM.

``stream`` yields a ``ScoreProgress`` per finished batch of windows;
``score`` runs it to the end and returns the ``ScoreResult``.  The parts: the batched
forward pass (``forward.py``), the run loop (``run.py``), the vocabulary (``vocab.py``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any

from ...core.protocols import check_protocol, get_protocol, plan_protocol, protocol_stride
from ...core.result import ScoreResult
from ...core.text_units import DEFAULT_WORD_PATTERN, WordSpec
from ...core.validation import as_count, check_text
from ...core.windows import check_window_params
from ..kinds.devices import precision_settings
from ..kinds.model_kind import PlansOwnWindows, kind_run_settings
from ..kinds.models import LoadedModel, as_loaded
from .context import Context, check_context
from .forward import MAX_LOGIT_ELEMENTS_CUDA
from .prepare import adds_bos, keep_scored, prepare, prepare_ahead
from .progress import CancelFlag, ScoreProgress, ScoringError
from .run import ScoringRun, pipeline_depth

__all__ = ["ScoreProgress", "ScoringError", "auto_batch_size", "resolve_window", "score",
           "stream", "stream_any_text"]

#: Input positions per GPU batch at most: enough to saturate a large GPU.
MAX_BATCH_POSITIONS = 1 << 15
#: Input positions per batch on a CPU
CPU_BATCH_POSITIONS = 1024


def auto_batch_size(lm: LoadedModel, max_length: int) -> int:
    """Windows per batch.  On a CPU: windows of up to ``CPU_BATCH_POSITIONS`` positions
    in all (one window of the default 1024; four of 256, which ran ~12% faster than one
    at a time in benchmarks/bench_llama_cpp.py's chunks, the LM head's products larger),
    and smaller batches stream sooner.  On a GPU: what ~40% of free memory holds,
    at most ``MAX_BATCH_POSITIONS`` input positions (more does not run faster,
    and smaller batches stream sooner)."""
    if lm.device.type != "cuda":
        return max(1, CPU_BATCH_POSITIONS // max_length)
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


def resolve_window(lm: LoadedModel, max_length: int | None, stride: int | None,
                   prefix_every_window: bool = False) -> tuple[int, int]:
    """Defaults: the model's context length (capped on CPU), stride half of it; checked by
    the one window rule (``core.windows.check_window_settings``)."""
    if max_length is None:
        max_length = lm.default_max_length()
    return check_window_params(max_length, stride, context_length=lm.context_length,
                               prefix_every_window=prefix_every_window)


def resolve_protocol(lm: Any, protocol: str, max_length: int | None, stride: int | None,
                     prefix: str | None, *, prefix_every_window: bool = False,
                     add_eos: bool = False, context: Context = None
                     ) -> tuple[int, int, str | None]:
    """``(max_length, stride, prefix)`` of a run under ``protocol`` (``core/protocols.py``):
    its rules checked, the model's defaults filled in, its stride and prefix token set
    (``llama.cpp``: BOS where the model's tokenizer adds one; ``hf-guide``: none)."""
    rules = {"prefix_every_window": prefix_every_window, "add_eos": add_eos,
             "context": context}
    check_protocol(protocol, max_length, stride, **rules)
    max_length = resolve_window(lm, max_length, None, prefix_every_window)[0]
    check_protocol(protocol, max_length, stride, **rules)  # a stride against the default
    stride = protocol_stride(protocol, max_length, stride)
    max_length, stride = resolve_window(lm, max_length, stride, prefix_every_window)
    wants = get_protocol(protocol).prefix
    if wants == "model":
        prefix = "bos" if adds_bos(lm.tokenizer) else None
    elif wants is None:
        prefix = None
    elif wants == "bos" and prefix is None:
        raise ValueError(f"prefix=None is an option of protocol='exact': protocol="
                         f"{protocol!r} reads its prefix token (BOS, else EOS) first")
    return max_length, stride, prefix


def reads_prefix_token(lm: Any) -> bool:
    """The model reads a prefix token: a transformers causal LM, or a kind that says so
    (an encoder-decoder's decoder reads its start token first)."""
    return isinstance(lm, LoadedModel) or bool(getattr(lm, "reads_prefix_token", False))


def check_prefix_every_window(lm: Any, prefix: str | None, prefix_every_window: bool) -> None:
    """``prefix_every_window=True`` needs a prefix token and a neural model."""
    if prefix_every_window and prefix is None:
        raise ValueError("prefix_every_window=True reads the prefix token in every window: "
                         "it needs prefix='bos'")
    if prefix_every_window and not reads_prefix_token(lm):
        raise ValueError("prefix_every_window=True is for neural models (an n-gram model "
                         "reads no prefix token)")


def check_prefixed_windows(lm: Any, windows: list[Any], protocol: str) -> None:
    """A plan whose windows read the prefix token first is for neural models."""
    if any(w.prefixed for w in windows) and not reads_prefix_token(lm):
        raise ValueError(f"protocol={protocol!r} reads the prefix token first in every "
                         f"window: that is for neural models (an n-gram model reads none)")


def stream(text: str, lm: Any = None, *, max_length: int | None = None, stride: int | None = None,
           prefix: str | None = "bos", add_eos: bool = False, top_k: int = 5,
           batch_size: int | str = "auto", words: WordSpec = None,
           cancel: CancelFlag = None, reuse: ScoreResult | None = None,
           context: Context = None, prefix_every_window: bool = False,
           protocol: str = "exact", pll_metric: str | None = None) -> Iterator[ScoreProgress]:
    """Score ``text`` window by window, yielding a ``ScoreProgress`` per batch.

    The last item has ``finished`` (or ``cancelled``) set and its ``result``
    equals ``score(...)`` with the same arguments.  ``cancel`` (an Event or a
    callable) is checked before every batch.  On an error a ``ScoringError``
    carries the partial result.

    ``reuse``: a result of an earlier version of this text, scored by the same
    model with the same settings (complete or partial).  The leading windows an
    edit cannot change keep their results (the first item holds them); scoring
    starts at the first window holding a changed token (scoring/runner/incremental.py).
    ``result.settings["reused_tokens"]`` says how many were kept.

    ``context``, ``prefix_every_window``, ``protocol`` and ``pll_metric``: see ``score``.
    """
    check_text(text, add_eos)  # before a model is loaded: an empty text fails at once
    yield from stream_any_text(text, lm, max_length=max_length, stride=stride, prefix=prefix,
                               add_eos=add_eos, top_k=top_k, batch_size=batch_size,
                               words=words, cancel=cancel, reuse=reuse, context=context,
                               prefix_every_window=prefix_every_window, protocol=protocol,
                               pll_metric=pll_metric)


def stream_any_text(text: str, lm: Any = None, *, max_length: int | None = None,
                    stride: int | None = None, prefix: str | None = "bos",
                    add_eos: bool = False, top_k: int = 5,
                    batch_size: int | str = "auto", words: WordSpec = None,
                    cancel: CancelFlag = None, reuse: ScoreResult | None = None,
                    context: Context = None, prefix_every_window: bool = False,
                    protocol: str = "exact",
                    pll_metric: str | None = None) -> Iterator[ScoreProgress]:
    """``stream`` without the empty-text rule: an empty text gives an empty result (the
    editable widget's empty state, which is no error)."""
    lm = as_loaded(lm)
    top_k = as_count("top_k", top_k, minimum=0, rule="a non-negative integer")
    context = check_context(context)
    # a kind with its own window plan (a masked LM) checks the run's options by its rules
    own = lm if isinstance(lm, PlansOwnWindows) else None
    kind_settings = kind_run_settings(lm, pll_metric=pll_metric, protocol=protocol,
                                      add_eos=add_eos, context=context,
                                      prefix_every_window=prefix_every_window)
    if own is not None:
        prefix = kind_settings["prefix"]
    max_length, stride, prefix = resolve_protocol(
        lm, protocol, max_length, stride, prefix, prefix_every_window=prefix_every_window,
        add_eos=add_eos, context=context)
    check_prefix_every_window(lm, prefix, prefix_every_window)
    auto_batch = batch_size == "auto"
    if auto_batch:
        batch_size = auto_batch_size(lm, max_length)
    batch_size = as_count("batch_size", batch_size, minimum=1,
                          rule="'auto' or a positive integer")
    forward = lm.make_forward(top_k, max_length)  # each model kind brings its own
    settings = {  # prefix_token and n_windows are filled in once the text is tokenized
        "model": lm.name, "max_length": max_length, "stride": stride, "prefix": prefix,
        "prefix_token": None, "add_eos": add_eos, "top_k": forward.top_k,
        "device": str(lm.device), **precision_settings(lm),
        "words": str(words) if words is not None else DEFAULT_WORD_PATTERN, "n_windows": 0,
        "prefix_every_window": prefix_every_window, "context_tokens": 0,
        "protocol": protocol, **kind_settings,
    }
    if getattr(lm, "windowless", False):  # a model kind that reads no window (n-gram)
        settings["windowless"] = True
    plan = get_protocol(protocol)
    if reuse is not None and not plan.every_token:
        raise ValueError(f"reuse= keeps the windows before an edit, and protocol={protocol!r} "
                         "lays its windows out from the text's end too: score it in full")
    depth = pipeline_depth(lm, forward)
    if depth > 1 and reuse is None and context is None and plan.every_token and own is None:
        # a GPU: it scores the first batches while the host tokenizes the rest of a long
        # text; the start holds one batch (its windows' targets, and the first's context)
        ahead = prepare_ahead(text, lm, batch_size * stride + max_length,
                              prefix=prefix, add_eos=add_eos, words=words)
        if ahead is not None:
            yield from ScoringRun(ahead, None, forward, lm, settings, batch_size, depth, cancel)
            return
    prep = prepare(text, lm, prefix=prefix, add_eos=add_eos, words=words, context=context,
                   two_sided=own is not None)
    if own is not None:
        windows = own.plan_windows(prep, max_length, stride, settings)
    else:
        windows = plan_protocol(protocol, len(prep.sequence), max_length, stride,
                                first_target=prep.first_target,
                                prefix_every_window=prefix_every_window, bos=prefix == "bos")
    check_prefixed_windows(lm, windows, protocol)
    start_text = getattr(forward, "start_text", None)
    if start_text is not None:  # a kind that reads more than the windows: a seq2seq source
        start_text(prep)
    if own is not None and auto_batch and windows:
        # a kind's items as wide as the text's windows (a short text: more per call)
        batch_size = auto_batch_size(lm, windows[0].n_inputs)
    prep = keep_scored(prep, windows)  # a protocol's unscored positions join the unscored
    # model calls of distinct inputs (a masked model's copies of one window count once)
    n_windows = len({(w.input_start, w.input_end) for w in windows})
    settings.update(prefix_token=prep.prefix_token, n_windows=n_windows,
                    **prep.context_settings())
    kept = None
    if reuse is not None and own is not None:
        settings["reused_tokens"] = 0  # a masked model's text is scored in full
    elif reuse is not None and context is None and not prefix_every_window:
        from .incremental import plan_reuse

        kept = plan_reuse(reuse, prep, windows, settings)
        settings["reused_tokens"] = kept.tokens if kept is not None else 0
    yield from ScoringRun(prep, windows, forward, lm, settings, batch_size, depth, cancel, kept)


def score(text: str, lm: Any = None, *, max_length: int | None = None, stride: int | None = None,
          prefix: str | None = "bos", add_eos: bool = False, top_k: int = 5,
          batch_size: int | str = "auto", words: WordSpec = None,
          reuse: ScoreResult | None = None, context: Context = None,
          prefix_every_window: bool = False, protocol: str = "exact",
          pll_metric: str | None = None) -> ScoreResult:
    """Score every token of ``text`` exactly once with strided sliding windows.

    ``lm``: anything ``load_model`` takes (default: the embedded SmolLM2).
    ``max_length``: window length (default: the model's context length, capped
    at 1024 on CPU); ``stride``: new targets per window after the first
    (default ``max_length // 2``); each target sees at least
    ``max_length - stride + 1`` positions of context when the text has them.
    ``prefix="bos"`` scores the first token after the BOS (else EOS) token;
    ``prefix=None`` leaves it unscored.  ``add_eos`` also scores an EOS token.
    An empty ``text`` is a ``ValueError`` (nothing to score), except with ``add_eos=True``,
    which scores the end-of-text token alone.
    ``reuse``: the result of an earlier version of the text (see ``stream``).

    ``context``: a string or a chat (a list of ``{"role", "content"}`` messages) the model
    reads before ``text``; only ``text``'s tokens are scored and counted, and a context
    longer than the window is read as far back as ``max_length`` allows.  A string's
    trailing whitespace moves to the start of ``text`` (``result.text``); a chat is
    rendered with the tokenizer's chat template and ``text`` is the assistant's reply
    (``add_eos`` then scores the template's end-of-turn token).  See docs/context.md.
    ``prefix_every_window``: every window reads the prefix token first, then up to
    ``max_length - 1`` tokens (llama.cpp's layout); each token is still scored once.

    ``protocol``: ``"exact"`` (the above), or another tool's layout, to reproduce its
    number (``core/protocols.py``, docs/protocols.md): ``"llama.cpp"`` (llama-perplexity:
    disjoint chunks of ``max_length``, the second half of each scored; the text after the
    last whole chunk dropped; BOS where the model adds one), ``"lm-eval"``
    (lm-evaluation-harness's rolling windows: ``stride = max_length``) or ``"hf-guide"``
    (the transformers guide's strided loop, no prefix token; ``result.protocol_report()``
    gives its miscounted number beside the right one).  The protocol fixes the prefix
    token; tokens it does not score stay in the result as unscored tokens, and the
    metrics count the scored ones only.

    A masked language model (BERT, RoBERTa, ...; docs/masked.md) is scored by
    pseudo-log-likelihood: every token, the first included, masked in turn and read from
    both sides, in two-sided windows of ``max_length`` positions (its special tokens
    included; ``stride``: targets per window) with the model's special tokens around
    each, which are never scored.  ``pll_metric``: ``"within_word_l2r"`` (the default:
    the later tokens of the token's word masked too; Kauf & Ivanova 2023) or
    ``"original"`` (the token masked alone; Salazar et al. 2020); only for masked models.
    ``result.settings["objective"]`` is ``"pll"`` and ``["pll_metric"]`` the metric.
    ``prefix`` does not apply; ``add_eos``, ``context``, ``prefix_every_window`` and
    another ``protocol`` are for causal models (a ValueError); ``reuse`` scores in full.
    """
    progress = stream(text, lm, max_length=max_length, stride=stride, prefix=prefix,
                      add_eos=add_eos, top_k=top_k, batch_size=batch_size, words=words,
                      reuse=reuse, context=context, prefix_every_window=prefix_every_window,
                      protocol=protocol, pll_metric=pll_metric)
    last = deque(progress, maxlen=1)  # stream always yields; the last item is complete
    return last[0].result
