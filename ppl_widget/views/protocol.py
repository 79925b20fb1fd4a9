"""The wire format between the kernel and the widget's front end: every message, the
chunk encoding, and the payloads of the synced traits ``result_data`` and ``settings``.

Mirrored field for field in ``js/src/protocol.js``; change both together.  Numbers
JSON cannot hold follow ``core/jsonable.py`` (NaN -> null, infinities -> "Infinity"
strings).  The comparison view's state is built by ``compare_data.py``.

Kernel -> front end (custom messages, ``widget.send(content, buffers)``):

``reset``  a scoring run starts; the front end drops what it had.
    {type, run_id, total_tokens, top_k, levels, level_notes}
    ``levels`` maps word/sentence to its number of units (null: level off, with
    the reason in ``level_notes``); buffers: the unit spans, ``UNIT_SPAN_FIELDS``.
``chunk``  a finished batch of scored tokens, in text order.
    {type, run_id, start, count, top_k, vocab, progress}
    ``start`` is the index of the chunk's first token among the run's scored
    tokens; ``vocab`` maps token ids first seen in this chunk (targets and
    top-k alternatives) to their decoded text; ``progress`` is
    {done, total, tokens_per_s, eta_s, elapsed_s} (built by ``progress()``).  Buffers follow
    ``CHUNK_FIELDS`` in order, each a little-endian typed array.
``done``   the run ended (finished, cancelled or failed).
    {type, run_id, partial, metrics}
    ``metrics`` is ``ScoreResult.metrics()`` of what was scored (``final_metrics``).
``loading``  the model is being prepared for the first time (status "loading"): the
    note to show and how far it is, 0.0 .. 1.0.  Later loads send none.
    {type, run_id, message, fraction}
``error``  scoring failed; what was scored so far stays.
    {type, run_id, message}
``settings_error``  a control's value was rejected (score()'s rule and message);
    nothing was re-scored.  ``field`` names the control (max_length, stride, prefix).
    {type, run_id, field, message}

Front end -> kernel:

``cancel`` stop the running scoring within one batch.
``replay`` a view attached mid-run: send everything scored so far again.
``explain`` explain one target of the result shown: {type, token} or {type, word} (the
    view's level decides: a token at the token level, its word otherwise), ``request``
    (the view's own number, echoed back) and optionally ``method``.
``explain_cancel`` stop the explanation computing; what is computed stays.
``explain_clear`` stop it and show none (the view closed it; the trait becomes null).

Explanations, kernel -> front end (the widget's ``explain`` thread, widget_explain.py):

``explain_start``  {type, explain_id, request, target, unit, method}: computing starts.
    ``target`` is ``explain_target()``; ``request`` the view's number (null when the
    notebook asked: ``w.explain(...)``).
``explain_part``  {type, explain_id, index, delta_nats, done, total, elapsed_s,
    requested_at, sent_at, target_surprisal_nats, units?}: the units computed since the
    last part (nearest the target first), ``index`` their positions in text order; the
    first part also holds
    ``units`` (``explain_units()``, every unit's text and UTF-16 span).  ``elapsed_s``:
    the kernel's seconds since the request (the view measures its own delay against it).
``explain_done``  {type, explain_id, status}: "done" or "cancelled"; the whole
    explanation, with its context curve, is then in the synced trait ``explanation``
    (``explanation_data()``), which the exported page shows too.
``explain_error`` {type, explain_id, request, message}: the rule it broke.

When a run ends, the same arrays (whole, in a dict of the same field names, less the
``OPTIONAL_FIELDS`` that hold only their absent value, plus ``count``, ``top_k``,
``vocab``, ``levels``, ``level_notes``, the unit spans, ``bow_prob_end`` and, when
the scorer gave b(i), ``word_corrected``: the BOW-corrected surprisal of each word,
float32 nats) are put in the synced trait ``result_data``, so later views, page
reloads and saved widget state show the complete result without the kernel.
``result_data()`` builds it, for the widget and for the exported page alike;
``result_settings()`` builds the ``settings`` trait ("Scored with").
"""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from ..core.jsonable import json_number, json_safe
from ..core.protocols import get_protocol
from ..core.text_units import TextUnits
from .widget_levels import LevelAssigner, context_gain, word_corrected

