"""Where a reading-time data file comes from: a local copy (``path=`` or the folder
``$PPL_WIDGET_DATA`` names), else the package cache, else downloaded once from its public
source at the pinned revision (``sources.json``), checked against its sha256 and kept in
the cache. Every file is checked against the sha256 of the pinned copy wherever it comes
from, so the numbers computed on it are the numbers of that revision.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import urllib.error
import urllib.request
from functools import cache
from pathlib import Path
from typing import Any

from ..kinds.model_cache import CacheEntry, cache_root, write_whole

#: the folder holding ``meco/`` and ``xlang/`` (a copy of the data a user already has)
ENV = "PPL_WIDGET_DATA"
#: the cache's sub-folder for downloaded data
CACHE_DIR = "data"
_TIMEOUT_S = 60


class ReadingDataError(OSError):
    """A data file that cannot be had: missing from the folder named, not the pinned copy
    (its sha256 differs), or not downloadable (offline). The message names the ways to
    get it."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for it (a notebook's first cell, offline): the message
        alone, no traceback. It is a plain fact about the data, not a bug to trace."""
        return [f"{type(self).__name__}: {self}"]


@cache
def sources() -> dict[str, Any]:
    """The pinned sources: per dataset its repository, revision, URL pattern and files
    (local path -> source path, sha256, the columns kept)."""
    return json.loads((Path(__file__).with_name("sources.json")).read_text(encoding="utf-8"))


def entry(relpath: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(dataset, file) of ``relpath`` (``"meco/leakage/en.csv"``), or an error naming the
    files there are."""
    dataset = sources().get(relpath.split("/", 1)[0])
    if dataset is None or relpath not in dataset["files"]:
        known = [f for d in sources().values() for f in d["files"]]
        raise ReadingDataError(f"no data file {relpath!r}; the pinned files are {known}")
    return dataset, dataset["files"][relpath]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _local_folder(path: str | os.PathLike | None) -> tuple[Path, str] | None:
    """The folder of a local copy and how it was named (for messages), if any."""
    if path is not None:
        return Path(path), f"path={str(path)!r}"
    if os.environ.get(ENV):
        return Path(os.environ[ENV]), f"${ENV} ({os.environ[ENV]})"
    return None


def _ways(relpath: str, url: str) -> str:
    return (f"Either point ${ENV} (or path=) to a folder holding a copy of the data "
            f"({relpath} under it), or let it be downloaded once from {url} into "
            f"{cache_root() / CACHE_DIR} (needs the network).")


def _check(data: bytes, want: str, where: str, fix: str) -> bytes:
    got = sha256(data)
    if got != want:
        raise ReadingDataError(f"{where} has sha256 {got}, not {want} (the pinned copy's): "
                               f"it is another version of the file or a damaged one; {fix}")
    return data


def data_file(relpath: str, *, path: str | os.PathLike | None = None,
              download: bool = True) -> Path:
    """A checked copy of the data file ``relpath`` (``"meco/leakage/en.csv"``): from
    ``path`` or ``$PPL_WIDGET_DATA`` when either is given (then only there), else the
    cache, else downloaded into the cache (unless ``download=False``)."""
    dataset, file = entry(relpath)
    url = dataset["url"].format(revision=dataset["revision"], source=file["source"])
    local = _local_folder(path)
    if local is not None:
        folder, named = local
        target = folder / relpath
        if not target.is_file():
            raise ReadingDataError(f"{target} is missing: {named} names the folder of a "
                                   f"local copy, which should hold {relpath}. "
                                   + _ways(relpath, url))
        _check(target.read_bytes(), file["sha256"], str(target),
               f"replace it with the pinned copy (from {url})")
        return target
    cached = cache_root() / CACHE_DIR / relpath
    if cached.is_file():
        _check(cached.read_bytes(), file["sha256"], str(cached),
               "delete it and it is downloaded again")
        return cached
    if not download:
        raise ReadingDataError(f"{relpath} is neither in a local copy nor in the cache, and "
                               "download=False. " + _ways(relpath, url))
    try:
        raw = fetch_url(url)
    except (urllib.error.URLError, OSError, TimeoutError) as e:
        # the ways first; urllib's own traceback says no more than its message (from None)
        raise ReadingDataError(_ways(relpath, url) + f" (Offline? Could not download "
                               f"{relpath}: {e}.)") from None
    want = file.get("source_sha256", file["sha256"])
    _check(raw, want, f"the download of {url}", "nothing was kept; try again later")
    data = _check(select_columns(raw, file["columns"]) if "columns" in file else raw,
                  file["sha256"], f"{relpath} made from {url}", "nothing was kept")
    write_whole(cached, data)
    return cached


def cached_data() -> list[CacheEntry]:
    """The data files downloaded into the package cache, one entry per file (what
    ``ppl-widget cache`` lists beside the models)."""
    folder = cache_root() / CACHE_DIR
    files = sorted(f for f in folder.rglob("*") if f.is_file()) if folder.is_dir() else []
    return [CacheEntry("data", f.relative_to(folder).as_posix(), f.stat().st_size, f)
            for f in files]


def clear_data() -> list[CacheEntry]:
    """Remove the downloaded data (the next load downloads it again); what was removed."""
    removed = cached_data()
    shutil.rmtree(cache_root() / CACHE_DIR, ignore_errors=True)
    return removed


def fetch_url(url: str) -> bytes:
    """The bytes at ``url`` (tests replace this function: there is no network there)."""
    with urllib.request.urlopen(url, timeout=_TIMEOUT_S) as response:  # noqa: S310
        return response.read()


def select_columns(raw: bytes, columns: list[str]) -> bytes:
    """The CSV's ``columns`` in that order, every cell's text as it was (R's quotes
    dropped where a cell needs none): the pinned copies were made so."""
    rows = csv.reader(io.StringIO(raw.decode("utf-8")))
    header = next(rows)
    missing = [c for c in columns if c not in header]
    if missing:
        raise ReadingDataError(f"the downloaded file has no column(s) {missing}")
    index = [header.index(c) for c in columns]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([row[i] for i in index])
    return out.getvalue().encode("utf-8")
