"""The effect of ``prefix_every_window=True`` (the BOS token first in every window).

For each model and window (max_length/stride), docs/usage.md's text (the README's until
2026-11-26) is scored twice, with and without the prefix token in every window;
printed: token perplexity of each, and the mean per-token surprisal difference
(with - without, nats) by the target's position in its window (its
``context_length``).  Writes the numbers as JSON and an Altair chart (PNG through
vl-convert) of the difference by position.

Models: the default model (SmolLM2) and a Llama-shaped model with random weights and a
tokenizer trained here on the text (its numbers say the code path works, not how a
trained Llama behaves: random weights make no attention sink).

    python benchmarks/prefix_every_window.py [--chars 12000] [--out docs/prefix_every_window]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from tiny_llama import tiny_llama  # noqa: E402

from ppl_widget import load_model, score  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
WINDOWS = ((128, 64), (512, 256))
#: positions in window grouped in bins of this many, for the table and the chart
BIN = 16


def compare(lm, text: str, max_length: int, stride: int) -> dict:
    plain = score(text, lm, max_length=max_length, stride=stride)
    every = score(text, lm, max_length=max_length, stride=stride, prefix_every_window=True)
    assert np.array_equal(plain.context_length, every.context_length)
    diff = every.surprisal - plain.surprisal
    # tokens of later windows only: the first window reads the BOS in both runs
    later = np.arange(len(plain)) >= (max_length if len(plain) > max_length else len(plain))
    pos = plain.context_length
    bins = {}
    for b in range(0, max_length, BIN):
        sel = later & (pos > b) & (pos <= b + BIN)
        if sel.any():
            bins[f"{b + 1}-{b + BIN}"] = {"mean_diff_nats": float(diff[sel].mean()),
                                         "n": int(sel.sum()), "from": b + 1}
    return {"max_length": max_length, "stride": stride, "tokens": len(plain),
            "ppl_without": plain.metrics()["token_ppl"],
            "ppl_with": every.metrics()["token_ppl"],
            "total_nll_without": plain.metrics()["total_nll"],
            "total_nll_with": every.metrics()["total_nll"],
            "by_position": bins}


def chart(rows: list[dict], path: pathlib.Path) -> None:
    import altair as alt
    import pandas as pd
    import vl_convert as vlc

    data = pd.DataFrame([{"model": r["model"], "window": f"{r['max_length']}/{r['stride']}",
                          "position": v["from"], "difference": v["mean_diff_nats"],
                          "tokens": v["n"]}
                         for r in rows for v in r["by_position"].values()])
    # the layers carry no data of their own: the facet's rows reach each panel
    base = alt.Chart().mark_line(point=True).encode(
        x=alt.X("position:Q", title=f"target's position in its window (bins of {BIN})"),
        y=alt.Y("difference:Q", title="mean surprisal with - without BOS (nats)"),
        color=alt.Color("window:N"), tooltip=["model", "window", "position", "difference",
                                              "tokens"])
    rule = alt.Chart().mark_rule(color="gray").encode(y=alt.datum(0))
    spec = alt.layer(base, rule).properties(width=300, height=200).facet(
        column=alt.Column("model:N", title=None), data=data).resolve_scale(y="independent")
    spec = spec.properties(title="prefix_every_window: per-token effect by position "
                                 "(docs/usage.md text, windows after the first)")
    path.write_bytes(vlc.vegalite_to_png(spec.to_json(), scale=2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chars", type=int, default=12000, help="characters of docs/usage.md")
    ap.add_argument("--out", default=str(ROOT / "docs" / "prefix_every_window"))
    ap.add_argument("--chart-only", action="store_true",
                    help="redraw the chart from the JSON a previous run wrote")
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    if args.chart_only:
        chart(json.loads(out.with_suffix(".json").read_text(encoding="utf-8")),
              out.with_suffix(".png"))
        return
    text = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")[:args.chars]
    models = {"SmolLM2 (default)": load_model(None, device="cpu"),
              "Llama-shaped, random weights": tiny_llama(
                  [text], vocab_size=2000, hidden_size=128, layers=4, max_positions=1024)}
    rows = []
    for name, lm in models.items():
        for max_length, stride in WINDOWS:
            r = {"model": name, **compare(lm, text, max_length, stride)}
            rows.append(r)
            print(f"{name:30} {max_length}/{stride}: {r['tokens']} tokens, token ppl "
                  f"{r['ppl_without']:.3f} without, {r['ppl_with']:.3f} with "
                  f"({100 * (r['ppl_with'] / r['ppl_without'] - 1):+.2f}%)")
            for label, v in r["by_position"].items():
                print(f"    positions {label:>9}: {v['mean_diff_nats']:+.4f} nats "
                      f"({v['n']} tokens)")
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    chart(rows, out.with_suffix(".png"))
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.png')}")


if __name__ == "__main__":
    main()
