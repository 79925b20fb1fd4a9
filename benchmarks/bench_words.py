"""A reading-time word list by item: score_words packed against one score() per item.

``--items`` sentences (synthetic agreement sentences, one item each), one row a word,
``by="item"``.  Same model object, same machine, one run: ``score_words`` as it is
(the items in packed forward passes) and ``score_words(..., packed=False)`` (one
``score()`` call per item, as before).  Every word's surprisal is checked against the
other path.

    python benchmarks/bench_words.py [--items 400] [--model PATH]
    python benchmarks/bench_words.py --smoke      # a tiny random Llama, a few items (CI)
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_pairs import synthetic_pairs, timed, tiny_llama  # noqa: E402


def word_list(n_items: int):
    """A frame of ``n_items`` items, one row per word (item, position, word)."""
    import pandas as pd

    sentences = [good for _, good, _ in synthetic_pairs(n_items)]
    rows = [(k, j, w) for k, s in enumerate(sentences) for j, w in enumerate(s.split())]
    return sentences, pd.DataFrame(rows, columns=["item", "position", "word"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--model", default=None, help="anything load_model takes "
                        "(default: the embedded SmolLM2)")
    parser.add_argument("--smoke", action="store_true",
                        help="a tiny random Llama and 24 items: runs anywhere, in seconds")
    args = parser.parse_args()

    import torch

    from ppl_widget import load_model, score_words

    sentences, frame = word_list(24 if args.smoke else args.items)
    lm = tiny_llama(sentences) if args.smoke else load_model(args.model, device="cpu")
    print(f"# {lm.name}, {len(sentences)} items, {len(frame)} words, "
          f"{platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads")
    head = frame[frame["item"] < 4]
    score_words(head, lm, by="item")  # warm-up (first calls allocate)
    score_words(head, lm, by="item", packed=False)
    t_packed, packed = timed(lambda: score_words(frame, lm, by="item"))
    t_loop, looped = timed(lambda: score_words(frame, lm, by="item", packed=False))
    assert packed.attrs["packed_groups"] == len(sentences)
    print("| method                   | items | seconds | s per 1000 items | vs packed |")
    print("|--------------------------|-------|---------|------------------|-----------|")
    for name, t in (("score_words (packed)", t_packed), ("one score() per item", t_loop)):
        print(f"| {name:24} | {len(sentences):5d} | {t:7.2f} | "
              f"{t * 1000 / len(sentences):16.2f} | {t / t_packed:8.2f}x |")
    diff = float(np.abs(packed["surprisal"] - looped["surprisal"]).max())
    print(f"max |packed - score()| per word: {diff:.2e} nats")
    assert diff < 1e-4, "the packed path and score() disagree"
    print(f"score_words packed is {t_loop / t_packed:.2f}x one score() per item")


if __name__ == "__main__":
    main()
