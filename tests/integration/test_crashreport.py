"""Crash reports, the software watchdog and DEBUG's crash subcommands (server/admin/crashreport.py),
differential: each scenario runs against raxdb and redis-server 7.0.15, each writing a logfile,
and the two must end the same way (the same signal, or running on) and log the same report
shape: the banners, section titles and headline lines, in the same order."""

from __future__ import annotations

import os
import re
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.support.servers import COMMON, ROOT, ServerProcess, free_port, redis_binary

pytestmark = pytest.mark.oracle

os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")

KINDS = ("raxdb", "redis")
START = "=== REDIS BUG REPORT START: Cut & paste starting from here ==="
END = "=== REDIS BUG REPORT END. Make sure to include from START to END. ==="
TITLES = ["STACK TRACE", "INFO OUTPUT", "CLIENT LIST OUTPUT", "CURRENT CLIENT INFO", "MODULES INFO OUTPUT",
          "CONFIG DEBUG OUTPUT"]
_PREFIX = re.compile(r"^\d+:[MCSX] \d\d \w{3} \d{4} [\d:.]+ [.*#-] ")


class Node:
    """One server with a logfile in its own directory."""

    def __init__(self, kind: str, tmp: Path, *extra: str, config: str | None = None) -> None:
        self.kind = kind
        self.dir = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=tmp))
        self.logfile = self.dir / "server.log"
        port = free_port()
        head = [redis_binary() or "redis-server"] if kind == "redis" else [sys.executable, "-m", "raxdb.server"]
        argv = [*head, *([config] if config else []), "--port", str(port), "--bind", "127.0.0.1", *COMMON,
                "--logfile", str(self.logfile), *extra]
        self.proc = ServerProcess(argv, port, str(self.dir), kind, ready_text=None)
        self.port = port
        # no retries (a crash is the answer awaited) and no CLIENT SETINFO (not in Redis 7.0)
        self.client = redis.Redis(port=port, socket_timeout=30, retry=Retry(NoBackoff(), 0), driver_info=None)
        self.wait_ready()

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.client.ping():
                    return
            except (redis.ConnectionError, redis.TimeoutError):
                pass
            if self.proc.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"{self.kind} is not serving:\n{self.text()}")

    def text(self) -> str:
        return self.logfile.read_text(errors="replace") if self.logfile.exists() else ""

    def wait_exit(self, timeout: float = 30.0) -> int:
        return self.proc.proc.wait(timeout)

    def wait_log(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            log = self.text()
            if text in log:
                return log
            time.sleep(0.05)
        raise AssertionError(f"{self.kind} never logged {text!r}:\n{self.text()}")

    def command(self, *args: str) -> object:
        """A command that ends or restarts the server: the lost connection is the answer."""
        try:
            return self.client.execute_command(*args)
        except redis.ConnectionError:
            return None

    def stop(self) -> None:
        self.client.close()
        self.proc.stop()


@pytest.fixture
def nodes(tmp_path):
    started: list[Node] = []

    def start(*extra: str, config: str | None = None) -> tuple[Node, Node]:
        pair = tuple(Node(kind, tmp_path, *extra, config=config) for kind in KINDS)
        started.extend(pair)
        return pair  # type: ignore[return-value]

    yield start
    for node in started:
        node.stop()


def report_lines(log: str) -> list[str]:
    """The log's lines without serverLog's prefix."""
    return [_PREFIX.sub("", line) for line in log.splitlines()]


def titles(log: str) -> list[str]:
    return [m for m in re.findall(r"^------ (.+) ------$", log, re.M) if m in TITLES]


def section(log: str, title: str) -> list[str]:
    body = log.split(f"------ {title} ------\n", 1)[1]
    return [line for line in re.split(r"\n(?:------ |=== )", body, maxsplit=1)[0].splitlines() if line]


def both_end(pair: tuple[Node, Node], sig: int) -> tuple[str, str]:
    for node in pair:
        assert node.wait_exit() == -sig, node.text()
    return pair[0].text(), pair[1].text()


def crashed_by(start, command: tuple[str, ...], sig: int, *extra: str) -> tuple[str, str]:
    """A new pair started with `extra`, `command` sent to each (the lost connection its answer),
    and both logs once both ended by `sig`."""
    pair = start(*extra)
    for node in pair:
        node.command(*command)
    return both_end(pair, sig)


def test_debug_segfault(nodes):
    pair = nodes()
    for node in pair:
        node.client.set("k", "v")
        assert node.command("DEBUG", "SEGFAULT") is None
    ours, theirs = both_end(pair, signal.SIGSEGV)
    for log in (ours, theirs):
        assert log.count(START) == 1 and END in log
        assert re.search(r"# Redis 7\.0\.15 crashed by signal: 11, si_code: \d+\n", log)
        assert titles(log) == TITLES
        assert section(log, "CURRENT CLIENT INFO")[1:] == ["argv[0]: '\"DEBUG\"'", "argv[1]: '\"SEGFAULT\"'"]
        assert "# Keyspace\ndb0:keys=1,expires=0" in log  # (read with universal newlines)
        assert section(log, "MODULES INFO OUTPUT") == []
    pid = pair[0].proc.proc.pid
    assert f"# Killed by PID: {pid}, UID: {os.getuid()}" in ours
    assert "debugCommand" in theirs and ", in debug\n" in ours  # the function running DEBUG, each its own
    assert sorted(section(ours, "CONFIG DEBUG OUTPUT")) == sorted(section(theirs, "CONFIG DEBUG OUTPUT"))
    # the client's line: the same fields, the command running named
    mine, other = (section(log, "CURRENT CLIENT INFO")[0] for log in (ours, theirs))
    assert [f.split("=")[0] for f in mine.split()] == [f.split("=")[0] for f in other.split()]
    assert "cmd=debug" in mine and "cmd=debug" in other


def test_sigabrt_idle_and_during_a_command(nodes):
    idle = nodes()
    for node in idle:
        os.kill(node.proc.proc.pid, signal.SIGABRT)
    ours, theirs = both_end(idle, signal.SIGABRT)
    for log in (ours, theirs):
        assert re.search(r"# Redis 7\.0\.15 crashed by signal: 6, si_code: 0\n", log)
        assert titles(log) == [t for t in TITLES if t != "CURRENT CLIENT INFO"]  # no client was running
        assert END in log
    assert "Killed by PID" not in ours  # a Python handler gets no siginfo
    busy = nodes()
    for node in busy:
        other = redis.Redis(port=node.port, retry=Retry(NoBackoff(), 0), driver_info=None)
        with pytest.raises(redis.ConnectionError):
            # the handler runs inside DEBUG SLEEP (time.sleep returns early for it)
            threading.Timer(0.3, os.kill, (node.proc.proc.pid, signal.SIGABRT)).start()
            other.execute_command("DEBUG", "SLEEP", "5")
    ours, theirs = both_end(busy, signal.SIGABRT)
    for log in (ours, theirs):
        assert titles(log) == TITLES
        assert section(log, "CURRENT CLIENT INFO")[1:] == ["argv[0]: '\"DEBUG\"'", "argv[1]: '\"SLEEP\"'",
                                                          "argv[2]: '\"5\"'"]


def test_sigsegv_from_outside_reaches_faulthandler(nodes):
    """A fault signal: Redis's handler reports, raxdb's faulthandler writes the Python stacks to
    the same log; both die of it."""
    pair = nodes()
    for node in pair:
        os.kill(node.proc.proc.pid, signal.SIGSEGV)
    ours, theirs = both_end(pair, signal.SIGSEGV)
    assert "crashed by signal: 11" in theirs
    assert "Fatal Python error: Segmentation fault" in ours and "main.py" in ours


def test_debug_panic_oom_assert(nodes):
    for log in crashed_by(nodes, ("DEBUG", "PANIC"), signal.SIGABRT):
        lines = report_lines(log)
        at = lines.index(START)
        assert lines[at + 1:at + 3] == ["------------------------------------------------",
                                        "!!! Software Failure. Press left mouse button to continue"]
        assert re.fullmatch(r"Guru Meditation: DEBUG PANIC called at Unix time \d+ #[\w.]+:\d+", lines[at + 3])
        assert titles(log) == TITLES and END in log

    for log in crashed_by(nodes, ("DEBUG", "OOM"), signal.SIGABRT):
        lines = report_lines(log)
        assert "Out Of Memory allocating 9223372036854775807 bytes!" in lines
        assert any(re.fullmatch(r"Guru Meditation: Redis aborting for OUT OF MEMORY\. Allocating "
                                r"9223372036854775807 bytes! #[\w.]+:\d+", line) for line in lines)

    heads = []
    for log in crashed_by(nodes, ("DEBUG", "ASSERT"), signal.SIGABRT):
        lines = report_lines(log)
        at = lines.index(START)
        head = lines[at + 1:lines.index("------ STACK TRACE ------")]
        heads.append([re.sub(r"fd=\d+|[\w.]+:\d+ '", "X", line) for line in head if line])
        assert titles(log) == TITLES and END in log
    assert heads[0] == heads[1]
    assert heads[0][0] == "=== ASSERTION FAILED CLIENT CONTEXT ===" and heads[0][-1] == "==> X1 == 2' is not true"


def test_crash_log_disabled(nodes):
    pair = nodes("--crash-log-enabled", "no")
    for node in pair:
        os.kill(node.proc.proc.pid, signal.SIGABRT)
    for log in both_end(pair, signal.SIGABRT):
        assert START not in log
    for log in crashed_by(nodes, ("DEBUG", "SEGFAULT"), signal.SIGSEGV, "--crash-log-enabled", "no"):
        assert START not in log
    # the panic's lines, no stack nor report
    for log in crashed_by(nodes, ("DEBUG", "PANIC"), signal.SIGABRT, "--crash-log-enabled", "no"):
        assert START in log and "Guru Meditation" in log and END in log and titles(log) == []
    pair = nodes()  # turned off at run time: the handlers go (updateSighandlerEnabled)
    for node in pair:
        assert node.client.config_set("crash-log-enabled", "no")
        os.kill(node.proc.proc.pid, signal.SIGABRT)
    for log in both_end(pair, signal.SIGABRT):
        assert START not in log


def test_watchdog(nodes):
    pair = nodes()
    for node in pair:
        c = node.client
        assert c.config_set("watchdog-period", "1")
        assert c.config_get("watchdog-period") == {"watchdog-period": "200"}  # 2 * 1000 / hz at least
        c.execute_command("DEBUG", "SLEEP", "1")
        log = node.wait_log("--------\n")
        lines = log.splitlines()
        at = next(i for i, line in enumerate(lines) if re.fullmatch(r"\d+:signal-handler \(\d+\) ", line))
        assert lines[at + 1] == "--- WATCHDOG TIMER EXPIRED ---"
        assert "------ STACK TRACE ------" in lines[at + 2:]
        # logging.tcl's check: the stack names the function running DEBUG, each server its own
        assert (", in debug\n" if node.proc.name == "raxdb" else "(debugCommand+") in log
        assert re.search(r"^\d+:signal-handler \(\d+\) --------$", log, re.M)
        assert c.config_set("watchdog-period", "0")
        c.execute_command("DEBUG", "SLEEP", "0.5")
        assert c.ping()
        assert node.text().count("WATCHDOG TIMER EXPIRED") == 1
        assert node.proc.proc.poll() is None


def test_debug_restart_and_crash_and_recover(nodes):
    pair = nodes("--save", "900 1")
    for node in pair:
        c = node.client
        pid = c.info("server")["process_id"]
        with pytest.raises(redis.ResponseError, match="^value is not an integer or out of range$"):
            c.execute_command("DEBUG", "RESTART", "soon")
        c.set("saved", "1")
        assert node.command("DEBUG", "RESTART") is None
        node.wait_ready()
        assert c.info("server")["process_id"] == pid  # the same process, a new image
        assert c.get("saved") == b"1"  # the graceful shutdown saved it
        c.set("unsaved", "1")
        assert node.command("DEBUG", "CRASH-AND-RECOVER", "50") is None
        node.wait_ready()
        assert c.info("server")["process_id"] == pid
        assert c.get("saved") == b"1" and c.get("unsaved") is None  # no save on the way
        assert node.proc.proc.poll() is None


def test_debug_restart_rewrites_the_config_file(nodes, tmp_path):
    for kind in KINDS:
        (tmp_path / f"{kind}.conf").write_text("maxmemory-policy noeviction\n")
    pair = [Node(kind, tmp_path, config=str(tmp_path / f"{kind}.conf")) for kind in KINDS]
    try:
        for node in pair:
            node.client.config_set("maxmemory-policy", "allkeys-lru")
            node.command("DEBUG", "RESTART")
            node.wait_ready()
            assert node.client.config_get("maxmemory-policy") == {"maxmemory-policy": "allkeys-lru"}
            assert "maxmemory-policy allkeys-lru" in (tmp_path / f"{node.kind}.conf").read_text()
    finally:
        for node in pair:
            node.stop()


def test_debug_help_lines_are_redis_lines_in_redis_order(nodes):
    ours, theirs = (node.client.execute_command("DEBUG", "HELP") for node in nodes())
    for line in (b"SEGFAULT", b"PANIC", b"ASSERT", b"OOM", b"RESTART [<milliseconds>]",
                 b"CRASH-AND-RECOVER [<milliseconds>]"):
        assert line in ours
    positions = [theirs.index(line) for line in ours[1:-1]]  # the first and last lines name the command
    assert positions == sorted(positions)


def test_debug_restart_refused_when_the_shutdown_fails(nodes, tmp_path):
    """The final save fails (its directory is gone): no restart, Redis's error, the server runs on."""
    gone = tmp_path / "gone"
    gone.mkdir()
    pair = nodes("--save", "900 1", "--dir", str(gone))
    gone.rmdir()
    for node in pair:
        c = node.client
        c.set("k", "v")
        with pytest.raises(redis.ResponseError, match=r"^failed to restart the server\. Check server logs\.$"):
            c.execute_command("DEBUG", "RESTART")
        assert "Can't restart: error preparing for shutdown" in node.text()
        assert c.get("k") == b"v"
        assert c.config_set("save", "")  # so the fixture's SIGTERM ends it without a save to fail


def test_use_exit_on_panic(nodes):
    """use-exit-on-panic yes: a panic or failed assertion ends with exit status 1, not abort()."""
    for command in (("DEBUG", "PANIC"), ("DEBUG", "ASSERT")):
        # without redis-server's memory test, which once crashed it (SIGSEGV) under load in CI
        pair = nodes("--use-exit-on-panic", "yes", "--crash-memcheck-enabled", "no")
        for node in pair:
            node.command(*command)
        for node in pair:
            assert node.wait_exit() == 1, node.text()
            assert "Guru Meditation" in node.text() or "ASSERTION FAILED" in node.text()
