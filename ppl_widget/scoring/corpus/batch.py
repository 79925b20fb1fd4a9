"""Windows of several documents in one model call.

Each document is laid out and split into windows exactly as ``score`` does (``prepare``
+ the protocol's plan, ``core/protocols.py``).  Windows of different documents, of
different lengths, share a batch by right-padding: in a causal model a position attends
only to the positions before it, so padding after a window's last input position changes
none of its outputs, and positions (0, 1, ...) stay those of the unpadded window.  No
attention mask is needed, exactly as ``score`` calls the model.  Only the target rows go
through the LM head, in bounded slabs, and the scorer's own fused softmax pass
(``BatchedForward.slab_stats``) gives surprisal, entropy, rank, top-k and b(i).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.windows import Window
from ..runner.forward import BatchedForward


@dataclass(frozen=True)
class Item:
    """One row of a batch: input positions ``[start, end)`` of document ``doc``'s
    sequence; the last ``n_rows`` positions go through the head.  ``window`` is the
    window's number in the document, or -1 for a row that only gives b after the last
    token.  ``bow_row``: the last row is that b row (appended to the document's last
    window when the model's context has room for one more position)."""

    doc: int
    window: int
    start: int
    end: int
    n_rows: int
    bow_row: bool
    #: the model reads the prefix token (position 0) in place of ``start`` (``Window``'s)
    prefixed: bool = False

    @property
    def length(self) -> int:
        return self.end - self.start


def end_row_rides(windows: list[Window], end_limit: int) -> bool:
    """Whether b after the last token comes from the last window itself, fed the last
    token too (as the scorer does): when one more position fits the model's context."""
    return bool(windows) and windows[-1].n_inputs + 1 <= end_limit


def plan_items(doc: int, n_positions: int, windows: list[Window], max_length: int,
               want_bow: bool, end_limit: int | None = None) -> list[Item]:
    """The batch rows of one document: its windows, plus b after its last token.
    ``end_limit``: the most input positions the model takes (its context length)."""
    items = [Item(doc, k, w.input_start, w.input_end, w.n_targets, False, w.prefixed)
             for k, w in enumerate(windows)]
    if not (want_bow and windows) or windows[-1].target_end < n_positions:
        return items  # (a plan that leaves the end unscored has no "after the last token")
    if end_row_rides(windows, end_limit or max_length):
        # the b row's input is the last window plus one position: one row more, same call
        k, w = len(windows) - 1, windows[-1]
        items[k] = Item(doc, k, w.input_start, w.input_end + 1, w.n_targets + 1, True,
                        w.prefixed)
    else:  # as the scorer does: the last max_length positions, one row
        items.append(Item(doc, -1, n_positions - max_length, n_positions, 1, True))
    return items


def sort_items(items: list[Item]) -> list[Item]:
    """Longest first, so that each batch pads to lengths close to its own."""
    return sorted(items, key=lambda it: (-it.length, it.doc, it.window))


def batch_end(order: list[Item], start: int, budget: int,
              pad_width: Callable[[int], int] | None = None) -> int:
    """End of the batch starting at ``order[start]``: as many items as keep the padded
    size (rows x longest input, or the width ``pad_width`` pads it to) within ``budget``
    positions, at least one."""
    end = start + 1
    width = order[start].length if pad_width is None else pad_width(order[start].length)
    while end < len(order) and (end - start + 1) * width <= budget:
        end += 1
    return end


def run_batch(fwd: BatchedForward, items: list[Item], sequences: list[np.ndarray],
              device: Any, width: int | None = None) -> list[dict[str, np.ndarray]]:
    """The statistics of every item's rows, one dict of numpy arrays per item (the b
    row, when there is one, is the last row of its item).  ``width``: the width to
    right-pad the batch to (a compiled body's one width); padding goes through no head."""
    import torch

    width = width or max(it.length for it in items)
    inputs = np.zeros((len(items), width), dtype=np.int64)  # pad id 0: never attended to
    flat_rows: list[np.ndarray] = []
    targets: list[np.ndarray] = []
    for r, it in enumerate(items):
        seq = sequences[it.doc]
        inputs[r, :it.length] = seq[it.start:it.end]
        if it.prefixed:
            inputs[r, 0] = seq[0]
        flat_rows.append(r * width + np.arange(it.length - it.n_rows, it.length))
        # the row at position p predicts the token at p + 1; the b row predicts nothing
        n_real = it.n_rows - int(it.bow_row)
        tgt = seq[it.end - it.n_rows + 1:it.end - it.n_rows + 1 + n_real]
        targets.append(np.concatenate([tgt, np.zeros(int(it.bow_row), np.int64)]))
    parts: dict[str, list] = {}
    # the inputs are made inside inference mode too, as score() makes them: a compiled
    # body guards on it (an input made outside would compile the body a second time)
    with torch.inference_mode():
        x = torch.as_tensor(inputs).to(device)
        rows_idx = torch.as_tensor(np.concatenate(flat_rows)).to(device)
        tgt_t = torch.as_tensor(np.concatenate(targets)).to(device)
        flat = lambda s: s.reshape(-1, s.shape[-1])[rows_idx]  # noqa: E731
        for row, logits in fwd.row_logits(flat, input_ids=x):
            n = logits.shape[0]
            for key, value in fwd.slab_stats(logits, tgt_t[row:row + n]).items():
                parts.setdefault(key, []).append(value)
            del logits
    host = {k: torch.cat(v).cpu().numpy() for k, v in parts.items()}
    out = []
    row = 0
    for it in items:
        out.append({k: v[row:row + it.n_rows] for k, v in host.items()})
        row += it.n_rows
    return out
