"""``divergence``: two models that share a vocabulary (a quantized copy, a fine-tune, a
student) read the same windows of one text in one pass; per token, KL(base ‖ other) over
the full vocabulary and each model's statistics (``core/divergence.py``).

The run is ``score()``'s: the text prepared once (``prepare.py``), the one window plan
(``core/windows.py``), the run loop (``run.py``).  Its forward is a ``PairForward``: per
batch, each model's ``BatchedForward`` computes the target rows' logits a bounded slab at a
time, and from the two slabs of the same rows come both models' statistics and the KL.
No logits outlive their slab.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import numpy as np

from ...core.divergence import DivergenceResult, VocabularyMismatchError
from ...core.protocols import plan_protocol
from ...core.result import TOKEN_ARRAYS, ScoreResult
from ...core.text_units import DEFAULT_WORD_PATTERN, WordSpec
from ...core.validation import as_count
from ...core.windows import Window
from ..kinds.model_kind import ScoringModel
from ..kinds.models import LoadedModel, as_loaded
from ..runner.context import Context, check_context
from ..runner.forward import joined_arrays, shifted_softmax
from ..runner.prepare import keep_scored, prepare
from ..runner.progress import CancelFlag, ScoringError
from ..runner.run import ScoringRun
from ..runner.scorer import auto_batch_size, resolve_protocol
from ..runner.vocab import decode_each, ids_in

#: the other model's per-token arrays (the tokens' own fields are the base's)
OTHER_ARRAYS = ("surprisal", "entropy", "rank", "topk_ids", "topk_probs", "bow_prob")
#: exp of at most this stays finite in fp32 (e^88 overflows) with room to spare
EXP_SAFE = 80.0


def check_same_vocabulary(base: LoadedModel, other: LoadedModel) -> None:
    """Both models predict over one vocabulary: the same output size and the same token
    string for every id (and the same special tokens); else a ``VocabularyMismatchError``
    that says to use ``compare()``."""
    hint = ("divergence() compares two models' distributions token by token, so both must "
            "share one vocabulary; to compare models with different tokenizers use "
            "compare(text, [base, other]), which compares perplexity per word, character "
            "or byte")
    if base.vocab_size != other.vocab_size:
        raise VocabularyMismatchError(f"the vocabularies differ in size: {base.name} predicts "
                                      f"{base.vocab_size} tokens, {other.name} "
                                      f"{other.vocab_size}. {hint}")
    tb, to = base.tokenizer, other.tokenizer
    if tb is to:
        return
    vb, vo = tb.get_vocab(), to.get_vocab()
    if vb != vo:
        ids_b = {i: t for t, i in vb.items()}
        ids_o = {i: t for t, i in vo.items()}
        bad = sorted(i for i in set(ids_b) | set(ids_o) if ids_b.get(i) != ids_o.get(i))
        i = bad[0]
        raise VocabularyMismatchError(
            f"the vocabularies differ at {len(bad)} token id(s), first {i}: {ids_b.get(i)!r} "
            f"in {base.name}, {ids_o.get(i)!r} in {other.name}. {hint}")
    for name in ("bos_token_id", "eos_token_id"):
        if getattr(tb, name, None) != getattr(to, name, None):
            raise VocabularyMismatchError(
                f"the tokenizers' {name} differ ({getattr(tb, name, None)} in {base.name}, "
                f"{getattr(to, name, None)} in {other.name}). {hint}")


class PairForward:
    """The forward of a divergence run, for ``ScoringRun``: the base model's statistics
    are what it returns per batch (the run makes them the base ``ScoreResult``); the
    other model's, the KL and the top-token agreement of the same rows are kept in
    ``extras`` (first target position -> arrays), taken by ``divergence`` at the end."""

    supports_async = False  # both models' slabs are turned into arrays in one call
    pipeline_depth: int | None = None

    def __init__(self, base: LoadedModel, other: LoadedModel, top_k: int, max_length: int):
        self.base = base.make_forward(top_k, max_length)
        self.other = other.make_forward(top_k, max_length)
        self.top_k = self.base.top_k
        self.other_device = other.device
        if self.other.bow_mask is not None:  # the other's slabs are read on the base's device
            self.other.bow_mask = self.other.bow_mask.to(base.device)
        self.extras: dict[int, dict[str, np.ndarray]] = {}

    def submit(self, sequence: Any, batch: list[Window]) -> Any:
        from ..kinds.model_kind import PendingStats

        arrays = self.score_batch(sequence, batch)
        return PendingStats(lambda: arrays)

    def score_batch(self, sequence: Any, batch: list[Window]) -> dict[str, np.ndarray]:
        import torch

        if len(batch) > 1 and self.base.end_row_wanted(sequence, batch[-1]):
            # b after the last token from the last window's own forward, as score() has it
            return joined_arrays(self.score_batch(sequence, batch[:-1]),
                                 self.score_batch(sequence, batch[-1:]))
        inputs, targets, n_targets, end_row = self.base.batch_layout(sequence, batch)
        base_slabs = self.base.target_logits(inputs, n_targets)
        other_slabs = self.other.target_logits(inputs.to(self.other_device), n_targets)
        parts: dict[str, list] = {}
        row = 0
        # the two models' slabs hold the same rows (one vocabulary, one slab size)
        for lb, lo in zip(base_slabs, other_slabs, strict=True):
            lo = lo.to(lb.device)
            n = lb.shape[0]
            if end_row and row + n > len(targets):  # the extra last row: only b, the base's
                parts["bow_end"] = [torch.softmax(lb[-1:], dim=-1) @ self.base.bow_mask]
                lb, lo, n = lb[:-1], lo[:-1], n - 1
            if n:
                for key, value in self._slab(lb, lo, targets[row:row + n]).items():
                    parts.setdefault(key, []).append(value)
            row += n
            del lb, lo
        arrays = {k: (torch.cat(v) if len(v) > 1 else v[0]).cpu().numpy()
                  for k, v in parts.items()}
        if not self.top_k:
            for prefix in ("", "other:"):
                arrays[f"{prefix}topk_ids"] = np.zeros((len(targets), 0), np.int64)
                arrays[f"{prefix}topk_probs"] = np.zeros((len(targets), 0), np.float64)
        arrays["context_length"] = np.concatenate(
            [np.arange(w.target_start - w.input_start, w.target_end - w.input_start)
             for w in batch])
        self.extras[batch[0].target_start] = {
            k: arrays.pop(k) for k in list(arrays) if k.startswith("other:") or k in
            ("kl", "same_top")}
        return arrays

    def _slab(self, lb: Any, lo: Any, tgt: Any) -> dict[str, Any]:
        """Both models' statistics of one slab of rows, the KL and the top agreement."""

        pb, zb = shifted_softmax(lb)  # lb, lo shifted in place: each row's max is 0
        po, zo = shifted_softmax(lo)
        out = self.base.softmax_stats(lb, pb, zb, tgt)
        out.update({f"other:{k}": v for k, v in
                    self.other.softmax_stats(lo, po, zo, tgt).items()})
        del po
        out["kl"] = kl_divergence(lb, pb, zb, lo, zo)
        # the most probable token of each: the shifted logits' zeros (max is 0)
        out["same_top"] = lb.argmax(dim=-1) == lo.argmax(dim=-1)
        del pb
        return out

    def bow_after_last(self, sequence: Any, max_length: int, prefixed: bool = False) -> float:
        return self.base.bow_after_last(sequence, max_length, prefixed)


