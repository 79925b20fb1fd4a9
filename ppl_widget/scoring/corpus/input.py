"""The documents of a corpus: a folder of text files, a JSONL file, or a Hugging Face
``datasets`` dataset saved with ``save_to_disk``.  Ids are read up front (to check they
are unique and to shard by position); texts are read when a document is scored.  A
``context_field`` gives each record a context the model reads first (a string, or a chat
as a list of ``{"role", "content"}`` messages; null or absent: none), checked up front
where the records are read up front (JSONL)."""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ...core.extras import require
from ..runner.context import check_context

_DATASET_MARKERS = ("dataset_info.json", "state.json", "dataset_dict.json")


class Documents:
    """``ids`` in input order; ``item(i)``: the i-th document's text and its context (None
    without one)."""

    def __init__(self, source: str, ids: list[str], read: Callable[[int], tuple[str, Any]]):
        self.source = source
        self.ids = ids
        self._read = read
        seen: dict[str, int] = {}
        for i, doc_id in enumerate(ids):
            if doc_id in seen:
                raise ValueError(f"document ids must be unique: {doc_id!r} is document "
                                 f"{seen[doc_id]} and document {i} of {source}; choose "
                                 "another id field (--id-field)")
            seen[doc_id] = i

    def __len__(self) -> int:
        return len(self.ids)

    def text(self, i: int) -> str:
        return self._read(i)[0]

    def item(self, i: int) -> tuple[str, Any]:
        return self._read(i)


def _decode(data: bytes, name: str) -> str:
    try:
        return codecs.decode(data, "utf-8-sig")  # a BOM is not text
    except UnicodeDecodeError as exc:
        raise ValueError(f"{name} is not valid UTF-8: byte 0x{data[exc.start]:02x} at offset "
                         f"{exc.start}; convert it to UTF-8 first") from None


def _folder(path: Path, glob: str) -> Documents:
    files = sorted(p for p in path.glob(glob) if p.is_file()
                   and not any(part.startswith(".") for part in p.relative_to(path).parts))
    if not files:
        raise ValueError(f"the folder {str(path)!r} has no files matching {glob!r} "
                         "(hidden files are skipped); nothing to score")
    ids = [p.relative_to(path).as_posix() for p in files]

    def read(i: int) -> tuple[str, Any]:
        return _decode(files[i].read_bytes(), str(files[i])), None

    return Documents(str(path), ids, read)


def _context_of(rec: dict, context_field: str | None, where: str) -> Any:
    """A record's context, checked (None: the field is not asked for, absent or null)."""
    if context_field is None:
        return None
    try:
        return check_context(rec.get(context_field))
    except ValueError as exc:
        raise ValueError(f"{where}: the context field {context_field!r}: {exc}") from None


def _jsonl(path: Path, text_field: str, id_field: str | None,
           context_field: str | None) -> Documents:
    """Line offsets and ids in one pass; a record is parsed again when scored."""
    starts: list[int] = []
    ids: list[str] = []
    with open(path, "rb") as f:
        pos = 0
        for lineno, line in enumerate(f, 1):
            start, pos = pos, pos + len(line)
            if not line.strip():
                continue
            rec = _record(line, path, lineno)
            if not isinstance(rec.get(text_field), str):
                raise ValueError(f"{path}:{lineno}: the text field {text_field!r} must be a "
                                 f"string, got {type(rec.get(text_field)).__name__} "
                                 f"(fields: {sorted(rec)}); choose it with --text-field")
            _context_of(rec, context_field, f"{path}:{lineno}")
            if id_field is None:
                ids.append(str(len(ids)))
            elif id_field not in rec:
                raise ValueError(f"{path}:{lineno}: no id field {id_field!r} (fields: "
                                 f"{sorted(rec)}); choose it with --id-field, or omit it to "
                                 "number the documents from 0")
            else:
                ids.append(str(rec[id_field]))
            starts.append(start)
    if not ids:
        raise ValueError(f"{path} holds no JSON records; nothing to score")

    def read(i: int) -> tuple[str, Any]:
        with open(path, "rb") as f:
            f.seek(starts[i])
            rec = _record(f.readline(), path, None)
        return rec[text_field], _context_of(rec, context_field, str(path))

    return Documents(str(path), ids, read)


def _record(line: bytes, path: Path, lineno: int | None) -> dict:
    where = f"{path}:{lineno}" if lineno else str(path)
    try:
        rec = json.loads(_decode(line, where))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not a JSON object ({exc.msg} at column {exc.colno}); "
                         "a JSONL file holds one JSON object per line") from None
    if not isinstance(rec, dict):
        raise ValueError(f"{where}: each line must be a JSON object, got "
                         f"{type(rec).__name__}")
    return rec


