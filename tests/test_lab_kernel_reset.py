"""The browser tests' shared kernel is reset between notebooks (tests/browser/lab_kernel.py):
the reset itself must run cleanly, or every test silently gets a kernel of its own (it
did, unnoticed, until issue 48: the reset used a name its own ``%reset`` had removed)."""

from __future__ import annotations

import json
import subprocess
import sys

from browser.lab_kernel import RESET

#: In IPython, as in the kernel: a widget and names of a notebook's, then RESET; its own
#: process, so no IPython shell is left in the test worker's.
SCRIPT = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_cell("import ipywidgets; w = ipywidgets.IntSlider(); x = 1", store_history=True)
opened = len(__import__("ipywidgets").Widget.widgets)
result = shell.run_cell(sys.argv[1], store_history=True)
print(json.dumps([result.success, opened, len(__import__("ipywidgets").Widget.widgets),
                  sorted({"w", "x", "ipywidgets"} & set(shell.user_ns))]))
"""


def test_the_shared_kernels_reset_runs_closes_the_widgets_and_empties_the_namespace():
    out = subprocess.run([sys.executable, "-c", SCRIPT, RESET], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    ran, opened, left, names = json.loads(out.stdout.splitlines()[-1])
    assert ran, out.stdout
    assert opened > 0 and left == 0 and names == [], out.stdout
