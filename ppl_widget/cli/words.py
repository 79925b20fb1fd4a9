"""``ppl-widget words FILE.csv [--by COL] [-o OUT.csv]``: the surprisal of every word of a
word list (one word a row, a ``word`` column), written back as CSV with the file's columns."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TextIO

from .load_bar import load_with_bar
from .options import add_score_options, check_counts

if TYPE_CHECKING:
    import pandas as pd


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "words", help="surprisal of every word of a word list (CSV with a 'word' column)",
        description="Score a word list (reading-time stimuli): the words of each --by group "
        "are joined with --sep into one text and scored; each row gets its word's surprisal "
        "(nats and bits) and token count, in the file's order. Cells are read as written "
        "(no NA guessing); errors name the row by its line in the file. See docs/words.md.")
    p.add_argument("file", help="CSV (or .tsv) file with a 'word' column")
    p.add_argument("--by", action="append", default=None, metavar="COL",
                   help="group column: each group is one text (repeat for several columns; "
                   "default: the whole file is one text)")
    p.add_argument("--sep", default=" ", help="what joins the words of a group (default: one "
                   "space; '' or whitespace only)")
    p.add_argument("--bow-correction", action="store_true",
                   help="add surprisal_corrected (leading-whitespace correction)")
    p.add_argument("-o", "--out", default=None, help="the CSV to write (default: standard "
                   "output)")
    add_score_options(p)


def read_word_list(path: str) -> pd.DataFrame:
    """Every cell as its text (``'NA'``, ``'null'`` and ``'1990'`` stay words); rows are
    labelled by their line in the file (the header is line 1).  A row whose field count
    is not the header's is an error (pandas would shift or drop its cells)."""
    return read_rows(path, "word", empty="a word list needs a header with a 'word' column",
                     missing="a word list has one word a row in a column named 'word'")


def read_rows(path: str, word: str, *, empty: str, missing: str) -> pd.DataFrame:
    """The CSV (or .tsv) file's cells as text, rows labelled by their line; ``empty`` and
    ``missing`` say what the file should hold when it is empty or lacks the ``word``
    column (each command names its own kind of table)."""
    import csv

    import pandas as pd

    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f, delimiter="\t" if path.lower().endswith(".tsv") else ",")
        header = next(reader, None)
        if header is None:
            raise ValueError(f"{path} is empty: {empty}")
        if word not in header:
            raise ValueError(f"{path} has no {word!r} column (its header: {', '.join(header)}); "
                             f"{missing}")
        rows, lines = [], []
        for row in reader:
            if not row:
                continue  # a blank line
            if len(row) != len(header):
                raise ValueError(f"{path}, line {reader.line_num}: {len(row)} field(s), the "
                                 f"header has {len(header)} (quote a word holding the "
                                 'delimiter: "Hello,")')
            rows.append(row)
            lines.append(reader.line_num)
    return pd.DataFrame(rows, columns=header, index=pd.Index(lines, name="line"), dtype=str)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..scoring.analyses.words import group_texts, score_words

    check_counts(args)
    frame = read_word_list(args.file)
    group_texts(frame, by=args.by, sep=args.sep)  # its columns and words, before the model loads
    lm = load_with_bar(args, err)
    scored = score_words(frame, lm, by=args.by, sep=args.sep,
                         bow_correction=args.bow_correction, max_length=args.max_length,
                         stride=args.stride, prefix=None if args.no_prefix else "bos",
                         add_eos=args.add_eos)
    if args.out:
        scored.to_csv(args.out, index=False)
    else:
        scored.to_csv(out, index=False)
    groups = scored.attrs["groups"]
    err.write(f"{len(scored):,} words in {len(groups):,} text(s) scored"
              + (f" -> {args.out}" if args.out else "") + "\n")
    return 0
