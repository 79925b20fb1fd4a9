"""The paired permutation test of two ΔLL results on the same words: under the null
hypothesis the two regressions predict each word equally well, so each word's difference
is as likely to have either sign. The signs are flipped at random (or every way, when
there are few words) and the mean difference recomputed; the two-sided p-value is how
often a flipped mean lies as far out as the observed one.

The p-value follows ``scipy.stats.permutation_test`` (``permutation_type="samples"`` on
the paired values, ``alternative="two-sided"``): twice the smaller one-sided share,
counting the observed arrangement among the resamples ((count + 1) / (n + 1)) when the
signs are drawn at random, and exactly when all 2**words arrangements fit in ``n``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .spillover import ReadingTimeError

#: sign vectors drawn per batch (a batch is a (batch, words) matrix of +/-1)
_BATCH = 512
#: ties: a resampled mean within this relative distance of the observed one counts as
#: equal (scipy's 100 * machine epsilon), so float noise does not decide a tie
_TIE = 100 * np.finfo(np.float64).eps


@dataclass(frozen=True)
class PermutationTest:
    """A paired sign-flip test's ``p_value`` over ``resamples`` arrangements (all of them
    when ``exact``), drawn with ``seed``."""

    p_value: float
    resamples: int
    exact: bool
    seed: int | None


def check_resamples(n: object) -> int:
    """``n``: a positive integer (rule: a permutation test needs at least one resample)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ReadingTimeError(f"n (the permutation test's resamples) must be a positive "
                               f"integer, not {n!r}")
    return int(n)


def sign_flip_test(diff: np.ndarray, n: int = 10_000, seed: int | None = None) -> PermutationTest:
    """The two-sided paired permutation test of ``diff`` (per-word differences) with the
    mean as statistic: exact over all 2**len(diff) sign vectors when that is at most
    ``n``, else ``n`` random sign vectors from ``numpy.random.default_rng(seed)``."""
    n = check_resamples(n)
    d = np.asarray(diff, dtype=np.float64)
    if d.ndim != 1 or len(d) == 0:
        raise ReadingTimeError("a permutation test needs at least one paired difference")
    if not np.isfinite(d).all():
        raise ReadingTimeError("a permutation test needs finite differences; "
                               f"{int((~np.isfinite(d)).sum())} are NaN or infinite")
    observed = float(d.mean())
    gamma = abs(_TIE * observed)
    exact = len(d) < 63 and 2 ** len(d) <= n
    less = greater = 0
    if exact:
        total = 2 ** len(d)
        for start in range(0, total, _BATCH):
            codes = np.arange(start, min(start + _BATCH, total), dtype=np.int64)
            bits = (codes[:, None] >> np.arange(len(d))) & 1  # every sign vector once
            means = (1 - 2 * bits) @ d / len(d)
            less += int((means <= observed + gamma).sum())
            greater += int((means >= observed - gamma).sum())
        p_less, p_greater = less / total, greater / total
        resamples = total
    else:
        rng = np.random.default_rng(seed)
        for start in range(0, n, _BATCH):
            signs = rng.integers(0, 2, size=(min(_BATCH, n - start), len(d)), dtype=np.int8)
            means = (1 - 2 * signs.astype(np.float64)) @ d / len(d)
            less += int((means <= observed + gamma).sum())
            greater += int((means >= observed - gamma).sum())
        p_less, p_greater = (less + 1) / (n + 1), (greater + 1) / (n + 1)
        resamples = n
    p = min(1.0, 2 * min(p_less, p_greater))
    return PermutationTest(p_value=p, resamples=resamples, exact=exact, seed=seed)
