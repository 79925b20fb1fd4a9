"""Minimal pairs: score_pairs against minicons, lm-eval and a loop of score() calls.

Same model object, same machine, one run: ``score_pairs`` (packed forward passes),
minicons' ``IncrementalLMScorer(model, tokenizer).sequence_score(batch,
reduction=lambda x: x.sum(0), bos_token=True)`` in batches of 32 (the BOS given, so
every token is scored as score() scores it), lm-evaluation-harness's own
``HFLM(pretrained=model, tokenizer=tokenizer, batch_size=32, max_length=...)
.loglikelihood`` with one request per sentence, an empty context and the sentence as the
continuation (lm-eval then conditions on its ``prefix_token_id``: the BOS, or the EOS when
there is no BOS, which is score()'s prefix too; the script prints which, and does not
assert the agreement if they ever differ), and ``score()`` once per sentence (on the first
``--loop`` sentences).  Every sentence's total is checked against the others, within a
tolerance per dtype (``pair_methods.TOLERANCE``, printed).

    python benchmarks/bench_pairs.py [--pairs 400] [--model PATH] [--loop 80]
    python benchmarks/bench_pairs.py --pairs 5000 --device cuda --dtype bfloat16  # GPU
    python benchmarks/bench_pairs.py --smoke      # a tiny random Llama, a few pairs (CI)

minicons: ``pip install minicons --no-deps`` (plus pillow and wonderwords; its
declared dependencies would pull a CUDA torch); without it that row is skipped.

lm-eval: ``pip install --no-deps lm_eval==0.4.13 accelerate==1.15.0`` (what
scripts/setup.sh runs; about 10 s).  ``HFLM`` imports with that and what transformers and
the test extras bring (accelerate's numpy, packaging, psutil, pyyaml, huggingface_hub,
safetensors; jinja2, tqdm); lm_eval's other declared dependencies (datasets, evaluate,
sacrebleu, rouge-score, scikit-learn, ...) serve its tasks.  --no-deps because its "hf"
extra and accelerate list torch, and pip must not touch the CPU torch.  Without lm_eval
that row is skipped; installed but not importable, the line printed says why.
"""

from __future__ import annotations

import argparse
import itertools
import pathlib
import platform
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from pair_methods import (  # noqa: E402
    TOLERANCE,
    lm_eval_import_error,
    lm_eval_scorer,
    minicons_scorer,
)
from tiny_llama import tiny_llama  # noqa: E402

BATCH = 32  # minicons' and lm-eval's batch size

# Agreement templates: (phenomenon, template, grammatical fillers, ungrammatical fillers)
NOUNS = [("author", "authors"), ("doctor", "doctors"), ("teacher", "teachers"),
         ("dog", "dogs"), ("senator", "senators"), ("pilot", "pilots"),
         ("farmer", "farmers"), ("student", "students")]
PLACES = ["the old house", "the river", "the busy market", "the new school", "the bridge"]
VERBS = [("is", "are"), ("was", "were"), ("likes", "like"), ("has", "have"),
         ("sleeps", "sleep"), ("writes", "write")]


def synthetic_pairs(n: int, seed: int = 0) -> list[tuple[str, str, str]]:
    """``n`` (phenomenon, good, bad) minimal pairs from agreement templates."""
    rng = np.random.default_rng(seed)
    out = []
    for i in itertools.count():
        if len(out) == n:
            return out
        (sg, pl), (vsg, vpl) = NOUNS[rng.integers(len(NOUNS))], VERBS[rng.integers(len(VERBS))]
        (asg, apl), place = NOUNS[rng.integers(len(NOUNS))], PLACES[rng.integers(len(PLACES))]
        plural = bool(rng.integers(2))
        subj, verb, wrong = (pl, vpl, vsg) if plural else (sg, vsg, vpl)
        kind = i % 3
        if kind == 0:  # simple agreement
            good = f"The {subj} {verb} near {place}."
            bad = f"The {subj} {wrong} near {place}."
            out.append(("subject_verb", good, bad))
        elif kind == 1:  # agreement across a prepositional phrase (an attractor)
            attractor = asg if plural else apl
            good = f"The {subj} next to the {attractor} {verb} happy today."
            bad = f"The {subj} next to the {attractor} {wrong} happy today."
            out.append(("attractor", good, bad))
        else:  # determiner-noun agreement
            det, wrong_det = ("These", "This") if plural else ("This", "These")
            good = f"{det} {subj} walked to {place} yesterday."
            bad = f"{wrong_det} {subj} walked to {place} yesterday."
            out.append(("determiner_noun", good, bad))
    raise AssertionError("unreachable")


def timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def describe(lm) -> str:
    """The machine the model runs on, in a few words."""
    import torch

    if lm.device.type == "cuda":
        return f"{torch.cuda.get_device_name(lm.device)}, torch {torch.__version__}"
    return (f"{platform.processor() or platform.machine()}, torch {torch.__version__}, "
            f"{torch.get_num_threads()} threads")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--model", default=None, help="anything load_model takes "
                        "(default: the embedded SmolLM2)")
    parser.add_argument("--loop", type=int, default=80,
                        help="sentences scored by the loop of score() calls")
    parser.add_argument("--device", default="cpu",
                        help="where the model is loaded (cuda on a GPU): one model object "
                        "for every method")
    parser.add_argument("--dtype", default="float32", choices=sorted(TOLERANCE))
    parser.add_argument("--smoke", action="store_true",
                        help="a tiny random Llama and 24 pairs: runs anywhere, in seconds")
    args = parser.parse_args()

    import pandas as pd

    from ppl_widget import load_model, score, score_pairs

    n_pairs, n_loop = (24, 8) if args.smoke else (args.pairs, args.loop)
    rows = synthetic_pairs(n_pairs)
    sentences = [s for _, good, bad in rows for s in (good, bad)]
    lm = (tiny_llama(sentences, device=args.device, dtype=args.dtype) if args.smoke
          else load_model(args.model, device=args.device, dtype=args.dtype))
    frame = pd.DataFrame(rows, columns=["phenomenon", "good", "bad"])
    print(f"# {lm.name}, {str(lm.dtype).removeprefix('torch.')} on {lm.device}, {n_pairs} "
          f"pairs ({len(sentences)} sentences), {describe(lm)}")

    # set-up and warm-up (first calls allocate) outside the timed runs
    score_pairs(frame.head(4), lm)
    minicons = minicons_scorer(lm, BATCH)
    if minicons is None:
        print("minicons not installed: its row is skipped")
    else:
        minicons(sentences[:4])
    lm_eval = lm_eval_scorer(lm, BATCH)
    if lm_eval is None:
        print(lm_eval_import_error() + ": its row is skipped")
    else:
        lm_eval.run(sentences[:4])
        print(lm_eval.prefix_note())

    t_ours, df = timed(lambda: score_pairs(frame, lm))
    ours = np.column_stack([df["good_nll"], df["bad_nll"]]).ravel()
    others = {}  # name: (seconds, each sentence's total NLL)
    if minicons is not None:
        others["minicons"] = timed(lambda: minicons(sentences))
    if lm_eval is not None:
        others["lm-eval"] = timed(lambda: lm_eval.run(sentences))
    n_loop = min(n_loop, len(sentences))
    t_loop, looped = timed(lambda: np.array([
        score(s, lm, top_k=0).metrics()["total_nll"] for s in sentences[:n_loop]]))

    ours_1k = t_ours * 1000 / len(sentences)
    print("| method              | sentences | seconds | s per 1000 sentences | vs score_pairs |")
    print("|---------------------|-----------|---------|----------------------|----------------|")
    table = [("score_pairs", "score_pairs", len(sentences), t_ours)]
    table += [(f"{name} (batch {BATCH})", name, len(sentences), t)
              for name, (t, _) in others.items()]
    table.append(("loop of score()", "the loop of score()", n_loop, t_loop))
    ratios = {}
    for label, name, n, t in table:
        ratios[name] = t * 1000 / n / ours_1k
        print(f"| {label:19} | {n:9d} | {t:7.2f} | {t * 1000 / n:20.2f} | "
              f"{ratios[name]:13.2f}x |")
    print(f"accuracy: {df['correct'].mean():.3f} (totals), "
          f"{df['correct_mean'].mean():.3f} (per token)")

    tol_loop, tol_other = TOLERANCE[args.dtype]
    print(f"tolerance per sentence ({args.dtype}): score() {tol_loop:g} nats, "
          f"minicons and lm-eval {tol_other:g} nats")
    diff_loop = float(np.abs(ours[:n_loop] - looped).max())
    print(f"max |score_pairs - score()| per sentence: {diff_loop:.2e} nats "
          f"(mean {np.abs(ours[:n_loop] - looped).mean():.1e})")
    assert diff_loop < tol_loop, "score_pairs and score() disagree"
    for name, (_, theirs) in others.items():
        diff = float(np.abs(ours - theirs).max())
        print(f"max |score_pairs - {name}| per sentence: {diff:.2e} nats "
              f"(mean {np.abs(ours - theirs).mean():.1e})")
        if name == "lm-eval" and not lm_eval.same_prefix():
            print("lm-eval's prefix token is not score()'s: that agreement is not asserted")
            continue
        assert diff < tol_other, f"score_pairs and {name} disagree"
    print("score_pairs is " + ", ".join(f"{ratios[name]:.2f}x {name}" for name in
                                        [*others, "the loop of score()"]))


if __name__ == "__main__":
    main()
