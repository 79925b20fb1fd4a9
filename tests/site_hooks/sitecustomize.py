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

And ``rfc3987_syntax`` builds its parsers when first used, not when imported
(``lazy_rfc3987``): jsonschema imports it for its ``iri`` format checks, and its import
compiles 38 Earley grammars, about 2 s of CPU in every process that imports jsonschema
(JupyterLab, nbconvert, every kernel that draws an Altair chart), though no schema these
processes validate has an ``iri`` format (python-jsonschema/jsonschema#1428).

Then the sitecustomize this one shadows runs, if there is one (Debian's python3 has one)."""

import atexit
import gc
import os
import sys

import lazy_rfc3987  # beside this file, on the same PYTHONPATH entry

gc.set_threshold(10_000, 10, 10)
atexit.register(gc.freeze)  # registered first of all: runs last, after every other handler

lazy_rfc3987.install()


def _log_process(path: str) -> None:
    """``PPL_WIDGET_PROCESS_LOG``: each process of the run appends a line as it ends (its
    CPU, wall time, command, and which of the costly imports it made), to see what the
    run's ~200 processes cost beside its tests (docs/testing.md)."""
    import json
    import time

    start = time.time()

    def write() -> None:
        times = os.times()
        costly = [m for m in ("torch", "transformers", "altair", "jsonschema", "pandas",
                              "rfc3987_syntax.syntax_helpers", "IPython", "nbformat")
                  if m in sys.modules]
        line = json.dumps({"pid": os.getpid(), "ppid": os.getppid(), "start": round(start, 2),
                           "wall": round(time.time() - start, 2),
                           "cpu": round(times.user + times.system, 2),
                           "argv": [sys.executable, *sys.argv][:6], "imports": costly})
        with open(path, "a") as f:  # one short line per write: appends do not interleave
            f.write(line + "\n")

    atexit.register(write)


if os.environ.get("PPL_WIDGET_PROCESS_LOG"):
    _log_process(os.environ["PPL_WIDGET_PROCESS_LOG"])


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
