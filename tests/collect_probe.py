"""What pytest collects from some test files: each test's id, marks, fixtures and the
fixtures of a wider scope than the test (module, class, package), for the tests that check
how the suite is run (quick tier, run plan).

Read from the running session where it collected every test of those files (a whole run:
each pytest-xdist worker collects the whole suite), else from a collection in a process of
its own (a run of some files, or one that deselected tests): that one imports the files
again, 8-10 s of CPU for the quick tier's, 13-15 s for the run plan's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Loaded into the collecting process with ``-p``: writes the rows as JSON.
PLUGIN = textwrap.dedent("""
    import json, os

    def pytest_collection_finish(session):
        from collect_probe import rows_of  # tests/ is on the path by now (its conftest)

        with open(os.environ["COLLECT_PROBE_OUT"], "w") as f:
            json.dump(rows_of(session.items), f)
""")
#: Set on the config when a run deselected tests (-k, -m, --deselect, --lf): its session
#: then lacks some tests of the files it collected.
DESELECTED = "_ppl_widget_deselected"


def rows_of(items: list[pytest.Item]) -> list[dict]:
    rows = []
    for item in items:
        defs = item._fixtureinfo.name2fixturedefs
        rows.append({"id": item.nodeid,
                     "marks": sorted({m.name for m in item.iter_markers()}),
                     "fixtures": sorted(item.fixturenames),
                     "shared": sorted(n for n, d in defs.items()
                                      if d and d[-1].scope in ("module", "class", "package"))})
    return rows


def pytest_deselected(items: list[pytest.Item]) -> None:
    """A hook for tests/conftest.py."""
    if items:
        setattr(items[0].config, DESELECTED, True)


def _in_session(files: list[str], session: pytest.Session) -> list[dict] | None:
    """The rows from ``session``, if it holds every test of ``files``."""
    config = session.config
    if getattr(config, DESELECTED, False) or any("::" in arg for arg in config.args):
        return None
    wanted = set(files)
    items = [item for item in session.items if item.nodeid.split("::")[0] in wanted]
    if {item.nodeid.split("::")[0] for item in items} != wanted:
        return None  # a file the run did not collect
    return rows_of(items)


def collect(files: list[str], tmp_path: Path, session: pytest.Session | None = None
            ) -> list[dict]:
    """The rows of every test pytest collects from ``files`` (paths from the repository
    root): from ``session`` where it can, else a collection of their own."""
    if session is not None and (rows := _in_session(files, session)) is not None:
        return rows
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
