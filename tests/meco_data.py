"""Where the MECO reading-time data lies for the tests, and how its CSVs are read.

The data (MECO eye-tracking times merged with Wilcox et al. 2023's surprisal; see its
README) is not in the repository: it sits at ``../shared/data/meco`` beside the repository
root (CI's fresh clone has it there), or where ``PPL_WIDGET_MECO_DATA`` points. Without it
the tests that need it are skipped with the reason, except under CI (env ``CI`` set), where
its absence is a failure.
"""

from __future__ import annotations

import os
import pathlib

import pandas as pd
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
ENV = "PPL_WIDGET_MECO_DATA"


def meco_dir() -> pathlib.Path:
    """The data folder, or skip (fail under CI) saying where it was looked for."""
    path = pathlib.Path(os.environ[ENV]) if os.environ.get(ENV) else \
        ROOT.parent / "shared" / "data" / "meco"
    if not (path / "published.json").is_file():
        reason = (f"MECO data not found at {path} (set {ENV} to the folder holding "
                  "published.json, leakage/ and model_size/)")
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def read_meco(path: pathlib.Path) -> pd.DataFrame:
    """One MECO CSV as its README says to read it: words stay strings ("nan", "null"),
    only "NA" is missing."""
    return pd.read_csv(path, keep_default_na=False, na_values=["NA"],
                       dtype={"word.x": str, "word.y": str, "clean_word": str})
