"""The numbers of docs/reading_times.md: ΔLL on MECO English (2,107 words, 12 texts) for
the paper's three English models (their own surprisal columns) and for ppl-widget's default
model through ``predictive_power``, gaze / total / first-fixation time, with and without
the leading-whitespace correction, and how the choice of folds moves the answer.

    python benchmarks/reading_times_english.py [--data DIR] [--model SPEC]

``--data``: the MECO folder (default: ``$PPL_WIDGET_DATA/meco``, else ``../shared/data/meco``
beside the repository).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import warnings

import pandas as pd

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_predictive_power import ROOT, RTS, meco_english  # noqa: E402

FOLDS = ["contiguous", "group", "random"]


def row(name: str, measure: str, fold_by: str, result) -> str:
    low, high = result.ci()
    return (f"| {name:26} | {measure:11} | {fold_by:10} | {result.mean:8.5f} | "
            f"[{low:8.5f}, {high:8.5f}] | {result.n} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=None)
    parser.add_argument("--model", default=None)
    args = parser.parse_args()

    from ppl_widget import delta_ll, load_model, predictive_power

    data = pathlib.Path(args.data) if args.data else pathlib.Path(
        os.environ.get("PPL_WIDGET_DATA") or ROOT.parent / "shared" / "data") / "meco"
    full = pd.read_csv(data / "leakage" / "en.csv", keep_default_na=False, na_values=["NA"],
                       dtype={"word.x": str, "word.y": str, "clean_word": str})
    header = ("| model                      | measure     | folds      | ΔLL      | 95% interval"
              "           | n    |\n|---|---|---|---|---|---|")
    print("## The paper's English models (their surprisal; baseline: the file's freq + len)\n")
    print(header)
    for model, rows in full.groupby("model", sort=False):
        rows = rows.reset_index(drop=True)
        for measure in RTS:
            for fold_by in FOLDS:
                result = delta_ll(rows, measure, ["surp"], ["freq", "len"], by="sample_id",
                                  fold_by=fold_by, seed=0)
                print(row(f"paper {model}", measure, fold_by, result))
    english = meco_english(data)
    lm = load_model(args.model, device="cpu")
    print(f"\n## {lm.name} through predictive_power (computed length + wordfreq Zipf)\n")
    print(header.replace("| model    ", "| model, correction"))
    for bow in (False, True):
        for fold_by in FOLDS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the 21 word.x / word.y rows: known
                table = predictive_power(english, {lm.name: lm}, rt=RTS, word="word.x",
                                         by="sample_id", fold_by=fold_by, seed=0,
                                         bow_correction=bow)
            for (_, measure), result in table.attrs["results"].items():
                name = f"{'bow-corrected' if bow else 'plain'}"
                print(row(name, measure, fold_by, result))
            if fold_by == "group":
                print(f"<!-- mean surprisal {table['mean_surprisal_bits'].iloc[0]:.4f} bits, "
                      f"word perplexity {table['word_perplexity'].iloc[0]:.2f} -->")
    computed = table.attrs["per_word"].drop_duplicates("row").set_index("row")["frequency"]
    print(f"\ncorrelation of the computed Zipf frequency with the file's freq: "
          f"{computed.corr(english['freq']):.4f}; exact matches: "
          f"{(computed.round(2) == english['freq']).mean():.1%}")


if __name__ == "__main__":
    main()
