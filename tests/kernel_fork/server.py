"""The test run's kernel fork server: imports torch (and the rest of warm_imports.MODULES)
once, on the first request, then forks every "python3" kernel of the run from itself
(client.py asks), so that no kernel pays those ~6 s of CPU again (docs/testing.md, issue 48).

The warm imports make no kernel-dependent choice at import (warm_imports.py says how that
was checked); IPython, ipykernel, ipywidgets, transformers, pandas each kernel imports
itself, as a student's kernel does. The server forks only from its one thread. It declines
(the client then starts an ordinary kernel) a request from another interpreter, or whose
environment differs in a variable the warm imports read. It ends, with every kernel it
forked, when its stdin closes (the pytest run that started it ended, however it ended) or
on SIGTERM."""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import socket
import sys
import time

#: The environment the server started with: a kernel must share its load-time part
START_ENV = dict(os.environ)
START_PATH = list(os.environ.get("PYTHONPATH", "").split(os.pathsep))
#: where the timeline is written (tests/run_plan.py), each ended kernel's row goes beside it:
#: worker, start, end, CPU seconds, the test that asked (the one running then, if it knew)
KERNEL_LOG = (os.environ["PPL_WIDGET_TEST_TIMELINE"] + ".kernels"
              if os.environ.get("PPL_WIDGET_TEST_TIMELINE") else None)
_started: dict[int, tuple[float, str, str]] = {}  # pid -> start, worker, test
#: sys.path without this script's folder and PYTHONPATH's entries: the interpreter's own
BASE_PATH = [p for p in sys.path[1:]
             if p not in {os.path.abspath(e) for e in START_PATH if e}]


def read_request(conn: socket.socket) -> tuple[dict, list[int]]:
    conn.settimeout(30)
    head, fds, _, _ = socket.recv_fds(conn, 8, 3)
    body = bytearray()
    size = int.from_bytes(head, "big")
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise ConnectionError("the client went away mid-request")
        body += chunk
    conn.settimeout(None)
    return json.loads(body), fds


def why_not(req: dict, fds: list[int], looked_up: set[str], written: dict[str, str]) -> str | None:
    """Why this request cannot have a forked kernel (None: it can). A variable may also
    have the value the warm imports wrote themselves (torch._dynamo sets its cache folder
    so), as a kernel's own process started from one that imported them inherits it."""
    from warm_imports import compared

    if len(fds) != 3:
        return "no stdin/stdout/stderr"
    theirs = compared(req["env"], looked_up)
    ours = compared(START_ENV, looked_up)
    keys = set(theirs) | set(ours)
    differ = sorted(k for k in keys if theirs.get(k) not in (ours.get(k), written.get(k)))
    if differ:
        return f"another load-time environment: {', '.join(differ)}"
    return None


def fresh_std_streams() -> None:
    """sys.stdin/stdout/stderr read and write fds 0-2, now the client's (the server never
    buffered anything in them): only line buffering depends on what the fd is, as the
    interpreter decides at start (on a terminal; stderr always)."""
    sys.stdout.reconfigure(line_buffering=os.isatty(1))
    sys.stdin.reconfigure(line_buffering=os.isatty(0))


def become_kernel(conn: socket.socket, req: dict, fds: list[int], others: list,
                  written: dict[str, str]) -> None:
    """In the forked child: turn into `python -m ipykernel_launcher ARGV` as the client
    would have started it. Never returns: the kernel's end raises SystemExit."""
    import random
    import runpy

    os.setsid()  # its own session and group, as jupyter_client starts a kernel
    for signum in (signal.SIGCHLD, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.set_wakeup_fd(-1)
    for other in others:  # detached first: a socket object would close a reused number
        os.close(other.detach() if isinstance(other, socket.socket) else other)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    fresh_std_streams()
    os.chdir(req["cwd"])
    os.umask(req["umask"])
    if req["nice"] > os.nice(0):  # the niceness its starter has, as a kernel inherits it
        os.nice(req["nice"] - os.nice(0))
    os.environ.clear()
    os.environ.update(written)  # as the warm imports would have in this kernel
    os.environ.update(req["env"])
    extra = [os.path.abspath(e) for e in req["env"].get("PYTHONPATH", "").split(os.pathsep) if e]
    sys.path[:] = list(dict.fromkeys([os.getcwd(), *extra, *BASE_PATH]))
    sys.path_importer_cache.clear()
    sys.argv = ["-m", *req["argv"]]
    sys.orig_argv = [sys.executable, "-m", "ipykernel_launcher", *req["argv"]]
    # fresh randomness: the fork copied the server's states (random reseeds itself at fork)
    random.seed()
    if "numpy.random" in sys.modules:
        sys.modules["numpy.random"].seed()
    if "torch" in sys.modules:  # seeded from the OS at its import, as here
        sys.modules["torch"].default_generator.seed()

    try:
        conn.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
    except OSError:  # its client gave up waiting (and started an ordinary kernel)
        os._exit(1)
    conn.close()  # the server's copy tells it when the client goes
    runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)
    raise SystemExit(0)


