"""The notebooks the JupyterLab tests write and open, and what they read back: a
notebook written from cells, opened in its own workspace on the shared kernel
(lab_kernel.py), run, its JSON dump waited for, the page's numbers and colours read."""

from __future__ import annotations

import json
import time
from pathlib import Path

import nbformat

from .conftest import ARTIFACTS
from .lab_kernel import bind_notebook

WIDGET = ".pplw-root"
SCORED_TOKEN = f"{WIDGET} .pplw-tok"

DUMP_CELL = """\
import json
_r = {name}.wait()
json.dump({{"n_tokens": len(_r), "partial": _r.partial, "metrics": _r.metrics(),
           "surprisal": _r.surprisal.tolist(), "surprisal_bits": _r.surprisal_bits.tolist(),
           "rank": _r.rank.tolist(), "units": _r.units.tolist(), "tokens": _r.tokens,
           "total_tokens": _r.total_tokens}},
          open("{out}", "w"))
"""


def new_notebook(cells: list[str]) -> nbformat.NotebookNode:
    """A Python 3 notebook of these code cells."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return nb


def write_notebook(directory: Path, name: str, cells: list[str]) -> str:
    nbformat.write(new_notebook(cells), directory / name)
    return name


def open_notebook(page, lab, name: str, fresh_kernel: bool = False) -> None:
    """Open notebook ``name`` in a workspace of its own, on the shared kernel (reset) or,
    with ``fresh_kernel``, on a kernel started for it, and wait until that kernel is idle."""
    base, token, _ = lab
    if not fresh_kernel:
        bind_notebook(lab, name)
    # a workspace of its own, reset: no tab restored from an earlier test
    workspace = name.replace(".", "-")
    page.goto(f"{base}/lab/workspaces/{workspace}/tree/{name}?token={token}&reset")
    page.wait_for_function(
        "(name) => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
        " return w && w.sessionContext && w.context && w.context.path === name; }",
        arg=name, timeout=60_000)
    # wait until the kernel is up, so "run" runs instead of queueing behind a start-up
    page.wait_for_function(
        "() => { const s = window.jupyterapp.shell.currentWidget.sessionContext;"
        " return s.session && s.session.kernel && s.session.kernel.status === 'idle'; }",
        timeout=60_000)


def run_all(page) -> None:
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")


def run_cell(page, index: int) -> None:
    page.evaluate("""(i) => { const nb = window.jupyterapp.shell.currentWidget.content;
                              nb.activeCellIndex = i;
                              return window.jupyterapp.commands.execute('notebook:run-cell'); }""",
                  index)


def wait_for_json(path: Path, timeout: float = 300) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and path.stat().st_size:
            try:
                return json.loads(path.read_text())
            except json.JSONDecodeError:  # still being written
                pass
        time.sleep(0.25)
    raise TimeoutError(f"the notebook did not write {path.name}")


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def panel_values(page) -> list[str]:
    """Exact values behind the metrics panel's four perplexities (title attributes); the
    selection section further down reuses the class."""
    titles = page.eval_on_selector_all(f"{WIDGET} .pplw-ppl-v", "els => els.map(e => e.title)")
    return titles[:4]


def luminance(css_colour: str) -> float:
    """WCAG relative luminance of an ``rgb(...)``/``rgba(...)`` colour."""
    parts = css_colour[css_colour.index("(") + 1:css_colour.index(")")].split(",")[:3]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
           for c in (float(p) / 255 for p in parts)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)
