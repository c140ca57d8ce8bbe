"""Running as a service (server/admin/supervise.py), each scenario run against redis-server too:
`pidfile`, `daemonize yes`, and `supervised systemd|auto` talking to a NOTIFY_SOCKET the test
listens on, as systemd would."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from tests.support.servers import (
    COMMON,
    ROOT,
    ServerProcess,
    free_port,
    redis_binary,
    start_raxdb,
    start_redis,
)

STARTERS = {"raxdb": start_raxdb, "redis": start_redis}


def _client(port: int) -> redis.Redis:
    return redis.Redis(port=port, socket_timeout=10)


def _stop(s: ServerProcess) -> int:
    """SHUTDOWN NOSAVE, then the exit code."""
    try:
        _client(s.port).shutdown(nosave=True)
    except redis.ConnectionError:
        pass
    return s.proc.wait(20)


@contextmanager
def _notify_socket(name: str | None = None) -> Iterator[tuple[socket.socket, str]]:
    """A datagram socket where systemd would listen; NOTIFY_SOCKET names it (abstract if `name`
    starts with '@') for the servers started inside the block."""
    d = tempfile.mkdtemp(prefix="notify-")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    if name and name.startswith("@"):
        sock.bind("\0" + name[1:])
        env_value = name
    else:
        env_value = os.path.join(d, "notify")
        sock.bind(env_value)
    sock.settimeout(20)
    old = os.environ.get("NOTIFY_SOCKET")
    os.environ["NOTIFY_SOCKET"] = env_value
    try:
        yield sock, env_value
    finally:
        if old is None:
            os.environ.pop("NOTIFY_SOCKET", None)
        else:
            os.environ["NOTIFY_SOCKET"] = old
        sock.close()


def _messages(sock: socket.socket, until: str) -> list[str]:
    """The datagrams received, up to and including the one equal to `until`."""
    got = []
    while True:
        msg = sock.recv(4096).decode()
        got.append(msg)
        if msg == until:
            return got


def _datagrams(sock: socket.socket, n: int, s: ServerProcess) -> list[str]:
    """The next `n` datagrams; if they do not all come (the socket's timeout), a failure that shows
    those that did and the server's log, which says why a notification was not sent."""
    got: list[str] = []
    try:
        while len(got) < n:
            got.append(sock.recv(4096).decode())
    except TimeoutError:
        pytest.fail(f"{s.name}: {len(got)} of {n} datagrams {got}, exit code {s.proc.poll()}; its log:\n"
                    + "".join(s.log))
    return got


def _systemd_session(start: Callable[..., ServerProcess], *args: str, socket_name: str | None = None) -> dict:
    with _notify_socket(socket_name) as (sock, _):
        s = start(*args)
        try:
            ready = _messages(sock, "READY=1\n")
            supervised = _client(s.port).info("server")["process_supervised"]
            rc = _stop(s)
            stopping = _messages(sock, "STOPPING=1\n")
            noticed = s.wait_log("Supervised by systemd.", 0)
        finally:
            s.stop()
    return {"ready": ready, "stopping": stopping, "supervised": supervised, "rc": rc, "logged": noticed}


@pytest.mark.oracle
@pytest.mark.parametrize("mode", ["systemd", "auto"])
def test_systemd_notifications_as_redis(mode: str) -> None:
    ours = _systemd_session(start_raxdb, "--supervised", mode)
    theirs = _systemd_session(start_redis, "--supervised", mode)
    assert ours == theirs
    assert ours["ready"] == ["STATUS=Redis is loading...\n", "STATUS=Ready to accept connections\n", "READY=1\n"]
    assert ours["supervised"] == "systemd"


def test_systemd_abstract_socket() -> None:
    name = f"@raxdb-notify-{os.getpid()}"
    ours = _systemd_session(start_raxdb, "--supervised", "systemd", socket_name=name)
    assert ours["ready"][-1] == "READY=1\n" and ours["supervised"] == "systemd"


@pytest.mark.oracle
def test_systemd_final_save_status(tmp_path: Path) -> None:
    """The final save is announced between STOPPING=1 and the exit."""
    results = {}
    for name, start in STARTERS.items():
        d = tmp_path / name
        d.mkdir()
        with _notify_socket() as (sock, _):
            s = start("--supervised", "systemd", cwd=str(d))
            try:
                _messages(sock, "READY=1\n")
                try:
                    _client(s.port).shutdown(save=True)
                except redis.ConnectionError:
                    pass
                s.proc.wait(20)
                results[name] = _datagrams(sock, 2, s)
            finally:
                s.stop()
    assert results["raxdb"] == results["redis"] == ["STOPPING=1\n", "STATUS=Saving the final RDB snapshot\n"]


def _restart_session(start: Callable[..., ServerProcess]) -> list[str]:
    """The datagrams from DEBUG RESTART on: the shutdown's, then the new process's start-up (it
    inherits NOTIFY_SOCKET)."""
    with _notify_socket() as (sock, _):
        s = start("--supervised", "systemd", "--enable-debug-command", "yes")
        try:
            _messages(sock, "READY=1\n")
            # no reply to wait for: the old process execs (redis-server's exec keeps the
            # connection's descriptor open, so it is not even closed)
            with socket.create_connection(("127.0.0.1", s.port)) as conn:
                conn.sendall(b"*2\r\n$5\r\nDEBUG\r\n$7\r\nRESTART\r\n")
                got = _messages(sock, "READY=1\n")
            assert _client(s.port).ping()
            _stop(s)
        finally:
            s.stop()
    return got


@pytest.mark.oracle
def test_debug_restart_notifies_the_supervisor() -> None:
    ours, theirs = _restart_session(start_raxdb), _restart_session(start_redis)
    assert ours == theirs
    assert ours[0] == "STOPPING=1\n" and ours[-1] == "READY=1\n"


def _cmdline(pid: int) -> list[str]:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return [w for w in f.read().decode(errors="replace").replace("\0", " ").split(" ") if w]


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(x) for x in f.read().split()]


