"""Two models with one vocabulary on one text, token by token: how far the ``other``
model's predictive distribution is from the ``base`` model's.  Pure: numpy, and pandas
for the tables; ``scoring/analyses/divergence.py`` runs the models.

Per scored token: KL(base ‖ other) in nats over the full vocabulary, Δp = p_other - p_base
of the actual token, whether the two models' most probable tokens agree, and each
model's surprisal and entropy (``base`` and ``other`` are whole ``ScoreResult``s of the
same tokens).  ``summary()`` gives llama.cpp's ``llama-perplexity --kl-divergence``
statistics, computed as ``tools/perplexity/perplexity.cpp`` computes them (its standard
errors, percentiles and covariance); ``report()`` prints them in its layout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .jsonable import json_safe
from .metrics import LN2
from .providers import provider
from .result import ScoreResult

#: KL percentiles llama.cpp prints (fraction -> summary key), highest first
KLD_PERCENTILES = ((0.999, "kld_p99_9"), (0.99, "kld_p99"), (0.95, "kld_p95"),
                   (0.90, "kld_p90"), (0.10, "kld_p10"), (0.05, "kld_p5"),
                   (0.01, "kld_p1"), (0.001, "kld_p0_1"))
#: Δp percentiles llama.cpp prints
DELTA_P_PERCENTILES = ((0.999, "delta_p_p99_9"), (0.99, "delta_p_p99"), (0.95, "delta_p_p95"),
                       (0.90, "delta_p_p90"), (0.75, "delta_p_p75"), (0.25, "delta_p_p25"),
                       (0.10, "delta_p_p10"), (0.05, "delta_p_p5"), (0.01, "delta_p_p1"),
                       (0.001, "delta_p_p0_1"))
#: llama.cpp prints no statistics of the distribution over fewer tokens
MIN_TOKENS_FOR_PERCENTILES = 100


class VocabularyMismatchError(ValueError):
    """The two models do not share a vocabulary: their distributions cannot be compared
    token by token (``compare()`` compares them per word, character or byte)."""


def mean_and_se(total: float, total_sq: float, n: int) -> tuple[float, float]:
    """llama.cpp's ``mean_and_uncertainty``: the mean and its standard error
    sqrt((E[x²] - E[x]²) / (n - 1)), 0 where the variance is not positive or n <= 10."""
    if n < 1:
        return math.nan, math.nan
    mean = total / n
    var = total_sq / n - mean * mean
    return mean, (math.sqrt(var / (n - 1)) if var > 0 and n > 10 else 0.0)


def covariance(sum_a: float, sum_b: float, sum_ab: float, n: int) -> float:
    """llama.cpp's covariance of two means: (E[ab] - E[a]E[b]) / (n - 1), 0 below 10."""
    if n < 10:
        return 0.0
    return (sum_ab / n - (sum_a / n) * (sum_b / n)) / (n - 1)


def percentile(sorted_values: np.ndarray, fraction: float) -> float:
    """llama.cpp's percentile: linear between the two values around fraction*(n - 1)."""
    n = len(sorted_values)
    if n == 0:
        return math.nan
    if fraction <= 0:
        return float(sorted_values[0])
    if fraction >= 1:
        return float(sorted_values[-1])
    p = fraction * (n - 1)
    i = int(p)
    p -= i
    return float((1 - p) * sorted_values[i] + p * sorted_values[min(i + 1, n - 1)])


def spread(name: str, values: np.ndarray, percentiles: Any) -> dict[str, float]:
    """``{name}_max``, the percentiles llama.cpp prints, ``{name}_median`` and
    ``{name}_min`` of ``values`` (NaN when there are none)."""
    ordered = np.sort(values)
    n = len(ordered)
    out = {f"{name}_max": float(ordered[-1]) if n else math.nan}
    out.update({key: percentile(ordered, f) for f, key in percentiles})
    out[f"{name}_median"] = float(np.median(ordered)) if n else math.nan
    out[f"{name}_min"] = float(ordered[0]) if n else math.nan
    return out


