"""Bootstrap confidence intervals for perplexities.  Pure numpy.

Perplexity is a ratio, exp(total NLL / total units), so the bootstrap resamples
whole blocks (sentences, documents, or fixed runs of tokens), adds up their NLL
and their units, and takes the ratio of the sums: a ratio estimator, never a
mean of per-block perplexities (which would weight a three-word sentence like a
thirty-word one).  Intervals are percentile intervals.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .metrics import LN2

if TYPE_CHECKING:
    from .tokens import ScoredTokens

#: Tokens per block when a text has a single sentence (a moving-block bootstrap).
DEFAULT_BLOCK_TOKENS = 32

#: column of the block table -> the perplexity keys computed from it
_DENOMINATORS = {0: "token", 1: "word", 2: "char", 3: "byte"}


def block_sums(surprisal: np.ndarray, units: np.ndarray, block: np.ndarray,
               n_blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """Per block: total NLL, and (tokens, words, chars, bytes)."""
    block = np.asarray(block, dtype=np.int64)
    nll = np.bincount(block, weights=surprisal, minlength=n_blocks)
    counts = np.empty((n_blocks, 4), dtype=np.float64)
    counts[:, 0] = np.bincount(block, minlength=n_blocks)
    for c in range(3):
        counts[:, c + 1] = np.bincount(block, weights=units[:, c], minlength=n_blocks)
    return nll, counts


def bootstrap_intervals(nll: np.ndarray, counts: np.ndarray, *, ci: float = 0.95,
                        n_boot: int = 1000, seed: int | None = 0) -> dict[str, tuple]:
    """Percentile intervals of every perplexity (and bits per unit) from per-block sums.

    Returns ``{"token_ppl_ci": (lo, hi), ..., "bits_per_byte_ci": (lo, hi)}``;
    NaN bounds when there are fewer than two blocks.
    """
    if not isinstance(ci, float | int) or isinstance(ci, bool) or not 0 < ci < 1:
        raise ValueError(f"ci must be a confidence level between 0 and 1, e.g. 0.95; got {ci!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int | np.integer) or n_boot < 1:
        raise ValueError(f"n_boot must be a positive integer, got {n_boot!r}")
    n_blocks = len(nll)
    out: dict[str, tuple] = {}
    if n_blocks < 2:
        for name in _DENOMINATORS.values():
            out[f"{name}_ppl_ci"] = (math.nan, math.nan)
            if name != "word":
                out[f"bits_per_{name}_ci"] = (math.nan, math.nan)
        return out
    rng = np.random.default_rng(seed)
    # one row per replicate: how often each block was drawn (n_boot x n_blocks)
    draws = rng.multinomial(n_blocks, np.full(n_blocks, 1.0 / n_blocks), size=int(n_boot))
    nll_star = draws @ nll
    units_star = draws @ counts
    lo_q, hi_q = (1 - ci) / 2, 1 - (1 - ci) / 2
    for col, name in _DENOMINATORS.items():
        with np.errstate(divide="ignore", invalid="ignore"):
            per_unit = nll_star / units_star[:, col]
        per_unit = per_unit[np.isfinite(per_unit)]
        if per_unit.size == 0:
            lo = hi = math.nan
        else:
            lo, hi = np.quantile(per_unit, [lo_q, hi_q])
        out[f"{name}_ppl_ci"] = (math.exp(lo), math.exp(hi)) if math.isfinite(lo) \
            else (math.nan, math.nan)
        if name != "word":
            out[f"bits_per_{name}_ci"] = (lo / LN2, hi / LN2)
    return out


def token_blocks(n_tokens: int, block_tokens: int = DEFAULT_BLOCK_TOKENS) -> np.ndarray:
    """Block index of each token for fixed runs of ``block_tokens`` tokens."""
    return np.arange(n_tokens, dtype=np.int64) // max(1, int(block_tokens))


def fill_outside(owner: np.ndarray) -> np.ndarray:
    """Unit index per token with the tokens of no unit (-1) joined to the unit before them
    (the first unit for leading ones), so blocks add up to the whole text."""
    owner = np.asarray(owner, dtype=np.int64).copy()
    if owner.size == 0:
        return owner
    valid = owner >= 0
    if not valid.any():
        return np.zeros_like(owner)
    idx = np.where(valid, np.arange(owner.size), -1)
    last = np.maximum.accumulate(idx)
    first_valid = int(np.flatnonzero(valid)[0])
    filled = np.where(last >= 0, owner[np.maximum(last, 0)], owner[first_valid])
    # renumber to consecutive block ids (units with no tokens drop out)
    _, dense = np.unique(filled, return_inverse=True)
    return dense.astype(np.int64)


def interval_metrics(result: ScoredTokens, i: int, j: int, *, ci: float = 0.95, n_boot: int = 1000,
                     seed: int | None = 0, blocks: str | np.ndarray = "sentence") -> dict:
    """Bootstrap intervals for scored tokens ``[i, j)`` of ``result``.

    ``blocks``: "sentence" (the default; falls back to token blocks when the tokens
    hold fewer than two sentences), "tokens" (runs of ``DEFAULT_BLOCK_TOKENS``), or an
    array giving each scored token's block (documents, paragraphs...).
    """
    from .levels import assign_tokens, unit_spans

    n = j - i
    if isinstance(blocks, str):
        if blocks not in ("sentence", "tokens"):
            raise ValueError(f"blocks must be 'sentence', 'tokens' or an array of one block "
                             f"index per scored token; got {blocks!r}")
        block = None
        if blocks == "sentence":
            spans = unit_spans(result.text, "sentence")
            owner = assign_tokens(result.text, result.offsets[i:j], spans, result.is_eos[i:j])
            block = fill_outside(owner)
            if block.size == 0 or block.max() < 1:
                block = None
        if block is None:
            block = token_blocks(n)
    else:
        block = np.asarray(blocks, dtype=np.int64)
        if block.shape != (len(result),):
            raise ValueError(f"blocks must give one block index per scored token "
                             f"({len(result)}), got shape {block.shape}")
        _, block = np.unique(block[i:j], return_inverse=True)
    n_blocks = int(block.max()) + 1 if block.size else 0
    nll, counts = block_sums(result.surprisal[i:j], result.units[i:j], block, n_blocks)
    out = bootstrap_intervals(nll, counts, ci=ci, n_boot=n_boot, seed=seed)
    out["ci_level"] = float(ci)
    out["ci_blocks"] = n_blocks
    return out
