"""Loading the AOF (server/persistence/aofload.py) against redis-server: restarts, directories crossing between
the two servers, damaged directories, DEBUG LOADAOF and the pre-7.0 single-file upgrade.

Damage is judged differentially: the same directory is copied for each server, and the exit
status, the log lines about loading (times masked), the files left behind and, when the server
runs, DEBUG DIGEST must be the same.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from raxdb.server.events.propagate import encode_command
from tests.support.diff import RawConnection, parse
from tests.support.servers import COMMON, ROOT, free_port, redis_binary, start_raxdb, start_redis

AOF = ("--appendonly", "yes", "--appendfsync", "always")
DIR = "appendonlydir"
MANIFEST = "file appendonly.aof.1.base.aof seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
MANIFEST_FILE = "appendonly.aof.manifest"


def enc(*args: Any) -> bytes:
    return encode_command([a if isinstance(a, bytes) else str(a).encode() for a in args])


def _call(c: RawConnection, *args: Any) -> Any:
    return parse(c.call(*args))


def _tree(d: Path) -> dict[str, bytes]:
    """Every file under `d` (relative name -> bytes), the base RDBs' bytes left out (their ctime
    and used-mem differ from run to run)."""
    out = {}
    for p in sorted(d.rglob("*")):
        if p.is_file() and p.suffix not in (".log",):
            data = p.read_bytes()
            out[str(p.relative_to(d))] = b"<rdb>" if data[:5] == b"REDIS" else data
    return out


_LOADING_LINES = re.compile(
    r"AOF|append only file|append log file|RDB base|RDB preamble|Done loading RDB|Revert incomplete|"
    r"Unknown command|manifest|Fatal error|Unable to obtain|migrated|remaining AOF tail|>>> '|Found |"
    r"File can't be|Unexpected end|Bad file format")
_PREFIX = re.compile(r"^\d+:[A-Z] \d+ \w+ \d+ [\d:.]+ [.\-*#] ")


def _loading_log(lines: list[str]) -> list[str]:
    """The log lines about loading, without pid, time and durations."""
    out = []
    for line in lines:
        msg = _PREFIX.sub("", line.rstrip("\n"))
        if _LOADING_LINES.search(msg):
            out.append(re.sub(r"\d+\.\d+ seconds", "<t> seconds", msg))
    return out


class Boot:
    """A server started on a directory that may make it exit: the exit status (None while it
    runs), its log, and a connection when it runs."""

    def __init__(self, kind: str, cwd: Path, *extra: str) -> None:
        self.port = free_port()
        if kind == "raxdb":
            argv = [sys.executable, "-m", "raxdb.server"]
        else:
            argv = [redis_binary() or "redis-server", "--bind", "127.0.0.1"]
        argv += ["--port", str(self.port), *COMMON, *AOF, *extra]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env=env)
        assert self.proc.stdout is not None
        self.log: list[str] = []
        for line in self.proc.stdout:
            self.log.append(line)
            if "Ready to accept connections" in line:
                break
        else:
            self.proc.wait(30)
        self.status = self.proc.poll()
        self.boot_log = list(self.log)  # up to "Ready", or all of it when it exited
        self.conn = RawConnection(self.port) if self.status is None else None

    def digest(self) -> Any:
        assert self.conn is not None, "".join(self.log)
        return _call(self.conn, "DEBUG", "DIGEST")

    def stop(self) -> None:
        if self.conn is not None:
            self.conn.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)
        assert self.proc.stdout is not None
        self.log += self.proc.stdout.readlines()
        self.proc.stdout.close()


def _both(tmp_path: Path, files: dict[str, Any] | None, *extra: str, top: dict[str, bytes] | None = None,
          manifest: str | None = MANIFEST) -> tuple[Boot, Boot]:
    """raxdb and redis-server, each on its own copy of the same directory."""
    boots = []
    for kind in ("raxdb", "redis"):
        d = tmp_path / kind
        d.mkdir()
        if files is not None:
            (d / DIR).mkdir()
            if manifest is not None and MANIFEST_FILE not in files:
                (d / DIR / MANIFEST_FILE).write_text(manifest)
            for name, data in files.items():
                (d / DIR / name).write_bytes(data if isinstance(data, bytes) else data.encode())
        for name, data in (top or {}).items():
            (d / name).write_bytes(data)
        boots.append(Boot(kind, d, *extra))
    return boots[0], boots[1]


def _same_outcome(tmp_path: Path, ours: Boot, theirs: Boot, files: bool = True) -> None:
    """Same exit status, digest, loading log lines and (unless `files` is False: keys that expire
    after loading are deleted by lazy or active expiry, whichever comes first) files."""
    assert ours.status == theirs.status, "".join(ours.log) + "----\n" + "".join(theirs.log)
    if ours.status is None:
        assert ours.digest() == theirs.digest()
    ours.stop()
    theirs.stop()
    assert _loading_log(ours.boot_log) == _loading_log(theirs.boot_log)
    if files:
        assert _tree(tmp_path / "raxdb") == _tree(tmp_path / "redis")


# ---- (c) damage ---------------------------------------------------------------------------------
GOOD = enc("SET", "a", "1") + enc("RPUSH", "l", "x") + enc("SELECT", "1") + enc("SADD", "s", "m")
BASE = enc("SET", "b", "2")
DAMAGE = {
    "truncated-last-command": ({"appendonly.aof.1.base.aof": BASE,
                                "appendonly.aof.1.incr.aof": GOOD + enc("SET", "c", "3")[:-5]}, ()),
    "truncated-last-command-not-allowed": ({"appendonly.aof.1.base.aof": BASE,
                                            "appendonly.aof.1.incr.aof": GOOD + enc("SET", "c", "3")[:-5]},
                                           ("--aof-load-truncated", "no")),
    "truncated-header": ({"appendonly.aof.1.base.aof": BASE, "appendonly.aof.1.incr.aof": GOOD + b"*3"}, ()),
    "truncated-crlf": ({"appendonly.aof.1.base.aof": BASE, "appendonly.aof.1.incr.aof": GOOD + enc("DEL", "a")[:-1]},
                       ()),
    "multi-without-exec": ({"appendonly.aof.1.base.aof": BASE,
                            "appendonly.aof.1.incr.aof": GOOD + enc("MULTI") + enc("SET", "c", "3")}, ()),
    "multi-without-exec-not-allowed": ({"appendonly.aof.1.base.aof": BASE,
                                        "appendonly.aof.1.incr.aof": GOOD + enc("MULTI") + enc("SET", "c", "3")},
                                       ("--aof-load-truncated", "no")),
    "multi-exec": ({"appendonly.aof.1.base.aof": BASE,
                    "appendonly.aof.1.incr.aof": GOOD + enc("MULTI") + enc("SET", "c", "3") + enc("INCR", "c")
                    + enc("EXEC") + enc("SELECT", "0") + enc("INCR", "c")}, ()),
    "bad-format-in-the-middle": ({"appendonly.aof.1.base.aof": BASE,
                                  "appendonly.aof.1.incr.aof": GOOD + b"garbage\r\n" + enc("SET", "c", "3")}, ()),
    "bad-argument-header": ({"appendonly.aof.1.base.aof": BASE,
                             "appendonly.aof.1.incr.aof": GOOD + b"*2\r\n$3\r\nGET\r\n:1\r\n" + GOOD}, ()),
    "zero-arguments": ({"appendonly.aof.1.base.aof": BASE, "appendonly.aof.1.incr.aof": GOOD + b"*0\r\n" + GOOD}, ()),
    "unknown-command": ({"appendonly.aof.1.base.aof": BASE,
                         "appendonly.aof.1.incr.aof": GOOD + enc("NOSUCHCOMMAND", "x") + GOOD}, ()),
    "truncated-base-before-an-increment": ({"appendonly.aof.1.base.aof": BASE[:-3],
                                            "appendonly.aof.1.incr.aof": GOOD}, ()),
    "listed-file-missing": ({"appendonly.aof.1.base.aof": BASE}, ()),
    "all-files-empty": ({"appendonly.aof.1.base.aof": b"", "appendonly.aof.1.incr.aof": b""}, ()),
    "empty-base": ({"appendonly.aof.1.base.aof": b"", "appendonly.aof.1.incr.aof": GOOD}, ()),
    "empty-increment": ({"appendonly.aof.1.base.aof": BASE, "appendonly.aof.1.incr.aof": b""}, ()),
    "annotations": ({"appendonly.aof.1.base.aof": BASE,
                     "appendonly.aof.1.incr.aof": b"#TS:1700000000\r\n" + GOOD + b"#TS:1700000001\r\n" + GOOD}, ()),
    # what hiredis (the fast reader) refuses or reads its own way, where Redis's reader decides
    "bare-newlines": ({"appendonly.aof.1.base.aof": BASE,
                       "appendonly.aof.1.incr.aof": GOOD + b"*3\n$3\nSET\r\n$1\nq\r\n$1\nw\r\n" + GOOD}, ()),
    "signs-and-zeros": ({"appendonly.aof.1.base.aof": BASE,
                         "appendonly.aof.1.incr.aof": GOOD + b"*+3\r\n$003\r\nSET\r\n$01\r\nq\r\n$1\r\nw\r\n"
                         + GOOD}, ()),
    "nested-array": ({"appendonly.aof.1.base.aof": BASE,
                      "appendonly.aof.1.incr.aof": GOOD + b"*2\r\n*1\r\n$1\r\na\r\n" + GOOD}, ()),
    "simple-string-argument": ({"appendonly.aof.1.base.aof": BASE,
                                "appendonly.aof.1.incr.aof": GOOD + b"*3\r\n$3\r\nSET\r\n$1\r\nq\r\n+OK\r\n" + GOOD},
                               ()),
    "resp3-set": ({"appendonly.aof.1.base.aof": BASE,
                   "appendonly.aof.1.incr.aof": GOOD + b"~2\r\n$3\r\nDEL\r\n$1\r\na\r\n" + GOOD}, ()),
    # hiredis raises TypeError, not ProtocolError, for a map whose key is an array (resp fuzz target)
    "resp3-map-with-array-key": ({"appendonly.aof.1.base.aof": BASE,
                                  "appendonly.aof.1.incr.aof": GOOD + b"%1\r\n*1\r\n$1\r\na\r\n$1\r\nb\r\n" + GOOD},
                                 ()),
    "payload-without-crlf": ({"appendonly.aof.1.base.aof": BASE,
                              "appendonly.aof.1.incr.aof": GOOD + b"*2\r\n$3\r\nDELxx$1\r\na\r\n" + GOOD}, ()),
    # several increments (a rewrite failed, or one was running), history files
    "two-increments": ({"appendonly.aof.1.base.aof": BASE, "appendonly.aof.1.incr.aof": GOOD,
                        "appendonly.aof.2.incr.aof": enc("SET", "in", "db0") + enc("SELECT", "1") + enc("DEL", "s"),
                        MANIFEST_FILE: MANIFEST + "file appendonly.aof.2.incr.aof seq 2 type i\n"}, ()),
    "truncated-increment-before-the-last": ({"appendonly.aof.1.base.aof": BASE,
                                             "appendonly.aof.1.incr.aof": GOOD + enc("SET", "c", "3")[:-5],
                                             "appendonly.aof.2.incr.aof": GOOD,
                                             MANIFEST_FILE: MANIFEST + "file appendonly.aof.2.incr.aof seq 2 type i\n"},
                                            ()),
    "history-is-not-loaded": ({"appendonly.aof.1.base.aof": BASE, "appendonly.aof.2.base.aof": GOOD,
                               "appendonly.aof.2.incr.aof": enc("SET", "z", "1"),
                               MANIFEST_FILE: "file appendonly.aof.2.base.aof seq 2 type b\n"
                               "file appendonly.aof.1.base.aof seq 1 type h\n"
                               "file appendonly.aof.2.incr.aof seq 2 type i\n"}, ()),
    "history-deleted-without-appendonly": ({"appendonly.aof.1.base.aof": BASE, "appendonly.aof.2.base.aof": GOOD,
                                            MANIFEST_FILE: "file appendonly.aof.2.base.aof seq 2 type b\n"
                                            "file appendonly.aof.1.base.aof seq 1 type h\n"},
                                           ("--appendonly", "no")),
    "history-kept-by-aof-disable-auto-gc": ({"appendonly.aof.1.base.aof": BASE, "appendonly.aof.2.base.aof": GOOD,
                                             MANIFEST_FILE: "file appendonly.aof.2.base.aof seq 2 type b\n"
                                             "file appendonly.aof.1.base.aof seq 1 type h\n"},
                                            ("--aof-disable-auto-gc", "yes")),
    "big-file-truncated": ({"appendonly.aof.1.base.aof": BASE,
                            "appendonly.aof.1.incr.aof": GOOD + b"".join(enc("RPUSH", f"k{i % 7}", "v" * (i % 300))
                                                                        for i in range(3000))
                            + enc("SET", "c", "3")[:-5]}, ()),
}


@pytest.mark.oracle
@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_damaged_directory_as_redis(tmp_path, case):
    files, extra = DAMAGE[case]
    ours, theirs = _both(tmp_path, files, *extra)
    _same_outcome(tmp_path, ours, theirs)


MANIFESTS = {
    "duplicate-base": "file a seq 1 type b\nfile b seq 2 type b\n",
    "unknown-type": "file a seq 1 type x\n",
    "no-final-newline": "file appendonly.aof.1.base.aof seq 1 type b",
    "empty": "",
}


@pytest.mark.oracle
@pytest.mark.parametrize("appendonly", ["yes", "no"])
@pytest.mark.parametrize("case", sorted(MANIFESTS))
def test_manifest_errors_stop_start_up_even_without_appendonly(tmp_path, case, appendonly):
    """aofLoadManifestFromDisk runs at every start: a manifest Redis refuses is fatal either way."""
    files = {"appendonly.aof.1.base.aof": BASE}
    ours, theirs = _both(tmp_path, files, "--appendonly", appendonly, manifest=MANIFESTS[case])
    assert ours.status == 1
    _same_outcome(tmp_path, ours, theirs)


@pytest.mark.oracle
def test_keys_do_not_expire_while_loading(tmp_path):
    """A key past its deadline is alive while the AOF replays (a deadline set in the past too),
    so what a later command moved out of it survives; it expires once loading ends."""
    past = str(int(time.time() * 1000) - 60_000)
    incr = (enc("RPUSH", "src", "a", "b") + enc("PEXPIREAT", "src", past) + enc("LMOVE", "src", "dst", "LEFT", "LEFT")
            + enc("SET", "s", "v", "PXAT", past) + enc("APPEND", "s", "w") + enc("COPY", "s", "s2")
            + enc("PERSIST", "s2"))
    ours, theirs = _both(tmp_path, {"appendonly.aof.1.base.aof": BASE, "appendonly.aof.1.incr.aof": incr})
    # the same reads on both, so that both have dropped the expired keys (lazily) before the
    # digests are compared, whether or not active expiry came first
    for boot in (ours, theirs):
        assert boot.conn is not None, "".join(boot.log)
        assert _call(boot.conn, "LRANGE", "dst", "0", "-1") == [b"a"]
        assert _call(boot.conn, "GET", "s2") == b"vw"
        assert _call(boot.conn, "EXISTS", "src", "s") == 0
    _same_outcome(tmp_path, ours, theirs, files=False)


# ---- (e) the upgrade from a single appendonly.aof -------------------------------------------------
def _rdb_with(tmp_path: Path, *commands: tuple[str, ...]) -> bytes:
    """A dump file from redis-server holding what `commands` made."""
    d = tmp_path / "rdbsrc"
    d.mkdir()
    srv = start_redis(cwd=str(d))
    try:
        c = RawConnection(srv.port)
        for cmd in commands:
            c.call(*cmd)
        assert c.call("SAVE") == b"+OK\r\n"
        c.close()
    finally:
        srv.stop()
    return (d / "dump.rdb").read_bytes()


@pytest.mark.oracle
@pytest.mark.parametrize("preamble", [False, True])
def test_old_single_file_is_upgraded(tmp_path, preamble):
    head = _rdb_with(tmp_path, ("SET", "r", "1"), ("HSET", "h", "f", "v")) if preamble else b""
    old = head + GOOD + enc("SELECT", "0") + enc("INCR", "r")
    ours, theirs = _both(tmp_path, None, top={"appendonly.aof": old})
    assert ours.status is None and ours.conn is not None
    assert _call(ours.conn, "GET", "a") == b"1"
    assert (tmp_path / "raxdb" / DIR / "appendonly.aof.manifest").read_text() == (
        "file appendonly.aof seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n")
    _same_outcome(tmp_path, ours, theirs)


@pytest.mark.oracle
def test_old_file_beside_a_manifest_is_left_alone(tmp_path):
    ours, theirs = _both(tmp_path, {"appendonly.aof.1.base.aof": BASE, "appendonly.aof.1.incr.aof": b""},
                         top={"appendonly.aof": GOOD})
    _same_outcome(tmp_path, ours, theirs)


@pytest.mark.oracle
def test_old_file_waits_for_debug_loadaof_without_appendonly(tmp_path):
    """With appendonly no, start-up neither reads nor moves the old file; DEBUG LOADAOF runs
    loadAppendOnlyFiles, which upgrades it and loads it."""
    ours, theirs = _both(tmp_path, None, "--appendonly", "no", top={"appendonly.aof": GOOD})
    assert ours.digest() == b"0" * 40
    assert not (tmp_path / "raxdb" / DIR).exists()
    for b in (ours, theirs):
        assert b.conn is not None
        assert b.conn.call("DEBUG", "LOADAOF") == b"+OK\r\n"
    assert ours.digest() != b"0" * 40
    _same_outcome(tmp_path, ours, theirs)


# ---- (a) restart on its own AOF ---------------------------------------------------------------------
LIB = "#!lua name=lib\nredis.register_function('setit', function(k, a) return redis.call('set', k[1], a[1]) end)"


def _workload(deadline_s: int) -> list[tuple[str, ...]]:
    """Every type, in three databases.  Deadlines are absolute (SET EX and PEXPIRE replay as
    their absolute forms once their propagation is Redis's, which another change brings)."""
    ms = str(deadline_s * 1000 + 123)
    return [
        ("SET", "s", "v"), ("SET", "n", "10"), ("INCRBY", "n", "5"), ("APPEND", "s", "x"),
        ("SET", "ttl", "v", "PXAT", ms), ("PEXPIREAT", "s", ms),
        ("RPUSH", "l", "a", "b", "c"), ("LPOP", "l"), ("LPUSH", "l", "z"), ("LSET", "l", "0", "q"),
        ("HSET", "h", "f", "1", "g", "2"), ("HINCRBY", "h", "f", "3"), ("HDEL", "h", "g"),
        ("SADD", "st", "a", "b", "c"), ("SREM", "st", "a"), ("SADD", "is", "1", "2", "3"),
        ("ZADD", "z", "1", "a", "2", "b"), ("ZINCRBY", "z", "2.5", "a"), ("ZREM", "z", "b"),
        ("PFADD", "hll", "a", "b", "c"), ("SETBIT", "bits", "100", "1"),
        ("XADD", "x", "1-1", "f", "v"), ("XADD", "x", "2-1", "f", "w"), ("XADD", "x", "3-1", "f", "u"),
        ("XGROUP", "CREATE", "x", "g", "0"), ("XREADGROUP", "GROUP", "g", "c1", "COUNT", "2", "STREAMS", "x", ">"),
        ("XACK", "x", "g", "1-1"), ("XGROUP", "CREATECONSUMER", "x", "g", "c2"), ("XDEL", "x", "3-1"),
        ("SELECT", "2"), ("SET", "k2", "v2"), ("EXPIREAT", "k2", str(deadline_s)), ("RPUSH", "l2", "1"),
        ("SELECT", "9"), ("ZADD", "z9", "3", "m"), ("SELECT", "0"),
        ("FUNCTION", "LOAD", LIB), ("FCALL", "setit", "1", "fk", "fv"),
        ("MULTI",), ("SET", "m1", "1"), ("INCR", "m1"), ("EXEC",),
    ]


def _state(c: RawConnection) -> list[Any]:
    """DEBUG DIGEST, every key's absolute deadline, the functions and the stream's group state
    (what survives a reload: not the consumers' seen-times, which Redis resets too)."""
    out: list[Any] = [_call(c, "DEBUG", "DIGEST")]
    for db in (0, 2, 9):
        _call(c, "SELECT", db)
        out.append([(k, _call(c, "PEXPIRETIME", k)) for k in sorted(_call(c, "KEYS", "*"))])
    _call(c, "SELECT", 0)
    out.append(_call(c, "FUNCTION", "LIST", "WITHCODE"))
    out.append(_call(c, "XPENDING", "x", "g"))
    out.append([(i[1], i[3]) for i in _call(c, "XINFO", "CONSUMERS", "x", "g")])  # name, pending
    out.append(_call(c, "XINFO", "GROUPS", "x")[0][:6])
    return out


def test_restart_keeps_every_type_ttls_and_functions(tmp_path):
    srv = start_raxdb(*AOF, cwd=str(tmp_path))
    c = RawConnection(srv.port)
    for cmd in _workload(int(time.time()) + 5000):
        assert not c.call(*cmd).startswith(b"-"), cmd
    before = _state(c)
    assert before[0] != b"0" * 40 and any(when > 0 for _, when in before[1] + before[2])
    c.close()
    srv.stop()
    srv = start_raxdb(*AOF, cwd=str(tmp_path))
    try:
        assert srv.wait_log("DB loaded from append only file")
        c = RawConnection(srv.port)
        assert _state(c) == before
        assert _call(c, "DBSIZE") == len(before[1])
        c.close()
    finally:
        srv.stop()


def _aof_sizes(c: RawConnection) -> dict[str, int]:
    info = c.call("INFO", "persistence").decode()
    return {k: int(v) for k, v in re.findall(r"(aof_(?:current|base)_size):(\d+)", info)}


@pytest.mark.parametrize("start", [start_raxdb, pytest.param(start_redis, marks=pytest.mark.oracle)], ids=["raxdb", "redis"])
def test_sizes_after_a_restart_count_the_loaded_files(tmp_path, start):
    """loadAppendOnlyFiles: aof_current_size is every loaded file, aof_base_size the base alone
    (auto-aof-rewrite measures growth from them); a base made at start-up counts for nothing."""
    srv = start(*AOF, cwd=str(tmp_path))
    c = RawConnection(srv.port)
    assert _aof_sizes(c) == {"aof_current_size": 0, "aof_base_size": 0}
    c.call("SET", "k", "v" * 100)
    c.close()
    srv.stop()
    d = tmp_path / "appendonlydir"
    base = sum(f.stat().st_size for f in d.glob("*.base.*"))
    incr = sum(f.stat().st_size for f in d.glob("*.incr.aof"))
    assert incr > 0
    srv = start(*AOF, cwd=str(tmp_path))
    try:
        c = RawConnection(srv.port)
        assert _aof_sizes(c) == {"aof_current_size": base + incr, "aof_base_size": base}
        c.close()
    finally:
        srv.stop()


# ---- (b) directories cross over -----------------------------------------------------------------------
def _mixed(c: RawConnection) -> None:
    for db in (0, 3):
        c.call("SELECT", db)
        for i in range(30):
            c.call("SET", f"s{i}", f"v{i}")
            c.call("RPUSH", f"l{i % 5}", f"e{i}")
            c.call("HSET", f"h{i % 4}", f"f{i}", i)
            c.call("SADD", f"set{i % 3}", i, f"m{i}")
            c.call("ZADD", f"z{i % 3}", i / 3, f"m{i}")
            c.call("XADD", f"x{i % 2}", f"{i + 1}-{db}", "f", i)
    c.call("MULTI")
    c.call("SET", "tx", "1")
    c.call("RPUSH", "txl", "a", "b")
    c.call("EXEC")
    assert c.call("FUNCTION", "LOAD", LIB).startswith(b"$")


_LOAD_INFO = ("loading", "rdb_changes_since_last_save", "rdb_last_load_keys_loaded", "rdb_last_load_keys_expired")


def _load_in(start: Any, d: Path) -> tuple[Any, ...]:
    """DEBUG DIGEST, the functions and INFO's loading figures of a server started on `d`."""
    srv = start(*AOF, cwd=str(d))
    try:
        assert srv.wait_log("DB loaded from append only file")
        c = RawConnection(srv.port)
        info = dict(line.split(":", 1) for line in _call(c, "INFO", "persistence").decode().splitlines()
                    if ":" in line)
        return (_call(c, "DEBUG", "DIGEST"), _call(c, "FUNCTION", "LIST", "WITHCODE"),
                [info[k] for k in _LOAD_INFO])
    finally:
        srv.stop()


@pytest.mark.oracle
@pytest.mark.parametrize("writer", ["redis", "raxdb"])
def test_directory_loads_in_the_other_server(tmp_path, writer):
    """A directory either server wrote loads in both to the writer's dataset, with the same
    loading figures in INFO (dirty counts the replayed changes, the base's keys are counted)."""
    start_w = start_redis if writer == "redis" else start_raxdb
    src = tmp_path / "w"
    src.mkdir()
    srv = start_w(*AOF, cwd=str(src))
    try:
        c = RawConnection(srv.port)
        _mixed(c)
        if writer == "redis":  # a base RDB with data, and the increment after it
            assert c.call("BGREWRITEAOF").startswith(b"+")
            assert srv.wait_log("Background AOF rewrite finished successfully")
            c.call("SELECT", 5)
            c.call("SET", "after", "rewrite")
        expected = _call(c, "DEBUG", "DIGEST"), _call(c, "FUNCTION", "LIST", "WITHCODE")
        c.close()
    finally:
        srv.stop()
    loaded = []
    for start in (start_raxdb, start_redis):
        copy = tmp_path / start.__name__
        shutil.copytree(src / DIR, copy / DIR)
        loaded.append(_load_in(start, copy))
    assert loaded[0][:2] == expected
    assert loaded[0] == loaded[1]


# ---- (d) DEBUG LOADAOF ------------------------------------------------------------------------------
@pytest.mark.oracle
def test_debug_loadaof_reloads_what_the_files_hold(tmp_path):
    """The buffered writes reach the file, the dataset is replaced by what the files hold (a
    command appended to the increment behind the server's back included), dirty goes to 0, the
    reload is not propagated, and the next write lands after it in the same increment."""
    ours, theirs = _both(tmp_path, None)
    conns = [b.conn for b in (ours, theirs)]
    for c in conns:
        assert c is not None
        c.call("SELECT", 4)
        c.call("SET", "a", "1")
        c.call("RPUSH", "l", "x", "y")
        c.call("FUNCTION", "LOAD", LIB)
    for kind in ("raxdb", "redis"):
        with open(tmp_path / kind / DIR / "appendonly.aof.1.incr.aof", "ab") as f:
            f.write(enc("SELECT", "6") + enc("SET", "outside", "1"))
    replies = [c.call("DEBUG", "LOADAOF") for c in conns if c is not None]
    assert replies == [b"+OK\r\n"] * 2
    assert ours.digest() == theirs.digest()
    for c in conns:
        assert c is not None
        assert _call(c, "INFO", "persistence").count(b"rdb_changes_since_last_save:0") == 1
        assert _call(c, "FUNCTION", "LIST")[0][1] == b"lib"
        c.call("SET", "b", "2")  # still in db 4 for this client; the file's last SELECT was 6
    assert ours.digest() == theirs.digest()
    ours.stop()
    theirs.stop()
    assert [line for line in ours.log if "DEBUG LOADAOF" in line]
    assert _tree(tmp_path / "raxdb") == _tree(tmp_path / "redis")


@pytest.mark.oracle
def test_an_approximate_trim_with_limit_replays_exactly(tmp_path):
    """unit/type/stream 'XADD with ~ MAXLEN and LIMIT can propagate correctly': the trim is
    written as MAXLEN = <length> (or MINID = <first id>) with its LIMIT, which the AOF's client
    obeys without the LIMIT (mustObeyClient): the reloaded stream is as long as before."""
    ours, theirs = _both(tmp_path, None, "--stream-node-max-entries", "10")
    try:
        for c in (ours.conn, theirs.conn):
            assert c is not None
            for i in range(1, 101):
                c.call("XADD", "s", f"{i}-1", "f", "v")
                c.call("XADD", "m", f"{i}-1", "f", "v")
            c.call("XADD", "s", "MAXLEN", "~", "55", "LIMIT", "30", "200-1", "f", "v")
            c.call("XADD", "m", "MINID", "~", "50", "LIMIT", "30", "200-1", "f", "v")
            c.call("XTRIM", "s", "MAXLEN", "~", "20", "LIMIT", "10")
            c.call("CONFIG", "SET", "stream-node-max-entries", "1")
        lengths = [[c.call("XLEN", k) for k in ("s", "m")] for c in (ours.conn, theirs.conn) if c is not None]
        assert [c.call("DEBUG", "LOADAOF") for c in (ours.conn, theirs.conn) if c is not None] == [b"+OK\r\n"] * 2
        assert [[c.call("XLEN", k) for k in ("s", "m")] for c in (ours.conn, theirs.conn) if c is not None] == lengths
        assert lengths[0] == lengths[1]
        assert ours.digest() == theirs.digest()
    finally:
        ours.stop()
        theirs.stop()


@pytest.mark.oracle
def test_scripts_write_from_the_aof_of_a_read_only_replica(tmp_path):
    """integration/aof 'EVAL can process writes from AOF in read-only replicas': the AOF's client
    is obeyed (mustObeyClient), so a replayed script's writes are no READONLY error."""
    incr = (enc("SELECT", "9") + enc("EVAL", "redis.call('set', KEYS[1], '100')", "1", "foo")
            + enc("EVAL", "redis.call('incr', KEYS[1])", "1", "foo") * 2)
    ours, theirs = _both(tmp_path, {"appendonly.aof.1.incr.aof": incr}, "--replica-read-only", "yes",
                         "--replicaof", "127.0.0.1", str(free_port()),
                         manifest="file appendonly.aof.1.incr.aof seq 1 type i\n")
    try:
        for b in (ours, theirs):
            assert b.conn is not None, "".join(b.log)
            b.conn.call("SELECT", "9")
            assert _call(b.conn, "GET", "foo") == b"102"
    finally:
        ours.stop()
        theirs.stop()


@pytest.mark.oracle
def test_debug_loadaof_without_an_aof_ends_the_process(tmp_path):
    ours, theirs = _both(tmp_path, None, "--appendonly", "no")
    for b in (ours, theirs):
        assert b.conn is not None
        b.conn.send(enc("DEBUG", "LOADAOF"))
        with pytest.raises(ConnectionError):
            b.conn.read_frame()
        assert b.proc.wait(30) == 1
    ours.stop()
    theirs.stop()


@pytest.mark.oracle
def test_debug_loadaof_with_appendonly_no_reads_an_existing_directory(tmp_path):
    ours, theirs = _both(tmp_path, {"appendonly.aof.1.base.aof": BASE, "appendonly.aof.1.incr.aof": GOOD},
                         "--appendonly", "no")
    for b in (ours, theirs):
        assert b.conn is not None
        assert b.conn.call("DEBUG", "LOADAOF") == b"+OK\r\n"
    assert ours.digest() == theirs.digest() != b"0" * 40
    _same_outcome(tmp_path, ours, theirs)


# ---- while a replayed script is busy ------------------------------------------------------------------
@pytest.mark.parametrize("start", [start_raxdb, pytest.param(start_redis, marks=pytest.mark.oracle)], ids=["raxdb", "redis"])
def test_clients_get_loading_while_a_replayed_script_is_busy(tmp_path, start):
    """A slow EVAL in the AOF lets clients in while DEBUG LOADAOF replays it: they are refused
    with LOADING, not BUSY (processCommand checks loading first), and the script's write stays."""
    srv = start("--appendonly", "yes", "--aof-use-rdb-preamble", "no", "--lua-time-limit", "10",
                cwd=str(tmp_path))
    try:
        c = RawConnection(srv.port)
        slow = "redis.call('set', KEYS[1], 'y'); for i = 1, 200000 do redis.call('ping') end return 'ok'"
        incr = [f for f in (tmp_path / DIR).iterdir() if f.name.endswith(".incr.aof")][0]
        incr.write_bytes(enc("SELECT", "9") + enc("EVAL", slow, "1", "x"))
        loader = RawConnection(srv.port)
        loader.send(enc("DEBUG", "LOADAOF"))
        deadline = time.monotonic() + 30
        while not (reply := c.call("PING")).startswith(b"-"):  # until the replay is under way
            assert time.monotonic() < deadline, "the replay never made clients wait"
        assert reply.startswith(b"-LOADING "), reply
        assert loader.read_frame() == b"+OK\r\n"
        assert _call(c, "SELECT", "9") == b"OK"
        assert _call(c, "GET", "x") == b"y"
        loader.close()
        c.close()
    finally:
        srv.stop()


def test_debug_loadaof_writes_what_waits_behind_a_running_fsync(tmp_path):
    """DEBUG LOADAOF writes the buffered commands first even while an everysec fsync runs, as
    flushAppendOnlyFile(1) forces it; raxdb postponed them (as a plain flush may for 2 s), so
    the reload lost every write since the fsync began (Redis's unit/type/stream 'XADD with ~
    MAXLEN can propagate correctly' failed 1 run in 8 on it).  Each round starts a second's
    fsync with one write and sends the rest with the reload in one pipeline, while that fsync is
    most likely still running; every round must find all its writes."""
    srv = start_raxdb("--appendonly", "yes", "--appendfsync", "everysec", "--enable-debug-command", "yes",
                      cwd=str(tmp_path))
    try:
        c = RawConnection(srv.port)
        lost = []
        for round_ in range(6):
            start = int(time.time())
            while int(time.time()) == start:  # a new second: the next write's flush submits an fsync
                time.sleep(0.01)
            assert c.call("SET", "first", round_) == b"+OK\r\n"
            c.send(encode_command([b"RPUSH", b"l", b"%d" % round_])
                   + b"".join(encode_command([b"SET", b"k%d" % i, b"v"]) for i in range(50))
                   + encode_command([b"DEBUG", b"LOADAOF"]) + encode_command([b"DBSIZE"]))
            replies = [c.read_frame() for _ in range(53)]
            assert replies[51] == b"+OK\r\n"
            if replies[52] != b":52\r\n":
                lost.append((round_, replies[52]))
        assert lost == []
    finally:
        srv.stop()
