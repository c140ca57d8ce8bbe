"""BGREWRITEAOF, appendonly at run time, the AOF's INFO fields, write errors and shutdown, against
redis-server 7.0.15: each test runs the same steps on both servers (each in its own directory)
and compares replies, INFO fields, the appendonlydir listing, the manifests and file contents.

Rewrites are awaited on the servers' own log lines ("Background AOF rewrite finished
successfully"), never by sleeping; a rewrite is kept running as long as a test needs it by
rdb-key-save-delay (which both servers honour per key while rewriting) and ended by signalling
the child, found among the server's children in /proc.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import hiredis
import pytest

from tests.support.diff import RawConnection
from tests.support.servers import COMMON, ServerProcess, free_port, redis_binary, start_raxdb, start_redis

DONE = "Background AOF rewrite finished successfully"
# Tests that read a file right after a reply: with everysec a write may be postponed past the
# reply while a background fsync runs (as in Redis); with always it never is.
ALWAYS = ("--appendfsync", "always")
STARTED = "Background append only file rewriting started"


def parse(frame: bytes):  # type: ignore[no-untyped-def]
    r = hiredis.Reader()
    r.feed(frame)
    return r.gets()


class Side:
    """One server under test and a connection to it."""

    def __init__(self, srv: ServerProcess) -> None:
        self.srv = srv
        self.conn = RawConnection(srv.port)

    def call(self, *args: object) -> bytes:
        return self.conn.call(*args)

    def info(self) -> dict[str, str]:
        text = parse(self.call("INFO", "persistence")).decode()
        return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)

    def aof_info(self) -> list[str]:
        text = parse(self.call("INFO", "persistence")).decode()
        return [line for line in text.split("\r\n") if line.startswith("aof_")]

    @property
    def dir(self) -> str:
        return os.path.join(self.srv.cwd, "appendonlydir")

    def listing(self) -> list[str]:
        return sorted(os.listdir(self.dir)) if os.path.isdir(self.dir) else []

    def manifest(self) -> str:
        with open(os.path.join(self.dir, "appendonly.aof.manifest")) as f:
            return f.read()

    def read(self, name: str) -> bytes:
        with open(os.path.join(self.dir, name), "rb") as f:
            return f.read()

    def count(self, text: str) -> int:
        with self.srv._logged:
            return sum(text in line for line in self.srv.log)

    def wait_count(self, text: str, n: int, timeout: float = 30.0) -> None:
        """Until the log holds `n` lines containing `text`."""
        srv = self.srv
        with srv._logged:
            ok = srv._logged.wait_for(lambda: sum(text in line for line in srv.log) >= n, timeout)
        assert ok, f"{srv.name} never logged {text!r} {n} times:\n" + "".join(srv.log[-30:])

    def children(self) -> list[int]:
        pid = self.srv.proc.pid
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                return [int(p) for p in f.read().split()]
        except FileNotFoundError:
            return []

    def signal_child(self, sig: int) -> None:
        kids = self.children()
        assert len(kids) == 1, kids
        os.kill(kids[0], sig)

    def close(self) -> None:
        self.conn.close()
        self.srv.stop()


def start_redis_ignoring_xfsz(*extra: str) -> ServerProcess:
    """redis-server with SIGXFSZ ignored, as a Python process (raxdb) has it, so a file-size limit
    makes its writes fail with EFBIG instead of killing it."""
    binary = redis_binary()
    assert binary is not None
    port = free_port()
    cwd = tempfile.mkdtemp(prefix="redis-")
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", *COMMON, *extra]
    script = "trap '' XFSZ; exec " + " ".join(f"'{a}'" for a in argv)
    return ServerProcess(["sh", "-c", script], port, cwd, "redis")


@contextmanager
def pair(*args: str, xfsz: bool = False) -> Iterator[tuple[Side, Side]]:
    sides = [Side(start_raxdb(*args))]
    try:
        sides.append(Side(start_redis_ignoring_xfsz(*args) if xfsz else start_redis(*args)))
        yield sides[0], sides[1]
    finally:
        for s in sides:
            s.close()


def both(sides: tuple[Side, Side], *args: object) -> bytes:
    """The same command to both; the reply, asserted equal."""
    ours, theirs = (s.call(*args) for s in sides)
    assert ours == theirs, f"{args}: raxdb {ours!r}, redis {theirs!r}"
    return ours


def aof_sizes(side: Side) -> int:
    """The base's and increments' sizes, as the manifest lists them (aof_current_size)."""
    total = 0
    for line in side.manifest().splitlines():
        words = line.split()
        if words[-1] in ("b", "i"):
            total += os.path.getsize(os.path.join(side.dir, words[1]))
    return total


def end_children(sides: tuple[Side, Side], sig: int, logged: str, n: int) -> None:
    """Signal both servers' children first, then await each server's `n`th `logged` line (one at
    a time, the second child could finish on its own while the first end is awaited)."""
    for s in sides:
        s.signal_child(sig)
    for s in sides:
        s.wait_count(logged, n)


def seed(sides: tuple[Side, Side], n: int = 5) -> None:
    for i in range(n):
        both(sides, "SET", f"k{i}", f"v{i}")


# ---- BGREWRITEAOF ----------------------------------------------------------------------------------
@pytest.mark.oracle
def test_bgrewriteaof_layout_manifest_and_check_aof():
    with pair("--appendonly", "yes", *ALWAYS) as sides:
        assert sides[0].listing() == sides[1].listing()
        seed(sides)
        both(sides, "RPUSH", "list", "a", "b", "1")
        for round_ in (1, 2):
            assert both(sides, "BGREWRITEAOF") == b"+" + STARTED.encode() + b"\r\n"
            for s in sides:
                s.wait_count(DONE, round_)
            assert sides[0].listing() == sides[1].listing()
            assert sides[0].manifest() == sides[1].manifest()
            both(sides, "SET", "after", str(round_))
        ours = sides[0]
        assert ours.listing() == ["appendonly.aof.3.base.rdb", "appendonly.aof.3.incr.aof", "appendonly.aof.manifest"]
        assert ours.manifest() == ("file appendonly.aof.3.base.rdb seq 3 type b\n"
                                   "file appendonly.aof.3.incr.aof seq 3 type i\n")
        for s in sides:
            base = s.read("appendonly.aof.3.base.rdb")
            assert base[:5] == b"REDIS"
            assert b"\xfa\x08aof-base\xc0\x01" in base  # aux aof-base 1 (an int-encoded 1)
            assert s.read("appendonly.aof.3.incr.aof") == b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n" \
                b"*3\r\n$3\r\nSET\r\n$5\r\nafter\r\n$1\r\n2\r\n"
        check = subprocess.run(["redis-check-aof", os.path.join(ours.dir, "appendonly.aof.manifest")],
                               capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, check.stdout + check.stderr
        assert "All AOF files and manifest are valid" in check.stdout


@pytest.mark.oracle
def test_bgrewriteaof_with_appendonly_off_and_history_kept():
    with pair() as sides:
        seed(sides, 2)
        both(sides, "BGREWRITEAOF")
        for s in sides:
            s.wait_count(DONE, 1)
        assert sides[0].listing() == sides[1].listing() == ["appendonly.aof.1.base.rdb", "appendonly.aof.manifest"]
        assert sides[0].manifest() == sides[1].manifest()
        both(sides, "CONFIG", "SET", "aof-disable-auto-gc", "yes")
        both(sides, "BGREWRITEAOF")
        for s in sides:
            s.wait_count(DONE, 2)
        assert sides[0].listing() == sides[1].listing()
        assert sides[0].manifest() == sides[1].manifest() == (
            "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.1.base.rdb seq 1 type h\n")
        both(sides, "CONFIG", "SET", "aof-disable-auto-gc", "no")  # the kept history goes now
        assert sides[0].listing() == sides[1].listing() == ["appendonly.aof.2.base.rdb", "appendonly.aof.manifest"]
        assert sides[0].manifest() == sides[1].manifest()
        # inside a transaction both are scheduled, and started by the cron
        both(sides, "MULTI")
        both(sides, "BGREWRITEAOF")
        assert both(sides, "EXEC") == b"*1\r\n+Background append only file rewriting scheduled\r\n"
        for s in sides:
            s.wait_count(DONE, 3)
        both(sides, "MULTI")
        both(sides, "CONFIG", "SET", "appendonly", "yes")
        assert both(sides, "EXEC") == b"*1\r\n+OK\r\n"
        for s in sides:
            s.wait_count("AOF was enabled during a transaction. An AOF background was scheduled to start when "
                         "possible.", 1)
            s.wait_count(DONE, 4)
        assert sides[0].listing() == sides[1].listing() == [
            "appendonly.aof.1.incr.aof", "appendonly.aof.4.base.rdb", "appendonly.aof.manifest"]
        assert sides[0].manifest() == sides[1].manifest()


@pytest.mark.oracle
def test_history_order_in_the_manifest():
    with pair("--appendonly", "yes", "--aof-disable-auto-gc", "yes") as sides:
        seed(sides, 2)
        for round_ in (1, 2):
            both(sides, "BGREWRITEAOF")
            for s in sides:
                s.wait_count(DONE, round_)
            both(sides, "SET", "r", str(round_))
        assert sides[0].listing() == sides[1].listing()
        assert sides[0].manifest() == sides[1].manifest() == (
            "file appendonly.aof.3.base.rdb seq 3 type b\n"
            "file appendonly.aof.2.incr.aof seq 2 type h\n"
            "file appendonly.aof.2.base.rdb seq 2 type h\n"
            "file appendonly.aof.1.incr.aof seq 1 type h\n"
            "file appendonly.aof.1.base.rdb seq 1 type h\n"
            "file appendonly.aof.3.incr.aof seq 3 type i\n")


@pytest.mark.oracle
def test_info_during_and_after_rewrite():
    with pair("--appendonly", "yes", "--rdb-key-save-delay", "1000000", *ALWAYS) as sides:
        seed(sides, 3)
        before = [s.aof_info() for s in sides]
        assert before[0] == before[1]
        both(sides, "BGREWRITEAOF")
        infos = [s.info() for s in sides]
        for info in infos:
            assert info["aof_rewrite_in_progress"] == "1"
            assert int(info["aof_current_rewrite_time_sec"]) >= 0
            assert info["aof_rewrites"] == "1"
        assert list(infos[0]) == list(infos[1])  # the same fields, in the same order
        # killed on purpose: not a failure
        end_children(sides, signal.SIGUSR1, "Background AOF rewrite terminated by signal 10", 1)
        keys = ("aof_enabled", "aof_rewrite_in_progress", "aof_rewrite_scheduled", "aof_current_rewrite_time_sec",
                "aof_last_bgrewrite_status", "aof_rewrites", "aof_rewrites_consecutive_failures",
                "aof_last_write_status", "aof_pending_rewrite", "aof_buffer_length")
        infos = [s.info() for s in sides]
        assert [infos[0][k] for k in keys] == [infos[1][k] for k in keys]
        assert infos[0]["aof_last_bgrewrite_status"] == "ok"
        # a child that dies otherwise is a failed rewrite
        both(sides, "BGREWRITEAOF")
        end_children(sides, signal.SIGKILL, "Background AOF rewrite terminated by signal 9", 1)
        infos = [s.info() for s in sides]
        assert [infos[0][k] for k in keys] == [infos[1][k] for k in keys]
        assert infos[0]["aof_last_bgrewrite_status"] == "err"
        assert infos[0]["aof_rewrites_consecutive_failures"] == "1"
        for s in sides:  # the child's temp files are gone
            assert not [n for n in os.listdir(s.srv.cwd) if n.startswith("temp-")]
        assert sides[0].listing() == sides[1].listing()
        assert sides[0].manifest() == sides[1].manifest()
        # then one that succeeds: sizes as the files are
        both(sides, "CONFIG", "SET", "rdb-key-save-delay", "0")
        both(sides, "BGREWRITEAOF")
        for s in sides:
            s.wait_count(DONE, 1)
        infos = [s.info() for s in sides]
        assert [infos[0][k] for k in keys] == [infos[1][k] for k in keys]
        for s, info in zip(sides, infos, strict=True):
            assert info["aof_last_bgrewrite_status"] == "ok"
            assert int(info["aof_base_size"]) == int(info["aof_current_size"]) == aof_sizes(s)
        both(sides, "SET", "x", "y")
        for s, info in zip(sides, [s.info() for s in sides], strict=True):
            assert int(info["aof_current_size"]) == aof_sizes(s) > int(info["aof_base_size"])


@pytest.mark.oracle
def test_sigterm_to_the_child_is_not_the_servers():
    with pair("--appendonly", "yes", "--rdb-key-save-delay", "300000") as sides:
        seed(sides, 4)
        both(sides, "BGREWRITEAOF")
        for s in sides:
            s.signal_child(signal.SIGTERM)
        for s in sides:
            s.wait_count(DONE, 1)  # the child finishes its file all the same
        assert both(sides, "PING") == b"+PONG\r\n"
        assert sides[0].listing() == sides[1].listing()
        assert [s.info()["aof_last_bgrewrite_status"] for s in sides] == ["ok", "ok"]


@pytest.mark.oracle
def test_bgsave_and_bgrewriteaof_exclude_each_other():
    with pair("--appendonly", "yes", "--rdb-key-save-delay", "1000000") as sides:
        seed(sides, 3)
        assert both(sides, "BGSAVE") == b"+Background saving started\r\n"
        assert both(sides, "BGREWRITEAOF") == b"+Background append only file rewriting scheduled\r\n"
        assert [s.info()["aof_rewrite_scheduled"] for s in sides] == ["1", "1"]
        assert both(sides, "BGSAVE") == b"-ERR Background save already in progress\r\n"
        # the BGSAVE ends: the scheduled rewrite starts from the cron
        end_children(sides, signal.SIGUSR1, STARTED, 1)
        assert both(sides, "BGREWRITEAOF") == b"-ERR Background append only file rewriting already in progress\r\n"
        assert both(sides, "BGSAVE") == (b"-ERR Another child process is active (AOF?): can't BGSAVE right now. "
                                         b"Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.\r\n")
        assert both(sides, "BGSAVE", "SCHEDULE") == b"+Background saving scheduled\r\n"
        both(sides, "MULTI")
        both(sides, "BGREWRITEAOF")
        assert both(sides, "EXEC") == b"*1\r\n-ERR Background append only file rewriting already in progress\r\n"
        infos = [s.info() for s in sides]
        assert [(i["aof_rewrite_in_progress"], i["rdb_bgsave_in_progress"]) for i in infos] == [("1", "0")] * 2
        # the rewrite ends: the scheduled BGSAVE starts
        end_children(sides, signal.SIGUSR1, "Background saving started", 2)
        infos = [s.info() for s in sides]
        assert [(i["aof_rewrite_in_progress"], i["rdb_bgsave_in_progress"]) for i in infos] == [("0", "1")] * 2
        for s in sides:
            s.signal_child(signal.SIGUSR1)


@pytest.mark.oracle
def test_config_set_appendonly_yes_then_no():
    with pair("--rdb-key-save-delay", "500000", *ALWAYS) as sides:
        seed(sides, 3)
        assert sides[0].aof_info() == sides[1].aof_info()
        assert both(sides, "CONFIG", "SET", "appendonly", "yes") == b"+OK\r\n"
        assert [s.info()["aof_rewrite_in_progress"] for s in sides] == ["1", "1"]
        both(sides, "SET", "during", "1")  # fed to the temporary increment
        both(sides, "SELECT", "2")
        both(sides, "LPUSH", "l", "x")
        assert sides[0].listing() == sides[1].listing() == ["temp-appendonly.aof.incr"]
        assert both(sides, "CONFIG", "GET", "appendonly") == b"*2\r\n$10\r\nappendonly\r\n$3\r\nyes\r\n"
        for s in sides:
            s.wait_count(DONE, 1)
        assert sides[0].listing() == sides[1].listing() == [
            "appendonly.aof.1.base.rdb", "appendonly.aof.1.incr.aof", "appendonly.aof.manifest"]
        assert sides[0].manifest() == sides[1].manifest()
        both(sides, "SET", "after", "2")
        incr = [s.read("appendonly.aof.1.incr.aof") for s in sides]
        assert incr[0] == incr[1]
        assert b"during" in incr[0] and b"LPUSH" in incr[0] and b"after" in incr[0]
        assert sides[0].aof_info()[:3] == sides[1].aof_info()[:3]
        assert both(sides, "CONFIG", "SET", "appendonly", "no") == b"+OK\r\n"
        both(sides, "SET", "off", "3")
        assert [s.read("appendonly.aof.1.incr.aof") for s in sides] == incr  # no longer fed
        infos = [s.aof_info() for s in sides]
        assert [line.split(":")[0] for line in infos[0]] == [line.split(":")[0] for line in infos[1]]
        assert "aof_enabled:0" in infos[0] and not any(x.startswith("aof_current_size") for x in infos[0])
        # on again: the sequence goes on from the manifest
        both(sides, "CONFIG", "SET", "rdb-key-save-delay", "0")
        both(sides, "CONFIG", "SET", "appendonly", "yes")
        for s in sides:
            s.wait_count(DONE, 2)
        assert sides[0].listing() == sides[1].listing() == [
            "appendonly.aof.2.base.rdb", "appendonly.aof.2.incr.aof", "appendonly.aof.manifest"]
        assert sides[0].manifest() == sides[1].manifest()


@pytest.mark.oracle
def test_shutdown_waits_for_the_initial_aof():
    with pair("--rdb-key-save-delay", "1000000") as sides:
        seed(sides, 2)
        both(sides, "CONFIG", "SET", "appendonly", "yes")
        assert both(sides, "SHUTDOWN", "NOSAVE") == b"-ERR Errors trying to SHUTDOWN. Check logs.\r\n"
        for s in sides:
            s.wait_count("Writing initial AOF, can't exit.", 1)
        assert both(sides, "GET", "k0") == b"$2\r\nv0\r\n"  # still serving
        for s in sides:  # FORCE exits all the same, killing the rewrite
            with pytest.raises(ConnectionError):
                s.call("SHUTDOWN", "NOSAVE", "FORCE")
            assert s.srv.proc.wait(30) == 0
            s.wait_count("Writing initial AOF. Exit anyway.", 1)
        assert sides[0].listing() == sides[1].listing() == ["temp-appendonly.aof.incr"]


@pytest.mark.oracle
def test_appendonly_yes_refused_when_the_directory_cannot_be_used():
    with pair() as sides:
        for s in sides:
            with open(s.dir, "w") as f:  # a file where the directory should be
                f.write("x")
        assert both(sides, "CONFIG", "SET", "appendonly", "yes") == (
            b"-ERR CONFIG SET failed (possibly related to argument 'appendonly') - Unable to turn on AOF. "
            b"Check server logs.\r\n")
        for s in sides:
            s.wait_count("Can't open or create append-only dir appendonlydir: Not a directory", 1)
        infos = [s.info() for s in sides]
        assert [(i["aof_enabled"], i["aof_last_bgrewrite_status"], i["aof_rewrites"]) for i in infos] == \
            [("0", "err", "0")] * 2
        assert both(sides, "CONFIG", "GET", "appendonly") == b"*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"


@pytest.mark.oracle
def test_appendonly_yes_while_bgsave_runs_is_scheduled():
    with pair("--rdb-key-save-delay", "1000000") as sides:
        seed(sides, 2)
        both(sides, "BGSAVE")
        assert both(sides, "CONFIG", "SET", "appendonly", "yes") == b"+OK\r\n"
        infos = [s.info() for s in sides]
        assert [(i["aof_enabled"], i["aof_rewrite_scheduled"], i["aof_rewrite_in_progress"]) for i in infos] == \
            [("1", "1", "0")] * 2
        both(sides, "SET", "dropped", "1")  # no rewrite yet: the rewrite's snapshot will hold it
        both(sides, "CONFIG", "SET", "rdb-key-save-delay", "0")
        end_children(sides, signal.SIGUSR1, DONE, 1)
        assert sides[0].listing() == sides[1].listing()
        assert [s.read("appendonly.aof.1.incr.aof") for s in sides] == [b""] * 2
        sides[0].srv.stop()  # the base holds it: redis-server loads raxdb's directory with the key
        redis = start_redis("--appendonly", "yes", cwd=sides[0].srv.cwd)
        try:
            c = RawConnection(redis.port)
            assert c.call("GET", "dropped") == b"$1\r\n1\r\n"
            c.close()
        finally:
            redis.stop()


@pytest.mark.oracle
def test_auto_rewrite_on_growth():
    with pair("--appendonly", "yes", "--auto-aof-rewrite-min-size", "1000",
              "--auto-aof-rewrite-percentage", "100") as sides:
        both(sides, "SET", "small", "x")
        assert [s.info()["aof_rewrites"] for s in sides] == ["0", "0"]
        both(sides, "SET", "big", "v" * 2000)  # past the minimum: the next cron rewrites
        for s in sides:
            s.wait_count("Starting automatic rewriting of AOF on", 1)
            s.wait_count(DONE, 1)
        assert sides[0].listing() == sides[1].listing() == [
            "appendonly.aof.2.base.rdb", "appendonly.aof.2.incr.aof", "appendonly.aof.manifest"]
        infos = [s.info() for s in sides]
        for s, info in zip(sides, infos, strict=True):
            assert info["aof_rewrites"] == "1"
            assert int(info["aof_base_size"]) == aof_sizes(s) == int(info["aof_current_size"])


@pytest.mark.oracle
def test_automatic_rewrites_back_off_after_three_failures():
    with pair("--appendonly", "yes", "--auto-aof-rewrite-min-size", "100", "--rdb-key-save-delay", "1000000") as sides:
        both(sides, "SET", "big", "v" * 200)
        for n in (1, 2, 3):  # each failure is retried at once by the next cron
            for s in sides:
                s.wait_count(STARTED, n)
            end_children(sides, signal.SIGKILL, "Background AOF rewrite terminated by signal 9", n)
        for s in sides:
            s.wait_count("Background AOF rewrite has repeatedly failed and triggered the limit, will retry in 1 "
                         "minutes", 1)
        infos = [s.info() for s in sides]
        assert [(i["aof_rewrites"], i["aof_rewrites_consecutive_failures"], i["aof_rewrite_in_progress"])
                for i in infos] == [("3", "3", "0")] * 2
        both(sides, "CONFIG", "SET", "rdb-key-save-delay", "0")
        assert both(sides, "BGREWRITEAOF") == b"+" + STARTED.encode() + b"\r\n"  # by hand: not held back
        for s in sides:
            s.wait_count(DONE, 1)
        infos = [s.info() for s in sides]
        assert [(i["aof_rewrites_consecutive_failures"], i["aof_last_bgrewrite_status"]) for i in infos] == \
            [("0", "ok")] * 2


@pytest.mark.oracle
def test_base_as_commands_is_redis_byte_for_byte():
    # One key per database: the order of keys and of listpack/intset members is then Redis's
    # own, so the whole base can be compared.
    args = ("--appendonly", "yes", "--aof-use-rdb-preamble", "no")
    with pair(*args) as sides:
        both(sides, "SET", "s", "v", "PXAT", "4102444800000")
        steps = [("RPUSH", "l", *[str(i) for i in range(70)], "x"), ("SADD", "is", "3", "1", "2"),
                 ("ZADD", "z", "1", "a", "2.5", "b", "inf", "c"), ("HSET", "h", "f", "v", "g", "w"),
                 ("XADD", "st", "1-1", "f", "v"), ("XGROUP", "CREATE", "st", "g", "0"),
                 ("XGROUP", "CREATECONSUMER", "st", "g", "idle"), ("XADD", "empty", "1-1", "a", "b"),
                 ("XDEL", "empty", "1-1")]
        for dbid, step in enumerate(steps, 1):
            both(sides, "SELECT", str(dbid))
            both(sides, *step)
        both(sides, "FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() return 1 end)")
        both(sides, "BGREWRITEAOF")
        for s in sides:
            s.wait_count(DONE, 1)
        assert sides[0].listing() == sides[1].listing()
        assert "appendonly.aof.2.base.aof" in sides[0].listing()
        bases = [s.read("appendonly.aof.2.base.aof") for s in sides]
        assert bases[0][:12] == b"*3\r\n$8\r\nFUNC"
        assert bases[0] == bases[1]
        check = subprocess.run(["redis-check-aof", os.path.join(sides[0].dir, "appendonly.aof.manifest")],
                               capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, check.stdout


@pytest.mark.oracle
def test_timestamp_annotations():
    with pair("--appendonly", "yes", "--aof-timestamp-enabled", "yes", *ALWAYS) as sides:
        both(sides, "SET", "a", "1")
        for s in sides:
            data = s.read("appendonly.aof.1.incr.aof")
            assert data.startswith(b"#TS:")
            line, rest = data.split(b"\r\n", 1)
            assert abs(int(line[4:]) - time.time()) < 3600
            assert rest == b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n"
        both(sides, "CONFIG", "SET", "aof-use-rdb-preamble", "no")
        both(sides, "BGREWRITEAOF")
        for s in sides:  # a base of commands opens with the time it was written
            s.wait_count(DONE, 1)
            line, rest = s.read("appendonly.aof.2.base.aof").split(b"\r\n", 1)
            assert line.startswith(b"#TS:") and abs(int(line[4:]) - time.time()) < 3600
            assert rest == b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n"


@pytest.mark.oracle
def test_writes_during_rewrite_survive_a_restart_in_redis():
    ours = Side(start_raxdb("--appendonly", "yes", "--rdb-key-save-delay", "50000"))
    try:
        for i in range(20):
            ours.call("SET", f"k{i}", f"v{i}")
        ours.call("HSET", "h", "a", "1")
        ours.call("BGREWRITEAOF")
        assert ours.info()["aof_rewrite_in_progress"] == "1"
        ours.call("SET", "k0", "changed")
        ours.call("DEL", "k1")
        ours.call("SELECT", "4")
        ours.call("ZADD", "z", "1", "m")
        ours.wait_count(DONE, 1)
        ours.call("RPUSH", "l", "after")
        digest = ours.call("DEBUG", "DIGEST")
        ours.conn.close()
        ours.srv.stop()  # SIGTERM: the AOF is flushed and fsynced
        redis = start_redis("--appendonly", "yes", cwd=ours.srv.cwd)
        try:
            c = RawConnection(redis.port)
            assert c.call("DEBUG", "DIGEST") == digest
            c.close()
        finally:
            redis.stop()
    finally:
        ours.srv.stop()


@pytest.mark.oracle
def test_shutdown_kills_the_rewrite_and_keeps_the_aof():
    with pair("--appendonly", "yes", "--rdb-key-save-delay", "1000000") as sides:
        seed(sides, 3)
        both(sides, "BGREWRITEAOF")
        both(sides, "SET", "last", "1")
        for s in sides:
            s.srv.proc.terminate()
            assert s.srv.proc.wait(30) == 0
            s.wait_count("There is a child rewriting the AOF. Killing it!", 1)
            assert not [n for n in os.listdir(s.srv.cwd) if n.startswith("temp-")]
        assert sides[0].listing() == sides[1].listing()
        assert sides[0].manifest() == sides[1].manifest()
        assert sides[0].read("appendonly.aof.2.incr.aof") == sides[1].read("appendonly.aof.2.incr.aof")


@pytest.mark.oracle
def test_a_child_that_cannot_write_fails_the_rewrite():
    with pair("--appendonly", "yes", xfsz=True) as sides:
        both(sides, "SET", "big", os.urandom(2000).hex())  # incompressible
        for s in sides:  # files may not pass 1000 bytes: the manifest can be written, the base cannot
            resource.prlimit(s.srv.proc.pid, resource.RLIMIT_FSIZE, (1000, resource.RLIM_INFINITY))
        both(sides, "BGREWRITEAOF")
        for s in sides:
            s.wait_count("Background AOF rewrite terminated with error", 1)
        infos = [s.info() for s in sides]
        assert [(i["aof_last_bgrewrite_status"], i["aof_rewrites_consecutive_failures"]) for i in infos] == \
            [("err", "1")] * 2
        assert sides[0].listing() == sides[1].listing() == [
            "appendonly.aof.1.base.rdb", "appendonly.aof.1.incr.aof", "appendonly.aof.2.incr.aof",
            "appendonly.aof.manifest"]
        assert sides[0].manifest() == sides[1].manifest()
        for s in sides:
            assert not [n for n in os.listdir(s.srv.cwd) if n.startswith("temp-")]
        # appendonly off and on again: each failed attempt drops its temporary increment and the
        # cron tries again, until three failures hold the retries back
        both(sides, "CONFIG", "SET", "appendonly", "no")
        both(sides, "CONFIG", "SET", "appendonly", "yes")
        for s in sides:
            s.wait_count("Background AOF rewrite has repeatedly failed and triggered the limit", 1)
            # (the failure before counts: two more reach the limit)
            assert s.count("Removing the temp incr aof file temp-appendonly.aof.incr in the background") == 2
        assert sides[0].listing() == sides[1].listing()
        assert "temp-appendonly.aof.incr" not in sides[0].listing()
        infos = [s.info() for s in sides]
        assert [(i["aof_enabled"], i["aof_rewrite_scheduled"], i["aof_rewrites_consecutive_failures"])
                for i in infos] == [("1", "1", "3")] * 2


@pytest.mark.oracle
def test_write_error_refuses_writes_until_it_clears():
    # appendfsync no: always would exit on the error, everysec may postpone the failing write
    with pair("--appendonly", "yes", "--appendfsync", "no", xfsz=True) as sides:
        both(sides, "SET", "a", "1")
        for s in sides:  # the increment may not grow: the next write fails with EFBIG
            size = os.path.getsize(os.path.join(s.dir, "appendonly.aof.1.incr.aof"))
            resource.prlimit(s.srv.proc.pid, resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))
        assert both(sides, "SET", "b", "2") == b"+OK\r\n"  # done, and its write failed after
        assert [s.info()["aof_last_write_status"] for s in sides] == ["err", "err"]
        misconf = b"-MISCONF Errors writing to the AOF file: File too large\r\n"
        assert both(sides, "SET", "c", "3") == misconf
        assert both(sides, "PING") == misconf
        assert both(sides, "GET", "b") == b"$1\r\n2\r\n"
        both(sides, "MULTI")
        assert both(sides, "SET", "c", "3") == misconf
        both(sides, "DISCARD")
        assert both(sides, "EVAL", "return redis.pcall('set', 'c', '3')", "0") == misconf
        assert both(sides, "EVAL", "#!lua\nreturn 1", "0") == misconf  # declares writes
        assert both(sides, "EVAL", "#!lua flags=no-writes\nreturn 1", "0") == b":1\r\n"
        for s in sides:
            resource.prlimit(s.srv.proc.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            s.wait_count("AOF write error looks solved, Redis can write again.", 1)
        both(sides, "CONFIG", "SET", "appendfsync", "always")
        assert both(sides, "SET", "c", "3") == b"+OK\r\n"
        incr = [s.read("appendonly.aof.1.incr.aof") for s in sides]
        assert incr[0] == incr[1]
        assert b"$1\r\nb\r\n" in incr[0] and b"$1\r\nc\r\n" in incr[0]


# ---- everysec: the fsync thread and postponed writes (no server: a stub and a fake clock) ------------
class _Clock:
    """The stub server's clock, frozen (server/base/clock.py): it moves only when the test says."""

    def __init__(self, srv) -> None:  # type: ignore[no-untyped-def]
        self.srv = srv

    def advance(self, seconds: int) -> None:
        from raxdb.server.base import clock

        clock.advance(self.srv, seconds * 10**6)


