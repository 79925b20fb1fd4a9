"""A model served by vLLM, as a ``ScoringModel``: an OpenAI-compatible server
(``load_model("http://HOST:PORT/v1")``) or an offline ``vllm.LLM`` in this process
(``load_model(engine)``).

Every window of the plan is one request of token ids with ``prompt_logprobs``, so
``score``, ``stream``, the widget, ``score_words``, ``score_pairs``, ``compare`` and
``score_corpus`` work unchanged.  A server gives each prompt token's log-probability and
rank and the ``top_k`` most probable tokens (at most its ``--max-logprobs``), never the
whole distribution: entropy and b(i) are NaN, and ``divergence()`` (KL over the whole
vocabulary) refuses such a model.  The tokenizer is the model's own, loaded here and
checked once against the server's on the first window.
"""

from __future__ import annotations

import math
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ....core.windows import Window
from ..model_errors import ModelLoadError
from ..model_kind import PendingStats
from ..model_sources import load_pretrained_tokenizer
from .vllm_client import PositionLogprobs, ServerTransport, VllmError
from .vllm_engine import EngineTransport

#: Requests kept in flight by default: enough for continuous batching to fill a GPU.
DEFAULT_IN_FLIGHT = 32
#: Why entropy and b(i) are NaN through vLLM (said once per model, and in docs/vllm.md).
PARTIAL_DISTRIBUTION = ("entropy and b(i) are NaN when scoring through vLLM: it returns each "
                        "prompt token's log-probability and rank and the top_k most probable "
                        "tokens (at most its --max-logprobs), not the whole distribution; "
                        "surprisal, rank and top-k are exact")


def is_server_url(spec: Any) -> bool:
    return isinstance(spec, str) and spec.startswith(("http://", "https://"))


def is_vllm_engine(spec: Any) -> bool:
    """An offline ``vllm.LLM`` (anything from the vllm package with ``generate``)."""
    return type(spec).__module__.split(".")[0] == "vllm" and hasattr(spec, "generate")


