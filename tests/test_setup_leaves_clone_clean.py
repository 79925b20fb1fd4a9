"""The README's set-up leaves the clone as it found it (issue 44): `npm ci` keeps the lock
file as committed, and what the set-up and the tests write inside the tree is ignored."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: What scripts/setup.sh, scripts/test.sh and the tests write inside the repository.
WRITTEN = [".venv/bin/python", "js/node_modules/.package-lock.json",
           "ppl_widget/static/widget.js", "test-artifacts/jupyterlab.log",
           "ppl_widget.egg-info/PKG-INFO", "tests/__pycache__/conftest.cpython-311.pyc",
           ".hypothesis/examples/x", "examples/quickstart_result.html"]


def test_the_lock_file_asks_for_what_package_json_asks_for():
    """npm ci rewrites the lock's root entry when it differs from package.json (it did:
    "^0.1.7" against "0.1.7"), which leaves the clone changed after the set-up."""
    package = json.loads((ROOT / "js" / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((ROOT / "js" / "package-lock.json").read_text(encoding="utf-8"))
    root = lock["packages"][""]
    for field in ("dependencies", "devDependencies"):
        assert root.get(field, {}) == package.get(field, {}), field
    for name, version in package.get("devDependencies", {}).items():
        assert lock["packages"][f"node_modules/{name}"]["version"] == version, name


def test_what_the_set_up_writes_in_the_tree_is_ignored():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    # a folder linked in from elsewhere (a worktree sharing node_modules) is not in the tree
    paths = [p for p in WRITTEN
             if not any((ROOT / p).parents[i].is_symlink() for i in range(p.count("/")))]
    proc = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode in (0, 1), proc.stderr
    ignored = set(proc.stdout.split())
    assert ignored == set(paths), sorted(set(paths) - ignored)