def _stub_aof(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    from types import SimpleNamespace

    from raxdb.server.persistence import aof as aofmod

    values = {"appendonly": "yes", "appendfsync": "everysec", "no-appendfsync-on-rewrite": "no",
              "aof-timestamp-enabled": "no", "aof-disable-auto-gc": "no"}
    persistence = SimpleNamespace(child_done={}, child_type="", has_child=lambda: False)
    srv = SimpleNamespace(config=SimpleNamespace(values=values, on_change={}, latency_monitor_threshold=0,
                                                 appendfsync="everysec", aof_timestamps=False),
                          persistence=persistence, call_soon=lambda fn, *args: None, propagation_targets=[],
                          clock_frozen=True, clock_shift_us=1_000_000 * 10**6, clock_advanced_us=0, now_ms=0,
                          repl=SimpleNamespace(master_repl_offset=0))
    a = aofmod.AOF(srv)  # type: ignore[arg-type]
    a.fd = os.open(tmp_path / "incr.aof", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    return a, _Clock(srv)


def test_everysec_fsyncs_off_the_loop_once_a_second(tmp_path, monkeypatch):
    a, clock = _stub_aof(tmp_path, monkeypatch)
    jobs: list[tuple[str, int]] = []
    monkeypatch.setattr(a.bio, "submit", lambda kind, fd, offset=-1: jobs.append((kind, fd)))
    a.feed(0, [b"SET", b"k", b"v"])
    a.flush()  # within the second of the last fsync: written, not fsynced
    assert os.path.getsize(tmp_path / "incr.aof") == a.incr_size > 0 and jobs == []
    clock.advance(1)
    a.flush()  # nothing new, but the written tail is handed to the thread
    assert jobs == [("fsync", a.fd)] and a.incr_fsync_offset == a.incr_size
    a.feed(0, [b"SET", b"k", b"w"])
    a.flush()
    assert len(jobs) == 1  # at most once a second


def test_everysec_postpones_a_write_while_an_fsync_runs(tmp_path, monkeypatch):
    a, clock = _stub_aof(tmp_path, monkeypatch)
    a.bio.pending = 1  # an fsync is still running
    a.feed(0, [b"SET", b"k", b"v"])
    a.flush()
    assert a.buf and os.path.getsize(tmp_path / "incr.aof") == 0 and a.flush_postponed_start
    clock.advance(1)
    a.flush()  # under 2 s: still waiting
    assert a.buf and a.delayed_fsync == 0
    clock.advance(1)
    a.flush()  # 2 s: written without waiting any longer, and counted
    assert not a.buf and os.path.getsize(tmp_path / "incr.aof") == a.incr_size > 0
    assert a.delayed_fsync == 1 and a.flush_postponed_start == 0
    a.feed(0, [b"DEL", b"k"])
    a.flush(force=True)  # a forced flush (rewrite start, shutdown) never waits
    assert not a.buf and a.delayed_fsync == 1


@pytest.mark.oracle
def test_appendonly_yes_inside_a_pipeline_feeds_the_writes_behind_it():
    """CONFIG SET appendonly yes and writes after it in one pipelined batch: the writes reach the
    temporary increment (a batch read the propagation state when it began), so they are in the
    AOF once the first rewrite is done."""
    with pair("--rdb-key-save-delay", "200000", *ALWAYS) as sides:
        seed(sides, 2)
        batch = b"".join(hiredis.pack_command(tuple(a)) for a in (
            ("CONFIG", "SET", "appendonly", "yes"), ("SET", "a", "1"), ("SELECT", "3"), ("RPUSH", "l", "x")))
        for s in sides:
            s.conn.send(batch)
        replies = [[s.conn.read_frame() for _ in range(4)] for s in sides]
        assert replies[0] == replies[1] == [b"+OK\r\n", b"+OK\r\n", b"+OK\r\n", b":1\r\n"]
        for s in sides:
            s.wait_count(DONE, 1)
        incr = [s.read("appendonly.aof.1.incr.aof") for s in sides]
        assert incr[0] == incr[1] and b"RPUSH" in incr[0]
