"""What the fork server imports once for all its kernels, and the environment those
imports read: a kernel whose environment differs there is started the ordinary way.

Each module here was checked (docs/testing.md, issue 48) to make no choice at import that
depends on running in a kernel: none of them imports IPython, ipykernel, ipywidgets,
tqdm.auto or pandas, or looks at get_ipython, sys.stdout or a terminal while importing;
they start no thread (OpenBLAS's pool, started at numpy's import when it may use more
than one thread, is shut down by OpenBLAS itself before a fork and restarted after).
* torch: ~2.4 s of CPU a kernel; numpy, dill and tqdm (its console class; tqdm.auto is
  not imported) come with it. dill decides at import whether it runs under IPython (the
  builtin __IPYTHON__): it is imported here with __IPYTHON__ set, as in every kernel.
* torch._dynamo (with sympy and mpmath): what transformers' model code imports from
  torch, ~1.8 s more.
* jsonschema (with its format checkers: rfc3987_syntax builds a Lark grammar at import):
  what altair imports, ~2.2 s in every notebook that draws a chart.
Not here: transformers and huggingface_hub (tqdm.auto picks the notebook bar in a kernel),
ipywidgets (registers its comm target only in a running kernel), pandas (its
display.max_columns default depends on get_ipython at import), altair, IPython itself."""

from __future__ import annotations

import builtins
import importlib
import os
import sys
from collections.abc import ItemsView, ValuesView

MODULES = ("torch", "torch._dynamo", "jsonschema")
#: Read in C or C++ at load (thread pools, CPU dispatch, allocator), or by the interpreter
#: at start (hash seed, locale, I/O encoding), or by a scan of all variables (tqdm's
#: TQDM_ defaults): never seen by the record below, so compared by prefix.
PREFIXES = ("PYTHON", "LC_", "LANG", "TZ", "OMP_", "GOMP_", "KMP_", "MKL_", "OPENBLAS_",
            "GOTO", "ATEN_", "TORCH", "PYTORCH", "DNNL_", "ONEDNN_", "CUDA", "NPY_", "NUMPY_",
            "LD_", "MALLOC_", "TQDM_", "TMP", "TEMP")
NOT_COMPARED = {"PYTHONPATH"}  # recomputed into each kernel's sys.path


def import_all() -> set[str]:
    """Import MODULES; return the names of the environment variables they looked up."""
    looked_up: set[str] = set()
    getitem = os._Environ.__getitem__
    # a scan of all variables (tqdm picks its TQDM_ ones so) reads none of them in particular
    scans = {ItemsView.__iter__.__code__, ValuesView.__iter__.__code__,
             os._Environ.copy.__code__}

    def recording(self, key):
        if sys._getframe(1).f_code not in scans:
            looked_up.add(key)
        return getitem(self, key)

    os._Environ.__getitem__ = recording  # .get, `in` and os.getenv all come here
    had_ipython = hasattr(builtins, "__IPYTHON__")
    builtins.__IPYTHON__ = True
    try:
        for name in MODULES:
            try:
                importlib.import_module(name)
            except ImportError:
                pass  # the kernels will say so themselves
    finally:
        os._Environ.__getitem__ = getitem
        if not had_ipython:
            del builtins.__IPYTHON__
    return looked_up


def compared(env: dict[str, str], names: set[str]) -> dict[str, str | None]:
    """The part of an environment a forked kernel must share with the server."""
    keys = {k for k in env if k.startswith(PREFIXES)} | names
    return {k: env.get(k) for k in sorted(keys - NOT_COMPARED)}