def kl_divergence(lp: Any, p: Any, log_zp: Any, lq: Any, log_zq: Any) -> Any:
    """KL(p ‖ q) per row from shifted logits (``shifted_softmax``): log p = lp - log Zp,
    log q = lq - log Zq.  With d = lp - lq and m = E_p[d], KL = m - log Zp + log Zq
    = m + log E_p[exp(-d)] = log1p(E_p[expm1(m - d)]): the last form has no two large
    terms to cancel, so a KL of 1e-6 nats keeps its digits in fp32.  A row where some
    m - d is too large for exp (p there below e^-80) takes the first form, exact enough
    there.  Clamped at 0 (rounding)."""
    import torch

    d = lp - lq
    m = torch.einsum("rv,rv->r", p, d)
    direct = m - log_zp + log_zq
    d.sub_(m[:, None]).neg_()  # d is now m - d
    overflow = d.amax(dim=-1) > EXP_SAFE
    stable = torch.log1p(torch.einsum("rv,rv->r", p, d.expm1_()))
    return torch.where(overflow, direct, stable).clamp_(min=0)


def divergence(text: str, base: Any, other: Any, *, max_length: int | None = None,
               stride: int | None = None, prefix: str | None = "bos",
               prefix_every_window: bool = False, add_eos: bool = False, top_k: int = 5,
               batch_size: int | str = "auto", words: WordSpec = None,
               context: Context = None, labels: tuple[str, str] | None = None,
               cancel: CancelFlag = None, device: str | Any = "auto",
               dtype: str | Any = "auto", protocol: str = "exact") -> DivergenceResult:
    """Per token of ``text``: KL(base ‖ other) in nats over the full vocabulary, Δp of the
    actual token (p_other - p_base), whether the top tokens agree, and each model's
    surprisal, entropy, rank and top-k, from one pass over the same windows.

    ``base``/``other``: anything ``load_model`` takes (a name, a path, a ``.gguf`` file, a
    loaded model); both must share one vocabulary (else a ``VocabularyMismatchError``:
    use ``compare()``).  Window options are ``score()``'s (``max_length``, ``stride``,
    ``prefix_every_window``, ``prefix``, ``add_eos``, ``context``, ``protocol``);
    ``max_length`` must fit both models.  ``protocol="llama.cpp"`` reads llama-perplexity's
    chunks of ``max_length`` tokens (its ``-c``) and scores their second halves, as
    ``--kl-divergence`` does: ``summary()`` then is the statistics llama.cpp prints.
    ``labels``: the two names shown (default: the models' names).
    ``device``/``dtype``: for models given by name or path.  ``summary()`` of the result
    gives llama.cpp's ``--kl-divergence`` statistics.  A failure raises ``ScoringError``
    whose ``partial_result`` is the partial ``DivergenceResult``.
    """
    base_lm = _loaded(base, device, dtype)
    other_lm = _loaded(other, device, dtype)
    check_same_vocabulary(base_lm, other_lm)
    labels = _labels(base_lm, other_lm, labels)
    top_k = as_count("top_k", top_k, minimum=0, rule="a non-negative integer")
    context = check_context(context)
    max_length, stride, prefix = resolve_protocol(
        base_lm, protocol, max_length, stride, prefix, prefix_every_window=prefix_every_window,
        add_eos=add_eos, context=context)
    if other_lm.context_length is not None and max_length > other_lm.context_length:
        raise ValueError(f"max_length must not exceed either model's context length "
                         f"({other_lm.name}: {other_lm.context_length}), got {max_length}")
    if prefix_every_window and prefix is None:
        raise ValueError("prefix_every_window=True reads the prefix token in every window: "
                         "it needs prefix='bos'")
    if batch_size == "auto":  # two models' activations, one after the other
        batch_size = auto_batch_size(base_lm, max_length)
    batch_size = as_count("batch_size", batch_size, minimum=1,
                          rule="'auto' or a positive integer")
    prep = prepare(text, base_lm, prefix=prefix, add_eos=add_eos, words=words, context=context)
    windows = plan_protocol(protocol, len(prep.sequence), max_length, stride,
                            first_target=prep.first_target,
                            prefix_every_window=prefix_every_window, bos=prefix == "bos")
    prep = keep_scored(prep, windows)  # a protocol's unscored positions join the unscored
    forward = PairForward(base_lm, other_lm, top_k, max_length)
    settings = {"model": base_lm.name, "max_length": max_length, "stride": stride,
                "prefix": prefix, "prefix_token": prep.prefix_token, "add_eos": add_eos,
                "top_k": forward.top_k, "device": str(base_lm.device),
                "dtype": str(base_lm.dtype).replace("torch.", ""),
                "words": str(words) if words is not None else DEFAULT_WORD_PATTERN,
                "n_windows": len(windows), "prefix_every_window": prefix_every_window,
                "protocol": protocol, **prep.context_settings()}
    run = ScoringRun(prep, windows, forward, base_lm, settings, batch_size, 1, cancel)
    div_settings = {**settings, "models": [base_lm.name, other_lm.name]}
    try:
        last = deque(run, maxlen=1)[0]
    except ScoringError as exc:
        partial = exc.partial_result
        raise ScoringError(str(exc), _assemble(partial, forward, other_lm, labels,
                                               div_settings)) from exc
    return _assemble(last.result, forward, other_lm, labels, div_settings)