class VllmModel:
    """A model vLLM serves, for ``score``: ``load_vllm`` builds it."""

    device: Any  # torch.device("cpu"): the token ids stay here, the server runs the model

    def __init__(self, transport: Any, served_model: str, tokenizer: Any, *,
                 max_model_len: int, dtype: str, where: str, max_in_flight: int):
        import torch

        self.transport, self.served_model, self.tokenizer = transport, served_model, tokenizer
        self.max_model_len, self.dtype = int(max_model_len), dtype
        self.name = f"{served_model} (vLLM, {where})"
        self.where = f"vLLM {where}"  # what a corpus run's throughput report names
        self.device = torch.device("cpu")
        self.max_in_flight = max_in_flight
        # score_corpus scores this many documents at once (their windows share the pool)
        self.concurrent_documents = max_in_flight if isinstance(transport,
                                                                ServerTransport) else 1
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._tokenizer_checked = False
        self._warned = False

    def __repr__(self) -> str:
        return f"<VllmModel {self.name}, max model length {self.max_model_len}>"

    # ---- the ScoringModel protocol ---------------------------------------
    @property
    def context_length(self) -> int:
        """The longest window: the server's max model length, less the window's last
        target (a prompt holds it too) and the one token every request generates."""
        return self.max_model_len - 2

    @property
    def vocab_size(self) -> int:
        return len(self.tokenizer)

    def default_max_length(self) -> int:
        return self.context_length

    def make_forward(self, top_k: int, max_length: int) -> VllmForward:
        if not self._warned:
            self._warned = True
            warnings.warn(PARTIAL_DISTRIBUTION, RuntimeWarning, stacklevel=3)
        return VllmForward(self, min(top_k, self.vocab_size))

    # ---- requests --------------------------------------------------------
    def start(self, prompts: list[list[int]], k: int) -> PendingStats:
        """Send ``prompts`` (one request each, in flight together on a server); the
        ``PendingStats`` waits for their positions' log-probabilities."""
        if not isinstance(self.transport, ServerTransport):  # an engine batches them itself
            got = self.transport.prompt_logprobs_many(prompts, k)
            return PendingStats(lambda: got)
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.max_in_flight,
                                                thread_name_prefix="ppl-widget-vllm")
            pool = self._pool
        futures = [pool.submit(self.transport.prompt_logprobs, self.served_model, p, k)
                   for p in prompts]
        return PendingStats(lambda: [f.result() for f in futures],
                            lambda: all(f.done() for f in futures))

    def check_tokenizer(self, ids: list[int]) -> None:
        """Once per model: the local tokenizer splits the first window's text as the
        server does (else every token id sent would mean another token there)."""
        with self._lock:
            if self._tokenizer_checked:
                return
            special = set(getattr(self.tokenizer, "all_special_ids", ()) or ())
            text = self.tokenizer.decode([t for t in ids if t not in special])
            local = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
            served = self.transport.tokenize(self.served_model, text)
            if local != served:
                i = next((j for j, (a, b) in enumerate(zip(local, served, strict=False))
                          if a != b), min(len(local), len(served)))
                raise ModelLoadError(
                    f"the local tokenizer ({type(self.tokenizer).__name__}) and the one "
                    f"{self.served_model!r} is served with split the first window's text "
                    f"differently (first at token {i}: local {local[i:i + 3]}, server "
                    f"{served[i:i + 3]}); pass tokenizer= the served model's own (its "
                    "folder or Hub id)")
            self._tokenizer_checked = True

    def close(self) -> None:
        """Stop the request threads (requests in flight finish first)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


class VllmForward:
    """The ``ScoringForward`` of one run: a batch of windows is one request each, in
    flight together (``pipeline_depth`` batches at once on a server)."""

    def __init__(self, lm: VllmModel, top_k: int):
        self.lm, self.top_k = lm, top_k
        server = isinstance(lm.transport, ServerTransport)
        self.supports_async = server
        self.pipeline_depth: int | None = lm.max_in_flight if server else None

    def submit(self, sequence: Any, batch: list[Window]) -> PendingStats:
        seq = np.asarray(sequence.cpu() if hasattr(sequence, "cpu") else sequence)
        # a prompt ends with the window's last target (its inputs predict one more)
        prompts = [seq[w.input_start:w.target_end].tolist() for w in batch]
        self.lm.check_tokenizer(prompts[0])
        pending = self.lm.start(prompts, self.top_k)

        def finish() -> dict[str, np.ndarray]:
            answers = pending()
            parts = [window_stats(seq, w, positions, self.top_k)
                     for w, positions in zip(batch, answers, strict=True)]
            return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

        return PendingStats(finish, pending.ready)

    def score_batch(self, sequence: Any, batch: list[Window]) -> dict[str, np.ndarray]:
        return self.submit(sequence, batch)()

    def bow_after_last(self, sequence: Any, max_length: int) -> float:
        return math.nan  # needs the whole distribution (PARTIAL_DISTRIBUTION)


def window_stats(seq: np.ndarray, w: Window, positions: list[PositionLogprobs],
                 top_k: int) -> dict[str, np.ndarray]:
    """One window's target statistics from its prompt positions' log-probabilities."""
    first, last = w.target_start - w.input_start, w.target_end - w.input_start
    n = last - first
    surprisal = np.empty(n)
    rank = np.empty(n, np.int64)
    topk_ids = np.zeros((n, top_k), np.int64)
    topk_probs = np.zeros((n, top_k))
    for row, i in enumerate(range(first, last)):
        entry, target = positions[i], int(seq[w.input_start + i])
        if entry is None or target not in entry:
            raise VllmError(f"the answer lacks the log-probability of prompt token {i} "
                            f"(id {target}); is the server vLLM?")
        surprisal[row] = -entry[target][0]
        rank[row] = entry[target][1]
        best = sorted(entry.items(), key=lambda kv: (kv[1][1], -kv[1][0]))[:top_k]
        if len(best) < top_k:
            raise VllmError(f"the answer holds {len(best)} top tokens at prompt token {i}, "
                            f"not top_k={top_k}")
        topk_ids[row] = [t for t, _ in best]
        topk_probs[row] = [math.exp(lp) for _, (lp, _) in best]
    return {"surprisal": surprisal, "entropy": np.full(n, np.nan), "rank": rank,
            "topk_ids": topk_ids, "topk_probs": topk_probs,
            "context_length": np.arange(first, last)}


def load_vllm(spec: Any, *, served_model: str | None = None, tokenizer: Any = None,
              dtype: str | None = None, max_in_flight: int = DEFAULT_IN_FLIGHT,
              retries: int = 4, backoff_s: float = 0.5, timeout_s: float = 600.0,
              api_key: str | None = None) -> VllmModel:
    """A ``VllmModel`` for a server URL (``http://HOST:PORT/v1``) or a ``vllm.LLM``.

    ``served_model``: the model's name on a server that serves several.  ``tokenizer``:
    the model's own (a folder, a Hub id or a loaded tokenizer; default: the served
    model's path, or the engine's).  ``dtype``: what the settings say the server runs
    (default: from the server where it says, else "unknown").  ``max_in_flight``:
    requests at once; ``retries``/``backoff_s``: how a failed request is tried again.
    The API key: ``api_key``, else ``$VLLM_API_KEY``, else ``$OPENAI_API_KEY``."""
    if max_in_flight < 1:
        raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight!r}")
    if is_vllm_engine(spec):
        transport = EngineTransport(spec)
        served, max_len, where = transport.model_path, transport.max_model_len, "in-process engine"
        tok = tokenizer if tokenizer is not None else transport.tokenizer()
        dtype = dtype or transport.dtype
    elif is_server_url(spec):
        transport = ServerTransport(spec, key=api_key, timeout_s=timeout_s, retries=retries,
                                    backoff_s=backoff_s)
        try:
            card = _served_card(transport, served_model)
        except VllmError as exc:
            raise ModelLoadError(str(exc)) from None
        served, where = str(card["id"]), transport.url
        max_len = card.get("max_model_len")
        tok = tokenizer if tokenizer is not None else str(card.get("root") or served)
        dtype = dtype or "unknown (the server does not say)"
    else:
        raise ModelLoadError(f"load_vllm takes a server URL (http://HOST:PORT/v1) or a "
                             f"vllm.LLM, got {type(spec).__name__}")
    if not isinstance(max_len, int) or max_len < 2:
        raise ModelLoadError(f"{where} gives no max model length for {served!r}: is it "
                             "vLLM?")
    if isinstance(tok, str | os.PathLike):
        tok = load_pretrained_tokenizer(os.fspath(tok), False)
    if not getattr(tok, "is_fast", False):
        raise ModelLoadError(f"the tokenizer {type(tok).__name__} gives no offsets (not a "
                             "'fast' tokenizer): pass tokenizer= the model's fast one")
    model = VllmModel(transport, served, tok, max_model_len=max_len, dtype=str(dtype),
                      where=where, max_in_flight=max_in_flight)
    if isinstance(transport, ServerTransport):  # one tiny request: a server without
        try:  # prompt log-probabilities fails here, not at the first window
            transport.prompt_logprobs(served, _probe_ids(tok), 0)
        except VllmError as exc:
            raise ModelLoadError(str(exc)) from None
    return model


def _probe_ids(tokenizer: Any) -> list[int]:
    ids = list(tokenizer("Hello, world", add_special_tokens=False)["input_ids"])
    return ids if len(ids) >= 2 else [*ids, *ids, 0][:2]


def _served_card(transport: ServerTransport, served_model: str | None) -> dict[str, Any]:
    """The served model's card from ``/v1/models`` (a wrong or missing name: listed)."""
    cards = [c for c in transport.models() if isinstance(c, dict) and "id" in c]
    names = [str(c["id"]) for c in cards]
    if served_model is None:
        if len(cards) != 1:
            raise ModelLoadError(f"{transport.url} serves {len(cards)} models "
                                 f"({', '.join(names) or 'none'}): pass served_model= one")
        return cards[0]
    for card in cards:
        if card["id"] == served_model:
            return card
    raise ModelLoadError(f"{transport.url} does not serve {served_model!r}; it serves: "
                         f"{', '.join(names) or 'nothing'}")
