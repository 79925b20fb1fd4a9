"""Where the reading-time data lies for the tests, and how its CSVs are read.

The data (MECO eye-tracking times merged with Wilcox et al. 2023's surprisal; see its
README) is not in the repository: it sits at ``../shared/data`` beside the repository root
(CI's fresh clone has it there), or where ``PPL_WIDGET_DATA`` points: the folder holding
``meco/`` and ``xlang/``, which ``ppl_widget.load_meco`` / ``load_xlang`` read (conftest.py
sets the variable to the shared copy when it is unset, so notebooks run by the tests read
it too). Without it the tests that need it are skipped with the reason, except under CI
(env ``CI`` set), where its absence is a failure.
"""

from __future__ import annotations

import os
import pathlib

import pandas as pd
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
ENV = "PPL_WIDGET_DATA"
SHARED = ROOT.parent / "shared" / "data"


def data_dir() -> pathlib.Path:
    """The folder holding ``meco/`` and ``xlang/``: ``$PPL_WIDGET_DATA``, else the shared
    copy beside the repository (it may not exist)."""
    return pathlib.Path(os.environ[ENV]) if os.environ.get(ENV) else SHARED


def meco_dir() -> pathlib.Path:
    """The MECO folder, or skip (fail under CI) saying where it was looked for."""
    path = data_dir() / "meco"
    if not (path / "published.json").is_file():
        reason = (f"MECO data not found at {path} (set {ENV} to the folder holding meco/ "
                  "with published.json, leakage/ and model_size/)")
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def read_meco(path: pathlib.Path) -> pd.DataFrame:
    """One MECO CSV as its README says to read it: words stay strings ("nan", "null"),
    only "NA" is missing."""
    return pd.read_csv(path, keep_default_na=False, na_values=["NA"],
                       dtype={"word.x": str, "word.y": str, "clean_word": str})