def serve(listener: socket.socket) -> None:
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: None)
    kernels: dict[int, socket.socket] = {}  # pid -> its client's connection
    killed: set[int] = set()  # whose client went away: reaped soon
    looked_up: set[str] | None = None  # what the warm imports read (once they ran)
    written: dict[str, str] = {}  # and what they wrote into the environment
    try:
        while True:
            watched = [listener, sys.stdin, wake_r,
                       *(c for pid, c in kernels.items() if pid not in killed)]
            ready, _, _ = select.select(watched, [], [])
            if wake_r in ready:
                got = os.read(wake_r, 512)
                if signal.SIGTERM in got:
                    return
                reap(kernels)
                killed &= set(kernels)
            if sys.stdin in ready and not os.read(sys.stdin.fileno(), 512):
                return  # the run is over
            for pid, conn in list(kernels.items()):
                if conn in ready and not conn.recv(1):
                    # its client was killed (SIGKILL on shutdown): so is its process
                    # group, as jupyter_client kills a kernel's group
                    signal_group(pid, signal.SIGKILL)
                    killed.add(pid)
            if listener not in ready:
                continue
            conn, _ = listener.accept()
            try:
                req, fds = read_request(conn)
            except (OSError, ValueError):
                conn.close()
                continue
            if os.path.realpath(req["executable"]) != os.path.realpath(sys.executable):
                reason = f"another interpreter: {req['executable']}"
            else:
                if looked_up is None:
                    from warm_imports import import_all

                    looked_up = import_all()
                    written = {k: v for k, v in os.environ.items() if START_ENV.get(k) != v}
                reason = why_not(req, fds, looked_up, written)
            if reason is not None:
                print(f"kernel fork server: an ordinary kernel ({reason})", file=sys.stderr)
                try:
                    conn.sendall(json.dumps({"fallback": reason}).encode() + b"\n")
                except OSError:
                    pass  # gone already
            elif gone(conn):  # it gave up waiting for the imports above
                reason = "the client went away"
            else:
                others = [listener, wake_r, wake_w, *kernels.values()]
                # the imports' objects out of the collector's reach, in the kernel too: its
                # collections (one at its exit alone took ~2 s with them) no longer walk
                # them, nor copy their pages (Python's gc.freeze docs; docs/testing.md)
                gc.freeze()
                pid = os.fork()
                if pid == 0:
                    become_kernel(conn, req, fds, others, written)
                kernels[pid] = conn
                if KERNEL_LOG:
                    _started[pid] = (time.time(), req["env"].get("PYTEST_XDIST_WORKER", ""),
                                     req["env"].get("PYTEST_CURRENT_TEST", ""))
            for fd in fds:
                os.close(fd)
            if reason is not None:
                conn.close()
    finally:
        if os.getpid() == SERVER_PID:  # not in a forked kernel unwinding
            end_kernels(kernels)


def gone(conn: socket.socket) -> bool:
    ready, _, _ = select.select([conn], [], [], 0)
    return bool(ready) and not conn.recv(1, socket.MSG_PEEK)


def reap(kernels: dict[int, socket.socket]) -> None:
    while kernels:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if KERNEL_LOG and pid in _started:
            start, worker, test = _started.pop(pid)
            with open(KERNEL_LOG, "a") as f:
                f.write(f"{worker}\t{start:.2f}\t{time.time():.2f}\t"
                        f"{usage.ru_utime + usage.ru_stime:.2f}\t{test}\n")
        conn = kernels.pop(pid, None)
        if conn is not None:
            try:
                conn.sendall(json.dumps({"status": status}).encode() + b"\n")
            except OSError:
                pass
            conn.close()


def signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass


def end_kernels(kernels: dict[int, socket.socket]) -> None:
    """The run ended with kernels still up (a test that left one): end them, no orphans."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in list(kernels):
            signal_group(pid, sig)
        deadline = time.monotonic() + 5
        while kernels and time.monotonic() < deadline:
            reap(kernels)
            time.sleep(0.05)


def main() -> None:
    path = sys.argv[1]
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    try:
        serve(listener)
    finally:
        if os.path.exists(path) and os.getpid() == SERVER_PID:
            os.unlink(path)


SERVER_PID = os.getpid()

if __name__ == "__main__":
    main()