if TYPE_CHECKING:
    from ..core.result import ScoreResult
    from ..scoring.runner.scorer import ScoreProgress

log = logging.getLogger(__name__)

MSG_RESET: Final = "reset"
MSG_CHUNK: Final = "chunk"
MSG_DONE: Final = "done"
MSG_ERROR: Final = "error"
MSG_LOADING: Final = "loading"
MSG_SETTINGS_ERROR: Final = "settings_error"
MSG_CANCEL: Final = "cancel"
MSG_REPLAY: Final = "replay"
MSG_EXPLAIN: Final = "explain"
MSG_EXPLAIN_CANCEL: Final = "explain_cancel"
MSG_EXPLAIN_CLEAR: Final = "explain_clear"
MSG_EXPLAIN_START: Final = "explain_start"
MSG_EXPLAIN_PART: Final = "explain_part"
MSG_EXPLAIN_DONE: Final = "explain_done"
MSG_EXPLAIN_ERROR: Final = "explain_error"
EXPLAIN_METHODS: Final = ("occlusion", "gradient")

# (name, numpy dtype, values per token; 0 means top_k values per token)
# Offsets are UTF-16 code-unit indices into ``text`` so JavaScript can slice
# the string directly; the Python result keeps code-point offsets.
CHUNK_FIELDS: Final[tuple[tuple[str, str, int], ...]] = (
    ("token_ids", "<i4", 1),
    ("start16", "<i4", 1),
    ("end16", "<i4", 1),
    ("surprisal", "<f4", 1),  # nats
    ("entropy", "<f4", 1),  # nats
    ("rank", "<i4", 1),  # 1 = the model's top choice
    ("context_length", "<i4", 1),
    ("units", "<i4", 3),  # words, chars, bytes attributed to this token
    ("topk_ids", "<i4", 0),
    ("topk_probs", "<f4", 0),
    ("word", "<i4", 1),  # index of the token's word (core.levels rule), -1: none
    ("sentence", "<i4", 1),  # index of its sentence, -1: none (or sentences off)
    ("bow_prob", "<f4", 1),  # b(i): next token begins a word (NaN: not computed)
    ("context_gain", "<f4", 1),  # nats, log P(w|ctx) - log P_uni(w); NaN without unigram=
)

# Per-token fields left out of ``result_data`` (never out of a chunk message) when every
# token has this "absent" value: sentences off, no ``unigram=``, a model kind without b(i).
# The front end fills them back in; a saved notebook does not hold columns of -1 and NaN.
OPTIONAL_FIELDS: Final[dict[str, float]] = {
    "word": -1,
    "sentence": -1,
    "bow_prob": float("nan"),
    "context_gain": float("nan"),
}

# A divergence view (``DivergenceResult.widget()``, views/divergence_view.py): besides the
# base model's fields, ``result_data["divergence"]`` holds ``{"labels": [base, other]}``
# and these per-token fields as buffers (no chunk message carries them).
DIVERGENCE_FIELDS: Final[tuple[tuple[str, str, int], ...]] = (
    ("kl", "<f4", 1),  # KL(base ‖ other), nats
    ("same_top", "<i4", 1),  # 1: the two most probable tokens agree
    ("other_surprisal", "<f4", 1),  # nats
    ("other_entropy", "<f4", 1),  # nats
    ("other_rank", "<i4", 1),
    ("other_topk_ids", "<i4", 0),
    ("other_topk_probs", "<f4", 0),
)

# Unit spans (UTF-16 offsets into ``text``), sent once per run as the ``reset``
# message's buffers in this order, and kept under these names in ``result_data``.
UNIT_SPAN_FIELDS: Final[tuple[str, ...]] = (
    "word_start16",
    "word_end16",
    "sentence_start16",
    "sentence_end16",
)


