"""``ppl-widget score-corpus INPUT --out OUT.parquet``: score a corpus into one Parquet file."""

from __future__ import annotations

import argparse
from typing import TextIO

from ..core.validation import check_batch_size
from .options import add_protocol_option, add_score_options, check_counts, count
from .score import format_metrics


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "score-corpus", help="score every document of a corpus into one Parquet file",
        description="Score every document of a folder of text files, a JSONL file or a "
        "saved datasets dataset with the same settings into one Parquet file (open it "
        "with ppl_widget.open_corpus). A killed run resumes when run again. Under torchrun "
        "or accelerate launch the documents are shared among the ranks.")
    p.add_argument("input", help="folder of text files, .jsonl file, or a datasets dataset "
                   "saved with save_to_disk")
    p.add_argument("--out", required=True, help="the Parquet file to write")
    p.add_argument("--text-field", default="text", help="JSONL/dataset text field (text)")
    p.add_argument("--id-field", default="id", help="JSONL/dataset id field (id; documents "
                   "are numbered from 0 when the records have none)")
    p.add_argument("--context-field", default=None,
                   help="JSONL/dataset field with each record's context (a string, or a chat "
                   "as a list of {role, content} messages; null: none), read by the model "
                   "before the text and never scored")
    p.add_argument("--split", default=None, help="the split of a saved DatasetDict")
    p.add_argument("--glob", default="**/*", help="files of a folder to score (**/*)")
    add_score_options(p, no_prefix_help="leave each document's first token unscored",
                      device_help="auto, cpu, cuda, cuda:1, mps (under torchrun: each rank "
                      "cuda:LOCAL_RANK)")
    p.add_argument("--device-map", default=None,
                   help="accelerate device map for a model larger than one GPU (e.g. auto)")
    p.add_argument("--batch-size", default="auto",
                   help="input positions per model call, in windows of max-length (auto)")
    p.add_argument("--compile", choices=("auto", "yes", "no"), default="auto",
                   help="torch.compile the model body: auto (on a CUDA GPU once the run is "
                   "measured to be long enough to pay for the compile), yes, no")
    add_protocol_option(p)
    p.add_argument("--flush-docs", type=count, default=64,
                   help="documents per durable part file (what a kill can lose at most)")


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..scoring.corpus import score_corpus

    check_counts(args)
    batch = _batch_size(args.batch_size)
    corpus = score_corpus(
        args.input, args.out, args.model, max_length=args.max_length, stride=args.stride,
        prefix=None if args.no_prefix else "bos", add_eos=args.add_eos, top_k=args.top_k,
        batch_size=batch, text_field=args.text_field, id_field=args.id_field,
        context_field=args.context_field,
        split=args.split, glob=args.glob, device=args.device, dtype=args.dtype,
        device_map=args.device_map, flush_docs=args.flush_docs, compile=args.compile,
        progress=err, protocol=args.protocol)
    import os

    if os.environ.get("RANK", "0") in ("", "0"):
        m = corpus.metrics()
        out.write(f"{m['n_documents']:,} documents -> {args.out}\n")
        out.write(format_metrics(m) + "\n")
        if args.protocol != "exact":
            out.write(f"protocol {args.protocol}: tokens it does not score are left out of "
                      "every metric (docs/protocols.md)\n")
    return 0


def _batch_size(text: str) -> int | str:
    """--batch-size: "auto" or a whole number, by score()'s rule (and its message)."""
    try:
        value: int | str = int(text, 10)
    except ValueError:
        value = text  # "auto", or named in the rule's message
    return check_batch_size(value)
