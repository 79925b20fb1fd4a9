"""The test run's site hooks (tests/site_hooks, first on PYTHONPATH in scripts/test.sh)
change what a process costs, never what it computes: with ``rfc3987_syntax`` loaded at its
first use, jsonschema's ``iri`` format checks answer as with the real module loaded at
import, and importing jsonschema (or a scan of every module, as ``inspect.getmodule``
makes in a kernel) no longer builds its parsers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HOOKS = Path(__file__).resolve().parent / "site_hooks"
IRIS = ["http://example.com/ä?q=1#f", "not an iri", "//host/path", "http://[::1]:80/p",
        "a b", "mailto:x@y.z", "", "urn:isbn:0451450523", "http://exa mple.com", "#frag"]
CHECK = f"""
import inspect, json, pickle, sys
import jsonschema
inspect.getmodule(inspect.currentframe())  # asks every module in sys.modules for __file__
nameless = lambda: 0  # noqa: E731
nameless.__module__ = None  # pickle then asks every module for the function's name
pickle.whichmodule(nameless, "no_such_name")
built_at_import = "rfc3987_syntax.syntax_helpers" in sys.modules
checker = jsonschema.Draft7Validator.FORMAT_CHECKER
answers = {{fmt: [checker.conforms(v, fmt) for v in {IRIS!r}]
           for fmt in ("iri", "iri-reference")}}
print(json.dumps({{"built_at_import": built_at_import, "answers": answers}}))
"""


def _run(pythonpath: str) -> dict:
    env = {**os.environ, "PYTHONPATH": pythonpath}
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                         env=env, timeout=120, check=True)
    return json.loads(out.stdout)


def test_lazy_rfc3987_syntax_answers_as_the_real_one():
    pytest.importorskip("rfc3987_syntax")
    hooked, plain = _run(str(HOOKS)), _run("")
    assert plain["built_at_import"] and not hooked["built_at_import"]
    assert hooked["answers"] == plain["answers"]
    assert True in plain["answers"]["iri"] and False in plain["answers"]["iri"]