# ---- encoding: arrays as the buffers of a chunk message, or of result_data ----------
def encode_chunk(chunk: dict[str, np.ndarray], units: TextUnits) -> list[bytes]:
    """The chunk's arrays as little-endian buffers in ``CHUNK_FIELDS`` order
    (unit indices -1, b(i) and context gain NaN where the chunk lacks them)."""
    n = len(chunk["token_ids"])
    start16 = units.to_utf16(chunk["offsets"][:, 0])
    end16 = units.to_utf16(chunk["offsets"][:, 1])
    source = {"start16": start16, "end16": end16, "word": np.full(n, -1),
              "sentence": np.full(n, -1), "bow_prob": np.full(n, np.nan),
              "context_gain": np.full(n, np.nan)}
    buffers = []
    for name, dtype, _per_token in CHUNK_FIELDS:
        array = chunk[name] if name in chunk else source[name]
        buffers.append(np.ascontiguousarray(array, dtype=dtype).tobytes())
    return buffers


def result_buffers(data: dict[str, np.ndarray], units: TextUnits) -> dict[str, bytes]:
    """The whole result's arrays for ``result_data``: field name -> little-endian bytes,
    less the ``OPTIONAL_FIELDS`` whose every value is the absent one (the front
    end fills those in; no column of -1 or NaN in a saved notebook)."""
    out = {}
    for (name, _dtype, _per), buf in zip(CHUNK_FIELDS, encode_chunk(data, units),
                                         strict=True):
        if name in OPTIONAL_FIELDS:
            absent, values = OPTIONAL_FIELDS[name], data.get(name)
            if values is None or (np.all(np.isnan(values)) if math.isnan(absent)
                                  else np.all(np.asarray(values) == absent)):
                continue
        out[name] = buf
    return out


# ---- messages (the widget adds run_id when it sends one) --------------------------------
def reset_message(levels: LevelAssigner, total_tokens: int, top_k: int,
                  ) -> tuple[dict[str, Any], list[bytes]]:
    return ({"type": MSG_RESET, "total_tokens": total_tokens, "top_k": top_k,
             "levels": levels.counts(), "level_notes": levels.notes}, levels.buffers())


def progress(item: ScoreProgress) -> dict[str, Any]:
    return json_safe({"done": item.done, "total": item.total, "tokens_per_s": item.tokens_per_s,
                      "eta_s": item.eta_s, "elapsed_s": item.elapsed_s})


def chunk_message(start: int, arrays: dict[str, np.ndarray], vocab: dict[int, str],
                  item: ScoreProgress, top_k: int, units: TextUnits,
                  ) -> tuple[dict[str, Any], list[bytes]]:
    return ({"type": MSG_CHUNK, "start": start, "count": len(arrays["token_ids"]),
             "top_k": top_k, "vocab": {str(k): v for k, v in vocab.items()},
             "progress": progress(item)}, encode_chunk(arrays, units))


def done_message(payload: dict[str, Any]) -> dict[str, Any]:
    """The ``done`` message of a run whose ``result_data`` is ``payload``."""
    return {"type": MSG_DONE, "partial": payload["partial"], "metrics": payload["metrics"]}


def loading_message(note: str, fraction: float) -> dict[str, Any]:
    """A first-time model preparation's progress (``load_model``'s ``progress=``)."""
    return {"type": MSG_LOADING, "message": note, "fraction": float(fraction)}


def error_message(message: str) -> dict[str, Any]:
    return {"type": MSG_ERROR, "message": message}


def settings_error_message(field: str, message: str) -> dict[str, Any]:
    return {"type": MSG_SETTINGS_ERROR, "field": field, "message": message}


# ---- the payloads of the synced traits ----------------------------------------------------
def final_metrics(result: ScoreResult, unigram: Any = None, ci: float | None = None) -> dict:
    """metrics() with PPLu (unigram=) and bootstrap intervals (ci=) when asked."""
    try:
        m = result.metrics(unigram=unigram, ci=ci)
    except Exception as exc:  # noqa: BLE001 - the plain metrics still show
        log.warning("ppl-widget: extra metrics failed: %s", exc)
        m = result.metrics()
        m["extra_error"] = f"{type(exc).__name__}: {exc}"
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in m.items()}


