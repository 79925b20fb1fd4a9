"""Test processes only (scripts/test.sh puts this folder first on PYTHONPATH): at exit,
the interpreter's last collections of the heap are skipped.  A process that imported torch
and torch._dynamo spent 2.6-2.9 s of CPU collecting at exit, 0.35 s with its heap frozen
first (docs/testing.md, issue 48), and a whole run starts about a hundred such processes
(kernels, command lines, benchmarks, nbconvert, pytest's own).  All that is skipped is
collecting reference cycles after the exit handlers ran: every atexit handler still runs
first, and what reference counting frees is still freed.  Then the sitecustomize this one
shadows runs, if there is one (Debian's python3 has one)."""

import atexit
import gc
import os
import sys

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
