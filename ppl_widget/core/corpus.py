"""A scored corpus on disk: one Parquet row per document, read back lazily.

Pure (numpy; pyarrow and pandas imported inside functions).  Layout of the file
written by ``score_corpus`` (``ppl_widget/scoring/corpus.py``):

* one row per document, in input order: ``id`` (string), ``index`` (input position),
  ``text``, the document's metrics (``METRIC_KEYS`` plus ``n_eos`` and
  ``n_unscored_tokens``), ``settings`` (JSON), ``context`` (JSON: what the model read
  before the text, a string or a chat; null without one), ``total_tokens``,
  ``elapsed_s``, ``bow_prob_end``;
* one list column per per-token array of ``ScoreResult`` (``TOKEN_ARRAYS``: token_ids,
  offsets, surprisal, entropy, rank, context_length, topk_ids, topk_probs, units,
  is_eos, bow_prob, ...), two-dimensional arrays flattened row-major (their widths are
  in the file's metadata), plus ``unscored_token_ids``, ``unscored_offsets``,
  ``vocab_ids``/``vocab_text``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from .extras import require
from .metrics import METRIC_KEYS, objective_metrics, summarize
from .result import TOKEN_ARRAYS, ScoreResult

#: Version of the layout above, stored in the file's metadata.
FORMAT_VERSION = 1
#: Key of the file-level metadata in the Parquet schema.
META_KEY = b"ppl_widget"
#: Per-document metric columns.
DOC_METRICS = (*METRIC_KEYS, "n_eos", "n_unscored_tokens")
#: Columns that are not per-token arrays (read eagerly by ``open_corpus``).
SCALAR_COLUMNS = ("id", "index", *DOC_METRICS, "total_tokens", "elapsed_s", "bow_prob_end")

_ARROW_TYPES = {np.int64: "int64", np.float64: "float64", np.bool_: "bool_"}


def _widths(result: ScoreResult) -> dict[str, int]:
    """Columns of each two-dimensional per-token array (offsets 2, units 3, top-k k)."""
    return {k: int(getattr(result, k).shape[1]) for k in TOKEN_ARRAYS
            if getattr(result, k).ndim == 2}


def results_table(rows: list[tuple[int, str, ScoreResult]], settings: dict[str, Any]) -> Any:
    """A pyarrow Table of ``(index, id, result)`` rows in the layout above."""
    import pyarrow as pa

    def lists(arrays: list[np.ndarray], dtype: Any) -> Any:
        flat = [np.ascontiguousarray(a, dtype=dtype).ravel() for a in arrays]
        offsets = np.zeros(len(flat) + 1, dtype=np.int64)
        np.cumsum([len(a) for a in flat], out=offsets[1:])
        values = np.concatenate(flat) if flat else np.zeros(0, dtype)
        return pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(values))

    results = [r for _, _, r in rows]
    metrics = [r.metrics() for r in results]
    cols: dict[str, Any] = {
        "id": pa.array([i for _, i, _ in rows], pa.string()),
        "index": pa.array([i for i, _, _ in rows], pa.int64()),
        "text": pa.array([r.text for r in results], pa.large_string()),
    }
    for key in DOC_METRICS:
        kind = pa.int64() if key.startswith("n_") else pa.float64()
        cols[key] = pa.array([m[key] for m in metrics], kind)
    cols["total_tokens"] = pa.array([r.total_tokens for r in results], pa.int64())
    cols["elapsed_s"] = pa.array([r.elapsed_s for r in results], pa.float64())
    cols["bow_prob_end"] = pa.array([r.bow_prob_end for r in results], pa.float64())
    cols["settings"] = pa.array([json.dumps(r.settings, sort_keys=True) for r in results],
                                pa.string())
    # what the model read before the text (a string or a chat, as JSON), or null
    cols["context"] = pa.array([None if r.context is None else json.dumps(r.context)
                                for r in results], pa.large_string())
    for key, dtype in TOKEN_ARRAYS.items():
        cols[key] = lists([getattr(r, key) for r in results], dtype)
    cols["unscored_token_ids"] = lists([r.unscored_token_ids for r in results], np.int64)
    cols["unscored_offsets"] = lists([r.unscored_offsets for r in results], np.int64)
    vocab = [sorted(r.vocab.items()) for r in results]
    cols["vocab_ids"] = lists([np.array([k for k, _ in v], np.int64) for v in vocab], np.int64)
    cols["vocab_text"] = pa.array([[t for _, t in v] for v in vocab],
                                  pa.large_list(pa.large_string()))
    widths = _widths(results[0]) if results else {}
    meta = {"format": FORMAT_VERSION, "settings": settings, "widths": widths}
    table = pa.table(cols)
    return table.replace_schema_metadata({META_KEY: json.dumps(meta, sort_keys=True)})


def write_table(table: Any, path: str, *, row_group_docs: int = 64) -> None:
    """Write ``table`` to ``path`` atomically (a temporary file, fsync, rename): a kill at
    any moment leaves either no file or the whole file."""
    import pyarrow.parquet as pq

    tmp = f"{path}.tmp-{os.getpid()}"
    pq.write_table(table, tmp, row_group_size=max(1, row_group_docs), compression="zstd")
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(os.path.dirname(os.path.abspath(path)))


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # some platforms cannot open directories
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def file_metadata(path: str) -> dict[str, Any]:
    """The ``ppl_widget`` metadata of a corpus file (format, settings, widths)."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    if META_KEY not in meta:
        raise ValueError(f"{path} is a Parquet file but not a ppl-widget corpus "
                         "(no ppl_widget metadata); write one with score_corpus")
    return json.loads(meta[META_KEY])


