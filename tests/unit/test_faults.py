"""Faults on demand (DEBUG FAULT, server/net/faults.py; the handle's methods, raxdb/embed/faults.py),
through the public API: raxdb.serve(), the wire, and redis-py's reconnect and retry against each.

One server for the module (faults are cleared after every test).  Waits for a fault that ends by
itself poll the fault's own state, bounded; the only clock in an assertion is a delay's lower bound
(a reply can never come sooner than it was held)."""

from __future__ import annotations

import errno
import socket
import time

import pytest
import redis
from redis.backoff import ExponentialBackoff
from redis.exceptions import (
    BusyLoadingError,
    ConnectionError,
    MasterDownError,
    ResponseError,
    TimeoutError,
    TryAgainError,
)
from redis.retry import Retry

import raxdb
from raxdb.embed.control import ControlError

LOADING = "Redis is loading the dataset in memory"
BUSY = "Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
MASTERDOWN = "Link with MASTER is down and replica-serve-stale-data is set to 'no'."
TRYAGAIN = "Multiple keys request during rehashing of slot"


@pytest.fixture(scope="module")
def srv():
    with raxdb.serve() as server:
        yield server


@pytest.fixture
def r(srv):
    client = redis.Redis.from_url(srv.url, decode_responses=True)
    client.flushall()
    yield client
    srv.clear_faults()
    client.close()


def _raw(srv, *commands: bytes) -> bytes:
    """The raw replies to inline commands, on a connection of their own (exact error texts)."""
    with socket.create_connection((srv.host, srv.port), timeout=10) as s:
        s.sendall(b"".join(c + b"\r\n" for c in commands))
        data = b""
        while data.count(b"\r\n") < len(commands):
            data += s.recv(65536)
        return data


def _until(check, what: str) -> None:
    for _ in range(500):
        if check():
            return
        time.sleep(0.01)
    raise AssertionError(f"still not {what} after 5 s")


# ---- errors ------------------------------------------------------------------------------------
def test_each_error_worded_as_redis(srv, r):
    for kind, text in (("LOADING", LOADING), ("BUSY", BUSY), ("MASTERDOWN", MASTERDOWN), ("TRYAGAIN", TRYAGAIN)):
        srv.fail_next(1, kind)
        assert _raw(srv, b"GET k", b"GET k") == f"-{kind} {text}\r\n$-1\r\n".encode()


def test_fail_next_counts_the_commands_it_hits(srv, r):
    srv.fail_next(2, "LOADING")
    assert srv.fault_status() == ["error LOADING count=2"]
    # INFO, PING-less handshakes and DEBUG itself pass, as Redis serves them while loading
    assert "redis_version" in r.info("server")
    with pytest.raises(BusyLoadingError, match="loading"):
        r.get("k")
    with pytest.raises(BusyLoadingError):
        r.set("k", "v")
    assert r.set("k", "v") and r.get("k") == "v"
    assert srv.fault_status() == []


def test_tryagain_spares_keyless_commands_and_commands_limits_it(srv, r):
    srv.fail("TRYAGAIN", commands=["mset", "h*"])
    assert r.ping() and r.get("k") is None
    with pytest.raises(TryAgainError):
        r.mset({"a": 1, "b": 2})
    with pytest.raises(TryAgainError):
        r.hset("h", "f", "v")
    srv.fail("BUSY", count=1)  # replaces the TRYAGAIN fault
    with pytest.raises(ResponseError, match="^BUSY"):
        r.mset({"a": 1, "b": 2})
    assert r.mset({"a": 1, "b": 2})  # its one command spent, and no TRYAGAIN left


def test_fail_for_ends_by_itself(srv, r):
    srv.fail_for(0.2, "MASTERDOWN")
    with pytest.raises(MasterDownError):
        r.get("k")
    _until(lambda: srv.fault_status() == [], "ended")
    assert r.get("k") is None


def test_a_fault_as_a_context_manager(srv, r):
    with srv.fail_for(60, "LOADING"):
        with pytest.raises(BusyLoadingError):
            r.get("k")
    assert r.get("k") is None


def test_redis_py_retries_loading_with_backoff(srv, r):
    client = redis.Redis.from_url(srv.url, retry=Retry(ExponentialBackoff(cap=0.01, base=0.001), 5),
                                  retry_on_error=[BusyLoadingError])
    srv.fail_next(3, "LOADING")
    assert client.set("k", "v")  # three refusals, retried, then served
    assert srv.fault_status() == []
    srv.fail_next(10, "LOADING")
    with pytest.raises(BusyLoadingError):  # more refusals than retries: the error reaches the caller
        client.get("k")
    client.close()


def test_bad_arguments_get_errors(srv, r):
    for args, match in ((["ERROR", "NOPE"], "unknown fault error"), (["ERROR", "LOADING", "COUNT", "0"], "COUNT"),
                        (["ERROR", "LOADING", "FOR", "-1"], "FOR"), (["DELAY", "0"], "delay"),
                        (["DELAY", "10", "FOR"], "syntax"), (["NOPE"], "unknown DEBUG FAULT subcommand"),
                        (["DROP", "ID", "x"], "client-id"), (["CLEAR", "NOPE"], "syntax")):
        with pytest.raises(ControlError, match=match):
            srv.control("FAULT", *args)
    assert srv.fault_status() == []


def test_listed_in_debug_help_and_refused_without_the_switch():
    with raxdb.serve(config={"enable-debug-command": "yes"}) as on:
        assert any(line.startswith(b"FAULT ERROR") for line in on.control("HELP"))
    with raxdb.serve(config={"raxdb-test-controls": "no"}) as off:
        with pytest.raises(ControlError, match="raxdb test control"):
            off.fail_next(1)