_TEMPLATES = ["{invalid-var}", "{title}", "{{x}", "a}", "{", " ", "{server-mode}", "x {{", "{port", "}{",
              "{{title}}", "{title} {port}"]


def _title_session(start: Callable[..., ServerProcess]) -> list[object]:
    """The process title (words of /proc/<pid>/cmdline, its {title} and port masked): at start,
    after CONFIG SET proc-title-template, for invalid templates, and a BGSAVE child's."""
    s = start("--rdb-key-save-delay", "300000")
    try:
        pid, port = s.proc.pid, str(s.port)
        c = _client(s.port)

        def masked(words: list[str]) -> list[str]:
            head = 1 if words[:1] == ["TEST"] else 0  # the {title} word is the program's path
            return [*words[:head], "<title>", *(w.replace(port, "<port>") for w in words[head + 1:])]

        out: list[object] = [masked(_cmdline(pid))]
        c.config_set("proc-title-template", "TEST {title} {listen-addr} {port} {tls-port} {config-file}")
        out.append(masked(_cmdline(pid)))
        for t in _TEMPLATES:
            try:
                out.append(c.config_set("proc-title-template", t))
            except redis.ResponseError as e:
                out.append(str(e))
        c.config_set("proc-title-template", "{title} {listen-addr} {server-mode}")
        c.set("k", "v")
        c.bgsave()
        deadline = time.monotonic() + 20
        child: list[str] = []
        while not (child and child[0].startswith("redis-")) and time.monotonic() < deadline:
            try:
                kids = _children(pid)
                child = _cmdline(kids[0]) if kids else []
            except OSError:  # the child ended between the two reads
                child = []
        out.append([w.replace(port, "<port>") for w in child])
        return out
    finally:
        s.stop()