def _loaded(model: Any, device: Any, dtype: Any) -> LoadedModel:
    if model is None or not isinstance(model, ScoringModel):
        from ..kinds.models import load_model

        model = as_loaded(None) if model is None else load_model(model, device=device,
                                                                 dtype=dtype)
    if isinstance(model, LoadedModel):
        return model
    # an NGramModel, a vLLM server, a masked or an encoder-decoder model: no next-token
    # distribution over one vocabulary given the left context
    objective = getattr(model, "objective", None)
    why = {"pll": "a masked model predicts each token from both sides (pseudo-likelihood), "
                  "not the next token from the left",
           "seq2seq": "an encoder-decoder model's decoder reads a source the other model "
                      "does not"}.get(objective, "an n-gram model has its own vocabulary; a "
                                                 "vLLM server returns at most its "
                                                 "--max-logprobs top tokens")
    raise TypeError(
        f"divergence() compares two causal models' next-token distributions over one "
        f"vocabulary (a model and its quantized copy, a fine-tune); {model.name} "
        f"({type(model).__name__}) gives none ({why}). Load a causal transformer, "
        "load_model(path), or compare perplexity per word, character or byte with "
        "compare(text, [base, other])")


def _labels(base: LoadedModel, other: LoadedModel, labels: Any) -> tuple[str, str]:
    if labels is None:
        from .compare import default_labels

        return tuple(default_labels([base, other]))  # type: ignore[return-value]
    labels = tuple(labels)
    if len(labels) != 2 or any(not isinstance(x, str) or not x for x in labels):
        raise ValueError(f"labels must be two non-empty strings, got {labels!r}")
    if labels[0] == labels[1]:
        raise ValueError(f"labels must differ, got {labels!r}")
    return labels  # type: ignore[return-value]


