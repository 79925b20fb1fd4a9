"""Score one text with several models and compare them fairly.

Perplexities of models with different tokenizers are comparable per word,
character or byte (the total NLL is the model's, the denominator the text's),
never per token.  ``compare`` scores the text with each model in turn (one model
in memory at a time unless ``keep_models=True``) and returns a ``Comparison``
(``core/comparison.py``, re-exported here): the results, the table (per-token
perplexity marked as not comparable) and the word-level frame.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# the comparison's data lives in the core; re-exported here, where it always was
from ...core.comparison import (  # noqa: F401
    NOT_COMPARABLE,
    NOT_COMPARABLE_NOTE,
    TABLE_COLUMNS,
    UNIT_COUNT_COLUMNS,
    Comparison,
    ComparisonError,
)
from ...core.result import ScoreResult
from ..kinds.models import LoadedModel, load_model
from ..runner.context import check_context, move_whitespace
from ..runner.progress import is_cancelled
from ..runner.scorer import ScoreProgress, ScoringError, stream


def _is_spec(model: Any) -> bool:
    """A spec that ``compare`` loads (and so may free): None, a name or a path."""
    return model is None or isinstance(model, str | os.PathLike)


def default_labels(models: Sequence[Any]) -> list[str]:
    """A readable, unique label per model."""
    out: list[str] = []
    for m in models:
        if m is None:
            name = "default"
        elif isinstance(m, str | os.PathLike):
            name = os.path.basename(os.fspath(m).rstrip("/\\")) or os.fspath(m)
        else:
            name = getattr(m, "name", None) or type(m).__name__
        base, k = str(name), 2
        while name in out:
            name, k = f"{base} #{k}", k + 1
        out.append(str(name))
    return out


def check_labels(models: Sequence[Any], labels: Sequence[str] | None) -> list[str]:
    if labels is None:
        return default_labels(models)
    labels = list(labels)
    if len(labels) != len(models):
        raise ValueError(f"labels must give one label per model: {len(labels)} labels for "
                         f"{len(models)} models")
    if any(not isinstance(x, str) or not x for x in labels):
        raise TypeError("labels must be non-empty strings")
    if len(set(labels)) != len(labels):
        raise ValueError(f"labels must be unique, got {labels}")
    return labels


def check_models(models: Any) -> list[Any]:
    if isinstance(models, str | os.PathLike | LoadedModel) or not isinstance(models, Sequence):
        raise TypeError("models must be a list of models (anything load_model takes), "
                        f"got {type(models).__name__}")
    models = list(models)
    if len(models) < 2:
        raise ValueError(f"compare needs at least 2 models, got {len(models)}")
    return models


def vocab_size_of(lm: Any) -> int | None:
    tok = getattr(lm, "tokenizer", None)
    if tok is not None:
        try:
            return len(tok)
        except TypeError:
            pass
    size = getattr(lm, "vocab_size", None)
    return int(size) if isinstance(size, int | np.integer) else None


def _release_all(devices: list[Any]) -> None:
    """Give back the memory of the models compare loaded itself (references dropped)."""
    if not devices:
        return
    cuda = any(getattr(d, "type", None) == "cuda" for d in devices)
    devices.clear()
    gc.collect()
    if cuda:
        import torch

        torch.cuda.empty_cache()


@dataclass
class ModelEvent:
    """One step of ``iter_compare``: model ``k`` was loaded, scored a batch, or ended.

    A ``done`` event carries the ``result`` only (a progress item holds the model)."""

    k: int
    kind: str  # "loaded" | "progress" | "done"
    progress: ScoreProgress | None = None
    result: ScoreResult | None = None
    lm: Any = None
    vocab_size: int | None = None


def iter_compare(text: str, models: Sequence[Any], *, keep_models: bool = False,
                 cancel: Any = None, device: str | Any = "auto", dtype: str | Any = "auto",
                 kept: list | None = None, **score_options: Any) -> Iterator[ModelEvent]:
    """Score ``text`` with each model in turn, yielding a ``ModelEvent`` per step.

    Models given as names or paths are loaded here and freed after scoring (del,
    garbage collection, and the CUDA cache emptied) unless ``keep_models`` (then
    appended to ``kept``); models given loaded are used as they are.  ``cancel``
    (an Event or a callable) stops the running model within one batch and skips
    the rest.
    """
    from ..kinds.models import as_loaded

    freed: list[Any] = []  # devices of models to release once the consumer moved on
    for k, spec in enumerate(models):
        # released here, not right after scoring: until it asks for the next event the
        # consumer still holds the last progress item, and through it the model
        _release_all(freed)
        if is_cancelled(cancel):
            return
        owned = _is_spec(spec) and spec is not None
        if spec is None:
            lm = as_loaded(None)  # the default model, cached by the scorer anyway
        elif owned:
            lm = load_model(spec, device=device, dtype=dtype)
        elif isinstance(spec, tuple | list):
            lm = load_model(tuple(spec), device=device, dtype=dtype)
        else:
            lm = spec  # LoadedModel, or another model kind score() accepts (n-gram)
        vocab = vocab_size_of(lm)
        yield ModelEvent(k, "loaded", lm=lm, vocab_size=vocab)
        last = None
        for item in stream(text, lm, cancel=cancel, **score_options):
            last = item
            yield ModelEvent(k, "progress", progress=item)
        result = last.result
        del last, item  # progress items hold the model (through the scorer's closure)
        if keep_models and kept is not None:
            kept.append(lm)
        if owned and not keep_models:
            freed.append(getattr(lm, "device", None))
        del lm
        yield ModelEvent(k, "done", result=result, vocab_size=vocab)
        if result.partial:  # cancelled: the remaining models are skipped
            break
    _release_all(freed)


def check_unit_counts(results: list[ScoreResult], labels: list[str]) -> None:
    """The unit counts are properties of the text: equal for every model, or explain."""
    if not results:
        return
    first = results[0].metrics()
    for label, res in zip(labels[1:], results[1:], strict=False):
        m = res.metrics()
        bad = [k for k in UNIT_COUNT_COLUMNS if m[k] != first[k]]
        if bad:
            k = bad[0]
            raise ComparisonError(
                f"unit counts must be the same for every model (they are properties of the "
                f"text), but {k} is {first[k]} for {labels[0]!r} and {m[k]} for {label!r}. "
                "With prefix=None each model leaves its own first token unscored, and those "
                "differ between tokenizers: use prefix='bos' (the default); with add_eos=True "
                "every model needs an EOS token.")


def compare(text: str, models: Sequence[Any], *, labels: Sequence[str] | None = None,
            keep_models: bool = False, device: str | Any = "auto", dtype: str | Any = "auto",
            on_progress: Callable[[ModelEvent], None] | None = None,
            **score_options: Any) -> Comparison:
    """Score ``text`` with every model in ``models`` and return a ``Comparison``.

    ``models``: anything ``load_model`` takes (names, paths, ``.gguf`` files,
    ``(model, tokenizer)`` pairs, loaded models), or another model kind ``score``
    accepts (an n-gram model).  Models given by name or path are loaded one at a
    time and freed after scoring, unless ``keep_models=True`` (then
    ``comparison.loaded`` holds them).  ``labels``: one unique name per model
    (default: from the names).  ``score_options`` go to ``score`` for every model
    (``max_length``, ``stride``, ``prefix``, ``add_eos``, ``top_k``, ``words``,
    ``context``: a string or a chat every model reads first, never scored).

    If a model fails, ``ComparisonError.comparison`` keeps the models scored before.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    models = check_models(models)
    labels = check_labels(models, labels)
    # every model scores the same continuation: the seam's whitespace move is the
    # tokenizer's business nowhere (words are compared on the text as scored)
    read, scored_text = move_whitespace(check_context(score_options.get("context")), text)
    results: list[ScoreResult] = []
    names: list[str] = []
    vocabs: list[int | None] = []
    kept: list[Any] = []

    def so_far() -> Comparison:
        n = len(results)
        return Comparison(scored_text, list(results), labels[:n], names[:n], vocabs[:n],
                          score_options.get("words"), kept, context=read)

    try:
        for event in iter_compare(text, models, keep_models=keep_models, device=device,
                                  dtype=dtype, kept=kept, **score_options):
            if on_progress is not None:
                on_progress(event)
            if event.kind == "done":
                res = event.result
                results.append(res)
                names.append(str(res.settings.get("model", labels[event.k])))
                vocabs.append(event.vocab_size)
                check_unit_counts(results, labels)
    except ComparisonError as exc:
        exc.comparison = so_far()
        raise
    except ScoringError as exc:
        k = len(results)
        raise ComparisonError(f"scoring with model {labels[k]!r} failed: {exc}",
                              so_far()) from exc
    except (OSError, RuntimeError, ValueError, TypeError) as exc:
        k = len(results)
        raise ComparisonError(f"model {labels[k]!r} could not be scored: "
                              f"{type(exc).__name__}: {exc}", so_far()) from exc
    return so_far()
