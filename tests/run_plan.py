"""How the suite runs on two workers (pytest-xdist, ``-n 2 --dist loadfile``, as
scripts/test.sh runs it): which tests share a worker, which start first, and which worker
gives way on the CPU.  Hooks for tests/conftest.py; a run without workers is left exactly
as it was.

- A test file's tests run on one worker (what ``loadfile`` does), so a module-scoped
  fixture (a vLLM server, a built wheel, an ONNX export, a fitted model) is made once.
- The browser tests go file by file to either worker, as the others do: each worker that
  gets one starts its own JupyterLab and Chromium (their waits are conditions, none a
  bound on time). The one test that bounds the page's own times (``TIMED_IN_PAGE``: the
  100,000-token page's longest task) is the ``BROWSER`` unit: it starts first, on a
  worker that has not lowered its priority.
- The files in ``SPREAD`` are shared out test by test: their tests are independent and
  long (a notebook each; the scorer against its brute-force references, the longest file
  of plain CPU work); tests/test_run_plan.py checks they use no module fixture.
- The longest work starts first (``SLOW_FIRST``, from measured durations,
  docs/testing.md): a long file started last would be the run's tail.
- A worker lowers its priority at its first test outside ``BROWSER``, so while the timed
  page runs, a busy CPU slows the other worker's work rather than that page; after it,
  both workers run at the same priority.

The grouping is done by the scheduler from each test's id (xdist's own ``loadgroup`` marks
stopped grouping with pytest 9.2's structured node ids: pytest-xdist issue 1386).
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import pytest

BROWSER = "browser"
#: Tests that bound a page's own times (a long task): the ``BROWSER`` unit.
TIMED_IN_PAGE = (
    "tests/browser/test_jupyterlab.py::test_a_hundred_thousand_tokens_stay_responsive",)
#: Files whose tests go to whichever worker is free, one by one.
SPREAD = ("tests/test_notebooks.py", "tests/test_scorer_exact.py")
#: Node-id prefixes, longest first: their tests are handed out before all others.
SLOW_FIRST = (
    *TIMED_IN_PAGE,
    "tests/test_wheel.py",  # a fresh venv installing the wheel and torch: mostly waiting
    # the default model's fp32 ONNX export (minutes, once per cache): made early, so that
    # the course site's test (test_live_page.py) reads it from the cache
    "tests/test_onnx_export.py::test_default_model_fp32_within_a_thousandth_of_a_nat",
    "tests/browser/test_front_ends.py",  # three live front ends, each its server and kernel
    "tests/browser/test_front_ends_static.py",  # nbconvert --execute (a kernel), Jupyter Book
    "tests/browser/test_jupyterlab.py",
    "tests/test_vllm_server.py",
    "tests/browser/test_security.py",
    "tests/test_notebooks.py::test_notebook_runs_without_error[reading_times_link]",
    "tests/test_explain.py",  # the default model's occlusion and curve against a reference
    "tests/test_notebooks.py::test_notebook_runs_without_error[what_makes_a_word_predictable]",
    "tests/test_notebooks.py::test_notebook_runs_without_error[reading_times_meco]",
    "tests/browser/test_export_offline.py",
    "tests/browser/test_live_loading.py",
    "tests/browser/test_live_page.py",  # reads the ONNX export made above
    "tests/browser/test_compare_browser.py",
    "tests/test_notebooks.py::test_notebook_runs_without_error[sliding_windows]",
    "tests/test_notebooks.py::test_notebook_runs_without_error[three_perplexities]",
    "tests/test_notebooks.py",
    "tests/browser/test_live_typing.py",
    "tests/browser/test_editable_browser.py",
    "tests/browser/test_first_load_browser.py",
    "tests/browser/test_explain_browser.py",
    "tests/test_cpu_kernels.py",  # the exactness tests again under another kernel set
    "tests/test_run_all.py",
    "tests/test_scorer_bench_smoke.py",
    "tests/test_onnx_export.py",
    "tests/test_readme_examples.py",
    "tests/test_live_tokenizer.py",
    "tests/test_meco_reproduction.py",
    "tests/test_divergence_llama_cpp.py",
    "tests/test_gam_mgcv.py",
    "tests/test_gam_reml.py",  # R's REML fits of the Hebrew folds as the reference
    "tests/test_masked_scoring.py",  # three tiny masked families, a text 5x the positions
    "tests/test_seq2seq.py",
    "tests/test_default_model.py",  # its cold first load now runs in tests/test_wheel.py
    "tests/browser/",  # the shorter browser files, before the many short plain ones
    "tests/test_onnx_page_smoke.py",
)
#: How much a worker lowers its priority (``os.nice``): while the other runs the timed page,
#: that page gets about three quarters of a contended CPU.
OTHER_WORKER_NICENESS = 5


def scope_of(nodeid: str) -> str:
    """The unit of work ``nodeid`` belongs to: one worker runs a unit's tests in order."""
    path = nodeid.split("::")[0]
    if nodeid.startswith(TIMED_IN_PAGE):
        return BROWSER
    if path in SPREAD:
        return nodeid
    return path


