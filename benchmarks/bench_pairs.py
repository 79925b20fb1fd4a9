"""Minimal pairs: score_pairs against minicons, lm-evaluation-harness and a loop of score().

Same model object, same machine, one run: ``score_pairs`` (packed forward passes),
minicons' ``IncrementalLMScorer(model, tokenizer).sequence_score(batch,
reduction=lambda x: x.sum(0), bos_token=True)`` in batches of 32 (the BOS given, so
every token is scored as score() scores it), lm-evaluation-harness's own
``HFLM(pretrained=model).loglikelihood`` with an empty context (it then conditions on
its prefix token, the BOS, or the EOS where there is none: score()'s ``prefix="bos"``)
in batches of 32, and ``score()`` once per sentence (on the first ``--loop``
sentences).  Every sentence's total is checked against the others.

    python benchmarks/bench_pairs.py [--pairs 400] [--model PATH] [--loop 80]
    python benchmarks/bench_pairs.py --pairs 5000 --device cuda --dtype bfloat16  # a GPU
    python benchmarks/bench_pairs.py --smoke      # a tiny random Llama, a few pairs (CI)

minicons: ``pip install minicons --no-deps`` (plus pillow and wonderwords; its
declared dependencies would pull a CUDA torch); lm-eval: ``pip install --no-deps
lm_eval==0.4.13`` (its other dependencies are already here); without either, its row
is skipped.
"""

from __future__ import annotations

import argparse
import itertools
import platform
import time

import numpy as np

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


def tiny_llama(sentences: list[str]):
    """A tiny random Llama with a tokenizer trained on ``sentences`` (the smoke form)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from ppl_widget import load_model

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(sentences, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<unk>", "<s>", "</s>"]))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                        unk_token="<unk>")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=128, bos_token_id=1, eos_token_id=2)
    return load_model((LlamaForCausalLM(cfg), tokenizer), device="cpu", dtype="float32")


def run_minicons(lm, sentences: list[str], batch_size: int = 32) -> np.ndarray | None:
    """Each sentence's total NLL by minicons (None if minicons is not installed)."""
    try:
        from minicons import scorer
    except ImportError:
        return None
    tok = lm.tokenizer
    if tok.pad_token is None:  # minicons would set it and warn; same choice, said here
        tok.pad_token = tok.eos_token
    mc = scorer.IncrementalLMScorer(lm.model, device=str(lm.device), tokenizer=tok)
    out = []
    for i in range(0, len(sentences), batch_size):
        out += mc.sequence_score(sentences[i:i + batch_size], reduction=lambda x: x.sum(0),
                                 bos_token=True)
    return -np.array([float(x) for x in out])


def run_lm_eval(lm, sentences: list[str], batch_size: int = 32) -> np.ndarray | None:
    """Each sentence's total NLL by lm-evaluation-harness's ``loglikelihood`` with an
    empty context (None if lm_eval is not installed)."""
    try:
        from lm_eval.api.instance import Instance
        from lm_eval.models.huggingface import HFLM
    except ImportError:
        return None
    hf = HFLM(pretrained=lm.model, tokenizer=lm.tokenizer, batch_size=batch_size,
              device=str(lm.device))
    reqs = [Instance(request_type="loglikelihood", doc={}, arguments=("", s), idx=i)
            for i, s in enumerate(sentences)]
    return -np.array([ll for ll, _ in hf.loglikelihood(reqs, disable_tqdm=True)])


def timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--model", default=None, help="anything load_model takes "
                        "(default: the embedded SmolLM2)")
    parser.add_argument("--loop", type=int, default=80,
                        help="sentences scored by the loop of score() calls")
    parser.add_argument("--device", default="cpu", help="cpu, or cuda on a GPU machine")
    parser.add_argument("--dtype", default="float32", help="float32, or bfloat16 on a GPU")
    parser.add_argument("--smoke", action="store_true",
                        help="a tiny random Llama and 24 pairs: runs anywhere, in seconds")
    args = parser.parse_args()

    import torch

    from ppl_widget import load_model, score, score_pairs

    n_pairs, n_loop = (24, 8) if args.smoke else (args.pairs, args.loop)
    rows = synthetic_pairs(n_pairs)
    sentences = [s for _, good, bad in rows for s in (good, bad)]
    lm = tiny_llama(sentences) if args.smoke else load_model(args.model, device=args.device,
                                                             dtype=args.dtype)
    # per sentence: fp32 sums agree to ~1e-5 nats a token; in bf16 each method's batch
    # shapes round differently (~0.03 nats a token on average, up to ~0.3): a sanity bound
    tol = 1e-3 if str(lm.dtype) == "torch.float32" else 1.0
    import pandas as pd

    frame = pd.DataFrame(rows, columns=["phenomenon", "good", "bad"])
    print(f"# {lm.name}, {n_pairs} pairs ({len(sentences)} sentences), "
          f"{platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads")
    score_pairs(frame.head(4), lm)  # warm-up (first calls allocate)
    if run_minicons(lm, sentences[:4]) is None:
        print("minicons not installed: its row is skipped")
    if run_lm_eval(lm, sentences[:4]) is None:
        print("lm_eval not installed: its row is skipped")

    t_ours, df = timed(lambda: score_pairs(frame, lm))
    ours = np.column_stack([df["good_nll"], df["bad_nll"]]).ravel()
    t_mc, theirs = timed(lambda: run_minicons(lm, sentences))
    t_le, lm_eval = timed(lambda: run_lm_eval(lm, sentences))
    n_loop = min(n_loop, len(sentences))
    t_loop, looped = timed(lambda: np.array([
        score(s, lm, top_k=0).metrics()["total_nll"] for s in sentences[:n_loop]]))

    per_1k = 1000 / len(sentences)
    print("| method              | sentences | seconds | s per 1000 sentences | vs score_pairs |")
    print("|---------------------|-----------|---------|----------------------|----------------|")
    print(f"| score_pairs         | {len(sentences):9d} | {t_ours:7.2f} | "
          f"{t_ours * per_1k:20.2f} | {1.0:13.2f}x |")
    if theirs is not None:
        print(f"| minicons (batch 32) | {len(sentences):9d} | {t_mc:7.2f} | "
              f"{t_mc * per_1k:20.2f} | {t_mc / t_ours:13.2f}x |")
    if lm_eval is not None:
        print(f"| lm-eval (batch 32)  | {len(sentences):9d} | {t_le:7.2f} | "
              f"{t_le * per_1k:20.2f} | {t_le / t_ours:13.2f}x |")
    loop_1k = t_loop * 1000 / n_loop
    print(f"| loop of score()     | {n_loop:9d} | {t_loop:7.2f} | {loop_1k:20.2f} | "
          f"{loop_1k / (t_ours * per_1k):13.2f}x |")
    print(f"accuracy: {df['correct'].mean():.3f} (totals), "
          f"{df['correct_mean'].mean():.3f} (per token)")
    diff_loop = float(np.abs(ours[:n_loop] - looped).max())
    print(f"max |score_pairs - score()| per sentence: {diff_loop:.2e} nats")
    assert diff_loop < 1e-4, "score_pairs and score() disagree"
    print(f"agreement required per sentence: {tol:g} nats ({lm.dtype})")
    if theirs is not None:
        diff_mc = float(np.abs(ours - theirs).max())
        print(f"max |score_pairs - minicons| per sentence: {diff_mc:.2e} nats")
        assert diff_mc < tol, "score_pairs and minicons disagree"
        print(f"score_pairs is {t_mc / t_ours:.2f}x minicons, "
              f"{loop_1k / (t_ours * per_1k):.2f}x the loop of score()")
    if lm_eval is not None:
        diff_le = float(np.abs(ours - lm_eval).max())
        print(f"max |score_pairs - lm-eval| per sentence: {diff_le:.2e} nats")
        assert diff_le < tol, "score_pairs and lm-eval disagree"
        print(f"score_pairs is {t_le / t_ours:.2f}x lm-eval's loglikelihood")


if __name__ == "__main__":
    main()
