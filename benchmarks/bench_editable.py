"""Editable mode: tokens scored again per keystroke on a ~2,000-token text.

Simulates one keystroke (a character inserted) at several places of the text and
re-scores with ``reuse=`` the previous result, as the widget does after the
debounce; prints, side by side with a full re-score, the tokens scored again and
the seconds.  Default model and window (max_length 1024, stride 512 on CPU).

    python benchmarks/bench_editable.py            # SmolLM2, ~2,000 tokens
    python benchmarks/bench_editable.py --smoke    # a tiny random model, seconds
"""

from __future__ import annotations

import argparse
import time

from wordfreq import top_n_list


def make_text(n_words: int) -> str:
    words = top_n_list("en", 3000)
    import random

    rng = random.Random(0)
    out = []
    for k in range(n_words):
        out.append(rng.choice(words) + ("." if k % 15 == 14 else ""))
    return " ".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=2000, help="text length, about")
    p.add_argument("--max-length", type=int, default=None)
    p.add_argument("--stride", type=int, default=None)
    p.add_argument("--smoke", action="store_true", help="tiny random model (CI)")
    args = p.parse_args()
    from ppl_widget import load_model, score

    if args.smoke:
        import sys
        from pathlib import Path

        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        from conftest import _tiny

        lm, args.tokens = _tiny("gpt2"), min(args.tokens, 400)
        args.max_length, args.stride = args.max_length or 64, args.stride or 32
    else:
        lm = load_model()
    opts = {"max_length": args.max_length, "stride": args.stride}
    text = make_text(args.tokens)
    while len(lm.tokenizer(text)["input_ids"]) > args.tokens:
        text = text[: int(len(text) * 0.97)].rstrip()
    t = time.perf_counter()
    base = score(text, lm, **opts)
    full_s = time.perf_counter() - t
    n = len(base.token_ids)
    s = base.settings
    print(f"model {s['model']}; {n} tokens; max_length {s['max_length']}, stride {s['stride']}, "
          f"{s['n_windows']} windows; full score {full_s:.2f} s")
    print(f"{'keystroke at':>14} {'scored again':>13} {'of':>6} {'share':>7} {'seconds':>8} "
          f"{'vs full':>8}")
    shares = []
    for frac in (1.0, 0.9, 0.75, 0.5, 0.25, 0.0):
        pos = int(len(text) * frac)
        edited = text[:pos] + "x" + text[pos:]
        t = time.perf_counter()
        res = score(edited, lm, reuse=base, **opts)
        sec = time.perf_counter() - t
        again = len(res.token_ids) - res.settings["reused_tokens"]
        shares.append(again / len(res.token_ids))
        label = "end" if frac == 1.0 else f"{int(frac * 100)}% in"
        n_new = len(res.token_ids)
        print(f"{label:>14} {again:>13,} {n_new:>6,} {again / n_new:>7.0%} "
              f"{sec:>8.2f} {sec / full_s:>7.2f}x")
    print(f"mean share scored again over these keystrokes: {sum(shares) / len(shares):.0%}")


if __name__ == "__main__":
    main()
