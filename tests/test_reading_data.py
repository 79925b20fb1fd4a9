"""Reading-time data a user can get (ppl_widget.datasets): a local copy by path= or
$PPL_WIDGET_DATA, every file checked against the pinned sha256, and a download once into
the cache (the network replaced here by a fake: there is none), failing offline with a
message that names both ways."""

from __future__ import annotations

import hashlib
import json
import pathlib
import urllib.error

import pandas as pd
import pytest
from meco_data import data_dir, meco_dir, read_meco

from ppl_widget import ReadingDataError, load_meco, load_xlang, meco_published
from ppl_widget.scoring import datasets
from ppl_widget.scoring.datasets import fetch


@pytest.fixture
def shared():
    meco_dir()  # skips (fails under CI) without the shared copy
    return data_dir()


@pytest.fixture
def no_local(monkeypatch, tmp_path):
    """No local copy named, an empty cache of our own."""
    monkeypatch.delenv("PPL_WIDGET_DATA", raising=False)
    monkeypatch.setenv("PPL_WIDGET_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "data"


def test_every_pinned_file_is_the_shared_copy(shared):
    for name, dataset in fetch.sources().items():
        assert len(dataset["revision"]) == 40 and "{revision}" in dataset["url"]
        for relpath, file in dataset["files"].items():
            data = (shared / relpath).read_bytes()
            assert hashlib.sha256(data).hexdigest() == file["sha256"], relpath
            assert relpath.startswith(name + "/")
    on_disk = {str(p.relative_to(shared)) for p in shared.glob("*/**/*.csv")}
    assert on_disk == {f for d in fetch.sources().values() for f in d["files"]}
    assert meco_published() == json.loads((shared / "meco" / "published.json").read_text())


def test_path_and_env_var_read_the_local_copy(shared, monkeypatch):
    monkeypatch.delenv("PPL_WIDGET_DATA", raising=False)
    en = load_meco("en", path=shared)
    pd.testing.assert_frame_equal(en, read_meco(shared / "meco" / "leakage" / "en.csv"))
    assert en["word.x"].map(type).eq(str).all() and (en["word.x"] == "nan").any()
    monkeypatch.setenv("PPL_WIDGET_DATA", str(shared))
    ko = load_xlang("ko")
    assert set(ko["model"]) == {"mgpt_lc", "mgpt_sc", "monot_30m", "monot_all"}
    assert len(load_meco("ee", "model_size")) > 0
    assert datasets.languages("meco", "model_size") == ["ee", "fi", "ko", "tr"]


def test_a_local_copy_missing_a_file_or_another_version_is_an_error(shared, tmp_path,
                                                                      monkeypatch):
    folder = tmp_path / "mine"
    (folder / "meco" / "leakage").mkdir(parents=True)
    monkeypatch.setenv("PPL_WIDGET_DATA", str(folder))
    with pytest.raises(ReadingDataError, match=r"leakage/en.csv is missing: \$PPL_WIDGET_DATA") \
            as info:
        load_meco("en")
    assert "raw.githubusercontent.com/rycolab/quality-power-hypothesis" in str(info.value)
    changed = (shared / "meco" / "leakage" / "en.csv").read_bytes().replace(b"615.3", b"615.4")
    (folder / "meco" / "leakage" / "en.csv").write_bytes(changed)
    with pytest.raises(ReadingDataError, match=r"has sha256 [0-9a-f]{64}, not [0-9a-f]{64} "
                                               r"\(the pinned copy's\)"):
        load_meco("en")


def test_download_once_checked_then_from_the_cache(shared, no_local, monkeypatch):
    calls = []

    def fake(url):
        calls.append(url)
        return (shared / "xlang" / "en.csv").read_bytes()  # the upstream file, unchanged

    monkeypatch.setattr(fetch, "fetch_url", fake)
    first = load_xlang("en")
    assert calls == ["https://raw.githubusercontent.com/wilcoxeg/xlang-processing/"
                     "73a2cd845ccc69f5706953b02b3f94ff6fcdb139/data/merged_data/en.csv"]
    assert (no_local / "xlang" / "en.csv").read_bytes() == (shared / "xlang" / "en.csv") \
        .read_bytes()
    pd.testing.assert_frame_equal(load_xlang("en"), first)
    assert len(calls) == 1  # the second read came from the cache
    (no_local / "xlang" / "en.csv").write_bytes(b"damaged")
    with pytest.raises(ReadingDataError, match="delete it and it is downloaded again"):
        load_xlang("en")


def test_a_download_that_is_not_the_pinned_file_is_not_kept(shared, no_local, monkeypatch):
    monkeypatch.setattr(fetch, "fetch_url", lambda url: b"lang,word\nen,changed\n")
    with pytest.raises(ReadingDataError, match=r"the download of https://\S+/en.csv has "
                                               r"sha256 .*nothing was kept"):
        load_xlang("en")
    assert not (no_local / "xlang").exists() or not any((no_local / "xlang").iterdir())


def test_offline_names_both_ways(no_local, monkeypatch):
    def offline(url):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(fetch, "fetch_url", offline)
    with pytest.raises(ReadingDataError) as info:
        load_meco("fi")
    message = str(info.value)
    # one plain message, the ways first: no urllib traceback chained before it, and a
    # notebook (IPython) shows the message alone
    assert message.startswith("Either point $PPL_WIDGET_DATA")
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert info.value._render_traceback_() == [f"ReadingDataError: {message}"]
    for part in ("Could not download meco/leakage/fi.csv", "no network", "$PPL_WIDGET_DATA",
                 "meco/leakage/fi.csv under it", "downloaded once from https://",
                 "MECO/tainted_meco_merged/fi_merged.csv", str(no_local)):
        assert part in message, part
    with pytest.raises(ReadingDataError, match="download=False"):
        load_meco("fi", download=False)


def test_the_meco_columns_are_selected_as_the_pinned_copies_were_made(shared):
    # an R-written file (quoted cells, row names, more columns) -> the pinned copy's bytes
    local = (shared / "meco" / "leakage" / "en.csv").read_bytes()
    frame = pd.read_csv(shared / "meco" / "leakage" / "en.csv", dtype=str,
                        keep_default_na=False)
    upstream = frame.iloc[:, ::-1].assign(extra="x")
    upstream.insert(0, "", [str(i) for i in range(1, len(frame) + 1)])
    raw = upstream.to_csv(index=False, quoting=1).encode()  # every cell quoted, as R does
    columns = fetch.sources()["meco"]["files"]["meco/leakage/en.csv"]["columns"]
    assert fetch.select_columns(raw, columns) == local


@pytest.mark.parametrize("call, message", [
    (lambda: load_meco("xx"), r"meco/leakage has no language 'xx'; it has \['du', 'en'"),
    (lambda: load_meco("en", study="size"), r"study must be one of \['leakage', 'model_size'\]"),
    (lambda: load_xlang("no"), r"xlang has no language 'no'"),
    (lambda: fetch.data_file("meco/x.csv"), r"no data file 'meco/x.csv'; the pinned files"),
    (lambda: datasets.languages("dundee"), r"no dataset 'dundee'; there are \['meco', 'xlang'\]"),
])
def test_bad_names_are_errors_that_list_what_there_is(call, message):
    with pytest.raises(ReadingDataError, match=message):
        call()


def test_the_package_ships_the_sources_and_published_numbers():
    import ppl_widget

    assert ppl_widget.datasets.load_meco is load_meco
    folder = pathlib.Path(fetch.__file__).parent
    assert (folder / "sources.json").is_file() and (folder / "meco_published.json").is_file()
    assert "model_size_study" in meco_published()