def _assemble(base: ScoreResult, forward: PairForward, other_lm: LoadedModel,
              labels: tuple[str, str], settings: dict) -> DivergenceResult:
    """The ``DivergenceResult`` of the batches scored: the base's result as the run built
    it, the other's from the same tokens and its own statistics."""
    n = len(base)
    extras = [forward.extras[k] for k in sorted(forward.extras)]
    joined = {k: np.concatenate([e[k] for e in extras]) if extras else None
              for k in (extras[0] if extras else ())}
    joined = {k: v[:n] for k, v in joined.items()}  # a batch scored but not handed out
    other_arrays = {k: getattr(base, k) for k in TOKEN_ARRAYS}  # the tokens' own fields
    other_arrays.update({k: joined[f"other:{k}"] for k in OTHER_ARRAYS
                         if f"other:{k}" in joined})
    if "other:bow_prob" not in joined:  # a model without word starts
        other_arrays["bow_prob"] = np.full(n, math.nan)
    vocab = dict(base.vocab)
    missing = [t for t in ids_in([other_arrays]).tolist() if t not in vocab]
    vocab.update(decode_each(other_lm.tokenizer, missing))
    other_settings = {**base.settings, "model": other_lm.name,
                      "device": str(other_lm.device),
                      "dtype": str(other_lm.dtype).replace("torch.", "")}
    other = ScoreResult(text=base.text, **other_arrays, vocab=vocab,
                        unscored_token_ids=base.unscored_token_ids,
                        unscored_offsets=base.unscored_offsets, settings=other_settings,
                        partial=base.partial, total_tokens=base.total_tokens,
                        elapsed_s=base.elapsed_s, context=base.context,
                        tokenizer=other_lm.tokenizer)
    kl = joined.get("kl", np.zeros(0))
    same = joined.get("same_top", np.zeros(0, bool))
    return DivergenceResult(base=base, other=other, kl=kl, same_top=same, labels=labels,
                            settings=settings)
