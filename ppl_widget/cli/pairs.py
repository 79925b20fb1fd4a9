"""``ppl-widget pairs FILE.csv|.jsonl [-o OUT.csv]``: score minimal pairs, print accuracy."""

from __future__ import annotations

import argparse
from typing import TextIO

from ..core.metrics import objective_labels
from ..core.windows import check_window_settings
from .load_bar import load_with_bar
from .options import add_pll_metric_option, add_score_options


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "pairs", help="score minimal pairs: which sentence does the model prefer?",
        description="Score each pair's good and bad sentence (columns good, bad; optional "
        "context, whose continuations they are); print the accuracy (correct: bad_nll > "
        "good_nll; correct_mean: the same per token), per group with --by.")
    p.add_argument("file", help=".csv with a header row, or .jsonl (one object a line)")
    p.add_argument("-o", "--out", default=None,
                   help="write the scored table here (.csv or .jsonl; - for standard output)")
    p.add_argument("--by", default=None, help="column to give the accuracy per group of "
                   "(e.g. phenomenon)")
    add_score_options(p, no_prefix_help="leave each sentence's first token unscored",
                      top_k=False)
    add_pll_metric_option(p)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    check_window_settings(args.max_length, args.stride)  # before torch or a model loads
    from ..core.pairs import read_pairs  # pandas: not for every command's start
    from ..scoring.analyses.pairs import score_pairs

    pairs = read_pairs(args.file)
    if args.by is not None and args.by not in pairs.columns:
        raise ValueError(f"--by {args.by}: no such column (columns: {list(pairs.columns)})")
    lm = load_with_bar(args, err)
    scored = score_pairs(pairs, lm, max_length=args.max_length, stride=args.stride,
                         prefix=None if args.no_prefix else "bos", add_eos=args.add_eos,
                         pll_metric=args.pll_metric)
    if args.out is not None:
        _write(scored, args.out, out)
    if args.out != "-":
        out.write(format_accuracy(scored, args.by) + "\n")
    return 0


def _write(frame, path: str, out: TextIO) -> None:
    if path == "-":
        frame.to_csv(out, index=False)
    elif path.lower().endswith((".jsonl", ".ndjson")):
        frame.to_json(path, orient="records", lines=True, force_ascii=False)
    else:
        frame.to_csv(path, index=False)


def format_accuracy(scored, by: str | None = None) -> str:
    """Accuracy by both criteria, overall and per group, as an aligned table."""
    from ..core.pairs import accuracy

    rows = [("all", accuracy(scored), accuracy(scored, column="correct_mean"))]
    # a masked LM's pairs: the sentence with the higher pseudo-log-likelihood wins
    named = objective_labels(scored.attrs)
    head = [f"correct: the good sentence has the higher pseudo-log-likelihood "
            f"({named['metric']})"] if named["pseudo"] else []
    if by is not None:
        totals = accuracy(scored, by)
        means = accuracy(scored, by, column="correct_mean")
        rows += [(str(g), totals.iloc[[i]], means.iloc[[i]])
                 for i, g in enumerate(totals[by])]
    width = max(12, *(len(r[0]) for r in rows))
    lines = [*head, f"{by or '':<{width}} {'pairs':>7} {'accuracy':>9} {'per token':>10}"]
    for name, total, mean in rows:
        lines.append(f"{name:<{width}} {int(total['n_pairs'].iloc[0]):>7,} "
                     f"{total['accuracy'].iloc[0]:>9.3f} {mean['accuracy'].iloc[0]:>10.3f}")
    return "\n".join(lines)