@pytest.mark.oracle
def test_process_title_as_redis() -> None:
    """set-proc-title: the server and its children rename themselves from proc-title-template, which
    CONFIG SET checks and applies as Redis does (sdstemplate's rules: `{{` is a brace, a template
    that expands to nothing is refused)."""
    ours, theirs = _title_session(start_raxdb), _title_session(start_redis)
    assert ours == theirs
    assert ours[0] == ["<title>", "127.0.0.1:<port>"] and ours[-1] == ["redis-rdb-bgsave", "127.0.0.1:<port>"]


@pytest.mark.oracle
def test_systemd_without_notify_socket_is_unsupervised() -> None:
    os.environ.pop("NOTIFY_SOCKET", None)
    for start in STARTERS.values():
        s = start("--supervised", "systemd")
        try:
            assert s.wait_log("systemd supervision error: NOTIFY_SOCKET not found!", 10)
            assert _client(s.port).info("server")["process_supervised"] == "no"
        finally:
            s.stop()


@pytest.mark.oracle
def test_pidfile_written_and_removed(tmp_path: Path) -> None:
    for name, start in STARTERS.items():
        pidfile = tmp_path / f"{name}.pid"
        s = start("--pidfile", str(pidfile))
        try:
            assert pidfile.read_text() == f"{s.proc.pid}\n"
            assert _stop(s) == 0
            assert s.wait_log("Removing the pid file.", 10)
            assert not pidfile.exists()
        finally:
            s.stop()


@pytest.mark.oracle
def test_no_pidfile_when_the_port_cannot_be_bound(tmp_path: Path) -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        outcomes = {}
        for name, argv in (("raxdb", [sys.executable, "-m", "raxdb.server"]), ("redis", [redis_binary() or "redis-server"])):
            pidfile = tmp_path / f"{name}.pid"
            proc = subprocess.run([*argv, "--port", str(port), "--bind", "127.0.0.1", *COMMON, "--pidfile", str(pidfile)],
                                  cwd=tmp_path, capture_output=True, timeout=60,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)})
            outcomes[name] = (proc.returncode, pidfile.exists())
        assert outcomes["raxdb"] == outcomes["redis"] == (1, False)
    finally:
        holder.close()


def _daemon_session(argv: list[str], tmp_path: Path) -> tuple[int, bool, bool, bool]:
    """Start with daemonize yes: the launcher's exit code, whether the daemon is another process
    that serves, and whether its pid file goes at shutdown."""
    port = free_port()
    pidfile = tmp_path / "d.pid"
    logfile = tmp_path / "d.log"
    launcher = subprocess.Popen([*argv, "--port", str(port), "--bind", "127.0.0.1", *COMMON, "--daemonize", "yes",
                                 "--pidfile", str(pidfile), "--logfile", str(logfile)],
                                cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    launched = launcher.wait(60)
    deadline = time.monotonic() + 60
    pid = None
    while time.monotonic() < deadline:  # the daemon writes the pid file once it listens
        text = pidfile.read_text() if pidfile.exists() else ""
        if text.endswith("\n"):
            pid = int(text)
            break
        time.sleep(0.05)
    assert pid is not None, logfile.read_text() if logfile.exists() else "no log"
    try:
        c = _client(port)
        serves = c.ping() and c.info("server")["process_id"] == pid
        try:
            c.shutdown(nosave=True)
        except redis.ConnectionError:
            pass
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
    finally:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    return launched, pid != launcher.pid and serves, not pidfile.exists(), logfile.stat().st_size > 0


@pytest.mark.oracle
def test_daemonize(tmp_path: Path) -> None:
    (tmp_path / "raxdb").mkdir()
    (tmp_path / "redis").mkdir()
    ours = _daemon_session([sys.executable, "-m", "raxdb.server"], tmp_path / "raxdb")
    theirs = _daemon_session([redis_binary() or "redis-server"], tmp_path / "redis")
    assert ours == theirs == (0, True, True, True)