# ---- drop --------------------------------------------------------------------------------------
def test_drop_one_by_name_and_redis_py_reconnects(srv, r):
    other = redis.Redis.from_url(srv.url, client_name="other", decode_responses=True)
    me, them = r.client_id(), other.client_id()
    assert srv.drop_connections(name="other") == 1
    assert r.client_id() == me  # untouched
    assert other.get("k") is None  # the pool finds the connection closed and opens another
    assert other.client_id() != them
    assert srv.drop_connections(client_id=r.client_id()) == 1
    assert r.client_id() != me
    other.close()


def test_drop_all_but_the_asker(srv, r):
    r.ping()
    raw = socket.create_connection((srv.host, srv.port), timeout=10)
    raw.sendall(b"DEBUG FAULT DROP\r\n")
    assert raw.recv(100).startswith(b":")
    raw.sendall(b"PING\r\n")
    assert raw.recv(100) == b"+PONG\r\n"  # SKIPME yes, as CLIENT KILL's default
    raw.close()
    conn = r.connection_pool.get_connection()
    assert srv.drop_connections() >= 1
    conn.send_command("PING")  # a command sent on a dropped connection: its reply never comes
    with pytest.raises(ConnectionError):
        conn.read_response()
    r.connection_pool.release(conn)
    assert r.ping()  # and the next one reconnects


def test_a_refused_command_in_a_transaction_aborts_it(srv, r):
    srv.fail_next(1, "LOADING", commands="incr")
    assert _raw(srv, b"MULTI", b"SET k 1", b"INCR k", b"EXEC") == (
        b"+OK\r\n+QUEUED\r\n-LOADING " + LOADING.encode() + b"\r\n"
        b"-EXECABORT Transaction discarded because of previous errors.\r\n")
    assert r.get("k") is None


# ---- delay -------------------------------------------------------------------------------------
def test_delay_holds_replies_in_order_while_the_server_serves(srv, r):
    a = socket.create_connection((srv.host, srv.port), timeout=10)
    b = socket.create_connection((srv.host, srv.port), timeout=10)
    srv.delay_replies(200)
    t0 = time.monotonic()
    a.sendall(b"SET k first\r\n" + b"".join(b"INCR n\r\n" for _ in range(20)))
    b.sendall(b"GET k\r\n")  # answered (late) with what a's command wrote: commands are not held
    got = b""
    while got.count(b"\r\n") < 2:
        got += b.recv(1000)
    assert got == b"$5\r\nfirst\r\n"
    got = b""
    while got.count(b"\r\n") < 21:
        got += a.recv(1000)
    assert got == b"+OK\r\n" + b"".join(b":%d\r\n" % i for i in range(1, 21))
    assert time.monotonic() - t0 >= 0.2  # never sooner than held
    a.close()
    b.close()


def test_delay_holds_big_replies_written_in_pieces(srv, r):
    """Big replies leave the client in pieces (transport.writelines): held by the delay all the
    same, and whole and in order."""
    r.set("big", b"x" * 100_000)
    a = socket.create_connection((srv.host, srv.port), timeout=10)
    srv.delay_replies(200)
    t0 = time.monotonic()
    a.sendall(b"GET big\r\n" * 4 + b"PING\r\n")
    want = b"$100000\r\n" + b"x" * 100_000 + b"\r\n"
    got = b""
    while len(got) < 4 * len(want) + 7:
        got += a.recv(1 << 16)
    assert got == want * 4 + b"+PONG\r\n"
    assert time.monotonic() - t0 >= 0.2  # never sooner than held
    a.close()


def test_delay_makes_redis_py_time_out_and_ends(srv, r):
    client = redis.Redis.from_url(srv.url, socket_timeout=0.05)
    client.ping()
    with srv.delay_replies(500):
        with pytest.raises(TimeoutError):
            client.ping()
    client.close()
    client = redis.Redis.from_url(srv.url, socket_timeout=5)
    assert client.ping()
    assert srv.fault_status() == []
    client.close()


# ---- refusal -----------------------------------------------------------------------------------
def _refused(srv) -> bool:
    try:
        socket.create_connection((srv.host, srv.port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_refuse_connections_then_listen_again(srv, r):
    r.ping()
    with srv.refuse_connections():
        with pytest.raises(OSError) as info:
            socket.create_connection((srv.host, srv.port), timeout=5)
        assert info.value.errno == errno.ECONNREFUSED
        assert r.ping()  # an open connection goes on
        assert srv.drop_connections() >= 1  # the handle's own link is spared: it can still clear
    assert not _refused(srv)
    assert r.ping()  # redis-py reconnects after the drop


def test_redis_py_reconnects_with_backoff_after_a_refusal(srv, r):
    client = redis.Redis.from_url(srv.url, retry=Retry(ExponentialBackoff(cap=0.05, base=0.005), 200),
                                  retry_on_error=[ConnectionError])
    client.ping()
    srv.refuse_connections(0.3)
    srv.drop_connections()
    assert client.ping()  # refused, backed off, retried until the server listened again
    assert srv.fault_status() == []
    client.close()


# ---- a cluster node --------------------------------------------------------------------------
def test_redis_py_cluster_retries_tryagain_from_one_node():
    from redis.cluster import ClusterNode, RedisCluster

    with raxdb.serve_cluster(masters=3) as cluster:
        rc = RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in cluster.startup_nodes])
        assert rc.mset({"{a}x": 1, "{a}y": 2})
        for node in cluster.nodes:
            node.fail_next(1, "TRYAGAIN")
        assert rc.mget("{a}x", "{a}y") == [b"1", b"2"]  # refused by the slot's node, retried
        assert sorted(len(node.fault_status()) for node in cluster.nodes) == [0, 1, 1]  # one spent
        rc.close()
