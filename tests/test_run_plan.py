"""tests/run_plan.py: how scripts/test.sh's two workers share the suite out."""

from __future__ import annotations

from collect_probe import ROOT, collect
from run_plan import BROWSER, SLOW_FIRST, SPREAD, TIMED_IN_PAGE, scope_of


def test_a_files_tests_share_one_worker_and_the_timed_page_is_a_unit_of_its_own():
    assert scope_of("tests/test_cli.py::test_a") == scope_of("tests/test_cli.py::test_b[x]")
    assert scope_of("tests/test_cli.py::test_a") != scope_of("tests/test_words.py::test_a")
    browser = "tests/browser/test_jupyterlab.py"
    assert scope_of(f"{browser}::test_b[dark]") == scope_of(f"{browser}::test_a") == browser
    assert scope_of(TIMED_IN_PAGE[0]) == BROWSER
    assert SLOW_FIRST[0] == TIMED_IN_PAGE[0]  # it starts before any worker lowers its priority


def test_a_spread_files_tests_go_one_by_one():
    a, b = (f"{SPREAD[0]}::test_notebook_runs_without_error[{n}]" for n in ("a", "b"))
    assert scope_of(a) == a and scope_of(b) == b


def test_every_named_file_exists():
    for prefix in (*TIMED_IN_PAGE, *SPREAD, *SLOW_FIRST):
        assert (ROOT / prefix.split("::")[0]).exists(), prefix


def test_the_spread_tests_share_no_module_fixture(tmp_path, request):
    """A module fixture of a spread file would be made once per worker."""
    rows = collect(list(SPREAD), tmp_path, request.session)
    assert rows
    assert not [(r["id"], r["shared"]) for r in rows if r["shared"]]


def test_lowering_the_priority_reaches_threads_already_running():
    import os
    import subprocess
    import sys

    code = ("import os, threading, time, run_plan\n"
            "ready, stop = threading.Event(), threading.Event()\n"
            "seen = []\n"
            "def work():\n"
            "    ready.set(); stop.wait(); seen.append(os.getpriority(os.PRIO_PROCESS, 0))\n"
            "t = threading.Thread(target=work); t.start(); ready.wait()\n"
            "before = os.getpriority(os.PRIO_PROCESS, 0)\n"
            "run_plan.lower_priority(3)\n"
            "stop.set(); t.join()\n"
            "print(before, os.getpriority(os.PRIO_PROCESS, 0), seen[0])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=ROOT / "tests",
                         env={**os.environ, "PYTHONPATH": str(ROOT / "tests")})
    assert out.returncode == 0, out.stderr
    before, main, thread = map(int, out.stdout.split())
    assert main == thread == before + 3
