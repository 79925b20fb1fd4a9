"""Does a model's surprisal predict reading times? ``predictive_power`` scores the words of
a reading-time table with each model (``score_words``) and reports ΔLL per model and
reading-time measure (core/reading/predictive_power.py's ``delta_ll``), as docs/reading_times.md
explains.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...core.extras import MissingExtraError
from ...core.metrics import LN2
from ...core.reading.fold_layout import FoldBy
from ...core.reading.predictive_power import DeltaLL, delta_ll
from ...core.reading.reading_table import (
    DEFAULT_BASELINE,
    ReadingSpec,
    check_reading_table,
    warn_label_mismatch,
)
from ...core.reading.spillover import ReadingTimeError, group_codes
from ...core.reading.word_frequency import letters_lengths, zipf_frequencies

#: the tidy table's columns, one row per model and reading-time measure
TIDY_COLUMNS = ["model", "rt", "delta_ll", "se", "ci_low", "ci_high", "n",
                "mean_surprisal_bits", "word_perplexity"]


def predictive_power(reading: pd.DataFrame, models: Any, *, rt: str | Sequence[str] = "gaze_rt",
                     word: str = "word", by: str | Sequence[str] | None = None,
                     baseline: str | Sequence[str] = DEFAULT_BASELINE, spillover: int = 2,
                     folds: int = 10, fold_by: FoldBy = "group", seed: int | None = None,
                     bow_correction: bool = False, language: str = "en",
                     rt_word: str | None = None, **score_options: Any) -> pd.DataFrame:
    """ΔLL of each model's surprisal (bits) over a ``baseline`` regression of each ``rt``
    column, with ``spillover`` previous words, cross-validated over ``folds`` (``group``:
    whole ``by`` texts; ``contiguous`` is Wilcox et al. 2023's choice).

    ``models``: one model (anything ``load_model`` takes, an ``NGramModel``...), a list or
    a ``{label: model}`` dict. ``baseline``: ``"length+frequency"`` (computed from
    ``word`` when the table lacks ``length`` / ``frequency``: characters without
    punctuation, wordfreq Zipf in ``language``) or the table's own columns.
    ``score_options`` go to ``score_words``. Returns the tidy table (``TIDY_COLUMNS``);
    ``.attrs["per_word"]`` holds every word's numbers for plots and ``.attrs["results"]``
    each ``(model, rt)``'s ``DeltaLL``.
    """
    from ..kinds.models import as_loaded
    from .words import score_words

    spec = check_reading_table(reading, rt=rt, word=word, by=by, baseline=baseline,
                               rt_word=rt_word)
    warn_label_mismatch(reading, spec.word, spec.rt_word)
    table = _analysis_table(reading, spec, language)
    groups = group_codes(reading, spec.by)
    to_score = pd.DataFrame({"word": reading[spec.word].to_numpy()}, index=reading.index)
    if groups is not None:
        to_score["group"] = groups
    rows, per_word, results = [], [], {}
    for label, model in _labelled(models):
        lm = as_loaded(model)
        label = label if label is not None else lm.name
        scored = score_words(to_score, lm, by=None if groups is None else "group",
                             bow_correction=bow_correction, **score_options)
        _check_every_word_scored(scored, reading, spec.word)
        column = "surprisal_corrected_bits" if bow_correction else "surprisal_bits"
        table["surprisal_bits"] = scored[column].to_numpy()
        for measure in spec.rt:
            result = delta_ll(table, measure, ["surprisal_bits"], spec.baseline,
                              spillover=spillover, by=None if groups is None else "_group",
                              folds=folds, fold_by=fold_by, seed=seed)
            results[(label, measure)] = result
            rows.append(_tidy_row(label, measure, result, table))
            per_word.append(_per_word(label, measure, result, table, reading, spec))
    out = pd.DataFrame(rows, columns=TIDY_COLUMNS)
    settings = {"spillover": spillover, "folds": folds, "fold_by": fold_by, "seed": seed,
                "baseline": spec.baseline, "computed": spec.computed,
                "bow_correction": bow_correction, "language": language}
    words = pd.concat(per_word, ignore_index=True)
    # what the reading view and the charts need, on the frame they read (plain numbers:
    # pandas deep-copies attrs on every operation)
    words.attrs.update(by=spec.by or [], settings=settings,
                       frequency_scale=_frequency_scale(table, spec),
                       delta_ll={key: summary(r) for key, r in results.items()})
    out.attrs.update(per_word=words, results=results, by=spec.by or [], settings=settings)
    return out


def summary(result: DeltaLL) -> dict[str, float | int]:
    """A ΔLL result's numbers as plain values: mean, its 95% interval, the words used and
    dropped."""
    low, high = result.ci()
    return {"delta_ll": result.mean, "ci_low": low, "ci_high": high, "n": result.n,
            "n_dropped": len(result.dropped)}


def _frequency_scale(table: pd.DataFrame, spec: ReadingSpec) -> str | None:
    """``"Zipf"`` when the per-word ``frequency`` is wordfreq's (computed), else None (the
    table's own column, on a scale only its owner knows)."""
    own = "frequency" in spec.baseline and "frequency" not in spec.computed
    return None if own or table["frequency"].isna().all() else "Zipf"


def _labelled(models: Any) -> list[tuple[str | None, Any]]:
    """(label or None, model) for one model, a list of them or a ``{label: model}`` dict."""
    if isinstance(models, Mapping):
        if not models:
            raise ReadingTimeError("models is an empty dict: name at least one model")
        return [(str(k), v) for k, v in models.items()]
    if isinstance(models, (list, tuple)):
        if not models:
            raise ReadingTimeError("models is an empty list: name at least one model")
        return [(None, m) for m in models]
    return [(None, models)]


def _analysis_table(reading: pd.DataFrame, spec: ReadingSpec, language: str) -> pd.DataFrame:
    """The columns the regressions read, under fixed names: the RT measures, the baseline
    (``length`` / ``frequency`` computed where missing), ``_group``; plus ``length`` and
    ``frequency`` for the per-word frame (frequency NaN without wordfreq, unless used)."""
    words = reading[spec.word].astype(str)
    table = pd.DataFrame(index=reading.index)
    for name in dict.fromkeys(spec.rt + spec.baseline):
        if name not in spec.computed:
            table[name] = reading[name]
    if "length" not in table:
        table["length"] = letters_lengths(words)
    if "frequency" not in table:
        try:
            zipf = zipf_frequencies(words, language, purpose="the frequency baseline")
            table["frequency"] = words.map(zipf).to_numpy(dtype=np.float64)
        except MissingExtraError:
            if "frequency" in spec.baseline:
                raise
            table["frequency"] = np.nan
    if spec.by is not None:
        table["_group"] = group_codes(reading, spec.by)
    return table


def _check_every_word_scored(scored: pd.DataFrame, reading: pd.DataFrame, word: str) -> None:
    """Every word got at least one token (rule: a word's surprisal is the sum over its
    tokens; a word with none has no surprisal to regress on)."""
    empty = np.flatnonzero(scored["n_tokens"].to_numpy() == 0)
    if len(empty):
        labels = reading.index[empty].tolist()
        shown = ", ".join(f"{r!r}: {reading.at[r, word]!r}" for r in labels[:8])
        raise ReadingTimeError(f"{len(labels)} word(s) got no token from the tokenizer, so "
                               f"they have no surprisal: {shown} (merge them into a "
                               "neighbour or drop them)")


def _tidy_row(label: str, measure: str, result: DeltaLL, table: pd.DataFrame) -> list[Any]:
    low, high = result.ci()
    bits = table.loc[result.per_word.index, "surprisal_bits"].to_numpy()
    mean_bits = float(bits.mean()) if len(bits) else np.nan
    return [label, measure, result.mean, result.se, low, high, result.n, mean_bits,
            float(np.exp(mean_bits * LN2))]


def _per_word(label: str, measure: str, result: DeltaLL, table: pd.DataFrame,
              reading: pd.DataFrame, spec: ReadingSpec) -> pd.DataFrame:
    """Every word of the table with its numbers under this model and measure (dropped
    words too, with NaN regression columns and their reason)."""
    out = pd.DataFrame({"model": label, "rt": measure}, index=reading.index)
    for name in spec.by or []:
        out[name] = reading[name]
    out["row"] = reading.index
    out["word"] = reading[spec.word]
    out["rt_value"] = table[measure]
    for name in ("surprisal_bits", "frequency", "length"):
        out[name] = table[name]
    fitted = result.per_word.reindex(reading.index)
    for name in ("rt_predicted", "rt_residual", "ll_baseline", "ll_target", "delta_ll"):
        out[name] = fitted[name]
    out["fold"] = fitted["fold"].astype("Int64")
    out["dropped"] = result.dropped["reason"].reindex(reading.index).fillna("")
    return out
