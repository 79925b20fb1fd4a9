"""The README's main command opens straight into the quickstart: JupyterLab serves
examples/ (so the notebook's relative paths are the notebook's folder) and the link it
prints is the quickstart's. Run here as the README says, with no browser and a free port."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def _main_command() -> list[str]:
    """The README's command after the set-up: the project environment's JupyterLab (this
    interpreter's where the checkout has no .venv, a developer's own environment)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = next(li for li in readme.splitlines() if li.startswith("bash scripts/setup.sh && "))
    command = shlex.split(line.split("&&", 1)[1].split("#", 1)[0])
    assert command[:2] == [".venv/bin/jupyter", "lab"], command
    if (ROOT / command[0]).exists():
        return [str(ROOT / command[0]), *command[1:]]
    return [sys.executable, "-m", "jupyter", *command[1:]]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_main_command_opens_the_quickstart(tmp_path):
    port = _free_port()
    log = tmp_path / "lab.log"
    cmd = [*_main_command(), "--no-browser", f"--port={port}", "--ServerApp.port_retries=0",
           "--ServerApp.ip=127.0.0.1"]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        url = None
        deadline = time.monotonic() + 90
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
            found = re.search(rf"http://127\.0\.0\.1:{port}/\S+", log.read_text())
            url = found.group(0) if found else None
        assert url, f"JupyterLab printed no link:\n{log.read_text()[-3000:]}"
        parts = urllib.parse.urlparse(url)
        assert parts.path == "/lab/tree/quickstart.ipynb"  # the printed link opens it
        assert f"local directory: {ROOT / 'examples'}" in log.read_text()
        # the link can be printed a moment before the server answers: wait until it does
        while True:
            try:
                with urllib.request.urlopen(url, timeout=30) as page:
                    assert page.status == 200
                break
            except urllib.error.URLError:
                if time.monotonic() > deadline + 60 or proc.poll() is not None:
                    raise
                time.sleep(0.5)
        api = f"http://127.0.0.1:{port}/api/contents/quickstart.ipynb?{parts.query}"
        with urllib.request.urlopen(api, timeout=30) as reply:
            assert reply.status == 200  # served from examples/: the notebook is at the root
        if cmd[0].startswith(str(ROOT / ".venv")):  # the set-up's defaults for this lab
            notification = (f"http://127.0.0.1:{port}/lab/api/settings/@jupyterlab/"
                            f"apputils-extension:notification?{parts.query}")
            with urllib.request.urlopen(notification, timeout=30) as reply:
                schema = json.load(reply)["schema"]["properties"]
            # "none" is what makes JupyterLab ask "Would you like to get notified about
            # official Jupyter news?" over the notebook
            assert schema["fetchNews"]["default"] == "false"
            assert schema["checkForUpdates"]["default"] is False
        elif os.environ.get("CI"):
            pytest.fail("no .venv: CI runs the README's command as written (scripts/setup.sh)")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
