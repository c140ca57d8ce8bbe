"""Blocking commands, scenario by scenario, on raxdb and redis-server side by side.

Each scenario drives several connections per server.  A client is known to be blocked when the
server says so (INFO clients blocked_clients, polled): the tests await that event rather than
sleeping.  Replies from the two servers are compared byte for byte.
"""

from __future__ import annotations

import time

import pytest

from tests.support.diff import RawConnection, encode_command


class Side:
    """One server's connections in a scenario."""

    def __init__(self, port: int, protocol: int) -> None:
        self.port = port
        self.protocol = protocol
        self.admin = RawConnection(port)
        self.admin.call("FLUSHALL")
        self.conns: dict[str, RawConnection] = {}

    def conn(self, name: str) -> RawConnection:
        c = self.conns.get(name)
        if c is None:
            c = self.conns[name] = RawConnection(self.port)
            if self.protocol == 3:
                c.call("HELLO", "3")
        return c

    def blocked(self) -> int:
        info = self.admin.call("INFO", "clients").decode()
        for line in info.split("\r\n"):
            if line.startswith("blocked_clients:"):
                return int(line.split(":")[1])
        raise AssertionError(info)

    def await_blocked(self, n: int) -> None:
        for _ in range(2000):
            if self.blocked() == n:
                return
            time.sleep(0.002)
        raise AssertionError(f"{self.port}: blocked_clients never reached {n} (at {self.blocked()})")

    def close(self) -> None:
        for c in [self.admin, *self.conns.values()]:
            c.close()


class Scenario:
    def __init__(self, raxdb_port: int, redis_port: int, protocol: int) -> None:
        self.sides = [Side(raxdb_port, protocol), Side(redis_port, protocol)]

    def send(self, name: str, *args) -> None:
        for s in self.sides:
            s.conn(name).send(encode_command(args))

    def send_raw(self, name: str, data: bytes) -> None:
        for s in self.sides:
            s.conn(name).send(data)

    def read(self, name: str) -> bytes:
        ours, theirs = (s.conn(name).read_frame() for s in self.sides)
        assert ours == theirs, f"{name}:\n  raxdb: {ours!r}\n  redis: {theirs!r}"
        return ours

    def call(self, name: str, *args) -> bytes:
        self.send(name, *args)
        return self.read(name)

    def block(self, name: str, *args) -> None:
        """Send a blocking command and await the server's word that the client is blocked."""
        expected = [s.blocked() + 1 for s in self.sides]
        self.send(name, *args)
        for s, n in zip(self.sides, expected, strict=True):
            s.await_blocked(n)

    def await_blocked(self, n: int) -> None:
        for s in self.sides:
            s.await_blocked(n)

    def close(self) -> None:
        for s in self.sides:
            s.close()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def sc(request, raxdb, oracle):
    s = Scenario(raxdb.port, oracle.port, request.param)
    yield s
    s.close()


def test_fbfs_one_key_three_clients(sc):
    for name in ("c1", "c2", "c3"):
        sc.block(name, "BLPOP", "q", "0")
    sc.call("p", "RPUSH", "q", "a", "b", "c", "d")
    assert sc.read("c1").endswith(b"$1\r\na\r\n")
    sc.read("c2")
    sc.read("c3")
    sc.call("p", "LRANGE", "q", "0", "-1")
    sc.await_blocked(0)


def test_fbfs_across_keys(sc):
    sc.block("c1", "BLPOP", "k1", "k2", "0")
    sc.block("c2", "BRPOP", "k2", "0")
    sc.block("c3", "BLPOP", "k2", "k1", "0")
    sc.call("p", "RPUSH", "k2", "x", "y")
    sc.read("c1")
    sc.read("c2")
    sc.call("p", "RPUSH", "k1", "z")
    sc.read("c3")


def test_waiter_on_two_keys_served_by_first_ready(sc):
    sc.block("c1", "BLPOP", "a", "b", "0")
    sc.call("p", "RPUSH", "b", "vb")
    assert b"vb" in sc.read("c1")
    sc.call("p", "RPUSH", "a", "va")
    sc.call("p", "LLEN", "a")


def test_multi_pushes_serve_after_exec(sc):
    sc.block("c1", "BLPOP", "k1", "0")
    sc.block("c2", "BLPOP", "k2", "0")
    sc.call("p", "MULTI")
    sc.call("p", "RPUSH", "k1", "x")
    sc.call("p", "RPUSH", "k2", "y")
    sc.call("p", "LPOP", "k1")  # runs inside EXEC before any waiter is served
    sc.call("p", "EXEC")
    sc.read("c2")
    sc.call("p", "RPUSH", "k1", "w")
    sc.read("c1")


