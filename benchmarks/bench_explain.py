"""How fast ``explain()`` is, as ratios measured in one run on this machine.

A target at the end of a 256-token context (the start of
benchmarks/texts/kld_prose.txt), the default model on the CPU:

- gradient x input against one plain forward + backward of that context
  (``inputs_embeds`` through the model, d log p(target) / d embeddings);
- occlusion of every word against its arithmetic floor: the positions it must
  recompute once the key/value cache before each deletion is reused (the context once,
  then each word's edited context from its deletion on), times the scorer's measured
  cost per input position on this machine (``score()`` of twice the text (with
  kld_story.txt) in windows of 256, its time over its windows' input positions);
- the time until the 16 nearest words are computed (``iter_explain``), in seconds.

Each time is the best of ``--repeats`` runs (the machine is shared).

    python benchmarks/bench_explain.py [--repeats 3] [--model PATH] [--tokens 256] [--device cuda]
    python benchmarks/bench_explain.py --smoke   # a tiny random Llama (CI)
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import sys
import time
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def best_time(fn: Any, repeats: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def text_of(lm: Any, source: str, n_tokens: int) -> str:
    """The shortest prefix of ``source`` (cut at a space) with at least ``n_tokens`` tokens."""
    from bench_live_page import text_of_tokens

    if len(lm.tokenizer(source)["input_ids"]) < n_tokens:
        raise SystemExit(f"the text has fewer than {n_tokens} tokens")
    return text_of_tokens(lm, source, n_tokens)


def forward_backward(lm: Any, ids: list[int]) -> float:
    """One plain forward and backward pass of the context for the last token."""
    import torch

    model = lm.model
    ids_in = torch.tensor([ids[:-1]], device=lm.device)
    x = model.get_input_embeddings()(ids_in).detach().requires_grad_(True)
    log_p = torch.log_softmax(model(inputs_embeds=x).logits[0, -1].float(), -1)[ids[-1]]
    torch.autograd.grad(log_p, x)
    return float(-log_p.detach())


def scorer_cost_per_position(lm: Any, text: str, repeats: int) -> tuple[float, int]:
    """Seconds per input position of ``score()`` in windows of 256 (stride 128)."""
    from ppl_widget import score
    from ppl_widget.core.windows import plan_windows

    n = len(lm.tokenizer(text)["input_ids"]) + 1  # with the BOS
    positions = sum(w.n_inputs for w in plan_windows(n, 256, 128))
    seconds, _ = best_time(lambda: score(text, lm, max_length=256, stride=128, top_k=0),
                           repeats)
    return seconds / positions, positions


def recompute_floor(lm: Any, text: str) -> tuple[int, int]:
    """(positions occlusion of every word must compute, words): the context once, then
    each edited context from its deletion on."""
    from ppl_widget.scoring.analyses.explain_setup import setup

    plan = setup(text, lm, token=-1, word=None, unit="word", score_settings={}).plan
    g = plan.groups[0]
    read = len(g.positions()) - 1
    total = read
    for u in plan.units:
        b = len(g.head) + int((g.context <= u.positions.max()).sum())
        total += read - b
    return total, len(plan.units)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="anything load_model takes")
    parser.add_argument("--tokens", type=int, default=256, help="context tokens")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu", help="where the model runs (cpu, cuda)")
    parser.add_argument("--smoke", action="store_true", help="a tiny random Llama, 64 tokens")
    args = parser.parse_args()

    import torch

    from ppl_widget import explain, iter_explain, load_model

    texts = ("kld_prose.txt", "kld_story.txt")
    source = " ".join(" ".join((HERE / "texts" / t).read_text(encoding="utf-8").split())
                      for t in texts)
    if args.smoke:
        from tiny_llama import tiny_llama

        lm = tiny_llama([source[:20000]], max_positions=512)
        args.tokens, args.repeats = 64, 1
    else:
        lm = load_model(args.model, device=args.device)
    text = text_of(lm, source, args.tokens)
    long_text = text_of(lm, source, 2 * args.tokens if not args.smoke else 256)
    ids = [lm.tokenizer.bos_token_id] + lm.tokenizer(text)["input_ids"]
    print(f"# {lm.name} on {platform.processor() or platform.machine()}, "
          f"{torch.get_num_threads()} threads; target: the last of {len(ids) - 1} tokens "
          f"(BOS first)")

    t_fb, s_fb = best_time(lambda: forward_backward(lm, ids), args.repeats)
    t_grad, grad = best_time(lambda: explain(text, lm, token=-1, unit="word",
                                             method="gradient"), args.repeats)
    print(f"gradient x input: {t_grad:.3f} s; one forward + backward: {t_fb:.3f} s; "
          f"ratio {t_grad / t_fb:.2f} (target: <= 2); surprisal {grad.target_surprisal_nats:.4f} "
          f"vs {s_fb:.4f} nats")

    per_position, positions = scorer_cost_per_position(lm, long_text, args.repeats)
    floor_positions, n_words = recompute_floor(lm, text)
    floor = floor_positions * per_position
    t_all, full = best_time(lambda: explain(text, lm, token=-1, unit="word"), 1)
    print(f"scorer: {per_position * 1e3:.3f} ms per input position ({positions} positions)")
    print(f"occlusion of all {n_words} words: {t_all:.2f} s; floor {floor_positions} "
          f"positions x {per_position * 1e3:.3f} ms = {floor:.2f} s; ratio "
          f"{t_all / floor:.2f} (target: <= 1.3)")

    def first_16() -> float:
        t0 = time.perf_counter()
        for step in iter_explain(text, lm, token=-1, unit="word"):
            if step.done >= min(16, step.total):
                return time.perf_counter() - t0
        return time.perf_counter() - t0

    t16 = min(first_16() for _ in range(args.repeats))
    print(f"16 nearest words: {t16:.3f} s (target: <= 1.5 s)")
    worst = max(abs(full.target_surprisal_nats - grad.target_surprisal_nats), 0.0)
    print(f"target surprisal, occlusion vs gradient path: |diff| {worst:.2e} nats")


if __name__ == "__main__":
    main()
