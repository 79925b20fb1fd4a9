"""The test run's "python3" kernel as jupyter_client starts it: a thin stand-in that asks
the run's fork server (tests/kernel_fork/server.py) for a kernel forked from a process
that has already imported torch, and behaves as that kernel's process towards its manager.

It hands over its argv, environment, working directory, umask, priority (a test worker
lowers its own: tests/run_plan.py) and stdin/stdout/stderr; relays
SIGINT (an interrupt) and SIGTERM to the kernel's process group; exits with the kernel's
exit status. If it is killed (SIGKILL on shutdown), the server sees its socket close and
kills the kernel's group. If its manager exits, it exits as ipykernel's parent poller would.
When the server cannot be reached or declines (an environment it was not started with),
it becomes an ordinary `python -m ipykernel_launcher`. Standard library only: it must
start in milliseconds."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

SERVER_ENV = "PPL_WIDGET_TEST_FORK_SERVER"


def ordinary_kernel(argv: list[str]) -> None:
    os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *argv])


def request(conn: socket.socket, argv: list[str]) -> None:
    mask = os.umask(0o22)  # os.umask reads only by setting: put it back
    os.umask(mask)
    body = json.dumps({"argv": argv, "env": dict(os.environ), "cwd": os.getcwd(),
                       "executable": sys.executable, "umask": mask,
                       "nice": os.nice(0)}).encode()
    socket.send_fds(conn, [len(body).to_bytes(8, "big")], [0, 1, 2])
    conn.sendall(body)


class Lines:
    """The server's replies, one JSON object a line, read with a timeout that loses nothing."""

    def __init__(self, conn: socket.socket):
        self.conn, self.buffer = conn, b""

    def next(self) -> dict | None:
        while b"\n" not in self.buffer:
            chunk = self.conn.recv(4096)  # TimeoutError leaves the buffer as it was
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)


def main(argv: list[str]) -> None:
    path = os.environ.get(SERVER_ENV)
    if not path:
        ordinary_kernel(argv)
    pending: list[int] = []
    child = [0]

    def relay(signum, frame):
        if not child[0]:
            pending.append(signum)
            return
        try:  # the kernel leads its own group, as jupyter_client starts kernels
            os.killpg(child[0], signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, relay)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lines = Lines(conn)
    try:
        conn.settimeout(60)  # the first request waits for the server's imports
        conn.connect(path)
        request(conn, argv)
        reply = lines.next() or {}
    except OSError:
        reply = {}
    if "pid" not in reply and "status" not in reply:  # unreachable, or declined
        conn.close()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)
        ordinary_kernel(argv)
    parent = int(os.environ.get("JPY_PARENT_PID", "0") or 0)
    watch_parent = parent > 1 and os.getppid() == parent
    conn.settimeout(1.0 if watch_parent else None)
    if "pid" in reply:
        child[0] = reply["pid"]
        for signum in pending:
            relay(signum, None)
    while "status" not in reply:
        try:
            reply = lines.next()
        except TimeoutError:
            if os.getppid() != parent:  # what ipykernel's ParentPollerUnix does
                os._exit(1)  # the kernel sees its socket close and ends too
            reply = {}
            continue
        if reply is None:  # the server went away without a word: so did the kernel
            os._exit(1)
    status = reply["status"]
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main(sys.argv[1:])