def test_pipeline_behind_blocked_command(sc):
    sc.send_raw("c1", encode_command(["BLPOP", "q", "0"]) + encode_command(["PING"])
                + encode_command(["SET", "x", "1"]) + encode_command(["GET", "x"]))
    sc.await_blocked(1)
    sc.call("p", "GET", "x")  # nothing behind the blocked command has run
    sc.call("p", "LPUSH", "q", "v")
    for _ in range(4):
        sc.read("c1")


def test_blmove_wrong_type_destination(sc):
    sc.block("c1", "BLMOVE", "src", "dst", "LEFT", "RIGHT", "0")
    sc.call("p", "SET", "dst", "string")
    sc.call("p", "RPUSH", "src", "v")
    assert sc.read("c1").startswith(b"-WRONGTYPE")
    sc.call("p", "LRANGE", "src", "0", "-1")


def test_brpoplpush_chain(sc):
    sc.block("c1", "BRPOPLPUSH", "a", "b", "0")
    sc.block("c2", "BRPOPLPUSH", "b", "c", "0")
    sc.call("p", "RPUSH", "a", "x")
    sc.read("c1")
    sc.read("c2")
    sc.call("p", "LRANGE", "c", "0", "-1")
    sc.call("p", "EXISTS", "a", "b")


def test_blmpop(sc):
    sc.block("c1", "BLMPOP", "0", "2", "m1", "m2", "RIGHT", "COUNT", "2")
    sc.call("p", "RPUSH", "m2", "1", "2", "3")
    sc.read("c1")
    sc.call("p", "BLMPOP", "0", "2", "m1", "m2", "LEFT")
    sc.call("p", "BLMPOP", "0.01", "1", "none", "LEFT")


def test_killed_blocked_client_leaves_no_trace(sc):
    sc.block("c1", "BLPOP", "q", "0")
    for s in sc.sides:
        cid = s.conn("c1").call("CLIENT", "ID") if False else None
        del cid
    ids = []
    for s in sc.sides:
        info = s.admin.call("CLIENT", "LIST").decode()
        ids.append([line.split()[0][3:] for line in info.splitlines() if "cmd=blpop" in line][0])
    for s, cid in zip(sc.sides, ids, strict=True):
        assert s.admin.call("CLIENT", "KILL", "ID", cid) == b":1\r\n"
    sc.await_blocked(0)
    sc.call("p", "RPUSH", "q", "v")
    sc.call("p", "LLEN", "q")


def test_client_unblock(sc):
    for mode in ("TIMEOUT", "ERROR"):
        sc.block("c1", "BLPOP", "q", "0")
        ids = []
        for s in sc.sides:
            info = s.admin.call("CLIENT", "LIST").decode()
            ids.append([line.split()[0][3:] for line in info.splitlines() if "cmd=blpop" in line][0])
        for s, cid in zip(sc.sides, ids, strict=True):
            assert s.admin.call("CLIENT", "UNBLOCK", cid, mode) == b":1\r\n"
        sc.read("c1")
    sc.call("p", "CLIENT", "UNBLOCK", "999999")


# Timeouts never early, at their edges: tests/unit/test_blocking_timeouts.py (no tolerance below the timeout).


def test_timeout_errors(sc):
    sc.call("p", "BLPOP", "q", "-1")
    sc.call("p", "BLPOP", "q", "abc")
    sc.call("p", "BLPOP", "q", "nan")
    sc.call("p", "BRPOPLPUSH", "a", "b", "-0.5")
    sc.call("p", "BLMOVE", "a", "b", "UP", "LEFT", "0")
    sc.call("p", "BLMPOP", "0", "0", "a", "LEFT")
    sc.call("p", "WAIT", "0", "0")
    sc.call("p", "WAIT", "1", "-1")
    sc.call("p", "WAIT", "1", "10")


def test_no_blocking_inside_multi(sc):
    sc.call("p", "MULTI")
    sc.call("p", "BLPOP", "q", "0")
    sc.call("p", "BRPOPLPUSH", "q", "r", "0")
    sc.call("p", "BLMPOP", "0", "1", "q", "LEFT")
    sc.call("p", "EXEC")


def test_wrongtype_and_immediate(sc):
    sc.call("p", "SET", "s", "v")
    sc.call("p", "BLPOP", "s", "0")
    sc.call("p", "RPUSH", "l", "1")
    sc.call("p", "BLPOP", "missing", "l", "0")
    sc.call("p", "BLMOVE", "s", "l", "LEFT", "LEFT", "0")


def test_served_pop_invalidates_watch(sc):
    sc.block("c1", "BLPOP", "q", "0")
    sc.call("w", "WATCH", "q")
    sc.call("p", "RPUSH", "q", "v")
    sc.read("c1")
    sc.call("w", "MULTI")
    sc.call("w", "PING")
    sc.call("w", "EXEC")