def divergence_summary(kl: np.ndarray, nll_base: np.ndarray, nll_other: np.ndarray,
                       same_top: np.ndarray) -> dict[str, float]:
    """llama.cpp's statistics of per-token KL (nats), the two models' NLLs (nats) and
    top-token agreement; see ``DivergenceResult.summary``."""
    kl = np.asarray(kl, np.float64)
    a = np.asarray(nll_other, np.float64)  # llama.cpp's Q
    b = np.asarray(nll_base, np.float64)
    n = len(kl)
    out: dict[str, float] = {"n_tokens": n}
    log_ppl, log_ppl_se = mean_and_se(a.sum(), (a * a).sum(), n)
    log_base, log_base_se = mean_and_se(b.sum(), (b * b).sum(), n)
    cov = covariance(a.sum(), b.sum(), (a * b).sum(), n)
    ratio_se = math.sqrt(max(0.0, log_ppl_se ** 2 + log_base_se ** 2 - 2 * cov))
    ppl, ppl_base = math.exp(log_ppl), math.exp(log_base)
    ppl_se, ppl_base_se = ppl * log_ppl_se, ppl_base * log_base_se
    out.update(
        ppl_other=ppl, ppl_other_se=ppl_se, ppl_base=ppl_base, ppl_base_se=ppl_base_se,
        cor_log_ppl=(cov / (log_ppl_se * log_base_se) if log_ppl_se * log_base_se > 0
                     else math.nan),
        log_ppl_ratio=log_ppl - log_base, log_ppl_ratio_se=ratio_se,
        ppl_ratio=math.exp(log_ppl - log_base),
        ppl_ratio_se=math.exp(log_ppl - log_base) * ratio_se,
        ppl_diff=ppl - ppl_base,
        ppl_diff_se=math.sqrt(max(0.0, ppl_se ** 2 + ppl_base_se ** 2
                                  - 2 * ppl * ppl_base * cov)))
    out["mean_kld"], out["mean_kld_se"] = mean_and_se(kl.sum(), (kl * kl).sum(), n)
    out.update(spread("kld", kl, KLD_PERCENTILES))
    dp = np.exp(-a) - np.exp(-b)  # p_other - p_base of the actual token
    out["mean_delta_p"], out["mean_delta_p_se"] = mean_and_se(dp.sum(), (dp * dp).sum(), n)
    out.update(spread("delta_p", dp, DELTA_P_PERCENTILES))
    mse, mse_se = mean_and_se((dp * dp).sum(), (dp ** 4).sum(), n)
    rms = math.sqrt(mse) if n else math.nan
    out["rms_delta_p"] = rms
    out["rms_delta_p_se"] = 0.5 / rms * mse_se if rms > 0 else 0.0
    same = float(np.mean(same_top)) if n else math.nan
    out["same_top_p"] = same
    out["same_top_p_se"] = math.sqrt(same * (1 - same) / (n - 1)) if n > 1 else math.nan
    return out


