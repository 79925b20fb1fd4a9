"""Reading-time data a user can get: MECO eye-tracking times merged with language-model
surprisal, as Wilcox et al. published them (EMNLP 2023: ``meco``, the leakage and
model-size studies; TACL 2023: ``xlang``, the link-shape study), read from a local copy
(``path=`` or ``$PPL_WIDGET_DATA``) or downloaded once at a pinned revision into the
package cache (fetch.py). Each reader reads the words as words ("nan" is a word)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from .fetch import ENV, ReadingDataError, data_file, sources

__all__ = ["ENV", "ReadingDataError", "data_file", "languages", "load_meco", "load_xlang",
           "meco_published"]

#: MECO's two studies in the EMNLP 2023 data
MECO_STUDIES = ("leakage", "model_size")


def languages(dataset: str, study: str | None = None) -> list[str]:
    """The language codes a dataset (``"meco"`` with its ``study``, or ``"xlang"``) has."""
    prefix = f"{dataset}/" + (f"{study}/" if study else "")
    if dataset not in sources():
        raise ReadingDataError(f"no dataset {dataset!r}; there are {sorted(sources())}")
    return sorted(Path(f).stem for f in sources()[dataset]["files"] if f.startswith(prefix)
                  and f.count("/") == prefix.count("/"))


def _relpath(dataset: str, lang: str, study: str | None = None) -> str:
    known = languages(dataset, study)
    if lang not in known:
        raise ReadingDataError(f"{dataset}{'/' + study if study else ''} has no language "
                               f"{lang!r}; it has {known}")
    return f"{dataset}/{study}/{lang}.csv" if study else f"{dataset}/{lang}.csv"


def load_meco(lang: str = "en", study: str = "leakage", *,
              path: str | os.PathLike | None = None, download: bool = True) -> pd.DataFrame:
    """One language of the MECO data of Wilcox, Meister, Cotterell and Pimentel (EMNLP
    2023): one row per word and model (``study="leakage"``: models ``taint_none``,
    ``taint_6``, ``taint_12``; ``"model_size"``: eight training sizes), ``word.x`` the word
    shown, ``gaze_rt`` / ``total_rt`` / ``firstfix_rt`` in ms, ``freq``, ``len``, ``surp``
    (bits). ``path``: a folder holding ``meco/`` (default ``$PPL_WIDGET_DATA``, else the
    cache or a download)."""
    if study not in MECO_STUDIES:
        raise ReadingDataError(f"study must be one of {list(MECO_STUDIES)}, not {study!r}")
    file = data_file(_relpath("meco", lang, study), path=path, download=download)
    return pd.read_csv(file, keep_default_na=False, na_values=["NA"],
                       dtype={"word.x": str, "word.y": str, "clean_word": str})


def load_xlang(lang: str = "en", *, path: str | os.PathLike | None = None,
               download: bool = True) -> pd.DataFrame:
    """One language of the data of Wilcox, Pimentel, Meister, Cotterell and Levy (TACL
    2023): one row per word and model (``mgpt_sc``, ``mgpt_lc``, ``monot_30m``,
    ``monot_all``) with ``surp``, ``ent``, ``freq`` (unigram surprisal), ``len`` and their
    ``prev_`` / ``prev2_`` columns, ``gaze_rt`` etc. ``path``: a folder holding ``xlang/``."""
    file = data_file(_relpath("xlang", lang), path=path, download=download)
    return pd.read_csv(file, keep_default_na=False, na_values=["NA"], index_col=0,
                       dtype={"ia": str, "model_ia": str})


def meco_published() -> dict[str, Any]:
    """The EMNLP 2023 paper's published numbers (read from its figures, shipped with the
    package): ``model_size_study`` points and the leakage study's pooled means."""
    return json.loads(Path(__file__).with_name("meco_published.json").read_text("utf-8"))