def result_settings(result: ScoreResult, *, unigram: Any = None,
                    ci: float | None = None) -> dict[str, Any]:
    """The ``settings`` trait for ``result`` ("Scored with"): its settings plus what the
    view says of them.  ``eos_scored``: an EOS is among the scored tokens (the rule of
    ``metrics()``' ``n_eos`` and ``describe()``): with ``add_eos=True`` a run that stopped
    before the end added it but did not score it."""
    settings = dict(result.settings)
    settings.update(n_unscored=len(result.unscored_token_ids),
                    eos_scored=bool(result.is_eos.any()), total_tokens=result.total_tokens)
    name = settings.get("protocol", "exact")
    if name != "exact":  # why its unscored tokens are (tooltips), the tool's own number
        settings["unscored_why"] = get_protocol(name).unscored_why
        if not result.partial:
            report = result.protocol_report()
            if "guide_reported_ppl" in report:
                settings["guide_reported_ppl"] = report["guide_reported_ppl"]
    if result.context is not None:  # shown before the text (a chat as its turns)
        settings["context"] = result.context
    if unigram is not None:
        settings["unigram"] = "in-sample" if unigram.in_sample else unigram.source
    if ci is not None:
        settings["ci"] = ci
    return json_safe(settings)


def result_data(result: ScoreResult, *, levels: LevelAssigner | None = None,
                columns: dict[str, np.ndarray] | None = None, unigram: Any = None,
                ci: float | None = None, run_id: int = 1) -> dict[str, Any]:
    """``result`` as the ``result_data`` trait: the one payload of the live widget's end
    and of the exported page.

    ``levels``: the run's unit spans (default: ``LevelAssigner.for_result``).
    ``columns``: the per-token fields the widget streamed (``word``, ``sentence``,
    ``context_gain``), joined; each one missing (or of another length) is computed here
    by the same rule."""
    levels = LevelAssigner.for_result(result) if levels is None else levels
    n = len(result)
    top_k = int(result.topk_ids.shape[1]) if result.topk_ids.ndim == 2 else 0
    arrays = {name: getattr(result, name) for name in
              ("token_ids", "offsets", "surprisal", "entropy", "rank", "context_length",
               "units", "bow_prob")}
    arrays.update(topk_ids=result.topk_ids.reshape(n, top_k),
                  topk_probs=result.topk_probs.reshape(n, top_k))
    given = {k: v for k, v in (columns or {}).items() if len(v) == n}
    if "word" not in given or "sentence" not in given:
        given = {**levels.assign(result.offsets, result.is_eos), **given}
    if unigram is not None and "context_gain" not in given:
        given["context_gain"] = context_gain(unigram, result.token_ids, result.surprisal)
    arrays.update(given)
    payload: dict[str, Any] = {
        "run_id": run_id, "count": n, "top_k": top_k, "vocab": _used_vocab(result),
        "partial": bool(result.partial), "metrics": json_safe(final_metrics(result, unigram, ci)),
        # what the whole run would have scored: a cancelled run's bar reads count / total
        "total_tokens": int(result.total_tokens) if (result.total_tokens or 0) > n else n,
    }
    payload.update(result_buffers(arrays, levels.units))
    payload.update(zip(UNIT_SPAN_FIELDS, levels.buffers(), strict=True))
    payload.update(levels=levels.counts(), level_notes=levels.notes,
                   bow_prob_end=json_number(float(result.bow_prob_end)))
    corrected = word_corrected(result, arrays["word"], levels)
    if corrected is not None:
        payload["word_corrected"] = corrected
    return payload


def _used_vocab(result: ScoreResult) -> dict[str, str]:
    """The decoded text of every token id the result holds (targets and top-k), O(n)."""
    ids = np.concatenate([result.token_ids, result.topk_ids.ravel()]).astype(np.int64)
    ids = ids[ids >= 0]
    used = np.zeros(int(ids.max()) + 1 if len(ids) else 0, bool)
    used[ids] = True
    return {str(k): v for k, v in result.vocab.items() if 0 <= k < len(used) and used[k]}


# ---- explanations (why a target is surprising; core/explain) ------------------------------
def explain_target(explanation: Any, units: TextUnits) -> dict[str, Any]:
    """The explained target for the view: {token, word (one of them null), first, last
    (its token indices in the result), start16, end16, text}."""
    t = explanation.target
    tokens = [int(i) for i in t["tokens"]]
    span = units.to_utf16(np.array([t["start"], t["end"]], np.int64))
    return {"token": int(t["index"]) if t["kind"] == "token" else None,
            "word": int(t["index"]) if t["kind"] == "word" else None,
            "first": min(tokens), "last": max(tokens), "start16": int(span[0]),
            "end16": int(span[1]), "text": str(t["text"])}


