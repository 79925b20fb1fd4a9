"""Messages between the kernel and the widget's front end.

Mirrored field for field in ``js/src/protocol.js``; change both together.

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
    {done, total, tokens_per_s, eta_s, elapsed_s}.  Buffers follow
    ``CHUNK_FIELDS`` in order, each a little-endian typed array.
``done``   the run ended (finished, cancelled or failed).
    {type, run_id, partial, metrics}
    ``metrics`` is ``ScoreResult.metrics()`` of what was scored.
``error``  scoring failed; what was scored so far stays.
    {type, run_id, message}
``settings_error``  a control's value was rejected (score()'s rule and message);
    nothing was re-scored.  ``field`` names the control (max_length, stride, prefix).
    {type, run_id, field, message}

Front end -> kernel:

``cancel`` stop the running scoring within one batch.
``replay`` a view attached mid-run: send everything scored so far again.

When a run ends, the same arrays (whole, in a dict of the same field names, less the
``OPTIONAL_FIELDS`` that hold only their absent value, plus ``count``, ``top_k``,
``vocab``, ``levels``, ``level_notes``, the unit spans, ``bow_prob_end`` and, when
the scorer gave b(i), ``word_corrected``: the BOW-corrected surprisal of each word,
float32 nats) are put in the synced trait ``result_data``, so later views, page
reloads and saved widget state show the complete result without the kernel.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

import numpy as np

if TYPE_CHECKING:
    from ..core.text_units import TextUnits

MSG_RESET: Final = "reset"
MSG_CHUNK: Final = "chunk"
MSG_DONE: Final = "done"
MSG_ERROR: Final = "error"
MSG_SETTINGS_ERROR: Final = "settings_error"
MSG_CANCEL: Final = "cancel"
MSG_REPLAY: Final = "replay"

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
