"""divergence() of two models against one score() of the same text, on this CPU.

The same text, window and model objects; each method run ``--repeats`` times in turn
(score, divergence, score, ...) and its fastest run kept, so a neighbour's load hits
both alike.  divergence() runs two models over the same windows, so 2x one score() is
its floor; the target is <= 2.2x (the KL and the second model's statistics cost the
rest).  The KL of the first window is checked against a float64 computation from the
two models' full logits.

    python benchmarks/bench_divergence.py [--tokens 1024] [--max-length 512] [--model PATH]
    python benchmarks/bench_divergence.py --smoke   # a tiny random Llama and a copy (CI)
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from tiny_llama import tiny_llama  # noqa: E402

TEXT = (
    "Quantization stores a model's weights in fewer bits: four instead of sixteen or "
    "thirty-two. The model gets smaller and faster, and its predictions move a little. "
    "How far they move is measured token by token, as the Kullback-Leibler divergence of "
    "the quantized model's next-token distribution from the original's. Most tokens barely "
    "change; a few, where the original model was unsure, change a lot. "
)


def timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def noisy_copy(lm, scale: float = 0.02):
    """``lm`` with every weight perturbed by ~``scale`` of its mean size (smoke form)."""
    import copy

    import torch

    from ppl_widget import load_model

    model = copy.deepcopy(lm.model)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * scale * p.abs().mean())
    return load_model((model, lm.tokenizer), device="cpu", dtype="float32")


def float64_first_window_kl(base, other, text: str, max_length: int) -> np.ndarray:
    """KL per target of the first window, from each model's float64 logits."""
    import copy

    import torch

    tok = base.tokenizer
    ids = [tok.bos_token_id, *tok(text, add_special_tokens=False)["input_ids"]][:max_length + 1]
    inputs = torch.tensor(ids[:-1])[None]
    with torch.no_grad():
        lp = torch.log_softmax(copy.deepcopy(base.model).double()(inputs).logits[0], -1)
        lq = torch.log_softmax(copy.deepcopy(other.model).double()(inputs).logits[0], -1)
    return (lp.exp() * (lp - lq)).sum(-1).numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=1024, help="about this many tokens")
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default=None, help="the base model, anything load_model "
                        "takes (default: the embedded SmolLM2); the other is its Q4_0 copy")
    parser.add_argument("--other", default=None, help="the other model (default: a Q4_0 "
                        "copy of the base's weights, ppl_widget.scoring.kinds.gguf.quantize)")
    parser.add_argument("--smoke", action="store_true",
                        help="a tiny random Llama and a perturbed copy: runs anywhere, fast")
    args = parser.parse_args()

    import torch

    from ppl_widget import divergence, load_model, score
    from ppl_widget.scoring.kinds.gguf.quantize import quantized_copy

    if args.smoke:
        base = tiny_llama([TEXT], max_positions=256)
        other = noisy_copy(base)
        args.tokens, args.max_length, args.repeats = 200, 64, 2
    else:
        base = load_model(args.model, device="cpu")
        # weights only (activations=None): the same work per forward as the base, so the
        # ratio is divergence()'s own cost, not a slower second model's
        other = (load_model(args.other, device="cpu") if args.other
                 else quantized_copy(base, activations=None))
    n_text = len(base.tokenizer(TEXT, add_special_tokens=False)["input_ids"])
    text = TEXT * max(1, -(-args.tokens // n_text))
    window = {"max_length": args.max_length, "stride": args.max_length // 2}
    print(f"# {base.name} vs {other.name}, {platform.processor() or platform.machine()}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    score(text[:200], base, **window)  # warm-up (first calls allocate)
    divergence(text[:200], base, other, **window)
    t_score, t_div = [], []
    for _ in range(args.repeats):
        t, ref = timed(lambda: score(text, base, **window))
        t_score.append(t)
        t, res = timed(lambda: divergence(text, base, other, **window))
        t_div.append(t)
    n = len(res)
    print(f"{n} tokens, max_length {args.max_length}, stride {window['stride']}, "
          f"best of {args.repeats}")
    print("| method       | seconds | tokens/s | vs score() |")
    print("|--------------|---------|----------|------------|")
    best_s, best_d = min(t_score), min(t_div)
    for name, t in (("score()", best_s), ("divergence()", best_d)):
        print(f"| {name:12} | {t:7.2f} | {n / t:8.0f} | {t / best_s:9.2f}x |")
    same = float(np.abs(res.base.surprisal - ref.surprisal).max())
    print(f"max |divergence().base - score()| surprisal: {same:.2e} nats")
    # the first window's targets: the first max_length tokens, read after the BOS
    want = float64_first_window_kl(base, other, text, args.max_length)
    rel = float(np.max(np.abs(res.kl[:len(want)] - want) / np.maximum(want, 1e-6)))
    print(f"first window: max relative |KL - float64 KL| {rel:.2e} over {len(want)} tokens")
    s = res.summary()
    print(f"mean KL {s['mean_kld']:.4f} ± {s['mean_kld_se']:.4f} nats, same top "
          f"{100 * s['same_top_p']:.1f}%, PPL ratio {s['ppl_ratio']:.4f}")
    print(f"divergence() is {best_d / best_s:.2f}x one score() (target <= 2.2x)")


if __name__ == "__main__":
    main()
