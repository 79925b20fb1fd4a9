"""From ``explain()``'s arguments to an ``ExplainPlan``: the text tokenized and laid out
as ``score()`` lays it out, its windows planned by the same rule, the target found and
its context's units (the rules: ``core/explain/target.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.explain.target import (
    ExplainError,
    ExplainPlan,
    plan_groups,
    plan_units,
    scored_positions,
    target_positions,
)
from ...core.protocols import plan_protocol
from ...core.text_units import DEFAULT_WORD_PATTERN, word_spans
from ...core.validation import check_text
from ..kinds.models import as_loaded
from ..runner.context import check_context
from ..runner.prepare import keep_scored, prepare
from ..runner.scorer import check_prefix_every_window, check_prefixed_windows, resolve_protocol
from .explain_context import context_units
from .explain_masked import masked_setup, plans_own_windows

#: ``score()``'s settings an explanation honours (``top_k`` and ``batch_size`` change no
#: surprisal and are accepted so a result's settings can be passed back)
SCORE_SETTINGS = ("max_length", "stride", "prefix", "add_eos", "words",
                  "prefix_every_window", "protocol", "context", "top_k", "batch_size")


@dataclass
class ExplainSetup:
    """The loaded model, the plan and the settings an explanation reports."""

    lm: Any
    plan: ExplainPlan
    settings: dict[str, Any]
    max_length: int
    #: a masked model's target copies (``explain_masked.py``); None for a causal model
    masked: Any = None


def check_settings(score_settings: dict[str, Any]) -> None:
    """Only ``score()``'s settings."""
    unknown = sorted(set(score_settings) - set(SCORE_SETTINGS))
    if unknown:
        raise TypeError(f"unexpected setting(s) {', '.join(map(repr, unknown))}: an "
                        f"explanation takes score()'s settings {', '.join(SCORE_SETTINGS)}")


def setup(text: str, lm: Any, *, token: Any, word: Any, unit: Any,
          score_settings: dict[str, Any]) -> ExplainSetup:
    """Check everything, tokenize once and plan the target's groups and units."""
    if plans_own_windows(lm := as_loaded(lm)):  # a masked LM: its two-sided copies
        plan, settings, max_length, masked = masked_setup(
            text, lm, token=token, word=word, unit=unit, score_settings=score_settings)
        return ExplainSetup(lm, plan, settings, max_length, masked)
    check_settings(score_settings)
    max_length = score_settings.get("max_length")
    stride = score_settings.get("stride")
    prefix = score_settings.get("prefix", "bos")
    add_eos = bool(score_settings.get("add_eos", False))
    words = score_settings.get("words")
    every = score_settings.get("prefix_every_window", False)
    protocol = score_settings.get("protocol", "exact")
    context = check_context(score_settings.get("context"))
    check_text(text, add_eos)
    lm = as_loaded(lm)
    if context is not None and getattr(lm, "prepare_text", None) is not None:
        # an encoder-decoder reads its context as the encoder's source: deleting a unit
        # there is another model input than the decoder's windows, not supported yet
        raise ExplainError(f"explain() of an encoder-decoder ({lm.name}) explains the "
                           "target from the decoder's side only: its context= is the "
                           "encoder's source, whose units cannot be deleted yet; explain the "
                           "target scored without a source")
    max_length, stride, prefix = resolve_protocol(lm, protocol, max_length, stride, prefix,
                                                  prefix_every_window=every, add_eos=add_eos,
                                                  context=context)
    check_prefix_every_window(lm, prefix, every)
    prep = prepare(text, lm, prefix=prefix, add_eos=add_eos, words=words, context=context)
    text = prep.text  # with a string context: the continuation as scored (the seam)
    windows = plan_protocol(protocol, len(prep.sequence), max_length, stride,
                            first_target=prep.first_target, prefix_every_window=every,
                            bos=prefix == "bos")
    check_prefixed_windows(lm, windows, protocol)
    prep = keep_scored(prep, windows)
    scored = scored_positions(windows)
    n_head = 1 if prep.prefix_token is not None else 0
    spans = word_spans(text, words)
    positions, target = target_positions(text, scored, prep.target_offsets,
                                         prep.target_is_eos, spans, token=token, word=word)
    groups = plan_groups(positions, windows, n_head)
    first = prep.first_target if prep.pair is not None else n_head  # the text's first
    offsets = _position_offsets(prep, first)
    units, kind = plan_units(text, groups, offsets, unit, spans, first=first)
    units = context_units(prep, groups, kind, words) + units
    plan = ExplainPlan(text=text, sequence=np.asarray(prep.sequence, np.int64),
                       groups=groups, units=units, unit_kind=kind, target=target,
                       context=prep.context)
    settings = {"model": lm.name, "max_length": max_length, "stride": stride,
                "prefix": prefix, "add_eos": add_eos,
                "words": str(words) if words is not None else DEFAULT_WORD_PATTERN,
                "prefix_every_window": every, "protocol": protocol, "unit": kind,
                **prep.context_settings()}
    return ExplainSetup(lm, plan, settings, max_length)


def _position_offsets(prep: Any, first: int) -> np.ndarray:
    """The character span in the text of every input position from ``first``, the text's
    first (-1 elsewhere: the prefix token, a context, the EOS)."""
    spans = np.concatenate([prep.unscored_offsets.reshape(-1, 2),
                            prep.target_offsets[~prep.target_is_eos].reshape(-1, 2)])
    spans = spans[np.lexsort((spans[:, 1], spans[:, 0]))]
    out = np.full((len(prep.sequence), 2), -1, np.int64)
    out[first:first + len(spans)] = spans
    return out
