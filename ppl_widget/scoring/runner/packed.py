"""Total NLL of many short sequences, packed into few forward passes.

Sequences are sorted by length and packed into rows (best fit, longest first), each
row holding several sequences one after another.  Attention stays inside each
sequence: position ids restart at every sequence, and for eager/SDPA attention a
block-diagonal causal mask (4D, additive) is passed; other attention kernels
(FlashAttention) find the sequences from the restarting position ids.  A row ends in
padding only where nothing else fits; padding is never a query anyone reads, and
the head (the vocabulary projection) runs only on the positions whose next token
is scored: hidden states gathered, projected in bounded fp32 slabs, log-softmaxed,
the target's log-probability gathered.  Only NLL is computed (no rank, entropy, top-k).

Each sequence is ``[prefix] + tokens``, as ``score()`` lays out a text that fits one
window; its last ``n_scored`` tokens are scored, each from every position before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

#: The score() options packed sequences honour (a text laid out as score() lays out one
#: that fits a window); any other option needs score() itself.
PACKED_OPTIONS = ("max_length", "stride", "prefix", "add_eos")

#: Row length when every sequence is shorter: longer rows share more, but attention
#: inside a row grows with its square (measured on CPU, benchmarks/bench_pairs.py).
PACK_POSITIONS = 128
#: Input positions per forward pass on a CPU, and on a GPU.
BATCH_POSITIONS_CPU = 4096
BATCH_POSITIONS_CUDA = 1 << 15


@dataclass
class PackedBatch:
    """One forward pass: rows of packed sequences and where their scored tokens are."""

    input_ids: np.ndarray  # (rows, width)
    position_ids: np.ndarray  # (rows, width), restarting at each sequence
    segments: np.ndarray  # (rows, width) sequence number of each position, -1 padding
    gather: np.ndarray  # flat positions (row * width + column) whose next token is scored
    targets: np.ndarray  # the scored token at each gathered position
    owner: np.ndarray  # index of the sequence each gathered position belongs to


def pack_rows(lengths: list[int], capacity: int) -> list[list[int]]:
    """Indices of ``lengths`` grouped into rows of at most ``capacity`` positions:
    longest first, each into the row it fills best (best fit decreasing).  A length
    over ``capacity`` gets a row of its own."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    rows: list[list[int]] = []
    # rows_by_room[r]: rows with exactly r positions left
    rows_by_room: list[list[int]] = [[] for _ in range(capacity + 1)]
    for i in order:
        n = lengths[i]
        room = next((r for r in range(n, capacity + 1) if rows_by_room[r]), None)
        if room is None:
            rows.append([i])
            left = capacity - n
            if left > 0:
                rows_by_room[left].append(len(rows) - 1)
            continue
        row = rows_by_room[room].pop()
        rows[row].append(i)
        if room - n > 0:
            rows_by_room[room - n].append(row)
    return rows


