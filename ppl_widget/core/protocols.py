"""Scoring protocols: how other tools lay out their windows, as window plans.

Pure Python: each plan is a list of ``Window`` (``core/windows.py``), so one run loop
serves every protocol, and each plan can be checked alone against the tool's own loop.
Positions index the model's input sequence ``S`` as in ``core/windows.py``.  A protocol
may leave positions unscored (they stay in the result as unscored tokens) and fixes the
prefix token the tool reads.

- ``exact`` (the default): every token scored once, with as much context as the window
  allows (``plan_windows``).
- ``llama.cpp``: ``llama-perplexity``'s layout (tools/perplexity/perplexity.cpp,
  ``perplexity()``): the text tokenized with BOS where the model adds one; disjoint
  chunks of ``n_ctx = max_length`` positions, the remainder after the last whole chunk
  dropped; a chunk's first position read as BOS (where the model adds one); in each
  chunk only the positions after ``first = n_ctx // 2`` scored (``n_ctx - 1 - first``
  per chunk).  It refuses texts of fewer than ``2 * n_ctx`` tokens.
- ``lm-eval``: lm-evaluation-harness's rolling log-likelihood windows
  (``get_rolling_token_windows``, ``context_len=1``): ``plan_windows`` with
  ``stride == max_length``, after its prefix token (BOS, else EOS).
- ``hf-guide``: the strided loop of the transformers perplexity guide
  (https://huggingface.co/docs/transformers/perplexity): no prefix token; windows
  ``[begin, begin + max_length)`` for ``begin = 0, stride, 2 * stride, ...`` until one
  reaches the end; each scores its last ``trg_len = end - prev_end`` positions (the first
  position of the text is never scored).  Its token count, ``num_valid_tokens -
  batch_size``, is one short for every window after the first that does not start at
  its first target: ``guide_report`` gives the guide's number and the correct one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .validation import as_count
from .windows import Window, check_window_settings, plan_windows


@dataclass(frozen=True)
class Protocol:
    """What a protocol fixes besides its windows."""

    name: str
    #: the prefix token it reads: "caller" (the ``prefix`` argument), "bos" (BOS, else
    #: EOS, as ``prefix='bos'``), "model" (BOS where the model's tokenizer adds one),
    #: None (none)
    prefix: str | None
    #: why a token goes unscored under it (tooltips, docs)
    unscored_why: str
    #: its windows are ``plan_windows``' (every token scored once): an edited text can
    #: keep the windows before the edit (``scoring/runner/incremental.py``), and a long text's
    #: windows can be planned from its start while the rest is tokenized
    every_token: bool


PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (
    Protocol("exact", "caller", "the first token has no context to be predicted from", True),
    Protocol("llama.cpp", "model",
             "llama-perplexity scores only the second half of each chunk of max_length "
             "tokens and drops the text after the last whole chunk", False),
    Protocol("lm-eval", "bos", "the first token has no context to be predicted from", True),
    Protocol("hf-guide", None,
             "the transformers guide's loop reads no prefix token, so the first token is "
             "never scored", False),
)}


def get_protocol(protocol: Any) -> Protocol:
    """The named protocol, or a ValueError listing the names."""
    if isinstance(protocol, str) and protocol in PROTOCOLS:
        return PROTOCOLS[protocol]
    raise ValueError(f"protocol must be one of {', '.join(map(repr, PROTOCOLS))}, "
                     f"got {protocol!r}")


def check_protocol(protocol: Any, max_length: Any, stride: Any, *,
                   prefix_every_window: bool = False, add_eos: bool = False,
                   context: Any = None) -> tuple[int | None, int | None]:
    """``(max_length, stride)`` under ``protocol``'s rules (None: the model's default,
    checked once known), or a ValueError naming the rule broken.

    ``llama.cpp`` steps by whole chunks (stride None or ``max_length``) and needs
    ``max_length >= 3`` (a chunk scores ``max_length - 1 - max_length // 2`` tokens);
    ``lm-eval``'s rolling windows are disjoint (stride None or ``max_length``).  Neither
    tool, nor the guide, adds an EOS, reads a context or a prefix token in every window:
    those are ``exact``'s options."""
    p = get_protocol(protocol)
    max_length, stride = check_window_settings(max_length, stride,
                                               prefix_every_window=prefix_every_window)
    if p.name == "exact":
        return max_length, stride
    for given, what in ((prefix_every_window, "prefix_every_window=True"),
                        (add_eos, "add_eos=True"), (context is not None, "a context")):
        if given:
            raise ValueError(f"{what} is an option of protocol='exact'; protocol="
                             f"{p.name!r} reproduces its tool, which has no such option")
    if p.name in ("llama.cpp", "lm-eval") and stride is not None and max_length is not None \
            and stride != max_length:
        tool = ("llama-perplexity's chunks" if p.name == "llama.cpp"
                else "lm-evaluation-harness's rolling windows")
        raise ValueError(f"stride must equal max_length with protocol={p.name!r} ({tool} "
                         f"do not overlap), got stride={stride}, max_length={max_length}; "
                         f"leave stride unset")
    if p.name == "llama.cpp" and max_length is not None and max_length < 3:
        raise ValueError(f"max_length must be at least 3 with protocol='llama.cpp' (each "
                         f"chunk scores max_length - 1 - max_length // 2 tokens), "
                         f"got {max_length}")
    return max_length, stride


def protocol_stride(protocol: str, max_length: int, stride: int | None) -> int | None:
    """The stride a protocol steps by: ``max_length`` for the disjoint ones, else
    ``stride`` (None: ``score()``'s default)."""
    return max_length if protocol in ("llama.cpp", "lm-eval") else stride


def plan_protocol(protocol: str, n_positions: int, max_length: int, stride: int, *,
                  first_target: int = 1, prefix_every_window: bool = False,
                  bos: bool = False) -> list[Window]:
    """The windows of ``protocol`` over a sequence of ``n_positions``; ``bos``: position
    0 is a BOS token the model's tokenizer adds (llama.cpp reads it first in every chunk)."""
    p = get_protocol(protocol)
    if p.name == "llama.cpp":
        return plan_llama_cpp(n_positions, max_length, bos=bos)
    if p.name == "hf-guide":
        return plan_hf_guide(n_positions, max_length, stride)
    return plan_windows(n_positions, max_length, stride, first_target=first_target,
                        prefix_every_window=prefix_every_window)


def llama_cpp_scored_per_chunk(n_ctx: int) -> int:
    """Positions ``llama-perplexity`` scores per chunk: ``n_ctx - 1 - n_ctx // 2``."""
    return n_ctx - 1 - n_ctx // 2


def plan_llama_cpp(n_positions: int, n_ctx: int, *, bos: bool) -> list[Window]:
    """``llama-perplexity``'s chunks: chunk ``i`` reads positions ``[i n_ctx, (i+1) n_ctx)``
    (BOS in place of the first where ``bos``) and scores its last ``n_ctx - 1 - n_ctx//2``
    positions; the model need not read the chunk's last position (its logits are
    unused), so the window's input ends one before."""
    n_positions, n_ctx = as_count("n_positions", n_positions), as_count("max_length", n_ctx)
    if n_ctx < 3:
        raise ValueError(f"max_length must be at least 3 with protocol='llama.cpp', got {n_ctx}")
    if n_positions < 2 * n_ctx:
        raise ValueError(
            f"protocol='llama.cpp' needs a text of at least 2 * max_length = {2 * n_ctx} "
            f"tokens{' (BOS included)' if bos else ''}, got {n_positions}: llama-perplexity "
            f"refuses shorter texts ('you need at least {2 * n_ctx} tokens to evaluate "
            f"perplexity with a context of {n_ctx}'); use a longer text or a smaller "
            f"max_length{_fitting_n_ctx(n_positions)}")
    first = n_ctx // 2
    return [Window(start, start + n_ctx - 1, start + first + 1, start + n_ctx, bos and start > 0)
            for start in range(0, (n_positions // n_ctx) * n_ctx, n_ctx)]


def _fitting_n_ctx(n_positions: int) -> str:
    """The largest power-of-two chunk (as llama.cpp users pick ``-c``) this text holds
    twice, as a suggestion; empty where even 4 does not fit."""
    n_ctx = 4
    if n_positions < 2 * n_ctx:
        return ""
    while 4 * n_ctx <= n_positions:
        n_ctx *= 2
    return f", e.g. max_length={n_ctx} (--max-length {n_ctx})"


def plan_hf_guide(n_positions: int, max_length: int, stride: int) -> list[Window]:
    """The guide's windows ``[begin, end)`` with targets ``[max(prev_end, 1), end)``: the
    model reads ``[begin, end - 1)`` (the last position's logits are unused).  A last
    window of one position (``stride == max_length``) scores nothing and is left out (the
    guide's loop gets a NaN loss from it, weighted by 0, and prints NaN)."""
    n_positions = as_count("n_positions", n_positions)
    max_length, stride = check_window_settings(max_length, stride)
    assert max_length is not None and stride is not None
    windows: list[Window] = []
    prev_end = 0
    for begin in range(0, n_positions, stride):
        end = min(begin + max_length, n_positions)
        first = max(prev_end, begin + 1)  # the window's own first position has no context
        if end > first:
            windows.append(Window(begin, end - 1, first, end))
        prev_end = end
        if end == n_positions:
            break
    return windows


def guide_counts(windows: list[Window]) -> list[int]:
    """The guide's token count per window: ``num_valid_tokens - batch_size`` with
    ``num_valid_tokens = trg_len`` (its labels), one short of the targets scored
    where the window does not start at its first label (every window after the first
    when ``stride < max_length``)."""
    out, prev_end = [], 0
    for w in windows:
        begin, end = w.input_start, w.input_end + 1
        trg_len = min(end - prev_end, end - begin)  # labels: the window's last trg_len
        out.append(trg_len - 1)
        prev_end = end
    return out


def guide_report(surprisal: Any, windows: list[Window]) -> dict[str, float | int]:
    """The guide's perplexity as it reports it (each window's mean NLL weighted by its
    miscounted token count) beside the perplexity over the same tokens counted right."""
    nll = [float(x) for x in surprisal]
    if len(nll) != sum(w.n_targets for w in windows):
        raise ValueError(f"{len(nll)} surprisals for windows scoring "
                         f"{sum(w.n_targets for w in windows)} tokens")
    counts = guide_counts(windows)
    weighted, i = 0.0, 0
    for w, c in zip(windows, counts, strict=True):
        mean = sum(nll[i:i + w.n_targets]) / w.n_targets
        weighted += mean * c
        i += w.n_targets
    total = sum(counts)
    return {"guide_reported_ppl": math.exp(weighted / total) if total else math.nan,
            "guide_reported_n_tokens": total,
            "token_ppl": math.exp(sum(nll) / len(nll)) if nll else math.nan,
            "n_tokens": len(nll)}


def llama_cpp_chunk_ppl(surprisal: Any, n_ctx: int) -> list[float]:
    """The running perplexity ``llama-perplexity`` prints after each chunk (``[i]ppl``)."""
    per = llama_cpp_scored_per_chunk(n_ctx)
    out, total = [], 0.0
    nll = [float(x) for x in surprisal]
    for k in range(0, len(nll) - per + 1, per):
        total += sum(nll[k:k + per])
        out.append(math.exp(total / (k + per)))
    return out


def protocol_report(result: Any) -> dict[str, Any]:
    """``ScoreResult.protocol_report()``: the protocol, the scored and unscored token
    counts, this result's perplexity over its scored tokens, and what the protocol's
    tool prints (llama.cpp: ``chunk_ppl`` and ``final_ppl``; hf-guide:
    ``guide_reported_ppl`` and its token count)."""
    s = result.settings
    name = s.get("protocol", "exact")
    m = result.metrics()
    out: dict[str, Any] = {"protocol": name, "token_ppl": m["token_ppl"],
                           "n_tokens": m["n_tokens"],
                           "n_unscored_tokens": len(result.unscored_token_ids)}
    if result.partial:
        return out
    if name == "llama.cpp":
        out["chunk_ppl"] = llama_cpp_chunk_ppl(result.surprisal, int(s["max_length"]))
        out["final_ppl"] = out["token_ppl"]  # llama-perplexity's "Final estimate: PPL"
    elif name == "hf-guide":
        n_positions = len(result.token_ids) + len(result.unscored_token_ids)  # no prefix
        windows = plan_hf_guide(n_positions, int(s["max_length"]), int(s["stride"]))
        out.update(guide_report(result.surprisal, windows))
        out["guide_note"] = ("guide_reported_ppl is the number the transformers guide's loop "
                             "prints: it weights each window's mean NLL by num_valid_tokens - "
                             "batch_size, one token short for every window after the first; "
                             "token_ppl is the perplexity of the same tokens, each counted once")
    return out
