"""delta_ll reproduces Wilcox et al. (2023)'s published ΔLL on the MECO data they used.

Every point of ``published.json`` whose data is in the folder: the 96 model-size points
(ee, fi, ko, tr x 8 models x surprisal / Rényi / both: the mean and both ends of the 95%
interval) and the leakage study's three pooled 11-language means, within 2e-5, with the
paper's settings (gaze_rt; freq + len with two words of spillover within each text;
ten contiguous folds; model-size study: freq = log of the raw count). The data is
outside the repository: see tests/meco_data.py.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from meco_data import meco_dir, read_meco

from ppl_widget import delta_ll

TOLERANCE = 2e-5
TARGETS = {"surprisal": ["surp"], "renyi": ["renyi"], "surprisal+renyi": ["surp", "renyi"]}


@pytest.fixture(scope="module")
def data():
    return meco_dir()


def test_model_size_study_every_published_point(data):
    published = json.loads((data / "published.json").read_text())["model_size_study"]
    langs = sorted({p["lang"] for p in published if (data / "model_size" /
                                                      f"{p['lang']}.csv").is_file()})
    assert langs == ["ee", "fi", "ko", "tr"]
    checked, misses = 0, []
    for lang in langs:
        frame = read_meco(data / "model_size" / f"{lang}.csv")
        frame["freq"] = np.log(frame["freq"])  # the model-size study's frequency
        models = dict(tuple(frame.groupby("model", sort=False)))
        for point in (p for p in published if p["lang"] == lang):
            result = delta_ll(models[point["model"]], "gaze_rt", TARGETS[point["target"]],
                              ["freq", "len"], by="sample_id")
            low, high = result.ci()
            got = np.array([result.mean, low, high])
            want = np.array([point["delta_ll"], point["ci_low"], point["ci_high"]])
            if np.abs(got - want).max() > TOLERANCE:
                misses.append((point, got.tolist()))
            checked += 1
    assert checked == 96
    assert not misses, misses


def test_leakage_study_pooled_means(data):
    """The leakage study's target is surprisal and Rényi entropy together (its R
    script's target formula), each language's words pooled per model."""
    published = json.loads((data / "published.json").read_text())[
        "leakage_study_pooled_11_languages"]
    pooled: dict[str, list[np.ndarray]] = {name: [] for name in published}
    files = sorted((data / "leakage").glob("*.csv"))
    assert len(files) == 11
    for path in files:
        for model, rows in read_meco(path).groupby("model", sort=False):
            result = delta_ll(rows, "gaze_rt", ["surp", "renyi"], ["freq", "len"],
                              by="sample_id")
            pooled[model].append(result.per_word["delta_ll"].to_numpy())
    for name, want in published.items():
        words = np.concatenate(pooled[name])
        assert abs(words.mean() - want["delta_ll"]) < TOLERANCE, (name, words.mean())
        se = words.std(ddof=1) / np.sqrt(len(words))
        assert abs(se - want["se"]) < TOLERANCE, (name, se)