def explain_units(explanation: Any, units: TextUnits) -> dict[str, list]:
    """Every context unit, in reading order: its text, UTF-16 span in the text (-1, -1
    for a unit of a context read before the text: no token of the view is in it), number
    of tokens and part ("text", "context" or "message i")."""
    parts = list(getattr(explanation, "parts", None) or ["text"] * len(explanation.units))
    in_text = np.array([p == "text" for p in parts], bool)
    start16 = np.full(len(parts), -1, np.int64)
    end16 = np.full(len(parts), -1, np.int64)
    start16[in_text] = units.to_utf16(np.asarray(explanation.starts, np.int64)[in_text])
    end16[in_text] = units.to_utf16(np.asarray(explanation.ends, np.int64)[in_text])
    return {"text": [str(u) for u in explanation.units], "start16": start16.tolist(),
            "end16": end16.tolist(), "tokens": np.asarray(explanation.tokens, np.int64).tolist(),
            "part": parts}


def explain_start_message(explain_id: int, request: Any, explanation: Any,
                          units: TextUnits) -> dict[str, Any]:
    return {"type": MSG_EXPLAIN_START, "explain_id": explain_id, "request": request,
            "target": explain_target(explanation, units),
            "unit": explanation.settings.get("unit", "word"), "method": explanation.method}


def explain_part_message(explain_id: int, explanation: Any, index: np.ndarray, *,
                         elapsed_s: float, requested_at: float | None = None,
                         units: TextUnits | None = None) -> dict[str, Any]:
    """The units ``index`` (text order) computed since the last part; ``units`` (the text's
    TextUnits) in the first part only: it adds every unit's span.  ``requested_at`` and
    ``sent_at``: wall-clock seconds, for the view's measurement of where time goes."""
    index = np.asarray(index, np.int64)
    msg = json_safe({"type": MSG_EXPLAIN_PART, "explain_id": explain_id,
                     "index": index.tolist(),
                     "delta_nats": np.asarray(explanation.delta_nats)[index].tolist(),
                     "done": int(explanation.done), "total": len(explanation.units),
                     "elapsed_s": float(elapsed_s), "requested_at": requested_at,
                     "sent_at": time.time(),
                     "target_surprisal_nats": explanation.target_surprisal_nats})
    if units is not None:
        msg["units"] = explain_units(explanation, units)
    return msg


def explain_done_message(explain_id: int, status: str) -> dict[str, Any]:
    return {"type": MSG_EXPLAIN_DONE, "explain_id": explain_id, "status": status}


def explain_error_message(explain_id: int, request: Any, message: str) -> dict[str, Any]:
    return {"type": MSG_EXPLAIN_ERROR, "explain_id": explain_id, "request": request,
            "message": message}


def explanation_data(explanation: Any, *, curve: Any = None, explain_id: int = 0,
                     status: str | None = None, message: str = "") -> dict[str, Any]:
    """The ``explanation`` trait: a whole explanation as the view and the exported page
    show it.  ``curve``: ``context_curve()``'s frame (context_tokens, surprisal_nats) or
    None; ``status``: "done", "cancelled" or "error" (default: from the explanation)."""
    units = TextUnits.of(explanation.text)
    if status is None:
        status = "cancelled" if explanation.cancelled or explanation.partial else "done"
    payload = {
        "explain_id": explain_id, "status": status, "message": message,
        "target": explain_target(explanation, units),
        "unit": explanation.settings.get("unit", "word"), "method": explanation.method,
        "settings": explanation.settings,
        "target_surprisal_nats": explanation.target_surprisal_nats,
        "units": explain_units(explanation, units),
        "delta_nats": np.asarray(explanation.delta_nats, np.float64).tolist(),
        "done": int(explanation.done), "total": len(explanation.units),
        "context_tokens": int(explanation.context_tokens),
        "curve": None if curve is None else {
            "context_tokens": [int(k) for k in curve["context_tokens"]],
            "surprisal_nats": [float(v) for v in curve["surprisal_nats"]]},
    }
    return json_safe(payload)