def _rank(item: pytest.Item) -> int:
    for rank, prefix in enumerate(SLOW_FIRST):
        if item.nodeid.startswith(prefix):
            return rank
    return len(SLOW_FIRST)


def on_worker() -> bool:
    return "PYTEST_XDIST_WORKER" in os.environ


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if on_worker():  # the same order on every worker (xdist checks the collections agree)
        items.sort(key=_rank)  # stable: collection order within a rank


def pytest_configure(config: pytest.Config) -> None:
    global _plugins
    _plugins = config.pluginmanager
    if getattr(config.option, "dist", None) == "loadfile":
        config.option.loadscopereorder = False  # the order above, not the biggest files first


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's: unknown without it
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class RunPlanScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return RunPlanScheduling(config, log)


_niced = False
#: Where each test's worker, start, end and CPU go, one line per test, when set: the run's
#: timeline, to see which worker finishes last and with what (docs/testing.md).
TIMELINE = os.environ.get("PPL_WIDGET_TEST_TIMELINE")
_started: dict[str, tuple[float, float]] = {}


def tree_cpu() -> float:
    """CPU seconds of this process and every process under it, those it waited for included
    (a kernel, Chromium, a server): what a test costs the machine, not only its wall time."""
    import psutil  # ipykernel's dependency; only a timeline run reads it

    me = psutil.Process()
    total = 0.0
    for proc in [me, *me.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # one that ended meanwhile
            total += sum(proc.cpu_times()[:4])  # user, system and their waited children's
    return total
_plugins: pytest.PytestPluginManager | None = None


def pytest_runtest_logstart(nodeid: str, location: object) -> None:
    # the controller of a distributed run hears of each test only as it ends: workers only
    if TIMELINE and not (_plugins and _plugins.hasplugin("dsession")):  # xdist's controller
        _started[nodeid] = (time.time(), tree_cpu())


def pytest_runtest_logfinish(nodeid: str, location: object) -> None:
    if TIMELINE and nodeid in _started:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        start, cpu = _started.pop(nodeid)
        with open(TIMELINE, "a") as f:  # one short line per write: appends do not interleave
            f.write(f"{worker}\t{start:.2f}\t{time.time():.2f}\t{nodeid}"
                    f"\t{tree_cpu() - cpu:.2f}\n")


def pytest_runtest_setup(item: pytest.Item) -> None:
    global _niced
    if on_worker() and not _niced and scope_of(item.nodeid) != BROWSER:
        _niced = True
        lower_priority(OTHER_WORKER_NICENESS)


def lower_priority(by: int) -> None:
    """Every thread of this process (Linux keeps a priority per thread: torch's pool is
    already running) and whatever it starts later."""
    if not hasattr(os, "setpriority"):
        return
    target = os.getpriority(os.PRIO_PROCESS, 0) + by
    tasks = Path("/proc/self/task")
    for tid in [int(t.name) for t in tasks.iterdir()] if tasks.is_dir() else [0]:
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            os.setpriority(os.PRIO_PROCESS, tid, target)
