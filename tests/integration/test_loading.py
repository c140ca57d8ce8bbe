"""Serving clients while a dataset loads (server/persistence/loading.py), raxdb next to redis-server 7.0.

Each scenario runs on both servers at once: a load made slow with key-load-delay (and events
served every 1 KiB, loading-process-events-interval-bytes) at start-up from a dump file, from
an AOF directory (an RDB base and commands), and on a replica during a full sync (from disk,
diskless on an empty db, and swapdb's asynchronous load that keeps serving the old data).
While the load runs, both are asked the same things and must answer alike: -LOADING for GET and
PING, INFO's loading fields, CONFIG SET allowed or refused; afterwards the data must be whole
and equal.  States are polled with deadlines, never slept for."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Iterator

import pytest

from tests.integration.test_repl_replica import wait_for
from tests.support.diff import RawConnection
from tests.support.servers import ServerProcess, start_raxdb, start_redis

pytestmark = pytest.mark.oracle

LOADING = b"-LOADING Redis is loading the dataset in memory\r\n"
KEYS = 2000
SLOW = ("--key-load-delay", "1000", "--loading-process-events-interval-bytes", "1024")
STARTERS = {"raxdb": start_raxdb, "redis": start_redis}
LIBRARY = (b"#!lua name=lib\nredis.register_function{function_name='which', "
           b"callback=function() return '%s' end, flags={'no-writes'}}")


def connect(port: int) -> RawConnection:
    """A connection as soon as the server listens (it listens before it loads)."""
    conn: list[RawConnection] = []

    def attempt() -> bool:
        try:
            conn.append(RawConnection(port))
        except OSError:
            return False
        return True

    wait_for(attempt, 30, f"port {port} to listen")
    return conn[0]


def info(conn: RawConnection, section: str) -> dict[str, str]:
    frame = conn.call("INFO", section)
    body = frame[frame.index(b"\r\n") + 2:].decode()
    return dict(line.split(":", 1) for line in body.split("\r\n") if ":" in line)


def loading_fields(fields: dict[str, str]) -> list[str]:
    return [k for k in fields if k.startswith("loading_")]


def digest(conn: RawConnection) -> bytes:
    return conn.call("DEBUG", "DIGEST")


@pytest.fixture(scope="module")
def dump() -> Iterator[str]:
    """A dump file of KEYS strings and a few other types, written by redis-server."""
    d = tempfile.mkdtemp(prefix="loading-dump-")
    srv = start_redis(cwd=d)
    try:
        c = RawConnection(srv.port)
        assert c.call("DEBUG", "POPULATE", KEYS, "key", 200) == b"+OK\r\n"
        c.call("HSET", "h", "a", "1", "b", "2")
        c.call("ZADD", "z", "1", "m")
        c.call("RPUSH", "l", "x", "y")
        assert c.call("SAVE") == b"+OK\r\n"
    finally:
        srv.stop()
    yield os.path.join(d, "dump.rdb")
    shutil.rmtree(d, ignore_errors=True)


def start_with(name: str, files: str, *extra: str) -> ServerProcess:
    """`name` started in a copy of the directory or file `files`, not waiting for the load."""
    d = tempfile.mkdtemp(prefix=f"loading-{name}-")
    if os.path.isdir(files):
        shutil.copytree(files, d, dirs_exist_ok=True)
    else:
        shutil.copy(files, d)
    return STARTERS[name](*SLOW, *extra, cwd=d, ready_text=None)


def during_load(conn: RawConnection) -> dict[str, object]:
    """What a client sees while the server loads (the caller waited for loading:1)."""
    before = int(time.time())
    fields = info(conn, "persistence")
    return {
        "ping": conn.call("PING"),
        "get": conn.call("GET", "key:1"),
        "set": conn.call("SET", "k", "v"),
        "config_allowed": conn.call("CONFIG", "SET", "loglevel", "notice"),
        "config_denied": conn.call("CONFIG", "SET", "appendonly", "no"),
        "config_denied_later": conn.call("CONFIG", "SET", "repl-diskless-load", "disabled", "dir", "."),
        "multi": [conn.call("MULTI"), conn.call("GET", "x"), conn.call("EXEC")],
        "loading": (fields["loading"], fields["async_loading"]),
        "fields": loading_fields(fields),
        "sane": _sane(fields, before),
        "still_loading": info(conn, "persistence")["loading"],
    }


def _sane(f: dict[str, str], now: int) -> bool:
    total, used, loaded = (int(f[k]) for k in ("loading_total_bytes", "loading_rdb_used_mem",
                                                 "loading_loaded_bytes"))
    limit = total or used
    return (now - 30 <= int(f["loading_start_time"]) <= now + 1 and loaded <= limit
            and 0.0 <= float(f["loading_loaded_perc"]) <= 100.0 and int(f["loading_eta_seconds"]) >= 0)


def loaded(conn: RawConnection) -> bool:
    return info(conn, "persistence")["loading"] == "0"


def test_startup_rdb_load_serves_clients(dump: str) -> None:
    procs: dict[str, ServerProcess] = {}
    conns: dict[str, RawConnection] = {}
    seen = {}
    try:
        for name in STARTERS:  # one after the other: each is asked while it surely loads
            procs[name] = start_with(name, dump)
            conn = conns[name] = connect(procs[name].port)
            wait_for(lambda conn=conn: info(conn, "persistence")["loading"] == "1", what=f"{name} loading")
            seen[name] = during_load(conn)
        assert seen["raxdb"] == seen["redis"]
        assert seen["raxdb"]["ping"] == LOADING and seen["raxdb"]["sane"]
        assert seen["raxdb"]["still_loading"] == "1"  # what was seen was seen while loading
        totals = {name: info(c, "persistence")["loading_total_bytes"] for name, c in conns.items()}
        assert totals["raxdb"] == totals["redis"] == str(os.path.getsize(dump))
        for name, conn in conns.items():
            wait_for(lambda conn=conn: loaded(conn), timeout=60, what=f"{name} loaded")
        after = {name: (conn.call("DBSIZE"), digest(conn), conn.call("GET", "key:1"),
                        info(conn, "persistence")["rdb_last_load_keys_loaded"],
                        loading_fields(info(conn, "persistence")))
                 for name, conn in conns.items()}
        assert after["raxdb"] == after["redis"]
        assert after["raxdb"][0] == b":%d\r\n" % (KEYS + 3)
    finally:
        for p in procs.values():
            p.stop()


def test_shutdown_signal_during_load_saves_nothing(dump: str) -> None:
    """SIGTERM while loading: exit 0 at once, the dump file untouched (no partial save) although
    save points are set."""
    procs: dict[str, ServerProcess] = {}
    try:
        for name in STARTERS:
            p = procs[name] = start_with(name, dump, "--save", "900 1")
            conn = connect(p.port)
            wait_for(lambda conn=conn: info(conn, "persistence")["loading"] == "1", what=f"{name} loading")
            p.proc.send_signal(signal.SIGTERM)
            assert p.proc.wait(30) == 0
            assert p.wait_log("Received shutdown signal during loading, scheduling shutdown.", 5)
            with open(os.path.join(p.cwd, "dump.rdb"), "rb") as f, open(dump, "rb") as orig:
                assert f.read() == orig.read()
            assert not any("DB saved on disk" in line for line in p.log)
    finally:
        for p in procs.values():
            p.stop()


@pytest.fixture(scope="module")
def aof_dir() -> Iterator[str]:
    """An AOF directory written by redis-server: an RDB base (KEYS keys) and an increment of
    KEYS commands."""
    d = tempfile.mkdtemp(prefix="loading-aof-")
    srv = start_redis("--appendonly", "yes", "--appendfsync", "always", cwd=d)
    try:
        c = RawConnection(srv.port)
        assert c.call("DEBUG", "POPULATE", KEYS, "key", 100) == b"+OK\r\n"
        c.call("BGREWRITEAOF")
        wait_for(lambda: info(c, "persistence")["aof_rewrite_in_progress"] == "0"
                 and info(c, "persistence")["aof_rewrite_scheduled"] == "0", what="the AOF rewrite")
        c.send(b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\nn:%d\r\n$1\r\nv\r\n" % (len(b"n:%d" % i), i)
                        for i in range(KEYS)))
        for _ in range(KEYS):
            c.read_frame()
    finally:
        srv.stop()
    if os.path.exists(os.path.join(d, "dump.rdb")):
        os.remove(os.path.join(d, "dump.rdb"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_startup_aof_load_serves_clients(aof_dir: str) -> None:
    procs: dict[str, ServerProcess] = {}
    conns: dict[str, RawConnection] = {}
    seen = {}
    try:
        for name in STARTERS:
            procs[name] = start_with(name, aof_dir, "--appendonly", "yes")
            conn = conns[name] = connect(procs[name].port)
            wait_for(lambda conn=conn: info(conn, "persistence")["loading"] == "1", what=f"{name} loading")
            fields = info(conn, "persistence")
            seen[name] = (conn.call("GET", "key:1"), conn.call("PING"), loading_fields(fields),
                          fields["loading_total_bytes"], _sane(fields, int(time.time())))
        assert seen["raxdb"] == seen["redis"]
        assert seen["raxdb"][0] == LOADING and seen["raxdb"][4]
        adir = os.path.join(aof_dir, "appendonlydir")
        assert int(seen["raxdb"][3]) == sum(os.path.getsize(os.path.join(adir, f)) for f in os.listdir(adir)
                                            if ".manifest" not in f)
        for name, conn in conns.items():
            wait_for(lambda conn=conn: loaded(conn), timeout=60, what=f"{name} loaded")
        after = {name: (conn.call("DBSIZE"), digest(conn)) for name, conn in conns.items()}
        assert after["raxdb"] == after["redis"]
        assert after["raxdb"][0] == b":%d\r\n" % (2 * KEYS)
    finally:
        for p in procs.values():
            p.stop()


@pytest.fixture(scope="module")
def master() -> Iterator[ServerProcess]:
    m = start_redis("--repl-diskless-sync-delay", "0", "--repl-backlog-size", "16384")
    c = RawConnection(m.port)
    assert c.call("DEBUG", "POPULATE", KEYS, "key", 200) == b"+OK\r\n"
    yield m
    m.stop()


def link_up(conn: RawConnection) -> bool:
    return info(conn, "replication").get("master_link_status") == "up"


@pytest.mark.parametrize("mode", ["disabled", "on-empty-db"])
def test_replica_full_sync_load_serves_clients(master: ServerProcess, mode: str) -> None:
    """A replica loading its master's payload (from disk, or diskless into an empty db) answers
    -LOADING; then holds the master's data."""
    procs = {name: STARTERS[name](*SLOW, "--repl-diskless-load", mode) for name in STARTERS}
    m = RawConnection(master.port)
    try:
        conns = {name: RawConnection(p.port) for name, p in procs.items()}
        seen = {}
        for name, conn in conns.items():
            assert conn.call("REPLICAOF", "127.0.0.1", master.port) == b"+OK\r\n"
            wait_for(lambda conn=conn: info(conn, "persistence")["loading"] == "1", what=f"{name} loading")
            fields = info(conn, "persistence")
            seen[name] = (conn.call("GET", "key:1"), conn.call("PING"), conn.call("REPLICAOF", "NO", "ONE"),
                          loading_fields(fields), fields["async_loading"], _sane(fields, int(time.time())),
                          int(fields["loading_total_bytes"]) > 0, info(conn, "replication")["master_link_status"])
        assert seen["raxdb"] == seen["redis"]
        assert seen["raxdb"][0] == LOADING and seen["raxdb"][5]
        for name, conn in conns.items():
            wait_for(lambda conn=conn: link_up(conn) and loaded(conn), timeout=60, what=f"{name} synced")
        want = (m.call("DBSIZE"), digest(m))
        for conn in conns.values():
            assert (conn.call("DBSIZE"), digest(conn)) == want
    finally:
        for p in procs.values():
            p.stop()


