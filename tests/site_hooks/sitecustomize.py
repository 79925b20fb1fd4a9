"""Test processes only (scripts/test.sh puts this folder first on PYTHONPATH): the cyclic
collector runs less often, and not at all at exit.  A whole run starts many processes that
import torch (about 30 kernels, and command lines, benchmarks, nbconvert, pytest's own):

- importing torch, torch._dynamo, transformers, pandas and altair spent 2.4 s of its
  11.5 s of CPU in 1,517 collections; with a first generation of 10,000 objects instead
  of 700, 0.75 s in 92 (docs/testing.md, issue 48).  Cycles are still collected, later;
  a test that needs them gone calls gc.collect().
- at exit, a process that imported torch and torch._dynamo spent 2.6-2.9 s collecting,
  0.35 s with its heap frozen first.  Only that is skipped: every atexit handler still
  runs first, and what reference counting frees is still freed.

Then the sitecustomize this one shadows runs, if there is one (Debian's python3 has one)."""

import atexit
import gc
import os
import sys

gc.set_threshold(10_000, 10, 10)
atexit.register(gc.freeze)  # registered first of all: runs last, after every other handler


def _run_shadowed() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    for folder in sys.path:
        if not folder or os.path.abspath(folder) == here:
            continue
        path = os.path.join(folder, "sitecustomize.py")
        if os.path.isfile(path):
            with open(path, "rb") as f:
                code = compile(f.read(), path, "exec")
            exec(code, {"__name__": "sitecustomize", "__file__": path})
            return


_run_shadowed()
