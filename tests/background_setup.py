"""Set-up steps that scripts/test.sh runs in the background while the first tests run
(Chromium, llama.cpp's tokenizer suite, the vLLM environment): a test that needs one
waits here until that step has finished, then goes on, or fails with the step's log.

scripts/test.sh sets ``PPL_WIDGET_TEST_SETUP`` to a folder where each step ``NAME``
writes ``NAME.log`` as it runs and ``NAME.rc`` (its exit status) when it ends.  Without
that variable (pytest run by hand) there is nothing to wait for."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

#: The longest a test waits for a step: the vLLM environment takes ~1.5 minutes on a
#: quiet machine (docs/testing.md), far longer behind a slow mirror.
WAIT_S = 1800


def wait_for(step: str, timeout_s: float = WAIT_S) -> None:
    """Return once the background step ``step`` has ended well; fail the test with its log
    if it failed or is still running after ``timeout_s``."""
    folder = os.environ.get("PPL_WIDGET_TEST_SETUP")
    if not folder:
        return
    status, log = Path(folder) / f"{step}.rc", Path(folder) / f"{step}.log"
    if not log.exists() and not status.exists():
        return  # test.sh did not start this step (it was ready before)
    deadline = time.monotonic() + timeout_s
    while not status.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"the set-up step {step!r} was still running after {timeout_s:.0f} s "
                        f"(its log: {log})")
        time.sleep(0.5)  # polling the condition: the step writes its status when it ends
    rc = status.read_text().strip()
    if rc != "0":
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
        pytest.fail(f"the set-up step {step!r} failed (exit {rc}); the end of {log}:\n{tail}")