def plan_batches(sequences: list[np.ndarray], n_scored: list[int], *,
                 pack_positions: int | None = None, batch_positions: int | None = None,
                 pad_id: int = 0) -> list[PackedBatch]:
    """The forward passes that score the last ``n_scored[i]`` tokens of each
    ``sequences[i]`` (model input = the sequence without its last token); rows of
    ``pack_positions`` (default ``PACK_POSITIONS``), ``batch_positions`` per pass
    (default ``BATCH_POSITIONS_CPU``)."""
    pack_positions = pack_positions or PACK_POSITIONS
    batch_positions = batch_positions or BATCH_POSITIONS_CPU
    inputs = [len(s) - 1 for s in sequences]
    live = [i for i, n in enumerate(n_scored) if n > 0 and inputs[i] > 0]
    width = max([pack_positions, *(inputs[i] for i in live)])
    rows = [[live[j] for j in row] for row in pack_rows([inputs[i] for i in live], width)]
    rows.sort(key=lambda row: -sum(inputs[i] for i in row))  # fullest first: similar widths
    per_batch = max(1, batch_positions // width)
    batches = []
    for b in range(0, len(rows), per_batch):
        chunk = rows[b:b + per_batch]
        w = max(sum(inputs[i] for i in row) for row in chunk)
        batches.append(_layout(sequences, n_scored, chunk, w, pad_id))
    return batches


def _layout(sequences: list[np.ndarray], n_scored: list[int], rows: list[list[int]],
            width: int, pad_id: int) -> PackedBatch:
    ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    # padding keeps position 0: each a sequence of its own, in any model's range
    pos = np.zeros((len(rows), width), dtype=np.int64)
    seg = np.full((len(rows), width), -1, dtype=np.int64)
    gather, targets, owner = [], [], []
    for r, row in enumerate(rows):
        at = 0
        for i in row:
            seq = sequences[i]
            m = len(seq) - 1
            ids[r, at:at + m] = seq[:-1]
            pos[r, at:at + m] = np.arange(m)
            seg[r, at:at + m] = i
            k = min(n_scored[i], m)
            gather.append(r * width + at + np.arange(m - k, m))
            targets.append(seq[m - k + 1:])
            owner.append(np.full(k, i, dtype=np.int64))
            at += m
    return PackedBatch(ids, pos, seg, np.concatenate(gather), np.concatenate(targets),
                       np.concatenate(owner))


def block_causal_mask(segments: Any, dtype: Any) -> Any:
    """Additive 4D mask ``(rows, 1, width, width)``: 0 where a query may read a key
    (same sequence, not later), the dtype's minimum elsewhere.  Padding reads only
    padding, so no row of the mask is empty."""
    import torch

    width = segments.shape[1]
    causal = torch.ones(width, width, dtype=torch.bool, device=segments.device).tril()
    same = segments[:, :, None] == segments[:, None, :]
    allowed = (same & causal)[:, None]
    mask = torch.zeros(allowed.shape, dtype=dtype, device=segments.device)
    return mask.masked_fill_(~allowed, torch.finfo(dtype).min)


def target_nll(logits: Any, targets: Any) -> Any:
    """Each row's NLL of its target (fp32 ``logits`` shifted in place), by the formula of
    ``score()``'s CPU statistics (``forward.shifted_softmax``), so a sentence's total here
    equals score()'s: ``torch.logsumexp`` differs from it by up to ~1e-5 nats a token over
    a 50k vocabulary (fp32 sums)."""
    from .forward import shifted_softmax

    _, log_z = shifted_softmax(logits)
    return log_z - logits.gather(1, targets[:, None])[:, 0]


class PackedNLL:
    """Scores packed batches with a loaded transformers model (``LoadedModel``)."""

    def __init__(self, lm: Any):
        from .forward import BatchedForward  # which sub-module gives hidden states, which head

        self.lm = lm
        self.forward = BatchedForward(lm, 0)
        attn = getattr(lm.model.config, "_attn_implementation", None) or "eager"
        self.masked = attn in ("eager", "sdpa")  # else the kernel reads the position ids
        cuda = self.forward.cuda
        self.batch_positions = BATCH_POSITIONS_CUDA if cuda else BATCH_POSITIONS_CPU

    def run(self, batch: PackedBatch) -> np.ndarray:
        """The NLL (nats, float64) of each scored token of ``batch``, in its order."""
        import torch

        lm, fw = self.lm, self.forward
        device = lm.device
        ids = torch.as_tensor(batch.input_ids, device=device)
        pos = torch.as_tensor(batch.position_ids, device=device)
        mask = None
        if self.masked:
            mask = block_causal_mask(torch.as_tensor(batch.segments, device=device), lm.dtype)
        gather = torch.as_tensor(batch.gather, device=device)
        targets = torch.as_tensor(batch.targets, device=device)
        pick = lambda s: s.reshape(-1, s.shape[-1]).index_select(0, gather)  # noqa: E731
        with torch.inference_mode():
            parts = [target_nll(logits, targets[i:i + logits.shape[0]])
                     for i, logits in fw.row_logits(pick, input_ids=ids, position_ids=pos,
                                                    attention_mask=mask)]
            return torch.cat(parts).double().cpu().numpy()

    def batches(self, sequences: list[np.ndarray], n_scored: list[int]) -> list[PackedBatch]:
        pad = self.lm.tokenizer.pad_token_id
        return plan_batches(sequences, n_scored, batch_positions=self.batch_positions,
                            pad_id=int(pad) if pad is not None else 0)

    def nlls(self, sequences: list[np.ndarray], n_scored: list[int]) -> np.ndarray:
        """Total NLL (nats, float64) of the last ``n_scored[i]`` tokens of each sequence."""
        totals = np.zeros(len(sequences), dtype=np.float64)
        for batch in self.batches(sequences, n_scored) if any(n_scored) else []:
            np.add.at(totals, batch.owner, self.run(batch))
        return totals

    def token_nlls(self, sequences: list[np.ndarray], n_scored: list[int]) -> list[np.ndarray]:
        """The NLL (nats) of each of the last ``n_scored[i]`` tokens of each sequence."""
        out = [np.zeros(0, np.float64) for _ in sequences]
        for batch in self.batches(sequences, n_scored) if any(n_scored) else []:
            nll = self.run(batch)
            cuts = np.flatnonzero(np.diff(batch.owner)) + 1  # a sequence's tokens are adjacent
            for part, owner in zip(np.split(nll, cuts), batch.owner[np.r_[0, cuts]], strict=True):
                out[owner] = part
        return out
