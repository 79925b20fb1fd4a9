"""A real JupyterLab on loopback, driven by Playwright in Debian's Chromium."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from background_setup import wait_for

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"


def chromium() -> str:
    """Debian's Chromium, as its headless shell where that is installed: the same Blink and
    V8 (one source package, one version), without the windowed browser's UI layers, about a
    fifth less CPU a page (docs/testing.md, issue 48); Playwright's own default for headless.
    ``PPL_WIDGET_CHROMIUM`` names another build. Read when a browser starts, after
    scripts/test.sh's background install (``chromium_installed``), not at import."""
    shell = "/usr/bin/chromium-headless-shell"
    return os.environ.get("PPL_WIDGET_CHROMIUM") or (
        shell if Path(shell).exists() else "/usr/bin/chromium")


CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-quic"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lab_settings(settings_dir: Path) -> None:
    """No news or update pop-ups over the page; the light theme to start with."""
    apputils = settings_dir / "@jupyterlab" / "apputils-extension"
    apputils.mkdir(parents=True, exist_ok=True)
    (apputils / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    (apputils / "themes.jupyterlab-settings").write_text(
        json.dumps({"theme": "JupyterLab Light"}))


@pytest.fixture(scope="session", autouse=True)
def chromium_installed():
    """scripts/test.sh installs Chromium in the background on a new machine."""
    wait_for("debian-packages")  # Chromium (scripts/test.sh installs it in the background)


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """(base_url, token, notebook_dir) of a JupyterLab server started for the tests."""
    pytest.importorskip("jupyterlab")
    browser_path = chromium()
    if not Path(browser_path).exists():
        if os.environ.get("CI"):
            pytest.fail(f"Chromium not found at {browser_path}: run scripts/test.sh")
        pytest.skip(f"Chromium not found at {browser_path}")
    work = tmp_path_factory.mktemp("lab")
    notebooks = work / "notebooks"
    notebooks.mkdir()
    settings = work / "settings"
    _lab_settings(settings)
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(settings),
           "JUPYTER_CONFIG_DIR": str(work / "config"), "HF_HUB_OFFLINE": "1",
           # the kernels' connection files, where lab_kernel.runtime_dir looks for them
           "JUPYTER_RUNTIME_DIR": str(work / "runtime"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    log = open(work / "lab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
         f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={notebooks}",
         "--LabApp.expose_app_in_browser=True", "--ServerApp.port_retries=0"],
        stdout=log, stderr=subprocess.STDOUT, env=env, cwd=notebooks)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while True:
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                log.close()
                raise RuntimeError("JupyterLab did not start:\n"
                                   + (work / "lab.log").read_text()) from None
            time.sleep(0.5)
    yield base, token, notebooks
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(work / "lab.log", ARTIFACTS / "jupyterlab.log")


@pytest.fixture(scope="session")
def browser():
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        yield b
        b.close()


def record_dialogs(pg) -> list[str]:
    """Every dialog the page opens, dismissed, its message kept in ``pg.dialogs``: any
    ``alert()`` from the page would be a script that ran."""
    pg.dialogs = []
    pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
    return pg.dialogs


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    record_dialogs(pg)
    pg.console_errors = []
    pg.on("console", lambda m: m.type == "error" and pg.console_errors.append(m.text))
    yield pg
    ARTIFACTS.mkdir(exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / f"{request.node.name}-final.png"))
    context.close()


def offline_context(browser, allowed: str = "file:", height: int = 1000):
    """(context, page): every request not starting with ``allowed`` is aborted and
    recorded in ``page.attempted``; uncaught page errors land in ``page.errors``, dialogs
    (an ``alert()`` that ran) in ``page.dialogs``."""
    context = browser.new_context(viewport={"width": 1280, "height": height})
    attempted: list[str] = []

    def route(r):
        if r.request.url.startswith(allowed):
            r.continue_()
        else:
            attempted.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    pg = context.new_page()
    pg.attempted, pg.errors = attempted, []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    record_dialogs(pg)
    return context, pg


def bench_smoke(script: str, out: Path, timeout: int = 900) -> tuple[str, object]:
    """``benchmarks/<script> --smoke --out out`` in its own process (it drives its own
    Chromium): its printed table and the rows it wrote."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--smoke",
                           "--out", str(out)], capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, json.loads(out.read_text())