def test_bzpop(sc):
    sc.block("c1", "BZPOPMIN", "z1", "z2", "0")
    sc.block("c2", "BZPOPMAX", "z2", "0")
    sc.call("p", "ZADD", "z2", "1", "a", "2", "b", "3", "c")
    sc.read("c1")
    sc.read("c2")
    sc.block("c3", "BZMPOP", "0", "2", "z3", "z4", "MAX", "COUNT", "5")
    sc.call("p", "ZADD", "z4", "1.5", "x", "2.5", "y")
    sc.read("c3")
    sc.call("p", "ZRANGE", "z2", "0", "-1", "WITHSCORES")
    sc.call("p", "SET", "str", "v")
    sc.call("p", "BZPOPMIN", "str", "0")
    sc.call("p", "BZPOPMIN", "none", "0.01")
    sc.call("p", "MULTI")
    sc.call("p", "BZMPOP", "0", "1", "none", "MIN")
    sc.call("p", "EXEC")


def test_xread_block(sc):
    sc.call("p", "XADD", "s", "1-1", "f", "v")
    sc.block("c1", "XREAD", "BLOCK", "0", "STREAMS", "s", "s2", "$", "$")
    sc.block("c2", "XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "s2", "0-0")
    sc.call("p", "XADD", "s2", "2-1", "a", "1")
    sc.read("c1")
    sc.read("c2")
    sc.call("p", "XREAD", "BLOCK", "10", "STREAMS", "s", "$")
    sc.call("p", "XADD", "s", "3-1", "g", "h")
    sc.call("p", "XREAD", "BLOCK", "0", "STREAMS", "s", "2-0")


def test_xreadgroup_block_shares_entries(sc):
    sc.call("p", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    sc.block("c1", "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    sc.block("c2", "XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", ">")
    sc.call("p", "XADD", "s", "1-1", "f", "1")
    sc.read("c1")
    sc.call("p", "XADD", "s", "2-1", "f", "2")
    sc.read("c2")
    sc.call("p", "XPENDING", "s", "g")
    sc.call("p", "XREADGROUP", "GROUP", "g", "carol", "BLOCK", "0", "STREAMS", "s", "0")  # history: no block


@pytest.mark.parametrize("how", ["del", "destroy", "type", "flushdb", "flushall", "swapdb", "swapdb-stream"])
def test_xreadgroup_woken_with_error(sc, how):
    """A blocked XREADGROUP fails when its stream goes away: deleted, replaced, its group
    destroyed, the database flushed or swapped for one without a stream there (Redis's
    scanDatabaseForDeletedStreams); swapped for one with a stream, it stays blocked."""
    sc.call("p", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    if how == "swapdb-stream":
        sc.call("p", "SELECT", "1")
        sc.call("p", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
        sc.call("p", "SELECT", "0")
    sc.block("c1", "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    sc.block("c2", "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    if how == "del":
        sc.call("p", "DEL", "s")
    elif how == "destroy":
        sc.call("p", "XGROUP", "DESTROY", "s", "g")
    elif how in ("flushdb", "flushall"):
        sc.call("p", how.upper())
    elif how.startswith("swapdb"):
        sc.call("p", "SWAPDB", "0", "1")
    else:
        sc.call("p", "DEL", "s")
        sc.call("p", "SET", "s", "x")
    if how == "swapdb-stream":
        sc.call("p", "PING")
        sc.await_blocked(2)
        sc.call("p", "XADD", "s", "1-1", "k", "v")  # the swapped-in stream has the group too
    sc.read("c1")
    if how == "type":
        sc.call("p", "DEL", "s")
    sc.call("p", "XADD", "s", "5-1", "k", "v")
    sc.read("c2")


def _call_counts(side: Side, names: tuple[str, ...]) -> dict[str, str]:
    """INFO commandstats' calls, rejected_calls and failed_calls of `names` (usec varies)."""
    counts = {}
    for line in side.admin.call("INFO", "commandstats").decode().split("\r\n"):
        name, _, rest = line.partition(":")
        if name.removeprefix("cmdstat_") in names:
            fields = dict(f.split("=") for f in rest.split(","))
            counts[name] = ",".join(f"{k}={fields[k]}" for k in ("calls", "rejected_calls", "failed_calls"))
    return counts


def test_unblocked_with_an_error_counts_as_failed(sc):
    """A blocked command woken with an error (XREADGROUP whose group is destroyed) is a failed call
    of that command, and so is one released by CLIENT UNBLOCK, in either form, as 7.0 counts it
    (updateStatsOnUnblock); one served data is not."""
    for s in sc.sides:
        s.admin.call("CONFIG", "RESETSTAT")
    sc.call("p", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    sc.block("c1", "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    sc.call("p", "XGROUP", "DESTROY", "s", "g")
    sc.read("c1")
    for mode in ("TIMEOUT", "ERROR"):
        sc.block("c1", "BLPOP", "q", "0")
        for s in sc.sides:
            info = s.admin.call("CLIENT", "LIST").decode()
            cid = [line.split()[0][3:] for line in info.splitlines() if "cmd=blpop" in line][0]
            assert s.admin.call("CLIENT", "UNBLOCK", cid, mode) == b":1\r\n"
        sc.read("c1")
    sc.block("c1", "BRPOP", "q", "0")
    sc.call("p", "RPUSH", "q", "v")
    sc.read("c1")
    names = ("xreadgroup", "blpop", "brpop")
    ours, theirs = (_call_counts(s, names) for s in sc.sides)
    assert ours == theirs
    assert ours["cmdstat_blpop"] == "calls=2,rejected_calls=0,failed_calls=2"


def test_list_waiter_ignores_other_types(sc):
    """Redis serves list waiters only from a list: a source that becomes a stream, a zset or a
    string leaves BLPOP and BRPOPLPUSH blocked (not WRONGTYPE) until a list is there."""
    sc.block("c1", "BRPOPLPUSH", "src", "dst", "0")
    sc.block("c2", "BLPOP", "src", "0")
    sc.call("p", "XADD", "src", "1-1", "f", "v")
    sc.call("p", "DEL", "src")
    sc.call("p", "ZADD", "src", "1", "m")
    sc.call("p", "MULTI")
    sc.call("p", "DEL", "src")
    sc.call("p", "SET", "src", "x")
    sc.call("p", "EXEC")
    sc.await_blocked(2)
    sc.call("p", "DEL", "src")
    sc.call("p", "RPUSH", "src", "a", "b")
    sc.read("c1")
    sc.read("c2")
    sc.call("p", "LRANGE", "dst", "0", "-1")


def test_blocked_stream_readers_served_after_trim(sc):
    """A blocked reader is served once the stream's last ID passes its own, even when the same
    XADD trimmed every entry away: it gets its key with no entries, as Redis replies."""
    sc.call("p", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    sc.block("c1", "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    sc.block("c2", "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    sc.call("p", "XADD", "s", "MAXLEN", "0", "5-1", "f", "v")
    sc.read("c1")
    sc.read("c2")
    sc.call("p", "XINFO", "GROUPS", "s")
    sc.call("p", "XADD", "s", "6-1", "f", "v")
    sc.call("p", "XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")


def test_waiters_are_woken_where_redis_signals(sc):
    """Redis 7.0 signals a key when it is created (dbAdd) and when a stream there is deleted or
    overwritten; nothing else wakes a waiter.  So a BZPOPMIN on a key that became a set stays
    blocked when ZUNIONSTORE overwrites the set with a zset, and after a ZADD to that zset; a
    BLPOP on a key that became a string stays blocked when SORT STORE puts a list there and
    after pushes onto it; both are served once their key is created anew."""
    sc.block("z", "BZPOPMIN", "zk", "0")
    sc.block("l", "BLPOP", "lk", "0")
    sc.call("p", "SADD", "zk", "a")
    sc.call("p", "ZUNIONSTORE", "zk", "1", "zk")
    sc.call("p", "ZADD", "zk", "5", "b")
    sc.call("p", "SET", "lk", "x")
    sc.call("p", "RPUSH", "src", "b", "a")
    sc.call("p", "SORT", "src", "ALPHA", "STORE", "lk")
    sc.call("p", "RPUSH", "lk", "c")
    sc.call("p", "LINSERT", "lk", "BEFORE", "c", "d")
    sc.await_blocked(2)
    sc.call("p", "RENAME", "zk", "zk2")
    sc.call("p", "RENAME", "zk2", "zk")  # created anew: signalled
    sc.read("z")
    sc.call("p", "MULTI")
    sc.call("p", "DEL", "lk")
    sc.call("p", "RPUSH", "lk", "e")
    sc.call("p", "EXEC")
    sc.read("l")


def test_ready_order_counts_only_waited_for_types(sc):
    """A key is queued as ready only if some client waits for its value's type, which decides the
    order in which a waiter on several keys is offered them: here "a" is created as a zset while
    only list waiters exist, so it is not queued, and "b" (created next) serves the waiter."""
    sc.block("c1", "BLPOP", "a", "b", "0")
    sc.call("p", "MULTI")
    sc.call("p", "ZADD", "a", "1", "x")
    sc.call("p", "DEL", "a")
    sc.call("p", "RPUSH", "b", "from-b")
    sc.call("p", "RPUSH", "a", "from-a")
    sc.call("p", "EXEC")
    assert sc.read("c1").endswith(b"from-b\r\n")
    sc.call("p", "LRANGE", "a", "0", "-1")
