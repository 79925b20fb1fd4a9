"""predictive_power's cost beside one score_words of the same texts (target: <= 1.2x).

MECO English (``leakage/en.csv``, the rows of one of its models: 2,107 words in 12 texts)
with the default model (SmolLM2), gaze / total / first-fixation time, ten folds by text:
``predictive_power`` scores the words once and fits 2 x 3 x 10 regressions; the
regressions, frequencies and lengths should be noise beside the scoring. Each is run
once to warm up, then ``--repeat`` times; the medians are compared.

    python benchmarks/bench_predictive_power.py [--data DIR] [--model SPEC] [--repeat 3]
    python benchmarks/bench_predictive_power.py --smoke   # a bigram on synthetic texts (CI)

``--data``: the MECO folder (default: ``$PPL_WIDGET_DATA/meco``, else ``../shared/data/meco``
beside the repository).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import statistics
import sys
import time
import warnings

import numpy as np
import pandas as pd

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RTS = ["gaze_rt", "total_rt", "firstfix_rt"]


def meco_english(data: pathlib.Path) -> pd.DataFrame:
    """MECO English's words once (the rows of its first model), in file order."""
    frame = pd.read_csv(data / "leakage" / "en.csv", keep_default_na=False, na_values=["NA"],
                        dtype={"word.x": str, "word.y": str, "clean_word": str})
    first = frame["model"].iloc[0]
    return frame[frame["model"] == first].reset_index(drop=True)


def synthetic(n_texts: int = 12, words: int = 60) -> tuple[pd.DataFrame, object]:
    """Random texts over a small vocabulary, reading times that follow word length, and a
    bigram fitted on them."""
    from ppl_widget import NGramModel

    rng = np.random.default_rng(0)
    vocab = "the a cat dog sat ran on in under house garden old young small big red".split()
    rows = [(t, str(rng.choice(vocab))) for t in range(1, n_texts + 1) for _ in range(words)]
    frame = pd.DataFrame(rows, columns=["sample_id", "word.x"])
    for name in RTS:
        frame[name] = 150 + 15 * frame["word.x"].str.len() + rng.normal(0, 20, len(frame))
    texts = [" ".join(g["word.x"]) for _, g in frame.groupby("sample_id")]
    return frame, NGramModel(2, "kneser-ney").fit(texts)


def median_time(fn, repeat: int) -> float:
    fn()  # warm-up: first calls allocate, load frequency lists, compile
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=None, help="the MECO folder (see above)")
    parser.add_argument("--model", default=None, help="anything load_model takes (default: "
                        "the embedded SmolLM2)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--smoke", action="store_true",
                        help="a bigram on synthetic texts: runs anywhere, in seconds")
    args = parser.parse_args()

    from ppl_widget import ReadingTimeWarning, load_model, predictive_power, score_words

    if args.smoke:
        frame, lm = synthetic()
        repeat = 1
    else:
        data = pathlib.Path(args.data) if args.data else pathlib.Path(
            os.environ.get("PPL_WIDGET_DATA") or ROOT.parent / "shared" / "data") / "meco"
        frame = meco_english(data)
        lm = load_model(args.model, device="cpu")
        repeat = args.repeat
    words = pd.DataFrame({"word": frame["word.x"], "text": frame["sample_id"]})
    print(f"# {lm.name}, {frame['sample_id'].nunique()} texts, {len(frame)} words, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"median of {repeat} after a warm-up")
    t_score = median_time(lambda: score_words(words, lm, by="text"), repeat)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReadingTimeWarning)  # MECO's 21 shifted labels: known
        t_power = median_time(lambda: predictive_power(frame, lm, rt=RTS, word="word.x",
                                                       by="sample_id"), repeat)
    label = f"predictive_power ({len(RTS)} RT measures, 10 folds)"
    print(f"| {'step':44} | seconds | vs score_words |")
    print(f"|{'-' * 46}|---------|----------------|")
    print(f"| {'score_words (the texts once)':44} | {t_score:7.3f} | {1:13.2f}x |")
    print(f"| {label:44} | {t_power:7.3f} | {t_power / t_score:13.2f}x |")
    print(f"predictive_power / score_words = {t_power / t_score:.2f}x (target <= 1.2x)")
    if args.smoke:
        print("(smoke: a bigram scores in milliseconds, so the ratio says nothing of the "
              "target, which is for a neural model)")


if __name__ == "__main__":
    main()
