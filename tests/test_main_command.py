"""The README's main command opens straight into the quickstart: JupyterLab serves
examples/ (so the notebook's relative paths are the notebook's folder) and the link it
prints is the quickstart's. Run here as the README says, with no browser and a free port."""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).parents[1]


def _main_command() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = next(li for li in readme.splitlines() if li.startswith("bash scripts/setup.sh && "))
    command = shlex.split(line.split("&&", 1)[1].split("#", 1)[0])
    assert command[:2] == ["jupyter", "lab"], command
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
        with urllib.request.urlopen(url, timeout=30) as page:
            assert page.status == 200
        api = f"http://127.0.0.1:{port}/api/contents/quickstart.ipynb?{parts.query}"
        with urllib.request.urlopen(api, timeout=30) as reply:
            assert reply.status == 200  # served from examples/: the notebook is at the root
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
