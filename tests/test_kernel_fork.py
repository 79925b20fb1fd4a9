"""The test run's "python3" kernels are forked from a server that imported torch once
(tests/kernel_fork/): each is still the kernel a student gets (its own seeds, IPython's
choices made in a kernel, its own process group), it interrupts and dies as a kernel does,
and a kernel the server cannot serve the same way starts the ordinary way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest
from kernel_fork import HERE, SERVER_ENV

pytestmark = pytest.mark.skipif(not os.environ.get(SERVER_ENV),
                                reason="kernels are not forked in this run")
jupyter_client = pytest.importorskip("jupyter_client")

SEEDS = """
import json, os, sys
report = {"forked": "torch" in sys.modules, "own_group": os.getpgid(0) == os.getpid(),
          "pid": os.getpid(), "inductor_dir": os.environ.get("TORCHINDUCTOR_CACHE_DIR")}
import numpy, torch
report["seeds"] = [torch.initial_seed(), float(numpy.random.rand())]
"""
#: what these libraries decide at import, as in a kernel that imported them itself
CHOICES = """
import dill, pandas, tqdm.auto
report.update(dill_sees_ipython=dill._dill.IS_IPYTHON,
              pandas_columns=pandas.get_option("display.max_columns"),
              tqdm=[c.__module__ for c in tqdm.auto.tqdm.__mro__],
              threads=torch.get_num_threads())
"""


@contextmanager
def kernel(**env: str):
    km, kc = jupyter_client.manager.start_new_kernel(
        kernel_name="python3", startup_timeout=120, env={**os.environ, **env})
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def run(kc, code: str) -> tuple[str, list[str]]:
    out, errors = [], []

    def hook(msg):
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            errors.append(msg["content"]["ename"])

    kc.execute_interactive(code, output_hook=hook, timeout=120)
    return "".join(out), errors


def gone(pid: int, within_s: float = 20) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_a_forked_kernel_is_a_kernel_of_its_own_that_interrupts_and_dies_like_one():
    with kernel() as (km, kc):
        out, errors = run(kc, SEEDS + CHOICES + "print(json.dumps(report))")
        assert not errors, out
        first = json.loads(out)
        kc.execute("import time; time.sleep(60)")
        time.sleep(0.5)
        km.interrupt_kernel()  # SIGINT to the client's group, relayed to the kernel's
        while (msg := kc.get_iopub_msg(timeout=30))["msg_type"] != "error":
            pass
        assert msg["content"]["ename"] == "KeyboardInterrupt"
        # ipykernel drops what was queued while it stopped on the error: then it runs
        assert ("still here\n", []) in (run(kc, "print('still here')") for _ in range(2))
    # shutdown_kernel(now=True) SIGKILLs the client's group: the kernel goes too
    assert gone(first["pid"]), "the forked kernel outlived its client"
    # torch._dynamo's import writes its cache folder into the environment: a kernel started
    # by a process that imported it (a test worker) inherits that, and is forked too
    assert first["inductor_dir"]
    with kernel(TORCHINDUCTOR_CACHE_DIR=first["inductor_dir"]) as (km, kc):
        second = json.loads(run(kc, SEEDS + "print(json.dumps(report))")[0])
    assert first["forked"] and second["forked"] and first["own_group"]
    assert first["seeds"][0] != second["seeds"][0] and first["seeds"][1] != second["seeds"][1]
    assert first["dill_sees_ipython"] is True and first["pandas_columns"] == 20
    assert "tqdm.notebook" in first["tqdm"]  # huggingface_hub's bars are the notebook's
    if os.environ.get("OMP_NUM_THREADS"):
        assert first["threads"] == int(os.environ["OMP_NUM_THREADS"])


def test_a_kernel_asking_for_other_thread_settings_starts_the_ordinary_way():
    threads = "2" if os.environ.get("OMP_NUM_THREADS") != "2" else "1"
    with kernel(OMP_NUM_THREADS=threads) as (km, kc):
        out, errors = run(kc, "import os, sys\n"
                              "print('torch' in sys.modules, os.environ['OMP_NUM_THREADS'])")
    assert not errors and out.split() == ["False", threads], out


def test_without_a_server_the_client_becomes_an_ordinary_kernel():
    code = ("import os, runpy, sys\n"
            "os.execv = lambda path, argv: (print(argv[1:]), sys.exit(0))\n"
            "sys.argv = ['client.py', '-f', 'k.json']\n"
            f"runpy.run_path({str(HERE / 'client.py')!r}, run_name='__main__')\n")
    env = {**os.environ, SERVER_ENV: "/nonexistent/server.sock"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert out.strip() == "['-m', 'ipykernel_launcher', '-f', 'k.json']"
