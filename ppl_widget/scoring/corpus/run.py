"""Score a whole corpus with the same settings for every document, into one Parquet file.

Resumable: finished documents are written in durable part files (one per flush of
``flush_docs`` documents, each written to a temporary name, fsynced and renamed) in
``OUT.parts/`` next to the output, with a manifest of the settings.  A run killed at
any moment leaves only whole parts; the same command continues with the documents no
part holds.  At the end the parts are consolidated, in input order, into ``OUT`` (also
atomically) and the folder is removed.

Under ``torchrun`` / ``accelerate launch`` every rank scores every ``world_size``-th
document on its own device and writes its own parts; rank 0 consolidates them after a
barrier (``OUT`` must be on storage every node sees).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

import numpy as np

from ...core.corpus import (
    FORMAT_VERSION,
    META_KEY,
    CorpusResults,
    file_metadata,
    open_corpus,
    results_table,
    write_table,
)
from ...core.extras import require
from ...core.result import TOKEN_ARRAYS, ScoreResult
from ...core.text_units import DEFAULT_WORD_PATTERN, WordSpec
from ...core.validation import as_count
from ...core.windows import plan_windows
from ..forward import BatchedForward, is_oom
from ..model_kind import ScoringModel
from ..models import LoadedModel, load_model
from ..prepare import Prepared, prepare_many
from ..run import pipeline_depth
from ..scorer import auto_batch_size, resolve_window, score
from ..vocab import decode_each, ids_in
from . import distributed
from .batch import batch_end, end_row_rides, plan_items, run_batch, sort_items
from .input import Documents, open_documents
from .pipeline import BackgroundWriter, prefetched

MANIFEST = "manifest.json"
#: Test hook: the process kills itself (SIGKILL) after writing this many parts.
KILL_AFTER_PARTS_ENV = "PPL_WIDGET_CORPUS_KILL_AFTER_PARTS"
#: Settings that must match for a run to resume another's parts.
_RESUME_KEYS = ("model", "max_length", "stride", "prefix", "add_eos", "top_k", "dtype",
                "words", "n_documents", "ids_digest")


def parts_dir(out: str) -> str:
    return f"{out}.parts"


def score_corpus(source: Any, out: str | os.PathLike, lm: Any = None, *,
                 max_length: int | None = None, stride: int | None = None,
                 prefix: str | None = "bos", add_eos: bool = False, top_k: int = 5,
                 batch_size: int | str = "auto", words: WordSpec = None,
                 text_field: str = "text", id_field: str | None = "id",
                 split: str | None = None, glob: str = "**/*", device: str = "auto",
                 dtype: str = "auto", device_map: Any = None, flush_docs: int = 64,
                 progress: TextIO | bool = True) -> CorpusResults:
    """Score every document of ``source`` with the same settings into ``out`` (Parquet).

    ``source``: a folder of text files (id: path inside the folder), a ``.jsonl`` file
    (``text_field``, ``id_field``; documents numbered from 0 when the records have no
    ``id``), a ``datasets`` dataset saved to disk (``split`` for a DatasetDict), or a
    dict id -> text / list of texts.  Window and scoring options are ``score``'s; each
    document's result equals ``score(text, lm, ...)``.  ``batch_size``: input positions
    per model call, in windows of ``max_length`` ("auto": fitted to GPU memory, 1 on
    CPU); short documents share a call.  A killed run resumes where it stopped.
    Returns ``open_corpus(out)``.  Under torchrun each rank scores its share.
    """
    out = os.fspath(out)
    require("pyarrow.parquet", "score_corpus (it writes Parquet)")  # before any scoring
    flush_docs = as_count("flush_docs", flush_docs, minimum=1, rule="a positive integer")
    ranks, device = distributed.init(device)
    try:
        docs = open_documents(source, text_field=text_field, id_field=id_field, split=split,
                              glob=glob)
        if not isinstance(lm, ScoringModel):
            extra = {"device_map": device_map} if device_map is not None else {}
            lm = load_model(lm, device=device, dtype=dtype, **extra)
        run = CorpusRun(docs, lm, ranks, out, max_length=max_length, stride=stride, prefix=prefix,
                   add_eos=add_eos, top_k=top_k, batch_size=batch_size, words=words,
                   flush_docs=flush_docs, progress=progress)
        run.execute()
        distributed.barrier(ranks)
        return open_corpus(out)
    finally:
        distributed.finish(ranks)


class CorpusRun:
    """One process's part of a corpus run."""

    def __init__(self, docs: Documents, lm: Any, ranks: distributed.Ranks, out: str, *,
                 max_length: int | None, stride: int | None, prefix: str | None,
                 add_eos: bool, top_k: int, batch_size: int | str, words: WordSpec,
                 flush_docs: int, progress: TextIO | bool):
        self.docs, self.lm, self.ranks, self.out = docs, lm, ranks, out
        self.parts = parts_dir(out)
        top_k = as_count("top_k", top_k, minimum=0, rule="a non-negative integer")
        if prefix not in ("bos", None):
            raise ValueError(f"prefix must be 'bos' or None, got {prefix!r}")
        self.max_length, self.stride = resolve_window(lm, max_length, stride)
        # a transformers model: windows of several documents share a batch; another
        # model kind: scored document-wise, by score()
        self.kind = not isinstance(lm, LoadedModel)
        self.fwd: BatchedForward | None = None
        self.top_k = top_k
        if not self.kind:
            self.fwd = lm.make_forward(top_k, self.max_length)
            self.top_k = self.fwd.top_k
        if batch_size == "auto":
            batch_size = auto_batch_size(lm, self.max_length) if not self.kind else 1
        self.batch_size = as_count("batch_size", batch_size, minimum=1,
                                   rule="'auto' or a positive integer")
        self.budget = self.batch_size * self.max_length  # padded positions per call
        # one more input position must fit the model's context (as in the scorer)
        self.end_limit = getattr(lm, "context_length", None) or self.max_length
        self.prefix, self.add_eos, self.words = prefix, add_eos, words
        self.flush_docs = flush_docs
        self.vocab_cache: dict[int, str] = {}
        self.settings = {
            "model": lm.name, "max_length": self.max_length, "stride": self.stride,
            "prefix": prefix, "add_eos": add_eos, "top_k": self.top_k,
            "dtype": str(lm.dtype).replace("torch.", ""),
            "words": str(words) if words is not None else DEFAULT_WORD_PATTERN,
            "n_documents": len(docs), "ids_digest": _digest(docs.ids),
            "source": docs.source,
        }
        stream = sys.stderr if progress is True else (progress or None)
        self.progress = _Progress(stream if ranks.is_main else None, ranks)
        self.parts_written = 0

    # ---- the run -----------------------------------------------------------
    def execute(self) -> None:
        error = None
        if self.ranks.is_main:
            try:
                self._prepare_dir()
            except (ValueError, OSError) as exc:
                error = f"{type(exc).__name__}: {exc}"
        error = distributed.broadcast(self.ranks, error)
        if error is not None:
            raise ValueError(error.split(": ", 1)[1])
        if not os.path.isdir(self.parts):  # rank 0 found the output already complete
            return
        done = self._done_ids()
        mine = [i for i in self.ranks.shard(len(self.docs)) if self.docs.ids[i] not in done]
        self.progress.start(len(self.docs), len(done), len(mine))
        chunks = [mine[k:k + self.flush_docs] for k in range(0, len(mine), self.flush_docs)]
        # on a GPU the next chunk is tokenized, and the last one assembled and written,
        # meanwhile
        beside = self.fwd is not None and pipeline_depth(self.lm, self.fwd) > 1
        with BackgroundWriter(lambda assemble: self._write_part(assemble()),
                              enabled=beside) as writer:
            for indices, (texts, preps) in prefetched(self._tokenize, chunks, beside):
                writer.write(self._score_chunk(indices, texts, preps))
        self.progress.close()
        distributed.barrier(self.ranks)
        error = None
        if self.ranks.is_main:
            try:
                self._consolidate()
            except (ValueError, OSError) as exc:
                error = f"{type(exc).__name__}: {exc}"
        error = distributed.broadcast(self.ranks, error)
        if error is not None:
            raise ValueError(error.split(": ", 1)[1])

    def _prepare_dir(self) -> None:
        """Rank 0: start, resume, or find the output already complete."""
        manifest = os.path.join(self.parts, MANIFEST)
        if os.path.isfile(self.out) and not os.path.isdir(self.parts):
            old = file_metadata(self.out).get("settings", {})
            _check_same(old, self.settings, f"{self.out} already exists and")
            return  # complete: nothing to do
        if os.path.isfile(manifest):
            with open(manifest, encoding="utf-8") as f:
                old = json.load(f)
            _check_same(old, self.settings, f"{self.parts} holds a run that")
            for name in os.listdir(self.parts):  # a part half-written when killed
                if ".tmp-" in name:
                    os.remove(os.path.join(self.parts, name))
            return
        os.makedirs(self.parts, exist_ok=True)
        tmp = f"{manifest}.tmp-{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.settings, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, manifest)

    def _part_files(self) -> list[str]:
        return sorted(os.path.join(self.parts, n) for n in os.listdir(self.parts)
                      if n.startswith("part-") and n.endswith(".parquet"))

    def _done_ids(self) -> set[str]:
        import pyarrow.parquet as pq

        done: set[str] = set()
        for path in self._part_files():
            done.update(pq.read_table(path, columns=["id"]).column("id").to_pylist())
        return done

    def _write_part(self, rows: list[tuple[int, str, ScoreResult]]) -> None:
        if not rows:
            return
        name = f"part-{rows[0][0]:010d}-r{self.ranks.rank}.parquet"
        write_table(results_table(rows, self._file_settings()), os.path.join(self.parts, name))
        self.parts_written += 1
        kill_after = os.environ.get(KILL_AFTER_PARTS_ENV)
        if kill_after and self.parts_written >= int(kill_after):
            os.kill(os.getpid(), signal.SIGKILL)  # test hook: an interrupted run

    def _file_settings(self) -> dict[str, Any]:
        return {k: v for k, v in self.settings.items() if k != "ids_digest"}

    def _consolidate(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        files = self._part_files()
        tables = [pq.read_table(p) for p in files]
        table = pa.concat_tables(tables) if tables else None
        ids = set(table.column("id").to_pylist()) if table is not None else set()
        missing = [d for d in self.docs.ids if d not in ids]
        if missing:
            raise ValueError(
                f"{len(missing)} of {len(self.docs)} documents have no part in {self.parts} "
                f"(first: {missing[:3]}); under torchrun on several nodes the output must be "
                "on storage every node sees. Run the same command again to score them.")
        table = table.sort_by("index")
        meta = {META_KEY: json.dumps({"format": FORMAT_VERSION,
                                      "settings": self._file_settings(),
                                      "widths": _widths_of(tables)}, sort_keys=True)}
        write_table(table.replace_schema_metadata(meta), self.out)
        shutil.rmtree(self.parts, ignore_errors=True)

    # ---- scoring -----------------------------------------------------------
    def _tokenize(self, indices: list[int]) -> tuple[list[str], list[Prepared] | None]:
        """A chunk's texts, and for a causal LM each prepared as ``score`` prepares it."""
        texts = [self.docs.text(i) for i in indices]
        if self.kind:  # another model kind: score() tokenizes each document itself
            return texts, None
        return texts, prepare_many(texts, self.lm, prefix=self.prefix, add_eos=self.add_eos,
                                   words=self.words)

    def _score_chunk(self, indices: list[int], texts: list[str], preps: list[Prepared] | None,
                     ) -> Callable[[], list[tuple[int, str, ScoreResult]]]:
        """Score a chunk's windows; what it returns builds the documents' results (on a
        GPU in the writer's thread, while the next chunk scores)."""
        t0 = time.perf_counter()
        if preps is None:
            results = [score(t, self.lm, max_length=self.max_length, stride=self.stride,
                             prefix=self.prefix, add_eos=self.add_eos, top_k=self.top_k,
                             batch_size=self.batch_size, words=self.words) for t in texts]
            self.progress.update(len(results), sum(len(r) for r in results))
            rows = [(i, self.docs.ids[i], r) for i, r in zip(indices, results, strict=True)]
            return lambda: rows
        windows = [plan_windows(len(p.sequence), self.max_length, self.stride) for p in preps]
        want_bow = self.fwd.bow_mask is not None
        items = [it for d, (p, ws) in enumerate(zip(preps, windows, strict=True))
                 for it in plan_items(d, len(p.sequence), ws, self.max_length, want_bow,
                                     self.end_limit)]
        order = sort_items(items)
        sequences = [p.sequence for p in preps]
        got: dict[tuple[int, int], dict[str, np.ndarray]] = {}
        left = [len(plan_items(d, len(p.sequence), ws, self.max_length, want_bow,
                                self.end_limit))
                for d, (p, ws) in enumerate(zip(preps, windows, strict=True))]
        start = 0
        while start < len(order):
            end = batch_end(order, start, self.budget)
            batch = order[start:end]
            try:
                outputs = run_batch(self.fwd, batch, sequences, self.lm.device)
            except Exception as exc:
                if is_oom(exc) and self.budget > order[start].length:
                    self.budget = max(order[start].length, self.budget // 2)  # retry, smaller
                    _empty_cache(self.lm)
                    continue
                raise
            n_docs = n_tok = 0
            for it, arrays in zip(batch, outputs, strict=True):
                got[(it.doc, it.window)] = arrays
                n_tok += it.n_rows - int(it.bow_row)
                left[it.doc] -= 1
                n_docs += left[it.doc] == 0
            self.progress.update(n_docs, n_tok)
            start = end
        elapsed = time.perf_counter() - t0
        total = max(1, sum(len(p.target_ids) for p in preps))
        empty = sum(1 for ws in windows if not ws)
        if empty:
            self.progress.update(empty, 0)

        def assemble() -> list[tuple[int, str, ScoreResult]]:
            return [(i, self.docs.ids[i],
                     self._assemble(prep, ws, d, got, elapsed * len(prep.target_ids) / total))
                    for d, (i, prep, ws) in enumerate(zip(indices, preps, windows,
                                                          strict=True))]
        return assemble

    def _assemble(self, prep: Any, windows: list, d: int,
                  got: dict[tuple[int, int], dict[str, np.ndarray]],
                  elapsed: float) -> ScoreResult:
        """One document's result from its windows' rows, as ``score`` builds it."""
        parts = []
        bow_end = math.nan
        for k, w in enumerate(windows):
            arrays = dict(got[(d, k)])
            if k == len(windows) - 1 and self.fwd.bow_mask is not None \
                    and end_row_rides(windows, self.end_limit):  # the b row rides on it
                bow_end = float(arrays["bow_prob"][-1])
                arrays = {key: v[:-1] for key, v in arrays.items()}
            n = w.n_targets
            if not self.top_k:
                arrays["topk_ids"] = np.zeros((n, 0), np.int64)
                arrays["topk_probs"] = np.zeros((n, 0), np.float64)
            arrays["context_length"] = np.arange(w.target_start - w.input_start,
                                                 w.target_end - w.input_start)
            a, b = w.target_start - 1, w.target_end - 1
            arrays.update(token_ids=prep.target_ids[a:b], offsets=prep.target_offsets[a:b],
                          units=prep.target_units[a:b], is_eos=prep.target_is_eos[a:b])
            arrays.setdefault("bow_prob", np.full(n, np.nan))
            parts.append({key: np.asarray(arrays[key], dtype=t) for key, t in TOKEN_ARRAYS.items()})
        if (d, -1) in got:
            bow_end = float(got[(d, -1)]["bow_prob"][0])
        ids = ids_in(parts).tolist()
        new = [t for t in ids if t not in self.vocab_cache]
        self.vocab_cache.update(decode_each(self.lm.tokenizer, new))
        settings = {
            "model": self.lm.name, "max_length": self.max_length, "stride": self.stride,
            "prefix": self.prefix, "prefix_token": prep.prefix_token, "add_eos": self.add_eos,
            "top_k": self.top_k, "device": str(self.lm.device),
            "dtype": self.settings["dtype"], "words": self.settings["words"],
            "n_windows": len(windows), "batch_size": self.batch_size,
        }
        return ScoreResult.from_parts(
            prep.text, parts, self.top_k, vocab={t: self.vocab_cache[t] for t in ids},
            unscored_token_ids=prep.unscored_ids, unscored_offsets=prep.unscored_offsets,
            settings=settings, total_tokens=len(prep.target_ids), elapsed_s=elapsed,
            bow_prob_end=bow_end)


def _widths_of(tables: list[Any]) -> dict[str, int]:
    for t in tables:
        meta = (t.schema.metadata or {}).get(META_KEY)
        if meta:
            return json.loads(meta)["widths"]
    return {}


def _check_same(old: dict[str, Any], new: dict[str, Any], what: str) -> None:
    diff = [k for k in _RESUME_KEYS if k in old and old.get(k) != new.get(k)]
    if diff:
        shown = ", ".join(f"{k}: {old.get(k)!r} then, {new.get(k)!r} now"
                          for k in diff if k != "ids_digest")
        if "ids_digest" in diff:
            shown = (shown + "; " if shown else "") + "the documents differ"
        raise ValueError(f"{what} was scored with other settings ({shown}); a run resumes "
                         "only with the same model, settings and documents: pass another "
                         "--out, or delete it to start again")


def _digest(ids: list[str]) -> str:
    import hashlib

    h = hashlib.sha256()
    for doc_id in ids:
        h.update(doc_id.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()[:16]


def _empty_cache(lm: LoadedModel) -> None:
    if getattr(lm.device, "type", None) == "cuda":
        import torch

        torch.cuda.empty_cache()


class _Progress:
    """Documents and tokens per second on stderr (rank 0 only; its own shard)."""

    def __init__(self, stream: TextIO | None, ranks: distributed.Ranks):
        self.stream = stream
        self.ranks = ranks
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.docs = self.tokens = self.total = self.before = 0

    def start(self, n_documents: int, already: int, mine: int) -> None:
        self.t0 = time.perf_counter()
        self.total, self.before = mine, already
        if self.stream is not None and already:
            self.stream.write(f"resuming: {already:,} of {n_documents:,} documents already "
                              "scored\n")
        self._show(force=True)

    def update(self, docs: int, tokens: int) -> None:
        self.docs += docs
        self.tokens += tokens
        self._show()

    def _show(self, force: bool = False) -> None:
        now = time.perf_counter()
        if self.stream is None or (not force and now - self.last < 0.2):
            return
        self.last = now
        dt = max(now - self.t0, 1e-9)
        frac = self.docs / self.total if self.total else 1.0
        bar = "#" * int(round(frac * 30)) + "." * (30 - int(round(frac * 30)))
        who = (f"rank 0 of {self.ranks.world_size}: " if self.ranks.distributed else "")
        self.stream.write(f"\r{who}[{bar}] {self.docs:,}/{self.total:,} documents  "
                          f"{self.docs / dt:,.1f} docs/s  {self.tokens / dt:,.0f} tok/s ")
        self.stream.flush()

    def close(self) -> None:
        self._show(force=True)
        if self.stream is not None:
            self.stream.write("\n")
