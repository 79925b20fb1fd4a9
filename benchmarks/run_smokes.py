"""Run several benchmarks' ``--smoke`` forms one after another in one process.

Each script runs end to end as ``python benchmarks/<script> --smoke ARGS`` would (as
``__main__``, its own ``sys.argv``), but the process imports torch and transformers once:
about 12 s of CPU a process here, most of a smoke run.  What each printed, and the error
it ended with (a traceback, or a non-zero ``SystemExit``), goes to ``--out`` as JSON:
``[{"argv": [...], "stdout": "...", "error": null | "..."}, ...]``; one script's failure
does not stop the others.  Used by tests/test_scorer_bench_smoke.py.

    python benchmarks/run_smokes.py --out runs.json bench_pairs.py -- bench_gpu.py --json x.json
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pathlib
import runpy
import sys
import traceback

HERE = pathlib.Path(__file__).resolve().parent


def run_one(argv: list[str]) -> dict:
    """``benchmarks/<argv[0]> --smoke <argv[1:]>`` as ``__main__``: its stdout, its error."""
    script = str(HERE / argv[0])
    out, error = io.StringIO(), None
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [script, "--smoke", *argv[1:]]
    sys.path.insert(0, str(HERE))  # as `python benchmarks/<script>` has it
    start = os.times()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(script, run_name="__main__")
    except SystemExit as stop:
        if stop.code not in (None, 0):
            error = f"SystemExit: {stop.code}"
    except BaseException:  # noqa: BLE001 - reported to the test, which fails on it
        error = traceback.format_exc()
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    t = [b - a for a, b in zip(start, os.times(), strict=True)]
    # CPU seconds: this process's, and its finished children's (torchrun's ranks)
    print(f"# {' '.join(argv)}: {'failed' if error else 'ok'}, {t[4]:.1f} s wall, "
          f"{t[0] + t[1]:.1f} s CPU + {t[2] + t[3]:.1f} s in child processes",
          file=sys.stderr, flush=True)
    return {"argv": argv, "stdout": out.getvalue(), "error": error}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the JSON file of the runs")
    parser.add_argument("runs", nargs=argparse.REMAINDER,
                        help="SCRIPT [ARGS...] groups, separated by --")
    args = parser.parse_args()
    groups: list[list[str]] = [[]]
    for word in args.runs:
        if word == "--":
            groups.append([])
        else:
            groups[-1].append(word)
    results = [run_one(g) for g in groups if g]
    pathlib.Path(args.out).write_text(json.dumps(results), encoding="utf-8")


if __name__ == "__main__":
    main()
