"""A transformers model as an ONNX graph a browser runs (onnxruntime-web), with the files a
live page loads: ``export_onnx_model(lm, folder, variant)``.

The graph reads one window's ``input_ids`` (1, L) and the ids of its last ``T`` targets
(1, T) and returns each target's statistics, computed as ``forward.BatchedForward`` does on
a CPU (fp32 logits shifted to a row max of 0): surprisal, entropy, rank and the top-k ids
and probabilities.  Only T rows go through the LM head, and only T x (4 + 2k) numbers leave
the graph, not T x vocabulary logits.  Variants: ``fp32`` (the exact one), ``int8``
(8-bit weights) and ``q4`` (4-bit weights), onnxruntime's MatMulNBits; each entry carries
its measured difference from ``score()`` (onnx_check.py).
The fp32 export and the variants made from it are cached (``~/.cache/ppl_widget/onnx``):
exporting SmolLM2-135M takes minutes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

from ....core.extras import require
from ..model_cache import ONNX_DIR, cache_root, entry_lock

#: What a browser can run, smallest last (``docs/live-transformer.md`` has their sizes).
VARIANTS = ("fp32", "int8", "q4")
#: Alternatives per target the graph returns (a page asks for at most these).
DEFAULT_TOP_K = 10
#: Longest window the graph is exported for on a page (attention memory grows as L^2).
DEFAULT_MAX_LENGTH = 1024
OUTPUT_NAMES = ("surprisal", "entropy", "rank", "topk_ids", "topk_probs")
#: Bump when the graph changes: cached exports of an older graph are not reused.
GRAPH_VERSION = 2


def stats_module(lm: Any, top_k: int) -> Any:
    """The torch module that the ONNX graph is traced from (see the module's docstring)."""
    import torch

    from ...runner.forward import body_of

    body = body_of(lm.model)
    if body is None:
        raise ValueError(f"{lm.name}: the ONNX export traces the model's body and LM head; this "
                         "model changes its logits after the head (soft-capping or scaling), "
                         "which the graph does not reproduce")
    n_layers = kv_shape(lm)["layers"]

    class WindowStats(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = body
            self.head = lm.model.get_output_embeddings()

        def forward(self, input_ids: Any, target_ids: Any, *past: Any) -> tuple[Any, ...]:
            from transformers import DynamicCache

            n = target_ids.shape[1]
            seen = past[0].shape[2]  # positions already in the cache (0: a window's start)
            cache = DynamicCache()
            for i in range(n_layers):
                cache.update(past[2 * i], past[2 * i + 1], i)
            positions = torch.arange(input_ids.shape[1], dtype=torch.long) + seen
            out = self.body(input_ids=input_ids, past_key_values=cache, use_cache=True,
                            position_ids=positions[None], cache_position=positions)
            states = out.last_hidden_state
            logits = self.head(states[0, -n:]).float()
            logits = logits - logits.amax(dim=-1, keepdim=True)  # row max 0, as on CPU
            log_z = torch.logsumexp(logits, dim=-1)
            probs = torch.exp(logits - log_z[:, None])
            target = logits.gather(1, target_ids[0][:, None])[:, 0]
            surprisal = log_z - target
            entropy = log_z - (probs * logits).sum(dim=-1)
            rank = (logits > target[:, None]).sum(dim=-1) + 1
            top_p, top_i = probs.topk(top_k, dim=-1)
            present = [t for layer in cache.layers for t in (layer.keys, layer.values)]
            return (surprisal, entropy, rank, top_i, top_p, *present)

    return WindowStats().eval()


def kv_shape(lm: Any) -> dict[str, int]:
    """The key/value cache's shape per layer: (1, heads, positions, head_dim), as the
    manifest entry gives it to the page (``kv_cache``)."""
    cfg = lm.model.config
    cfg = getattr(cfg, "get_text_config", lambda: cfg)()
    heads = getattr(cfg, "num_attention_heads", None) or cfg.n_head
    kv_heads = getattr(cfg, "num_key_value_heads", None) or heads
    hidden = getattr(cfg, "hidden_size", None) or cfg.n_embd
    head_dim = getattr(cfg, "head_dim", None) or hidden // heads
    layers = getattr(cfg, "num_hidden_layers", None) or cfg.n_layer
    return {"layers": int(layers), "heads": int(kv_heads), "head_dim": int(head_dim)}


def past_names(layers: int) -> tuple[list[str], list[str]]:
    """The graph's cache inputs and outputs, layer by layer, key before value."""
    past = [f"past_{kv}_{i}" for i in range(layers) for kv in ("key", "value")]
    return past, [n.replace("past_", "present_") for n in past]


def export_fp32(lm: Any, path: Path, *, top_k: int, max_length: int) -> None:
    """Trace ``stats_module`` with torch.onnx's dynamo exporter into one ``.onnx`` file
    (weights inside: SmolLM2-135M's 540 MB is under protobuf's 2 GB), for pieces of
    1 .. ``max_length`` new positions over a cache of 0 .. ``max_length`` positions, and
    1 .. ``max_length`` targets."""
    import torch

    require("onnxscript", "exporting a model to ONNX")
    module = stats_module(lm, top_k)
    shape = kv_shape(lm)
    past_in, present_out = past_names(shape["layers"])
    n = min(8, max_length)
    seen = 3
    dtype = next(lm.model.parameters()).dtype
    past = tuple(torch.zeros((1, shape["heads"], seen, shape["head_dim"]), dtype=dtype)
                 for _ in past_in)
    example = (torch.zeros((1, n), dtype=torch.long),
               torch.zeros((1, n // 2), dtype=torch.long), *past)
    length = torch.export.Dim("length", min=1, max=max_length)
    targets = torch.export.Dim("targets", min=1, max=max_length)
    cached = torch.export.Dim("cached", min=0, max=max_length)
    dynamic = ({1: length}, {1: targets}, tuple({2: cached} for _ in past_in))
    with warnings.catch_warnings(), torch.no_grad(), _quiet_exporter(), _without_slices_split():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            module, example, dynamo=True, input_names=["input_ids", "target_ids", *past_in],
            output_names=[*OUTPUT_NAMES, *present_out], dynamic_shapes=dynamic)
        program.save(str(path))


@contextlib.contextmanager
def _without_slices_split() -> Any:
    """onnxscript's optimizer (``optimize=True``) without its ``SlicesSplit`` rewrite, which
    never fires on these graphs (the same nodes with or without it, measured on a 30-layer
    llama) and matched slowly: 59 of the optimizer's 76 CPU s (docs/testing.md)."""
    try:
        import onnxscript.rewriter as rewriter
        rules = rewriter._DEFAULT_REWRITE_RULES
    except (ImportError, AttributeError):  # another onnxscript: its rules as they are
        yield
        return
    rewriter._DEFAULT_REWRITE_RULES = tuple(
        r for r in rules if getattr(r, "name", None) != "SlicesSplit")
    try:
        yield
    finally:
        rewriter._DEFAULT_REWRITE_RULES = rules


@contextlib.contextmanager
def _quiet_exporter() -> Any:
    """torch.onnx prints a line per step to stdout; a notebook cell shows none of them."""
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        yield


#: How each smaller variant is made (part of its cached file's name, so a new recipe is
#: not mistaken for an old one): weight-only blocks of ``Q_BLOCK_SIZE`` with one scale each.
RECIPES = {"int8": "w8b32", "q4": "hqq4b32"}
Q_BLOCK_SIZE = 32


def quantize(fp32: Path, out: Path, variant: str) -> None:
    """The weights of every MatMul with a constant weight (the layers' projections; not
    the tied embedding and LM head) in 8 (``int8``: symmetric, rounded to nearest) or 4
    (``q4``: HQQ's optimized scales and zero points, no calibration data) bits, blocks of
    ``Q_BLOCK_SIZE`` along the input dimension (onnxruntime's MatMulNBits, which
    onnxruntime-web's WASM backend runs); activations stay fp32.  Measured on SmolLM2-135M
    (docs/live-transformer.md): onnxruntime's dynamic int8 quantization, which quantizes
    activations per tensor too, moved surprisal by about 1 nat a token (LLM activations
    have outlier channels); 4 bits rounded to nearest by 0.6, HQQ's by 0.013."""
    require("onnxruntime", f"making the {variant} ONNX variant")
    if variant not in RECIPES:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    import logging

    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import (
        DefaultWeightOnlyQuantConfig,
        HQQWeightOnlyQuantConfig,
        MatMulNBitsQuantizer,
    )

    if variant == "int8":
        config = DefaultWeightOnlyQuantConfig(block_size=Q_BLOCK_SIZE, is_symmetric=True,
                                              bits=8)
    else:
        config = HQQWeightOnlyQuantConfig(block_size=Q_BLOCK_SIZE, bits=4)
    log = logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer")
    level = log.level
    log.setLevel(logging.WARNING)  # a line per node otherwise
    try:
        quantizer = MatMulNBitsQuantizer(onnx.load(str(fp32)), algo_config=config)
        quantizer.process()
        quantizer.model.save_model_to_file(str(out), use_external_data_format=False)
    finally:
        log.setLevel(level)


def weights_digest(lm: Any) -> str:
    """sha256 of the model's class, config and every weight: the cache key of its export.
    Where the model was read from is left out: a GGUF's first load (the file's folder) and
    every later one (the converted copy's) are the same model, and one export."""
    import torch

    digest = hashlib.sha256(type(lm.model).__name__.encode())
    config = lm.model.config.to_dict()
    config.pop("_name_or_path", None)
    digest.update(json.dumps(config, sort_keys=True, default=str).encode())
    for name, tensor in lm.model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()


def model_file(lm: Any, variant: str, *, top_k: int, max_length: int,
               cache: bool = True) -> Path:
    """The ``variant``'s ``.onnx`` file: from the cache, or exported (and cached)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    key = f"{weights_digest(lm)[:24]}-g{GRAPH_VERSION}-k{top_k}-L{max_length}"
    folder = cache_root() / ONNX_DIR / key if cache else Path(tempfile.mkdtemp(
        prefix="ppl-widget-onnx-"))
    path = folder / (f"model.{variant}-{RECIPES[variant]}.onnx" if variant in RECIPES
                     else f"model.{variant}.onnx")
    if path.is_file():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    fp32 = folder / "model.fp32.onnx"
    # a second process waits for this export to the cache, then reads it (a folder of
    # its own, not cached: no one else's)
    with entry_lock(folder) if cache else contextlib.nullcontext():
        if not fp32.is_file():
            _write_atomic(fp32, lambda tmp: export_fp32(lm, tmp, top_k=top_k,
                                                        max_length=max_length))
            (folder / "source.json").write_text(json.dumps({"model": lm.name}),
                                                encoding="utf-8")
        if variant != "fp32" and not path.is_file():
            _write_atomic(path, lambda tmp: quantize(fp32, tmp, variant))
    return path


def _write_atomic(path: Path, write: Any) -> None:
    """``write(tmp)`` then rename: a crash or a concurrent export leaves no half file."""
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def copy_into(src: Path, dst: Path) -> None:
    """A hard link where the file system allows it (the cache and the page share 500 MB),
    else a copy."""
    with contextlib.suppress(FileNotFoundError):
        dst.unlink()
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)