def test_replica_swapdb_loads_asynchronously(master: ServerProcess) -> None:
    """repl-diskless-load swapdb, a full resync continuing the same history: the old dataset is
    served while the new one loads (async_loading:1), commands flagged no-async-loading are
    refused, and the new dataset (its functions too) replaces the old at the end."""
    procs = {name: STARTERS[name]("--repl-diskless-load", "swapdb") for name in STARTERS}
    m = RawConnection(master.port)
    try:
        conns = {name: RawConnection(p.port) for name, p in procs.items()}
        m.call("SET", "marker", "old")
        m.call("FUNCTION", "LOAD", "REPLACE", LIBRARY % b"old")
        for conn in conns.values():
            conn.call("REPLICAOF", "127.0.0.1", master.port)
        for name, conn in conns.items():
            wait_for(lambda conn=conn: link_up(conn) and conn.call("GET", "marker") == b"$3\r\nold\r\n",
                     what=f"{name} first sync")
            # slower than elsewhere: both load at once here, and are asked one after the other
            assert conn.call("CONFIG", "SET", "key-load-delay", "2000", "loading-process-events-interval-bytes",
                             "1024") == b"+OK\r\n"
        # the replicas' link drops, and the stream they missed is past the master's 16 KiB backlog:
        # their PSYNC gets a full resync of the same history
        assert m.call("MULTI") == b"+OK\r\n"
        m.call("CLIENT", "KILL", "TYPE", "replica")
        m.call("SET", "marker", "new")
        m.call("FUNCTION", "LOAD", "REPLACE", LIBRARY % b"new")
        m.call("SET", "filler", "x" * 65536)
        assert m.call("EXEC").startswith(b"*4")
        seen = {}
        for name, conn in conns.items():
            wait_for(lambda conn=conn: info(conn, "persistence")["async_loading"] == "1",
                     what=f"{name} async loading")
            fields = info(conn, "persistence")
            seen[name] = (conn.call("GET", "marker"), conn.call("FCALL_RO", "which", 0), conn.call("PING"),
                          conn.call("SAVE"), conn.call("REPLICAOF", "NO", "ONE"),
                          conn.call("CONFIG", "SET", "appendonly", "no"),
                          fields["loading"], loading_fields(fields), _sane(fields, int(time.time())),
                          info(conn, "persistence")["async_loading"])
        assert seen["raxdb"] == seen["redis"]
        assert seen["raxdb"][:6] == (b"$3\r\nold\r\n", b"$3\r\nold\r\n", b"+PONG\r\n", LOADING, LOADING, LOADING)
        for name, conn in conns.items():
            wait_for(lambda conn=conn: info(conn, "persistence")["async_loading"] == "0" and link_up(conn),
                     timeout=60, what=f"{name} swapped")
        want = (m.call("DBSIZE"), digest(m))
        for conn in conns.values():
            assert conn.call("GET", "marker") == conn.call("FCALL_RO", "which", 0) == b"$3\r\nnew\r\n"
            assert (conn.call("DBSIZE"), digest(conn)) == want
    finally:
        for p in procs.values():
            p.stop()


def test_clients_freed_during_load(dump: str) -> None:
    """A client that connects and leaves during the load is freed then ('client freed during
    loading' in Redis's integration/rdb.tcl)."""
    procs: dict[str, ServerProcess] = {}
    try:
        for name in STARTERS:
            p = procs[name] = start_with(name, dump)
            conn = connect(p.port)
            wait_for(lambda conn=conn: info(conn, "persistence")["loading"] == "1", what=f"{name} loading")
            others = [RawConnection(p.port) for _ in range(5)]
            for o in others:
                o.send(b"*3\r\n$5\r\nDEBUG\r\n$3\r\nLOG\r\n$3\r\nbla\r\n")
            assert [o.read_frame() for o in others] == [b"+OK\r\n"] * 5
            for o in others:
                o.sock.shutdown(socket.SHUT_RDWR)
                o.close()
            wait_for(lambda conn=conn: int(info(conn, "clients")["connected_clients"]) < 3, what="clients freed")
            assert info(conn, "persistence")["loading"] == "1"
    finally:
        for p in procs.values():
            p.stop()