def _dataset(path: Path, text_field: str, id_field: str | None, split: str | None,
             context_field: str | None) -> Documents:
    datasets = require("datasets", "reading a saved Hugging Face dataset")
    ds: Any = datasets.load_from_disk(str(path))
    if isinstance(ds, datasets.DatasetDict):
        if split is None:
            if len(ds) != 1:
                raise ValueError(f"{path} holds the splits {sorted(ds)}; choose one with "
                                 "--split")
            split = next(iter(ds))
        if split not in ds:
            raise ValueError(f"{path} has no split {split!r}; it has {sorted(ds)}")
        ds = ds[split]
    columns = list(ds.column_names)
    if text_field not in columns:
        raise ValueError(f"the dataset at {path} has no text column {text_field!r} (columns: "
                         f"{columns}); choose it with --text-field")
    if context_field is not None and context_field not in columns:
        raise ValueError(f"the dataset at {path} has no context column {context_field!r} "
                         f"(columns: {columns}); choose it with --context-field")
    if id_field == "id" and "id" not in columns:
        id_field = None  # the default: number the rows
    if id_field is not None and id_field not in columns:
        raise ValueError(f"the dataset at {path} has no id column {id_field!r} (columns: "
                         f"{columns}); choose it with --id-field, or omit it to number the "
                         "rows from 0")
    ids = ([str(v) for v in ds[id_field]] if id_field is not None
           else [str(i) for i in range(len(ds))])
    column = ds.select_columns([text_field] + ([context_field] if context_field else []))

    def read(i: int) -> tuple[str, Any]:
        row = column[i]
        text = row[text_field]
        where = f"row {i} of the dataset at {path}"
        if not isinstance(text, str):
            raise ValueError(f"{where}: {text_field!r} must be a string, got "
                             f"{type(text).__name__}")
        return text, _context_of(row, context_field, where)

    return Documents(str(path), ids, read)


def open_documents(source: str | os.PathLike | Sequence[Any] | dict[str, Any], *,
                   text_field: str = "text", id_field: str | None = "id",
                   split: str | None = None, glob: str = "**/*",
                   context_field: str | None = None) -> Documents:
    """The documents of ``source``: a folder of text files (id: the path inside the
    folder), a ``.jsonl`` file, a saved ``datasets`` dataset, or in Python a dict
    id -> text or a list of texts (ids "0", "1", ...); with ``context_field``, a dict or
    list of records (dicts with ``text_field`` and ``context_field``).

    ``id_field="id"`` (the default) falls back to numbering the documents from 0 when
    the records have no ``id``; any other id field must exist."""
    if isinstance(source, dict | list | tuple):
        name = "<dict>" if isinstance(source, dict) else "<list>"
        keys = list(source) if isinstance(source, dict) else list(range(len(source)))
        values = list(source.values()) if isinstance(source, dict) else list(source)
        items = [_in_memory(k, v, text_field, context_field) for k, v in zip(keys, values,
                                                                             strict=True)]
        return Documents(name, [str(k) for k in keys], lambda i: items[i])
    path = Path(os.fspath(source)).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"no corpus at {str(path)!r}: pass a folder of text files, a "
                                ".jsonl file, or a datasets dataset saved with save_to_disk")
    if path.is_dir() and any((path / m).is_file() for m in _DATASET_MARKERS):
        return _dataset(path, text_field, id_field, split, context_field)
    if path.is_dir():
        if context_field is not None:
            raise ValueError("a folder of text files has no context field: give the contexts "
                             "in a JSONL file or a dataset (a field beside the text)")
        return _folder(path, glob)
    if path.suffix in (".jsonl", ".ndjson") or path.name.endswith((".jsonl.txt",)):
        return _jsonl_default_id(path, text_field, id_field, context_field)
    raise ValueError(f"{str(path)!r} is a file but not a .jsonl file; pass a folder of text "
                     "files, a .jsonl file (one JSON object per line), or a saved dataset")


def _in_memory(key: Any, value: Any, text_field: str,
               context_field: str | None) -> tuple[str, Any]:
    """A document given in Python: a text, or with ``context_field`` a record."""
    if isinstance(value, str):
        return value, None
    if context_field is not None and isinstance(value, dict):
        if not isinstance(value.get(text_field), str):
            raise TypeError(f"document {key!r}: the record's {text_field!r} must be a str")
        return value[text_field], _context_of(value, context_field, f"document {key!r}")
    raise TypeError(f"document {key!r}: text must be a str"
                    + (" or a record (a dict)" if context_field else "")
                    + f", got {type(value).__name__}")


def _jsonl_default_id(path: Path, text_field: str, id_field: str | None,
                      context_field: str | None) -> Documents:
    """The default id field ``id`` is used when the first record has it."""
    if id_field == "id":
        with open(path, "rb") as f:
            first = next((line for line in f if line.strip()), b"")
        if not first or "id" not in _record(first, path, 1):
            id_field = None
    return _jsonl(path, text_field, id_field, context_field)
