"""How far our float32 paths fall from their float64 references, under each CPU kernel set
this machine offers (ATEN_CPU_CAPABILITY) and 1 or 2 threads: the measured spread the
tests' float32 tolerances come from (docs/testing.md, "Float32 tolerances").

    python tests/float32_spread.py          # every kernel set x 1, 2 threads; a table
    python tests/float32_spread.py --one F  # this process's kernels; the values into F.npz

Not a test (seconds per kernel set on the tiny models, about a minute with the default
model's float64 copy); tests/test_cpu_kernels.py re-runs the exactness tests themselves
under the other kernel sets.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def measure() -> dict[str, object]:
    """name -> float32 values (or float32 - float64 errors): one dict per kernel set."""
    import numpy as np
    from conftest import LONG_TEXT, _tiny
    from test_bow_correction import TEXT as BOW_TEXT
    from test_pairs import PAIRS, _reference_nll
    from test_words import brute_words, surprisal64
    from test_words_packed import item_frame

    from ppl_widget import load_model, score, score_pairs, score_words

    out: dict[str, object] = {}
    models = {"tiny_gpt2": _tiny("gpt2"), "tiny_llama": _tiny("llama"),
              "default": load_model(None, device="cpu")}
    for name, lm in models.items():
        tok = lm.tokenizer
        # score(): per-token surprisal over several windows, against float64 windows
        ml, st = (64, 32) if name == "default" else (16, 5)
        res = score(LONG_TEXT, lm, max_length=ml, stride=st)
        seq = [tok.bos_token_id, *tok(LONG_TEXT, add_special_tokens=False,
                                      split_special_tokens=True)["input_ids"]]
        out[f"{name}/score"] = res.surprisal
        out[f"{name}/score-f64"] = res.surprisal - surprisal64(lm, seq, ml, st)
        batched = score(LONG_TEXT, lm, max_length=16, stride=4, batch_size=7).surprisal
        single = score(LONG_TEXT, lm, max_length=16, stride=4, batch_size=1).surprisal
        out[f"{name}/batch7-batch1"] = batched - single
        # score_words: packed and one-score()-per-group, against float64 per word
        frame = item_frame(12 if name == "default" else 30)
        fast = score_words(frame, lm, by="item", add_eos=True)
        slow = score_words(frame, lm, by="item", add_eos=True, packed=False)
        want = np.concatenate([brute_words(lm, g["word"].tolist(), add_eos=True)[0]
                               for _, g in frame.groupby("item", sort=False)])
        out[f"{name}/words-packed"] = fast["surprisal"].to_numpy()
        out[f"{name}/words-packed-f64"] = fast["surprisal"].to_numpy() - want
        out[f"{name}/words-score-f64"] = slow["surprisal"].to_numpy() - want
        out[f"{name}/words-packed-score"] = (fast["surprisal"] - slow["surprisal"]).to_numpy()
        # score_pairs: per-sentence totals, against float64 totals and score()'s
        pairs = score_pairs(PAIRS, lm)
        texts = list(pairs["good"]) + list(pairs["bad"])
        nll = np.concatenate([pairs["good_nll"], pairs["bad_nll"]])
        ref = [_reference_nll(lm, [tok.bos_token_id, *tok(t, add_special_tokens=False)
                                   ["input_ids"]], int(n))
               for t, n in zip(texts, np.concatenate([pairs["good_tokens"],
                                                      pairs["bad_tokens"]]), strict=True)]
        totals = [score(t, lm, top_k=0).metrics()["total_nll"] for t in texts]
        out[f"{name}/pairs-f64"] = nll - np.array(ref)
        out[f"{name}/pairs-score"] = nll - np.array(totals)
        if name == "default":  # b(i), the begin-of-word probability: relative to float64
            from test_bow_correction import brute_force

            res = score(BOW_TEXT, lm, max_length=128, stride=64)
            b = brute_force(lm, BOW_TEXT, byte_level=True)[0]
            out[f"{name}/bow-rel-f64"] = res.bow_prob / b[:-1] - 1
    return out


@functools.cache
def native_kernel_set() -> str:
    """torch's own choice on this CPU (ATEN_CPU_CAPABILITY unset): avx512, avx2, default..."""
    out = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
        capture_output=True, text=True, check=True,
        env={k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}).stdout
    return out.strip().lower()


def kernel_sets() -> list[str]:
    """The ATEN_CPU_CAPABILITY values this CPU runs: default, avx2 (x86 with AVX2) and its
    own."""
    native = native_kernel_set()
    sets = ["default"] + (["avx2"] if native.startswith("avx") else [])
    return sets + ([native] if native not in sets else [])


def main() -> None:
    sys.path[:0] = [str(HERE), str(HERE.parent)]  # the tests' helpers, as pytest finds them
    if sys.argv[1:2] == ["--one"]:
        import numpy as np
        import torch

        values = measure()
        values["capability"] = np.array(torch.backends.cpu.get_cpu_capability())
        np.savez(sys.argv[2], **values)
        return
    import numpy as np

    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for cap in kernel_sets():
            for threads in (1, 2):
                label = f"{cap}/{threads}t"
                path = f"{tmp}/{cap}-{threads}.npz"
                # passive: spinning threads on a busy machine took 30 min; same values
                env = {**os.environ, "ATEN_CPU_CAPABILITY": cap, "OMP_WAIT_POLICY": "PASSIVE",
                       "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1"}
                subprocess.run([sys.executable, __file__, "--one", path], env=env, check=True)
                runs[label] = dict(np.load(path))
                print(f"measured {label}", file=sys.stderr)
    print_table(runs)


def print_table(runs: dict[str, dict]) -> None:
    """Per measure and run: the largest error, or how far the values moved from run one."""
    import numpy as np

    first_label, first = next(iter(runs.items()))
    table = {}
    for name in (k for k in first if k != "capability"):
        if name.endswith(("-f64", "-score", "-batch1")):  # errors: the largest per run
            table[name] = {label: float(np.abs(r[name]).max()) for label, r in runs.items()}
        else:  # values: how far each run's fall from the first run's
            table[f"{name} (vs {first_label})"] = {
                label: float(np.abs(r[name] - first[name]).max()) for label, r in runs.items()}
    print(json.dumps(table, indent=1))
    labels = list(runs)
    print("| measure | " + " | ".join(labels) + " | max |")
    print("| --- |" + " ---: |" * (len(labels) + 1))
    for name, row in table.items():
        print(f"| {name} | " + " | ".join(f"{row[k]:.2g}" for k in labels)
              + f" | {max(row.values()):.2g} |")

if __name__ == "__main__":
    main()
