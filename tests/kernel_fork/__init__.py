"""The test run's "python3" kernels, forked from a server that has imported torch once
(server.py; client.py is the kernelspec's command): started by tests/conftest.py for the
whole run, the workers of pytest-xdist included, when PPL_WIDGET_TEST_FORK_KERNELS is not
0. Test infrastructure only: nothing of it ships (docs/testing.md, issue 48)."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
SERVER_ENV = "PPL_WIDGET_TEST_FORK_SERVER"
SWITCH_ENV = "PPL_WIDGET_TEST_FORK_KERNELS"
_server: subprocess.Popen | None = None
_folder: str | None = None


def start() -> None:
    """Start the server and put its kernelspec first on JUPYTER_PATH, for this process and
    every process it starts (workers, JupyterLab, nbconvert), unless a parent did."""
    global _server, _folder
    if os.environ.get(SWITCH_ENV) == "0" or os.environ.get(SERVER_ENV):
        return
    _folder = tempfile.mkdtemp(prefix="ppl-kernel-fork-")
    path = os.path.join(_folder, "server.sock")
    # its own session: a Ctrl-C at the terminal interrupts pytest, not its kernels; stdin
    # is its lifeline (closed when this process ends, however it ends)
    _server = subprocess.Popen([sys.executable, str(HERE / "server.py"), path],
                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               start_new_session=True)
    os.environ[SERVER_ENV] = path
    paths = os.environ.get("JUPYTER_PATH", "")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(HERE), paths) if p)


def stop() -> None:
    """End the server and the kernels it forked (it waits for them), in the process that
    started it; its CPU time then counts in this process's children."""
    global _server
    if _server is None:
        return
    _server.stdin.close()
    try:
        _server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        _server.kill()
        _server.wait()
    _server = None
    shutil.rmtree(_folder, ignore_errors=True)
