"""One kernel for the JupyterLab tests' notebooks, started once per test server.

A fresh kernel per notebook imports torch and transformers and loads the default model
again: about 14 s of CPU per test on a 2-core machine, measured (2026-11-29: a notebook
scoring one sentence, 20-22 s of CPU with its own kernel, 6-7 s on a kernel that had run
one before). The notebook is not what these tests are about (the widget in the page is), so
each notebook opens on a session bound to this one kernel, which is reset first: every
widget closed (so the new page's widget manager restores none of an earlier test's) and
the namespace emptied. A test whose subject is a fresh process (the cold first load, an
environment variable read at import) asks ``open_notebook(..., fresh_kernel=True)``.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import warnings
from pathlib import Path

#: What runs in the shared kernel before the next notebook attaches to it.
RESET = """\
import ipywidgets as _ipw
_ipw.Widget.close_all()
get_ipython().run_line_magic('reset', '-f')
__import__('gc').collect()  # a name imported above would be gone after %reset
"""
RESET_TIMEOUT_S = 120

_kernel_ids: dict[str, str] = {}  # server's base url -> the shared kernel's id


def _api(lab: tuple, method: str, path: str, body: dict | None = None) -> object:
    base, token, _ = lab
    request = urllib.request.Request(
        f"{base}{path}?token={token}", method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        raw = response.read()
    return json.loads(raw) if raw else None


def _alive(lab: tuple, kernel_id: str) -> bool:
    try:
        model = _api(lab, "GET", f"/api/kernels/{kernel_id}")
    except urllib.error.HTTPError:
        return False
    return isinstance(model, dict) and model.get("execution_state") != "dead"


def runtime_dir(lab: tuple) -> Path:
    """Where the server writes its kernels' connection files (conftest's ``lab`` sets
    JUPYTER_RUNTIME_DIR to this folder beside the notebooks')."""
    return Path(lab[2]).parent / "runtime"


def _reset(lab: tuple, kernel_id: str) -> None:
    """Run RESET in the kernel and wait for its reply; raises if it fails or times out."""
    from jupyter_client import BlockingKernelClient

    client = BlockingKernelClient(
        connection_file=str(runtime_dir(lab) / f"kernel-{kernel_id}.json"))
    client.load_connection_file()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=RESET_TIMEOUT_S)
        reply = client.execute_interactive(RESET, timeout=RESET_TIMEOUT_S,
                                           output_hook=lambda msg: None)
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"resetting the shared kernel failed: {reply['content']}")
    finally:
        client.stop_channels()


def shared_kernel(lab: tuple) -> str:
    """The id of the server's shared kernel, reset; a new one if it died or will not reset."""
    base = lab[0]
    kernel_id = _kernel_ids.get(base)
    if kernel_id is not None and _alive(lab, kernel_id):
        try:
            _reset(lab, kernel_id)
            return kernel_id
        except Exception as exc:  # noqa: BLE001 - busy or broken: a new kernel, never a stale one
            # said, not silent: a RESET that always failed once made every test start a
            # kernel of its own, unnoticed (issue 48)
            warnings.warn(f"the shared kernel did not reset, a new one starts: {exc}",
                          stacklevel=2)
            _api(lab, "DELETE", f"/api/kernels/{kernel_id}")
    kernel_id = _api(lab, "POST", "/api/kernels", {"name": "python3"})["id"]
    _kernel_ids[base] = kernel_id
    return kernel_id


def bind_notebook(lab: tuple, name: str) -> None:
    """A session for notebook ``name`` on the shared kernel: JupyterLab, opening the
    notebook, finds the session for its path and connects to that kernel."""
    kernel_id = shared_kernel(lab)
    _api(lab, "POST", "/api/sessions",
         {"path": name, "name": name, "type": "notebook", "kernel": {"id": kernel_id}})