@dataclass(eq=False)
class DivergenceResult:
    """``other``'s predictions against ``base``'s on the same scored tokens of ``text``.

    ``base``/``other``: each model's ``ScoreResult`` (surprisal, entropy, rank, top-k,
    ... of the same tokens, from the same windows).  ``kl``: KL(base ‖ other) per token,
    nats, over the full vocabulary.  ``same_top``: the two most probable tokens agree.
    ``labels``: the models' names in tables and views.
    """

    base: ScoreResult
    other: ScoreResult
    kl: np.ndarray
    same_top: np.ndarray
    labels: tuple[str, str] = ("base", "other")
    settings: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.kl = np.asarray(self.kl, np.float64)
        self.same_top = np.asarray(self.same_top, np.bool_)
        self.labels = tuple(self.labels)
        n = len(self.base)
        if len(self.other) != n or not np.array_equal(self.base.token_ids, self.other.token_ids):
            raise ValueError("base and other must score the same tokens (same ids, same order)")
        for name in ("kl", "same_top"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} has {len(getattr(self, name))} rows, expected {n} "
                                 "(one per scored token)")
        if len(self.labels) != 2 or self.labels[0] == self.labels[1]:
            raise ValueError(f"labels must be two different names, got {self.labels}")

    # ---- per token -------------------------------------------------------
    def __len__(self) -> int:
        return len(self.base)

    @property
    def text(self) -> str:
        return self.base.text

    @property
    def partial(self) -> bool:
        return self.base.partial

    @property
    def delta_p(self) -> np.ndarray:
        """p_other - p_base of each actual token (llama.cpp's Δp)."""
        return self.other.probability - self.base.probability

    @property
    def kl_bits(self) -> np.ndarray:
        return self.kl / LN2

    # ---- statistics --------------------------------------------------------
    def summary(self) -> dict[str, float]:
        """llama.cpp's KL-divergence statistics of the scored tokens.

        ``mean_kld`` ± ``mean_kld_se`` (nats), ``kld_max``, ``kld_p99_9``, ``kld_p99``,
        ``kld_p95``, ``kld_p90``, ``kld_median``, ``kld_p10`` ... ``kld_p0_1``,
        ``kld_min``; ``mean_delta_p`` ± SE, its percentiles (``delta_p_*``),
        ``rms_delta_p`` ± SE; ``same_top_p`` (a fraction) ± SE; ``ppl_base``,
        ``ppl_other`` (per token, ± SE), ``ppl_ratio`` = PPL(other)/PPL(base),
        ``log_ppl_ratio`` ± SE (with the covariance of the two mean NLLs),
        ``ppl_diff`` ± SE and ``cor_log_ppl``.  Standard errors are llama.cpp's
        (0 with 10 tokens or fewer); llama.cpp prints the percentiles only from
        ``MIN_TOKENS_FOR_PERCENTILES`` tokens on (computed here at any length)."""
        return divergence_summary(self.kl, self.base.surprisal, self.other.surprisal,
                                  self.same_top)

    def report(self) -> str:
        """``summary()`` in llama.cpp's layout (its three blocks of statistics)."""
        s = self.summary()
        pct = lambda f: f"{100 * f:.1f}%".rjust(6)  # noqa: E731
        lines = ["====== Perplexity statistics ======",
                 f"Mean PPL({self.labels[1]}) : {s['ppl_other']:10.6f} ± {s['ppl_other_se']:10.6f}",
                 f"Mean PPL({self.labels[0]}) : {s['ppl_base']:10.6f} ± {s['ppl_base_se']:10.6f}",
                 f"Cor(ln(PPL(Q)), ln(PPL(base))): {100 * s['cor_log_ppl']:6.2f}%",
                 f"Mean ln(PPL(Q)/PPL(base)) : {s['log_ppl_ratio']:10.6f} ± "
                 f"{s['log_ppl_ratio_se']:10.6f}",
                 f"Mean PPL(Q)/PPL(base)     : {s['ppl_ratio']:10.6f} ± {s['ppl_ratio_se']:10.6f}",
                 f"Mean PPL(Q)-PPL(base)     : {s['ppl_diff']:10.6f} ± {s['ppl_diff_se']:10.6f}",
                 "", "====== KL divergence statistics ======",
                 f"Mean    KLD: {s['mean_kld']:10.6f} ± {s['mean_kld_se']:10.6f}",
                 f"Maximum KLD: {s['kld_max']:10.6f}"]
        lines += [f"{pct(f)} KLD: {s[k]:10.6f}" for f, k in KLD_PERCENTILES[:4]]
        lines.append(f"Median  KLD: {s['kld_median']:10.6f}")
        lines += [f"{pct(f)} KLD: {s[k]:10.6f}" for f, k in KLD_PERCENTILES[4:]]
        lines += [f"Minimum KLD: {s['kld_min']:10.6f}", "",
                  "====== Token probability statistics ======",
                  f"Mean    Δp: {100 * s['mean_delta_p']:6.3f} ± "
                  f"{100 * s['mean_delta_p_se']:5.3f} %",
                  f"Maximum Δp: {100 * s['delta_p_max']:6.3f}%"]
        lines += [f"{pct(f)}  Δp: {100 * s[k]:6.3f}%" for f, k in DELTA_P_PERCENTILES[:5]]
        lines.append(f"Median  Δp: {100 * s['delta_p_median']:6.3f}%")
        lines += [f"{pct(f)}  Δp: {100 * s[k]:6.3f}%" for f, k in DELTA_P_PERCENTILES[5:]]
        lines += [f"Minimum Δp: {100 * s['delta_p_min']:6.3f}%",
                  f"RMS Δp    : {100 * s['rms_delta_p']:6.3f} ± {100 * s['rms_delta_p_se']:5.3f} %",
                  f"Same top p: {100 * s['same_top_p']:6.3f} ± "
                  f"{100 * s['same_top_p_se']:5.3f} %"]
        return "\n".join(lines)

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per scored token in text order: text, start, end,
        token_id, kl (nats), kl_bits, delta_p, same_top, and per model (suffixes
        ``_base``/``_other``) surprisal, probability, entropy, rank and top token
        (its text).  ``frame.attrs["labels"]`` names the two models."""
        import pandas as pd

        b, o = self.base, self.other
        frame = pd.DataFrame({
            "text": b.tokens, "start": b.offsets[:, 0], "end": b.offsets[:, 1],
            "token_id": b.token_ids, "kl": self.kl, "kl_bits": self.kl_bits,
            "delta_p": self.delta_p, "same_top": self.same_top})
        for suffix, res in (("base", b), ("other", o)):
            frame[f"surprisal_{suffix}"] = res.surprisal
            frame[f"probability_{suffix}"] = res.probability
            frame[f"entropy_{suffix}"] = res.entropy
            frame[f"rank_{suffix}"] = res.rank
            top = res.topk_ids[:, 0] if res.topk_ids.shape[1] else np.full(len(res), -1)
            frame[f"top_{suffix}"] = [res.vocab.get(int(t), "") if t >= 0 else None
                                      for t in top.tolist()]
        frame.index.name = "token"
        frame.attrs["labels"] = {"base": self.labels[0], "other": self.labels[1]}
        return frame

    def worst(self, n: int = 10) -> Any:
        """The ``n`` tokens of highest KL (``to_frame()`` rows, highest first)."""
        return self.to_frame().sort_values("kl", ascending=False, kind="stable").head(n)

    # ---- views (registered with core/providers.py by the package) ---------
    def widget(self, **view: Any) -> Any:
        """The text coloured by KL, both models' top-k in each token's tooltip (the
        main widget's renderer; nothing is scored again).  ``view``: display traits."""
        return provider("divergence_widget")(self, **view)

    def to_html(self, path: Any = None, **view: Any) -> str:
        """That view as one self-contained HTML page (no kernel, no network)."""
        return self.widget(**view).to_html(path)

    def chart(self, **options: Any) -> Any:
        """Altair chart of the distribution of per-token KL (``charts.divergence``)."""
        return provider("divergence_chart")(self, **options)

    # ---- saving ------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Everything as JSON-ready objects (each model's ``ScoreResult.to_dict()``)."""
        return json_safe({"labels": list(self.labels), "settings": self.settings,
                          "summary": self.summary(), "kl": self.kl, "same_top": self.same_top,
                          "base": self.base.to_dict(), "other": self.other.to_dict()})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DivergenceResult:
        return cls(base=ScoreResult.from_dict(data["base"]),
                   other=ScoreResult.from_dict(data["other"]),
                   kl=np.asarray(data["kl"], np.float64),
                   same_top=np.asarray(data["same_top"], np.bool_),
                   labels=tuple(data.get("labels", ("base", "other"))),
                   settings=data.get("settings", {}))

    def __repr__(self) -> str:
        if not len(self):
            return f"<DivergenceResult {self.labels[1]} vs {self.labels[0]}: no tokens>"
        s = self.summary()
        state = "partial " if self.partial else ""
        return (f"<{state}DivergenceResult {self.labels[1]} vs {self.labels[0]}: "
                f"{len(self)} tokens, mean KL {s['mean_kld']:.4g} ± {s['mean_kld_se']:.2g} "
                f"nats, same top {100 * s['same_top_p']:.1f}%, "
                f"PPL ratio {s['ppl_ratio']:.4g}>")
