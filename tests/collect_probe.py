"""What pytest collects from some test files, run in a process of its own: each test's
id, marks, fixtures and the fixtures of a wider scope than the test (module, class,
package), for the tests that check how the suite is run (quick tier, run plan)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Loaded into the collecting process with ``-p``: writes the rows as JSON.
PLUGIN = textwrap.dedent("""
    import json, os

    def pytest_collection_finish(session):
        rows = []
        for item in session.items:
            defs = item._fixtureinfo.name2fixturedefs
            rows.append({"id": item.nodeid,
                         "marks": sorted({m.name for m in item.iter_markers()}),
                         "fixtures": sorted(item.fixturenames),
                         "shared": sorted(n for n, d in defs.items()
                                          if d and d[-1].scope in ("module", "class", "package"))})
        with open(os.environ["COLLECT_PROBE_OUT"], "w") as f:
            json.dump(rows, f)
""")


def collect(files: list[str], tmp_path: Path) -> list[dict]:
    """The rows of every test pytest collects from ``files`` (paths from the repository root)."""
    (tmp_path / "collect_probe_plugin.py").write_text(PLUGIN, encoding="utf-8")
    out = tmp_path / "collected.json"
    env = {**os.environ, "COLLECT_PROBE_OUT": str(out),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT),
                                          os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", "-p", "collect_probe_plugin", *files],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(out.read_text())
