"""Why is this token surprising?  ``explain()`` attributes a target's surprisal to the
units of its context (occlusion, exact; or gradient x input, an approximation),
``iter_explain()`` streams it nearest unit first, ``context_curve()`` gives the
target's surprisal against how much of its context the model reads.

The definitions are in docs/explain.md; the target, context and units are planned by
``explain_setup.py`` (rules: ``core/explain/target.py``), the numbers computed by
``occlusion.py`` (``occlusion_cache.py`` for a transformers model), ``gradient.py`` and
``context_curve.py``.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from typing import Any

import numpy as np

from ...core.explain.explanation import METHODS, ExplainProgress, Explanation
from ...core.explain.target import ExplainError
from ..runner.progress import CancelFlag, is_cancelled
from .context_curve import curve_points
from .explain_masked import MaskedOcclusion, check_causal_only
from .explain_setup import ExplainSetup, setup
from .gradient import check_gradient, gradient_x_input
from .occlusion import ForwardOcclusion, OcclusionMethod, occlusion_steps

__all__ = ["context_curve", "explain", "iter_explain"]


def iter_explain(text: str, lm: Any = None, *, token: int | None = None,
                 word: int | None = None, unit: Any = "word", method: str = "occlusion",
                 cancel: CancelFlag = None, fast: bool = True,
                 **score_settings: Any) -> Iterator[ExplainProgress]:
    """Explain a target step by step: an ``ExplainProgress`` once the target's surprisal
    is known (no unit yet), then one per batch of units, nearest the target first; the
    last has ``finished`` (or ``cancelled``) set.  Each carries the explanation so far
    (units not computed yet: NaN).  ``cancel`` (an Event or a callable) is checked before
    every batch; closing the generator stops it too.  An error after the first step is
    an ``ExplainError`` whose ``explanation`` keeps what was computed.

    ``fast``: a transformers model reuses the key/value cache of the context before each
    deletion (``occlusion_cache.py``); False rescores every edited context in full (the
    same numbers, slower).  Arguments as for ``explain``.
    """
    if method not in METHODS:
        raise ExplainError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    run = setup(text, lm, token=token, word=word, unit=unit, score_settings=score_settings)
    if method == "gradient":
        check_gradient(run.lm)
    t0 = time.perf_counter()
    n = len(run.plan.units)
    if method == "gradient":
        base, deltas = gradient_x_input(run.lm, run.plan)
        done = _explanation(run, method, base, deltas, time.perf_counter() - t0)
        yield ExplainProgress(done, np.arange(n), n, n, done.elapsed_s, finished=True)
        return
    occlusion = _occlusion(run, fast)
    base = occlusion.base()
    deltas = np.full(n, np.nan)
    explanation = _explanation(run, method, base, deltas, time.perf_counter() - t0)
    yield ExplainProgress(explanation, np.zeros(0, np.int64), 0, n, explanation.elapsed_s,
                          finished=n == 0)
    done = 0
    steps = occlusion_steps(occlusion, run.plan, base)
    while done < n:
        if is_cancelled(cancel):
            explanation = _explanation(run, method, base, deltas, time.perf_counter() - t0,
                                       cancelled=True)
            yield ExplainProgress(explanation, np.zeros(0, np.int64), done, n,
                                  explanation.elapsed_s, cancelled=True)
            return
        try:
            units, values = next(steps)
        except StopIteration:
            break
        except Exception as exc:
            partial = _explanation(run, method, base, deltas, time.perf_counter() - t0)
            raise ExplainError(f"occlusion failed after {done} of {n} units: "
                               f"{type(exc).__name__}: {exc}", partial) from exc
        deltas[units] = values
        done += len(units)
        explanation = _explanation(run, method, base, deltas, time.perf_counter() - t0)
        yield ExplainProgress(explanation, units, done, n, explanation.elapsed_s,
                              finished=done == n)


def explain(text: str, lm: Any = None, *, token: int | None = None, word: int | None = None,
            unit: Any = "word", method: str = "occlusion",
            **score_settings: Any) -> Explanation:
    """Attribute the surprisal of one target of ``score(text, lm, **score_settings)`` to
    the units of its context.

    ``token=i``: the result's scored token ``i`` (negative counts from the end);
    ``word=j``: the text's word ``j`` (the scorer's words; its surprisal is the sum of its
    tokens').  ``unit``: ``"word"``, ``"token"`` or a list of ``(start, end)`` character
    spans.  ``method``: ``"occlusion"`` (exact: the target's surprisal with the unit's
    tokens deleted, minus its surprisal with the whole context) or ``"gradient"``
    (gradient x input on the input embeddings: one forward and backward pass, an
    approximation; transformers and GGUF models).  The context is what the scorer's
    window gives the target; the prefix token is never a unit.  ``context=`` (a string or
    a chat, as for ``score``) is read before the text and its tokens are units too: a
    string's words or tokens, a chat's messages (``Explanation.parts`` says which).  See
    docs/explain.md.
    """
    last = deque(iter_explain(text, lm, token=token, word=word, unit=unit, method=method,
                              **score_settings), maxlen=1)
    return last[0].explanation


def context_curve(text: str, lm: Any = None, *, token: int | None = None,
                  word: int | None = None, lengths: Any = None,
                  **score_settings: Any) -> Any:
    """The target's surprisal given only the last ``k`` tokens of its context, for ``k``
    in ``lengths`` (default 0, 1, 2, 4, ... and the full context; 0: the target after
    the prefix token alone).  A pandas DataFrame with columns ``context_tokens`` and
    ``surprisal_nats``; ``frame.attrs`` holds the target, ``max_length`` and ``stride``.
    Targets and settings as for ``explain``."""
    import pandas as pd

    run = setup(text, lm, token=token, word=word, unit="token", score_settings=score_settings)
    check_causal_only(run.lm, "context_curve()")
    ks, nats = curve_points(run.lm, run.plan, run.max_length, lengths)
    frame = pd.DataFrame({"context_tokens": np.asarray(ks, np.int64), "surprisal_nats": nats})
    frame.attrs.update(target=run.plan.target, max_length=run.settings["max_length"],
                       stride=run.settings["stride"], model=run.settings["model"],
                       full_context=run.plan.context_positions)
    return frame


def _occlusion(run: ExplainSetup, fast: bool) -> OcclusionMethod:
    if run.masked is not None:  # a masked LM: its copies, scored by its own forward
        return MaskedOcclusion(run.lm, run.plan, run.masked)
    if fast:
        from .occlusion_cache import CachedOcclusion

        if CachedOcclusion.applies(run.lm):
            try:
                return CachedOcclusion(run.lm, run.plan)
            except NotImplementedError:  # a cache of sliding or other layers
                pass
    return ForwardOcclusion(run.lm, run.plan, run.max_length)


def _explanation(run: ExplainSetup, method: str, base: float, deltas: np.ndarray,
                 elapsed: float, cancelled: bool = False) -> Explanation:
    plan = run.plan
    return Explanation(
        text=plan.text, target=dict(plan.target), method=method,
        settings={**run.settings, "method": method}, target_surprisal_nats=float(base),
        units=[u.text for u in plan.units],
        starts=np.array([u.start for u in plan.units], np.int64),
        ends=np.array([u.end for u in plan.units], np.int64),
        tokens=np.array([len(u.positions) for u in plan.units], np.int64),
        delta_nats=deltas.copy(), cancelled=cancelled, elapsed_s=elapsed,
        context_tokens=plan.context_positions, parts=[u.part for u in plan.units],
        context=plan.context)
