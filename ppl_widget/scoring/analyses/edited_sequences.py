"""The surprisal of the last tokens of many short token sequences, through a model kind's
own forward (``ScoringModel.make_forward``): every kind that ``score()`` takes (a
transformers or GGUF model, an n-gram model, a vLLM server) scores an edited context
the way it scores a window, so an explanation's numbers are the scorer's.

Each sequence is laid out as a window of one long sequence (``Window(off, off + L - 1,
off + L - m, off + L)``: its last ``m`` tokens scored, each from every token before
it); a kind that stacks its windows into one tensor gets windows of one length per
call.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from ...core.windows import Window
from ..kinds.models import LoadedModel
from ..runner.scorer import auto_batch_size

#: Windows per call for a kind that is not a transformers model (an n-gram model
#: scores on the host; a vLLM server takes them as requests in flight together).
OTHER_KIND_WINDOWS = 64


class SequenceScorer:
    """``nlls(sequences, n_scored)``: per sequence, the summed surprisal (nats) of its last
    ``n_scored`` tokens, computed by the model kind's own forward."""

    def __init__(self, lm: Any, max_length: int):
        self.lm = lm
        self.max_length = max_length
        self.forward = lm.make_forward(0, max_length)
        self.stacks = isinstance(lm, LoadedModel)  # its windows are stacked: one length

    def windows_per_call(self, length: int) -> int:
        if isinstance(self.lm, LoadedModel):
            return auto_batch_size(self.lm, max(1, length))  # the scorer's batches
        return OTHER_KIND_WINDOWS

    def nlls(self, sequences: list[np.ndarray], n_scored: list[int]) -> np.ndarray:
        out = np.zeros(len(sequences))
        by_length: dict[int, list[int]] = defaultdict(list)
        for i, s in enumerate(sequences):
            by_length[len(s) if self.stacks else 0].append(i)
        for length, members in by_length.items():
            step = self.windows_per_call(length or self.max_length)
            for k in range(0, len(members), step):
                chunk = members[k:k + step]
                out[chunk] = self._call([sequences[i] for i in chunk],
                                        [n_scored[i] for i in chunk])
        return out

    def _call(self, sequences: list[np.ndarray], n_scored: list[int]) -> np.ndarray:
        import torch

        windows, parts, off = [], [], 0
        for s, m in zip(sequences, n_scored, strict=True):
            n = len(s)
            windows.append(Window(off, off + n - 1, off + n - m, off + n))
            parts.append(np.asarray(s, np.int64))
            off += n
        # one more token after the last window, so no window ends the whole sequence
        # (a kind would then also compute what follows the text)
        parts.append(np.asarray(sequences[-1][-1:], np.int64))
        sequence = torch.from_numpy(np.concatenate(parts)).to(self.lm.device)
        with torch.inference_mode():
            stats = self.forward.score_batch(sequence, windows)
        surprisal = np.asarray(stats["surprisal"], np.float64)
        ends = np.cumsum(n_scored)
        return np.add.reduceat(surprisal, ends - np.asarray(n_scored)) if len(surprisal) \
            else np.zeros(len(sequences))