def row_to_result(row: dict[str, Any], widths: dict[str, int]) -> ScoreResult:
    """One row (a dict of column -> Python/numpy values) back to a ``ScoreResult``."""
    settings = json.loads(row["settings"])
    n = len(row["token_ids"])
    arrays = {}
    for key, dtype in TOKEN_ARRAYS.items():
        values = np.asarray(row[key], dtype=dtype)
        if key in widths:
            values = values.reshape(n, widths[key])
        arrays[key] = values
    vocab = dict(zip(np.asarray(row["vocab_ids"]).tolist(), row["vocab_text"], strict=True))
    bow_end = row["bow_prob_end"]
    context = row.get("context")  # files written before contexts have no such column
    return ScoreResult(
        text=row["text"], **arrays, vocab=vocab,
        unscored_token_ids=np.asarray(row["unscored_token_ids"], np.int64),
        unscored_offsets=np.asarray(row["unscored_offsets"], np.int64).reshape(-1, 2),
        settings=settings, partial=False, total_tokens=int(row["total_tokens"]),
        elapsed_s=float(row["elapsed_s"]),
        bow_prob_end=math.nan if bow_end is None else float(bow_end),
        context=None if context is None else json.loads(context))


class CorpusResults(Mapping):
    """A scored corpus, read-only: document id -> ``ScoreResult``, loaded on access.

    ``metrics()`` gives the corpus totals (sum of NLL over sum of units, per
    denominator), ``table()`` the per-document metrics, ``settings`` the settings
    every document was scored with.
    """

    def __init__(self, path: str | os.PathLike):
        pq = require("pyarrow.parquet", "reading a scored corpus (a Parquet file)")

        self.path = os.fspath(path)
        if not os.path.isfile(self.path):
            raise FileNotFoundError(f"no corpus file at {self.path!r}")
        meta = file_metadata(self.path)
        if meta.get("format") != FORMAT_VERSION:
            raise ValueError(f"{self.path} has corpus format {meta.get('format')}, this "
                             f"version of ppl-widget reads format {FORMAT_VERSION}")
        self.settings: dict[str, Any] = meta["settings"]
        #: The run that just wrote the file (``score_corpus`` sets it): one row per rank,
        #: tokens/s, TFLOP/s and % of the device's measured peak.  None when only opened.
        self.throughput: Any = None
        self._widths: dict[str, int] = meta["widths"]
        self._file = pq.ParquetFile(self.path)
        self._scalars = self._file.read(columns=list(SCALAR_COLUMNS)).to_pydict()
        ids = self._scalars["id"]
        # (row group, row inside it) of every document
        where: dict[str, tuple[int, int]] = {}
        meta_pq = self._file.metadata
        row = 0
        for g in range(meta_pq.num_row_groups):
            for j in range(meta_pq.row_group(g).num_rows):
                where[ids[row]] = (g, j)
                row += 1
        self._where = where
        self._cached: tuple[int, Any] | None = None  # the last row group read

    # ---- Mapping -----------------------------------------------------------
    def __getitem__(self, doc_id: str) -> ScoreResult:
        if doc_id not in self._where:
            raise KeyError(doc_id)
        g, j = self._where[doc_id]
        if self._cached is None or self._cached[0] != g:
            self._cached = (g, self._file.read_row_group(g))
        table = self._cached[1].slice(j, 1)
        row = {name: table.column(name)[0].as_py() if name not in TOKEN_ARRAYS
               else _values(table.column(name)) for name in table.column_names}
        for name in ("unscored_token_ids", "unscored_offsets", "vocab_ids"):
            row[name] = _values(table.column(name))
        return row_to_result(row, self._widths)

    def __iter__(self) -> Iterator[str]:
        return iter(self._scalars["id"])

    def __len__(self) -> int:
        return len(self._scalars["id"])

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._where

    # ---- summaries ---------------------------------------------------------
    def metrics(self, *, ci: float | None = None, n_boot: int = 1000,
                seed: int | None = 0) -> dict[str, Any]:
        """Corpus totals: total NLL and unit counts summed over documents, perplexity =
        exp(sum NLL / sum units) per token, word, character and byte (never a mean of
        per-document perplexities).  ``ci=0.95`` adds bootstrap intervals over documents
        (``<key>_ci``; ``core/statistics.py``)."""
        s = self._scalars
        nll = np.asarray(s["total_nll"], np.float64)
        counts = np.column_stack([np.asarray(s[k], np.int64)
                                  for k in ("n_tokens", "n_words", "n_chars", "n_bytes")]
                                 ) if len(nll) else np.zeros((0, 4), np.int64)
        out = summarize(math.fsum(nll.tolist()), *counts.sum(axis=0).tolist())
        out.update(n_documents=len(nll), n_eos=int(sum(s["n_eos"])),
                   n_unscored_tokens=int(sum(s["n_unscored_tokens"])),
                   **objective_metrics(self.settings))  # a masked LM's: pseudo-perplexity
        if ci is not None:
            from .statistics import bootstrap_intervals

            out.update(bootstrap_intervals(nll, counts.astype(np.float64), ci=ci,
                                           n_boot=n_boot, seed=seed))
            out.update(ci_level=float(ci), ci_blocks=len(nll))
        return out

    def table(self) -> Any:
        """Per-document metrics as a pandas DataFrame indexed by document id."""
        import pandas as pd

        cols = {k: self._scalars[k] for k in ("index", *DOC_METRICS, "total_tokens")}
        return pd.DataFrame(cols, index=pd.Index(self._scalars["id"], name="id"))

    def to_html(self, doc_id: str, path: str | os.PathLike | None = None, **view: Any) -> str:
        """Document ``doc_id`` as the widget shows it, on one self-contained HTML page
        (no kernel, no network): ``ScoreResult.to_html``; written to ``path`` if given."""
        return self[doc_id].to_html(path, **view)

    def __repr__(self) -> str:
        m = self.metrics()
        return (f"<CorpusResults {self.path}: {m['n_documents']} documents, "
                f"{m['n_tokens']:,} tokens, word_ppl={m['word_ppl']:.4g}, "
                f"bits_per_byte={m['bits_per_byte']:.4g}>")


def _values(column: Any) -> np.ndarray:
    """The values of a one-row list column as a numpy array."""
    values = column[0].values  # that row's own values (a slice's .values would be all rows')
    return values.to_numpy(zero_copy_only=False)


def open_corpus(path: str | os.PathLike) -> CorpusResults:
    """Open a corpus scored by ``score_corpus`` / ``ppl-widget score-corpus``: a read-only
    mapping of document id -> ``ScoreResult``, loaded lazily."""
    return CorpusResults(path)
