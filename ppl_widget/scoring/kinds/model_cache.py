"""The package's one cache folder: converted models (where they live, how an entry is keyed:
the GGUF file's content, so two environments with the same file share one copy) and ONNX
exports for live pages; what it holds and how it is emptied.  Standard library only
(filelock, which transformers brings, once an entry is made): ``ppl-widget cache`` imports
no torch."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: Converted copies, one folder per GGUF content hash.
CONVERTED_DIR = "converted"
#: ONNX exports for live pages (``onnx_export.py``), one folder per model weights' hash.
ONNX_DIR = "onnx"
#: What earlier versions wrote (keyed by the GGUF's install path): no longer read.
OLD_PATH_KEYED_DIR = "models"
#: sha256 of each GGUF file by (path, size, mtime), so a file is hashed once, not per load.
DIGESTS_FILE = "digests.json"
#: Written into each converted folder: which model it is and where it came from.
SOURCE_FILE = "ppl_widget_source.json"
_CHUNK = 1 << 20
#: The lock file beside an entry being made (``entry_lock``).
LOCK_SUFFIX = ".lock"
#: Which rule built a converted copy's tokenizer, part of its folder name: a copy made
#: before the GGUF tokenizer followed llama.cpp (no suffix) is never read again.
#: Bump it whenever ``gguf_tokenizer`` builds a different tokenizer.
TOKENIZER_RULE = "tok3"


def cache_root() -> Path:
    """``$PPL_WIDGET_CACHE``, else ``$XDG_CACHE_HOME/ppl_widget`` (``~/.cache/ppl_widget``)."""
    root = os.environ.get("PPL_WIDGET_CACHE")
    if root:
        return Path(root)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ppl_widget"


def file_sha256(path: Path) -> str:
    """The file's sha256 (read in 1 MiB chunks), remembered per (path, size, mtime) in
    the cache's ``digests.json``: a 100 MB file costs a fraction of a second once."""
    path = Path(path).resolve()
    st = path.stat()
    stamp = [st.st_size, st.st_mtime_ns]
    sidecar = cache_root() / DIGESTS_FILE
    known = _read_json(sidecar)
    entry = known.get(str(path))
    if isinstance(entry, dict) and entry.get("stamp") == stamp and \
            isinstance(entry.get("sha256"), str):
        return entry["sha256"]
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            digest.update(block)
    known[str(path)] = {"stamp": stamp, "sha256": digest.hexdigest()}
    with contextlib.suppress(OSError):  # a read-only cache: hashed again next time
        _write_json(sidecar, known)
    return digest.hexdigest()


def converted_dir(gguf: Path) -> Path:
    """The folder of ``gguf``'s converted copy (it may not exist yet): the file's content
    and the tokenizer rule (``TOKENIZER_RULE``)."""
    return cache_root() / CONVERTED_DIR / f"{file_sha256(gguf)[:32]}-{TOKENIZER_RULE}"


@contextlib.contextmanager
def entry_lock(entry: Path) -> Iterator[None]:
    """Held while one process makes the cache entry ``entry``: a second process (another
    kernel, a second test worker) waits, then finds the entry made instead of making it
    again.  Entries are written whole by a rename all the same, so a reader that takes no
    lock never sees half of one."""
    from filelock import FileLock  # a dependency of transformers; only the makers need it

    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(entry.parent / f".{entry.name}{LOCK_SUFFIX}"))
        lock.acquire()
    except OSError:  # a read-only cache: no lock; the maker's own write fails and says so
        yield
        return
    try:
        yield
    finally:
        lock.release()


def write_source(folder: Path, gguf: Path, warnings: list[str] | None = None) -> None:
    """Note in a converted folder which model it holds, for ``ppl-widget cache``, and
    the warnings its conversion gave (repeated by every load of the copy)."""
    _write_json(folder / SOURCE_FILE, {"model": Path(gguf).stem, "source": str(gguf),
                                       "warnings": list(warnings or [])})


def source_warnings(folder: Path) -> list[str]:
    """The warnings noted by ``write_source``."""
    found = _read_json(folder / SOURCE_FILE).get("warnings")
    return [str(w) for w in found] if isinstance(found, list) else []


@dataclass(frozen=True)
class CacheEntry:
    """One cached thing: a converted model (or an old, unused copy)."""

    model: str
    source: str
    size_bytes: int
    path: Path

    @property
    def size_mb(self) -> float:
        return self.size_bytes / 1e6


def cache_entries() -> list[CacheEntry]:
    """What the cache holds: converted copies, ONNX exports, then old path-keyed copies."""
    root = cache_root()
    entries = []
    for folder in sorted((root / CONVERTED_DIR).glob("*")):
        if not folder.is_dir():
            continue
        if folder.name.startswith(".tmp-"):
            entries.append(CacheEntry("?", "unfinished conversion", _size(folder), folder))
            continue
        info = _read_json(folder / SOURCE_FILE)
        source = str(info.get("source", "?"))
        if not folder.name.endswith("-" + TOKENIZER_RULE):
            source = "older conversion (tokenizer of an earlier rule), no longer used"
        entries.append(CacheEntry(str(info.get("model", "?")), source, _size(folder), folder))
    for folder in sorted((root / ONNX_DIR).glob("*")):
        if folder.is_dir():
            info = _read_json(folder / "source.json")
            variants = sorted(p.name.split(".")[1].split("-")[0] for p in folder.glob("*.onnx"))
            entries.append(CacheEntry(str(info.get("model", "?")),
                                      f"ONNX export for a live page ({', '.join(variants)})"
                                      if variants else "unfinished ONNX export",
                                      _size(folder), folder))
    for folder in sorted((root / OLD_PATH_KEYED_DIR).glob("*")):
        if folder.is_dir():
            name = folder.name.rsplit("-", 1)[0]
            entries.append(CacheEntry(name, "old path-keyed copy, no longer used",
                                      _size(folder), folder))
    return entries


def clear_cache() -> list[CacheEntry]:
    """Remove every entry and the digests file; return what was removed."""
    removed = cache_entries()
    for entry in removed:
        shutil.rmtree(entry.path, ignore_errors=True)
    root = cache_root()
    for name in (CONVERTED_DIR, ONNX_DIR, OLD_PATH_KEYED_DIR):
        for lock in (root / name).glob(f".*{LOCK_SUFFIX}"):
            with contextlib.suppress(OSError):
                lock.unlink()
        with contextlib.suppress(OSError):
            (root / name).rmdir()  # only if empty: nothing of anyone else's goes
    with contextlib.suppress(FileNotFoundError):
        (root / DIGESTS_FILE).unlink()
    return removed


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: dict) -> None:
    write_whole(path, json.dumps(data, indent=1).encode("utf-8"))


def write_whole(path: Path, data: bytes) -> None:
    """Whole or not at all (a temporary name in the folder, then a rename): a concurrent
    reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
