"""The vocabulary side of scoring: the begin-of-word mask over a model's vocabulary,
which token ids a batch holds, and each id's own decoded text."""

from __future__ import annotations

from typing import Any

import numpy as np


def bow_mask(lm: Any, vocab_size: int) -> Any:
    """The begin-of-word mask as an fp32 vector on the model's device (None if unknown)."""
    import torch

    from .word_boundary import boundary_mask

    mask = boundary_mask(lm.tokenizer, vocab_size)
    if mask is None:
        return None
    return torch.as_tensor(mask, dtype=torch.float32, device=lm.device)


def ids_in(parts: list[dict[str, np.ndarray]]) -> np.ndarray:
    """Sorted distinct token ids (targets and alternatives) of ``parts``: a presence
    mask, O(n + vocabulary), where ``np.unique`` sorts or hashes (~0.1 s a batch)."""
    arrays = [a for p in parts for a in (p["token_ids"], p["topk_ids"].ravel()) if len(a)]
    if not arrays:
        return np.zeros(0, np.int64)
    present = np.zeros(max(int(a.max()) for a in arrays) + 1, dtype=bool)
    for a in arrays:
        present[a] = True
    return np.flatnonzero(present)


def decode_each(tokenizer: Any, ids: list[int]) -> dict[int, str]:
    """Each id's own decoded text (a lone byte of a multi-byte character shows as U+FFFD)."""
    if not ids:  # batch_decode([]) returns [''], not []
        return {}
    singles = [[t] for t in ids]
    if plain_fast_decode(tokenizer):  # the Rust decoder, batched, without per-id Python
        return dict(zip(ids, tokenizer._tokenizer.decode_batch(singles,
                                                               skip_special_tokens=False),
                        strict=True))
    return dict(zip(ids, tokenizer.batch_decode(singles), strict=True))


def plain_fast_decode(tokenizer: Any) -> bool:
    """``batch_decode`` would only call the Rust decoder: a fast tokenizer with no
    clean-up of spaces and none of the decode methods overridden."""
    try:
        from transformers import PreTrainedTokenizerFast
    except ImportError:  # pragma: no cover
        return False
    cls = type(tokenizer)
    return (isinstance(tokenizer, PreTrainedTokenizerFast)
            and getattr(tokenizer, "_tokenizer", None) is not None
            and getattr(tokenizer, "clean_up_tokenization_spaces", True) is False
            and all(getattr(cls, m, None) is getattr(PreTrainedTokenizerFast, m, None)
                    for m in ("decode", "batch_decode", "_decode")))
