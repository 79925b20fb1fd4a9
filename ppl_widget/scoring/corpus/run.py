"""Score a whole corpus with the same settings for every document, into one Parquet file.

Resumable: finished documents go to durable parts in ``OUT.parts/`` (one per flush of
``flush_docs`` documents; ``store.PartStore``), which a killed run continues from and the
end consolidates into ``OUT``.

Under ``torchrun`` / ``accelerate launch`` every rank scores every ``world_size``-th
document on its own device and writes its own parts; rank 0 consolidates them after a
barrier (``OUT`` must be on storage every node sees).
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TextIO

import numpy as np

from ...core.corpus import (
    CorpusResults,
    open_corpus,
)
from ...core.extras import require
from ...core.protocols import plan_protocol
from ...core.result import TOKEN_ARRAYS, ScoreResult
from ...core.text_units import DEFAULT_WORD_PATTERN, WordSpec
from ...core.validation import as_count
from ..kinds.devices import precision_settings
from ..kinds.model_kind import ScoringModel, kind_run_settings
from ..kinds.models import LoadedModel, load_model
from ..runner.forward import BatchedForward, is_oom, with_host_columns
from ..runner.prepare import Prepared, keep_scored, prepare_many
from ..runner.run import pipeline_depth
from ..runner.scorer import auto_batch_size, resolve_protocol, score
from ..runner.throughput import flop_model, matmul_peak, window_flops
from ..runner.vocab import decode_each, ids_in
from . import distributed
from .batch import batch_end, plan_items, run_batch, sort_items
from .compiled import CompiledBody, check_choice
from .input import Documents, open_documents
from .pipeline import BackgroundWriter, prefetched
from .progress import CorpusProgress, throughput_lines, throughput_table
from .store import PartStore, ids_digest

#: compile="auto" measures this long (uncompiled) before deciding whether compiling pays.
MEASURE_BEFORE_COMPILING_S = 10.0


def score_corpus(source: Any, out: str | os.PathLike, lm: Any = None, *,
                 max_length: int | None = None, stride: int | None = None,
                 prefix: str | None = "bos", add_eos: bool = False, top_k: int = 5,
                 batch_size: int | str = "auto", words: WordSpec = None,
                 text_field: str = "text", id_field: str | None = "id",
                 context_field: str | None = None,
                 split: str | None = None, glob: str = "**/*", device: str = "auto",
                 dtype: str = "auto", device_map: Any = None, flush_docs: int = 64,
                 compile: bool | str = "auto", progress: TextIO | bool = True,
                 protocol: str = "exact", pll_metric: str | None = None) -> CorpusResults:
    """Score every document of ``source`` with the same settings into ``out`` (Parquet).

    ``source``: a folder of text files (id: path inside the folder), a ``.jsonl`` file
    (``text_field``, ``id_field``; documents numbered from 0 when the records have no
    ``id``), a ``datasets`` dataset saved to disk (``split`` for a DatasetDict), or a
    dict id -> text / list of texts.  ``context_field``: each record's context (a string
    or a chat; null: none), read by the model before the text and never scored, as
    ``score(text, lm, context=...)`` reads it.  Window and scoring options are ``score``'s;
    each document's result equals ``score(text, lm, ...)``.  ``batch_size``: input positions
    per model call, in windows of ``max_length`` ("auto": fitted to GPU memory, 1 on
    CPU); short documents share a call.  ``compile``: torch.compile the model body
    ("auto": on a CUDA GPU once the run is measured to be long enough to pay for it,
    see ``compiled.COMPILE_PAYS_AFTER_S``; True: always; False: never).  A killed run
    resumes where it stopped.  Returns ``open_corpus(out)``, whose ``throughput`` table
    gives each rank's tokens/s, TFLOP/s and share of its device's measured peak.  Under
    torchrun each rank scores its share.  ``protocol``: ``score``'s, per document (a
    document too short for llama.cpp's protocol stops the run, named).  ``pll_metric``:
    a masked LM's (``score``'s), which scores each document by ``score()``.
    """
    out = os.fspath(out)
    require("pyarrow.parquet", "score_corpus (it writes Parquet)")  # before any scoring
    flush_docs = as_count("flush_docs", flush_docs, minimum=1, rule="a positive integer")
    compile = check_choice(compile)
    ranks, device = distributed.init(device)
    try:
        docs = open_documents(source, text_field=text_field, id_field=id_field, split=split,
                              glob=glob, context_field=context_field)
        if not isinstance(lm, ScoringModel):
            extra = {"device_map": device_map} if device_map is not None else {}
            lm = load_model(lm, device=device, dtype=dtype, **extra)
        run = CorpusRun(docs, lm, ranks, out, max_length=max_length, stride=stride, prefix=prefix,
                   add_eos=add_eos, top_k=top_k, batch_size=batch_size, words=words,
                   flush_docs=flush_docs, compile=compile, progress=progress,
                   context_field=context_field, protocol=protocol, pll_metric=pll_metric)
        run.execute()
        distributed.barrier(ranks)
        results = open_corpus(out)
        results.throughput = throughput_table(run.throughput)
        return results
    finally:
        distributed.finish(ranks)


class CorpusRun:
    """One process's part of a corpus run."""

    def __init__(self, docs: Documents, lm: Any, ranks: distributed.Ranks, out: str, *,
                 max_length: int | None, stride: int | None, prefix: str | None,
                 add_eos: bool, top_k: int, batch_size: int | str, words: WordSpec,
                 flush_docs: int, compile: bool | str, progress: TextIO | bool,
                 context_field: str | None = None, protocol: str = "exact",
                 pll_metric: str | None = None):
        self.docs, self.lm, self.ranks, self.out = docs, lm, ranks, out
        # the kind's rules (a masked LM's pll_metric; a causal model takes none), checked
        # before any document is scored; its settings join the run's manifest
        self.kind_settings = kind_run_settings(lm, pll_metric=pll_metric, protocol=protocol,
                                               add_eos=add_eos, context=context_field)
        self.pll_metric = self.kind_settings.get("pll_metric")
        prefix = self.kind_settings.get("prefix", prefix)  # a masked LM reads no BOS
        top_k = as_count("top_k", top_k, minimum=0, rule="a non-negative integer")
        if prefix not in ("bos", None):
            raise ValueError(f"prefix must be 'bos' or None, got {prefix!r}")
        self.protocol = protocol
        self.max_length, self.stride, prefix = resolve_protocol(
            lm, protocol, max_length, stride, prefix, add_eos=add_eos,
            context=context_field)  # a context field is exact's option, as a context is
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
        self.end_limit = lm.context_length or self.max_length
        self.compiled = self._compiled_body(compile)
        self.flop_shape = flop_model(lm.model) if self.fwd is not None else None
        self.full_tokens = 0  # tokens in full-width batches, those a compiled body serves
        self.throughput: list[dict[str, Any]] = []
        self.prefix, self.add_eos, self.words = prefix, add_eos, words
        self.flush_docs = flush_docs
        self.vocab_cache: dict[int, str] = {}
        self.settings = {
            "model": lm.name, "max_length": self.max_length, "stride": self.stride,
            "prefix": prefix, "add_eos": add_eos, "top_k": self.top_k,
            **precision_settings(lm),
            "words": str(words) if words is not None else DEFAULT_WORD_PATTERN,
            "n_documents": len(docs), "ids_digest": ids_digest(docs.ids),
            "source": docs.source, "context_field": context_field, "protocol": protocol,
            **{k: v for k, v in self.kind_settings.items() if k != "prefix"},
        }
        stream = sys.stderr if progress is True else (progress or None)
        self.stream = stream if ranks.is_main else None
        self.progress = CorpusProgress(self.stream, ranks)
        self.store = PartStore(out, self.settings, ranks.rank)

    # ---- the run -----------------------------------------------------------
    def execute(self) -> None:
        error = None
        if self.ranks.is_main:
            try:
                self.store.prepare()
            except (ValueError, OSError) as exc:
                error = f"{type(exc).__name__}: {exc}"
        error = distributed.broadcast(self.ranks, error)
        if error is not None:
            raise ValueError(error.split(": ", 1)[1])
        if self.store.complete:  # rank 0 found the output already complete
            return
        done = self.store.done_ids()
        mine = [i for i in self.ranks.shard(len(self.docs)) if self.docs.ids[i] not in done]
        self.progress.start(len(self.docs), len(done), len(mine))
        chunks = [mine[k:k + self.flush_docs] for k in range(0, len(mine), self.flush_docs)]
        # on a GPU the next chunk is tokenized, and the last one assembled and written,
        # meanwhile
        beside = self.fwd is not None and pipeline_depth(self.lm, self.fwd) > 1
        with BackgroundWriter(lambda assemble: self._write_part(assemble()),
                              enabled=beside) as writer:
            for indices, (items, preps) in prefetched(self._tokenize, chunks, beside):
                writer.write(self._score_chunk(indices, items, preps))
                self._maybe_compile(len(mine))
        self.progress.close()
        self._report()
        distributed.barrier(self.ranks)
        error = None
        if self.ranks.is_main:
            try:
                self.store.consolidate(self.docs.ids)
            except (ValueError, OSError) as exc:
                error = f"{type(exc).__name__}: {exc}"
        error = distributed.broadcast(self.ranks, error)
        if error is not None:
            raise ValueError(error.split(": ", 1)[1])

    def _compiled_body(self, choice: bool | str) -> CompiledBody:
        if choice is True and (self.fwd is None or self.fwd.base is None):
            raise ValueError(
                "compile=True compiles a transformers model's body; "
                + ("this model kind has none" if self.fwd is None else
                   "this model changes its logits after the head, so it is scored through "
                   "its own forward, uncompiled")
                + ": use compile='auto' or False")
        return CompiledBody(self.lm, self.fwd, choice, self.max_length)

    def _maybe_compile(self, n_mine: int) -> None:
        """compile="auto": decide once the run has been measured for a while."""
        p = self.progress
        if not self.compiled.undecided or p.seconds() < MEASURE_BEFORE_COMPILING_S:
            return
        per_doc = p.tokens / max(p.docs, 1)
        if self.compiled.decide(p.seconds(), p.tokens, int(per_doc * (n_mine - p.docs)),
                                self.full_tokens / max(p.tokens, 1)) and self.stream:
            self.stream.write("\ncompiling the model body (torch.compile): the rest of the "
                              "run is long enough to pay for it\n")

    def _report(self) -> None:
        """Each rank's throughput, gathered; rank 0 prints it."""
        mine = self.progress.summary()
        where = getattr(self.lm, "where", None) or str(self.lm.device)  # a server: its URL
        mine.update(device=where, dtype=self.settings["dtype"],
                    compiled=self.compiled.active, peak_tflops=math.nan)
        if self.flop_shape is not None and mine["tokens"]:
            mine["peak_tflops"] = matmul_peak(self.lm.device, self.lm.dtype)
        self.throughput = distributed.all_gather(self.ranks, mine)
        if self.stream is not None:
            for line in throughput_lines(self.throughput):
                self.stream.write(line + "\n")

    def _write_part(self, rows: list[tuple[int, str, ScoreResult]]) -> None:
        self.store.write_part(rows)

    # ---- scoring -----------------------------------------------------------
    def _tokenize(self, indices: list[int]) -> tuple[list[tuple[str, Any]],
                                                     list[Prepared] | None]:
        """A chunk's (text, context) pairs, and for a causal LM each prepared as ``score``
        prepares it."""
        items = [self.docs.item(i) for i in indices]
        if self.kind:  # another model kind: score() tokenizes each document itself
            return items, None
        return items, prepare_many([t for t, _ in items], self.lm, prefix=self.prefix,
                                   add_eos=self.add_eos, words=self.words,
                                   contexts=[c for _, c in items])

    def _plan(self, i: int, prep: Prepared) -> list:
        """Document ``i``'s windows under the run's protocol (its rule broken: named)."""
        try:
            return plan_protocol(self.protocol, len(prep.sequence), self.max_length,
                                 self.stride, first_target=prep.first_target,
                                 bos=self.prefix == "bos")
        except ValueError as exc:
            raise ValueError(f"document {self.docs.ids[i]!r}: {exc}") from None

    def _score_chunk(self, indices: list[int], items: list[tuple[str, Any]],
                     preps: list[Prepared] | None,
                     ) -> Callable[[], list[tuple[int, str, ScoreResult]]]:
        """Score a chunk's windows; what it returns builds the documents' results (on a
        GPU in the writer's thread, while the next chunk scores)."""
        t0 = time.perf_counter()
        if preps is None:
            def one(item: tuple[str, Any]) -> ScoreResult:
                return score(item[0], self.lm, max_length=self.max_length, stride=self.stride,
                             prefix=self.prefix, add_eos=self.add_eos, top_k=self.top_k,
                             batch_size=self.batch_size, words=self.words, context=item[1],
                             protocol=self.protocol, pll_metric=self.pll_metric)

            # a kind that serves requests concurrently (a vLLM server) scores several
            # documents at once: their windows are in flight together
            workers = min(len(items), int(getattr(self.lm, "concurrent_documents", 1)))
            if workers > 1:
                with ThreadPoolExecutor(workers, thread_name_prefix="ppl-widget-doc") as pool:
                    results = list(pool.map(one, items))
            else:
                results = [one(item) for item in items]
            self.progress.update(len(results), sum(len(r) for r in results))
            rows = [(i, self.docs.ids[i], r) for i, r in zip(indices, results, strict=True)]
            return lambda: rows
        windows = [self._plan(indices[d], p) for d, p in enumerate(preps)]
        # a protocol's unscored positions join each document's unscored tokens
        preps = [keep_scored(p, ws) for p, ws in zip(preps, windows, strict=True)]
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
            end = batch_end(order, start, self.budget, self.compiled.padded_width)
            batch = order[start:end]
            width = self.compiled.width_for(len(batch), batch[0].length)
            try:
                outputs = run_batch(self.fwd, batch, sequences, self.lm.device, width)
            except Exception as exc:
                if is_oom(exc) and self.budget > order[start].length:
                    self.budget = max(order[start].length, self.budget // 2)  # retry, smaller
                    _empty_cache(self.lm)
                    continue
                raise
            n_docs = n_tok = 0
            flops = 0.0
            for it, arrays in zip(batch, outputs, strict=True):
                got[(it.doc, it.window)] = arrays
                n_tok += it.n_rows - int(it.bow_row)
                left[it.doc] -= 1
                n_docs += left[it.doc] == 0
                flops += window_flops(self.flop_shape, it.length, it.n_rows)
            if self.compiled.takes(batch[0].length):
                self.full_tokens += n_tok
            self.progress.update(n_docs, n_tok, flops)
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
        a = 0  # the window's first target among the scored tokens (a plan may skip some)
        for k, w in enumerate(windows):
            arrays = dict(got[(d, k)])
            n = w.n_targets
            if len(arrays["surprisal"]) == n + 1:  # the b row rode on the last window
                bow_end = float(arrays["bow_prob"][-1])
                arrays = {key: v[:-1] for key, v in arrays.items()}
            with_host_columns(arrays, n, self.top_k,
                              np.arange(w.target_start - w.input_start,
                                        w.target_end - w.input_start))
            b = a + n
            arrays.update(token_ids=prep.target_ids[a:b], offsets=prep.target_offsets[a:b],
                          units=prep.target_units[a:b], is_eos=prep.target_is_eos[a:b])
            arrays.setdefault("bow_prob", np.full(n, np.nan))
            parts.append({key: np.asarray(arrays[key], dtype=t) for key, t in TOKEN_ARRAYS.items()})
            a = b
        if (d, -1) in got:
            bow_end = float(got[(d, -1)]["bow_prob"][0])
        ids = ids_in(parts).tolist()
        new = [t for t in ids if t not in self.vocab_cache]
        self.vocab_cache.update(decode_each(self.lm.tokenizer, new))
        settings = {
            "model": self.lm.name, "max_length": self.max_length, "stride": self.stride,
            "prefix": self.prefix, "prefix_token": prep.prefix_token, "add_eos": self.add_eos,
            "top_k": self.top_k, "device": str(self.lm.device),
            **precision_settings(self.lm), "words": self.settings["words"],
            "n_windows": len(windows), "batch_size": self.batch_size,
            **prep.context_settings(), "protocol": self.protocol,
        }
        return ScoreResult.from_parts(
            prep.text, parts, self.top_k, vocab={t: self.vocab_cache[t] for t in ids},
            unscored_token_ids=prep.unscored_ids, unscored_offsets=prep.unscored_offsets,
            settings=settings, total_tokens=len(prep.target_ids), elapsed_s=elapsed,
            bow_prob_end=bow_end, context=prep.context)


def _empty_cache(lm: LoadedModel) -> None:
    if getattr(lm.device, "type", None) == "cuda":
        import torch

        torch.cuda.empty_cache()
