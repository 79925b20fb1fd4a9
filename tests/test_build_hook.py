"""A checkout installed where Node or npm is missing gets one message that says what to
do (install Node 20 and npm, or the wheel), from the build hook pyproject.toml names."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest
import tomllib

ROOT = pathlib.Path(__file__).parents[1]


def _load_hook():
    """build_front_end.py as the build imports it (from the project root, not a package)."""
    spec = importlib.util.spec_from_file_location("build_front_end", ROOT / "build_front_end.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def hook():
    return _load_hook()


@pytest.fixture
def no_npm(monkeypatch, tmp_path):
    """PATH holds only a folder with no node and no npm."""
    monkeypatch.setenv("PATH", str(tmp_path))


def test_pyproject_builds_through_the_hook():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    builder = config["tool"]["hatch"]["build"]["hooks"]["jupyter-builder"]
    assert builder["build-function"] == "build_front_end.build"
    targets = [str(p.relative_to(ROOT)) for p in _load_hook().BUNDLE]
    assert sorted(builder["ensured-targets"]) == sorted(targets)
    assert "build_front_end.py" in config["tool"]["hatch"]["build"]["targets"]["sdist"][
        "only-include"]


@pytest.mark.parametrize("target", ["wheel", "sdist"])
def test_no_npm_says_install_node_or_the_wheel(hook, no_npm, target):
    with pytest.raises(hook.FrontEndBuildError) as info:
        hook.build(target, "standard", path="js", build_cmd="build", npm="npm")
    message = str(info.value)
    assert "node and npm are not on PATH" in message
    assert "Install Node 20 and npm" in message and "install the wheel" in message


def test_npm_without_node_names_node(hook, tmp_path, monkeypatch):
    fake_npm = tmp_path / "npm"
    fake_npm.write_text("#!/bin/sh\nexit 1\n")
    fake_npm.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(hook.FrontEndBuildError, match="node is not on PATH"):
        hook.build("wheel", "standard", npm="npm")


def test_editable_without_npm_keeps_a_built_front_end(hook, no_npm, tmp_path, monkeypatch):
    built = [tmp_path / name for name in ("widget.js", "static.js", "compare.js")]
    monkeypatch.setattr(hook, "BUNDLE", built)
    with pytest.raises(hook.FrontEndBuildError, match="Install Node 20"):
        hook.build("wheel", "editable", npm="npm")  # nothing built yet: cannot go on
    for path in built:
        path.write_text("built")
    with pytest.warns(UserWarning, match="Keeping the front end already built"):
        hook.build("wheel", "editable", npm="npm")
