"""``ppl-widget reading TABLE.csv --rt gaze_rt --word word --by text``: does the model's
surprisal predict the table's reading times? Prints ΔLL per reading-time measure (the
tidy table of ``predictive_power``); ``-o`` writes it as CSV, ``--per-word`` every word's
numbers. The table's columns are checked before the model is loaded."""

from __future__ import annotations

import argparse
import warnings
from typing import TYPE_CHECKING, TextIO

from ..core.reading.fold_layout import FOLD_LAYOUTS
from .load_bar import load_with_bar
from .options import add_score_options, check_counts, count
from .words import read_rows

if TYPE_CHECKING:
    import pandas as pd

#: cells read as a missing number in a numeric column (R's and pandas' spellings)
MISSING = {"", "NA", "NaN", "nan", "N/A", "NULL", "null"}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "reading", help="ΔLL: how much the model's surprisal predicts a table's reading times",
        description="Psychometric predictive power of a reading-time table (one row per "
        "word shown, in reading order): the words of each --by text are scored, and each "
        "--rt column is regressed on the baseline (word length and frequency, with their "
        "values for the --spillover previous words) with and without surprisal; ΔLL is the "
        "mean per-word gain in held-out log-likelihood (nats). See docs/reading_times.md.")
    p.add_argument("file", help="CSV (or .tsv) file, one row per word in reading order")
    p.add_argument("--rt", action="append", required=True, metavar="COL",
                   help="reading-time column (repeat for several measures)")
    p.add_argument("--word", default="word", help="the column of the words shown (default: "
                   "word)")
    p.add_argument("--rt-word", default=None, metavar="COL",
                   help="the reading-time side's label of the word, checked against --word "
                   "(default: word.y when --word is word.x)")
    p.add_argument("--by", action="append", default=None, metavar="COL",
                   help="text column: spillover and group folds stay within a text (repeat "
                   "for several columns)")
    p.add_argument("--baseline", default="length+frequency",
                   help="baseline predictors joined by '+': the table's columns, or length / "
                   "frequency computed from the word (default: length+frequency)")
    p.add_argument("--spillover", type=count, default=2, help="previous words (default: 2)")
    p.add_argument("--folds", type=count, default=10, help="cross-validation folds "
                   "(default: 10)")
    p.add_argument("--fold-by", default="group", choices=list(FOLD_LAYOUTS),
                   help="group: whole --by texts per fold (default); contiguous: blocks of "
                   "rows (Wilcox et al. 2023); random: shuffled rows (--seed)")
    p.add_argument("--seed", type=int, default=None, help="seed for --fold-by random")
    p.add_argument("--language", default="en", help="wordfreq language for the frequency "
                   "(default: en)")
    p.add_argument("--bow-correction", action="store_true",
                   help="use the leading-whitespace-corrected surprisal")
    p.add_argument("-o", "--out", default=None, help="also write the table as CSV here")
    p.add_argument("--per-word", default=None, metavar="CSV",
                   help="write every word's numbers (surprisal, prediction, ΔLL) here")
    add_score_options(p, top_k=False)
    p.set_defaults(top_k=0)  # no alternatives kept: check_counts reads it


def read_reading_table(path: str, numeric: list[str], word: str = "word") -> pd.DataFrame:
    """The table as written (words stay words), the ``numeric`` columns as numbers:
    missing spellings (NA, empty, ...) become NaN; any other non-number is an error naming
    its line. ``word``: the column of the words shown (``--word``)."""
    import numpy as np
    import pandas as pd

    frame = read_rows(path, word, empty="a reading table needs a header row naming its "
                      "columns (one row per word shown, in reading order)",
                      missing="a reading table has one row per word shown: name the column "
                      "holding the words with --word COL")
    for name in numeric:
        if name not in frame.columns:
            continue  # check_reading_table names the missing column
        cells = frame[name].str.strip()
        values = pd.to_numeric(cells.where(~cells.isin(MISSING)), errors="coerce")
        bad = values.isna() & ~cells.isin(MISSING)
        if bad.any():
            line = frame.index[int(np.flatnonzero(bad.to_numpy())[0])]
            raise ValueError(f"{path}, line {line}: column {name!r} must hold numbers (or NA); "
                             f"it holds {frame.at[line, name]!r}")
        frame[name] = values.astype(np.float64)
    return frame


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..core.reading.reading_table import COMPUTED, baseline_names, check_reading_table
    from ..scoring.analyses.predictive_power import predictive_power

    check_counts(args)
    if args.no_prefix:
        raise ValueError("reading scores every token of every word: --no-prefix would leave "
                         "the first word's first token unscored")
    names = [n for n in baseline_names(args.baseline) if n not in COMPUTED]
    frame = read_reading_table(args.file, args.rt + names, args.word)
    check_reading_table(frame, rt=args.rt, word=args.word, by=args.by,
                        baseline=args.baseline, rt_word=args.rt_word)
    lm = load_with_bar(args, err)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = predictive_power(frame, {lm.name: lm}, rt=args.rt, word=args.word, by=args.by,
                                 baseline=args.baseline, spillover=args.spillover,
                                 folds=args.folds, fold_by=args.fold_by, seed=args.seed,
                                 bow_correction=args.bow_correction, language=args.language,
                                 rt_word=args.rt_word, max_length=args.max_length,
                                 stride=args.stride, add_eos=args.add_eos)
    for warning in caught:
        err.write(f"ppl-widget: warning: {warning.message}\n")
    out.write(table.to_string(index=False, float_format=lambda v: f"{v:.6g}") + "\n")
    if args.out:
        table.to_csv(args.out, index=False)
    if args.per_word:
        table.attrs["per_word"].to_csv(args.per_word, index=False)
    settings = table.attrs["settings"]
    used = sorted({r.settings["folds"] for r in table.attrs["results"].values()})
    err.write(f"ΔLL in nats per word; {' or '.join(map(str, used))} folds by "
              f"{settings['fold_by']}, spillover {settings['spillover']}, baseline "
              f"{'+'.join(settings['baseline'])}" + (f" -> {args.out}" if args.out else "")
              + "\n")
    if max(used) < args.folds:
        err.write(f"ppl-widget: note: --folds {args.folds} asked, {max(used)} used: "
                  "--fold-by group keeps each text whole in one fold, so there are no more "
                  "folds than texts with usable rows (more texts, or --fold-by contiguous, "
                  "give more folds)\n")
    return 0
