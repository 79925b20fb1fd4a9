"""The scorer's forward for an encoder-decoder: the encoder reads the source once per
text, and every batch of decoder windows attends to that one encoder output.

A window reads the decoder's sequence causally (``core/windows.py``, the one window
rule) with the decoder start token first: a window that starts after position 0 reads
position 0 (the start token) in place of its first position, as ``prefix_every_window``
lays windows out, since a decoder is never trained on a sequence without it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ....core.windows import Window
from ...runner.forward import (
    MAX_LOGIT_ELEMENTS,
    MAX_LOGIT_ELEMENTS_CUDA,
    BatchedForward,
    shifted_softmax,
    window_inputs,
)
from ...runner.vocab import bow_mask
from ..model_kind import HostForward
from .seq2seq_layout import source_ids


class Seq2SeqForward(HostForward):
    """Per target of a batch of decoder windows, its statistics, given the source that
    ``start_text`` encoded (the scorer calls it once per text, before any batch); a
    caller that calls it not (explain()'s edited texts) gets the empty source, as
    ``score()`` without a context."""

    def __init__(self, lm: Any, top_k: int):  # a seq2seq_model.Seq2SeqModel
        self.lm = lm
        self.top_k = top_k
        self.bow_mask = bow_mask(lm, lm.vocab_size)
        self.encoded: Any = None  # the encoder's last hidden states, (1, source, hidden)
        self.source_mask: Any = None
        cuda = getattr(lm.device, "type", None) == "cuda"
        self.max_logits = MAX_LOGIT_ELEMENTS_CUDA if cuda else MAX_LOGIT_ELEMENTS

    def start_text(self, prep: Any) -> None:
        """Run the encoder over the text's source (``prep.source_ids``), once: every
        window of the text reuses its output."""
        self._encode(prep.source_ids)

    def _encode(self, source_ids: Any) -> None:
        import torch

        ids = torch.as_tensor(np.asarray(source_ids, np.int64), device=self.lm.device)[None]
        self.source_mask = torch.ones_like(ids)
        with torch.inference_mode():
            self.encoded = self.lm.model.get_encoder()(
                input_ids=ids, attention_mask=self.source_mask).last_hidden_state

    def logits(self, decoder_ids: Any) -> Any:
        """The decoder's logits for a (windows, width) batch of decoder inputs, each
        attending to the one encoded source."""
        from transformers.modeling_outputs import BaseModelOutput

        if self.encoded is None:  # a caller that read no source (explain()): the empty
            self._encode(source_ids(self.lm.tokenizer, None))  # one, as score() without
        n = decoder_ids.shape[0]
        encoded = BaseModelOutput(last_hidden_state=self.encoded.expand(n, -1, -1))
        out = self.lm.model(encoder_outputs=encoded,
                            attention_mask=self.source_mask.expand(n, -1),
                            decoder_input_ids=decoder_ids, use_cache=False)
        return out.logits

    def score_batch(self, sequence: Any, batch: list[Window]) -> dict[str, np.ndarray]:
        import torch

        # the model's own forward gives logits at every decoder position (its head may add
        # a bias or scale), so a batch goes through in groups of bounded logits, each of
        # one width (the run loop's batches have one; explain()'s need not)
        parts: dict[str, list] = {}
        with torch.inference_mode():
            for group in _groups(batch, self.max_logits // max(1, self.lm.vocab_size)):
                for key, value in self._stats(sequence, group).items():
                    parts.setdefault(key, []).append(value.cpu())
        from ...runner.forward import with_host_columns

        contexts = np.concatenate(
            [np.arange(w.target_start - w.input_start, w.target_end - w.input_start)
             for w in batch])
        return with_host_columns({k: torch.cat(v).numpy() for k, v in parts.items()},
                                 sum(w.n_targets for w in batch), self.top_k, contexts)

    def _stats(self, sequence: Any, batch: list[Window]) -> dict[str, Any]:
        """The statistics of a group of windows' targets, on the device."""
        import torch

        decoder_ids = torch.stack([window_inputs(sequence, decoder_window(w)) for w in batch])
        targets = torch.cat([sequence[w.target_start:w.target_end] for w in batch])
        logits = self.logits(decoder_ids)
        # a window's targets are its last n_targets positions' predictions
        rows = torch.cat([logits[b, logits.shape[1] - w.n_targets:]
                          for b, w in enumerate(batch)]).float()
        del logits
        probs, log_z = shifted_softmax(rows)
        # the one set of formulas of the causal forward (surprisal, entropy, rank, top-k,
        # b(i)), with this forward's top_k and begin-of-word mask
        return BatchedForward.softmax_stats(self, rows, probs, log_z, targets)  # type: ignore[arg-type]

    def bow_after_last(self, sequence: Any, max_length: int, prefixed: bool = True) -> float:
        """b after the target's last token: one more decoder row, from the last
        ``max_length`` positions (the start token first)."""
        import torch

        if self.bow_mask is None or len(sequence) == 0:
            return math.nan
        start = max(0, len(sequence) - max_length)
        w = decoder_window(Window(start, len(sequence), len(sequence), len(sequence) + 1))
        with torch.inference_mode():
            last = self.logits(window_inputs(sequence, w)[None])[0, -1:].float()
            probs = torch.softmax(last, -1)
            return float((probs @ self.bow_mask)[0])


def _groups(batch: list[Window], max_positions: int) -> list[list[Window]]:
    """Consecutive windows of one width, at most ``max_positions`` inputs a group (at
    least one window)."""
    groups: list[list[Window]] = []
    for w in batch:
        last = groups[-1] if groups else None
        if (last and last[0].n_inputs == w.n_inputs
                and (len(last) + 1) * w.n_inputs <= max_positions):
            last.append(w)
        else:
            groups.append([w])
    return groups


def decoder_window(w: Window) -> Window:
    """``w`` as the decoder reads it: the start token first where ``w`` starts later."""
    if w.prefixed or w.input_start == 0:
        return w
    return Window(w.input_start, w.input_end, w.target_start, w.target_end, True)
