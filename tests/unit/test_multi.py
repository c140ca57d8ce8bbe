"""MULTI / EXEC / DISCARD / WATCH / UNWATCH against redis-server 7.0, byte for byte."""

from __future__ import annotations

import time

import pytest

from tests.support.diff import RawConnection, encode_command


def test_basic_transaction(diff):
    diff.script("""
        MULTI
        SET a 1
        INCR a
        GET a
        EXEC
        GET a
    """)


def test_empty_transaction_and_errors_outside(diff):
    diff.script("""
        EXEC
        DISCARD
        MULTI
        EXEC
        MULTI
        DISCARD
        EXEC
    """)


def test_runtime_errors_are_per_command(diff):
    diff.script("""
        MULTI
        SET a 1
        LPUSH a x
        INCR a
        INCRBY a notanumber
        GET a
        EXEC
    """)


def test_queue_time_errors_abort(diff):
    diff.script("""
        MULTI
        SET a 1
        GET
        SET b 2
        EXEC
        GET a
        MULTI
        NOSUCHCOMMAND x
        EXEC
    """)


def test_nested_multi_and_watch_inside_multi(diff):
    diff.script("""
        MULTI
        MULTI
        SET a 1
        WATCH a
        EXEC
        GET a
    """)


def test_arity_errors_of_transaction_commands(diff):
    diff.script("""
        MULTI x
        DISCARD x
        WATCH
        UNWATCH x
        MULTI
        MULTI x
        EXEC
        MULTI
        DISCARD x
        EXEC
        MULTI
        WATCH
        EXEC
    """)


def test_exec_reply_shapes_per_protocol(diff):
    diff("SADD", "s", "m")
    diff.script("""
        MULTI
        SMEMBERS s
        SISMEMBER s m
        GET nokey
        PING
        ECHO hi
        EXEC
    """)


def test_select_inside_transaction(diff):
    diff.script("""
        MULTI
        SELECT 1
        SET a 1
        SELECT 0
        EXEC
        GET a
        SELECT 1
        GET a
        FLUSHDB
        SELECT 0
    """)


def test_watch_unchanged_key(diff):
    diff.script("""
        SET a 1
        WATCH a b
        GET a
        MULTI
        SET a 2
        EXEC
        GET a
    """)


def test_watch_exec_and_discard_release(diff):
    diff.script("""
        WATCH a
        MULTI
        SET a 3
        EXEC
        SET a 4
        MULTI
        PING
        EXEC
        WATCH a
        MULTI
        DISCARD
        SET a 5
        MULTI
        PING
        EXEC
    """)


def test_watch_in_queued_own_write(diff):
    # The client's own write before MULTI invalidates its WATCH too.
    diff.script("""
        SET a 1
        WATCH a
        SET a 2
        MULTI
        PING
        EXEC
        WATCH a
        SET a 2
        UNWATCH
        MULTI
        PING
        EXEC
        WATCH a
        SET a 3
        WATCH b
        MULTI
        PING
        EXEC
    """)


def _pair(port: int) -> tuple[RawConnection, RawConnection]:
    return RawConnection(port), RawConnection(port)


def _both(raxdb, oracle, steps) -> None:
    """Run `steps(watcher, writer)` on each server; the lists of replies must be identical."""
    results = []
    for port in (raxdb.port, oracle.port):
        watcher, writer = _pair(port)
        try:
            watcher.call("FLUSHALL")
            results.append(steps(watcher, writer))
        finally:
            watcher.close()
            writer.close()
    assert results[0] == results[1]
    return results[0]


@pytest.mark.parametrize("write", [
    ("SET", "k", "2"), ("DEL", "k"), ("APPEND", "k", "x"), ("INCR", "k"), ("EXPIRE", "k", "100"),
    ("GETDEL", "k"), ("SETRANGE", "k", "0", "z"), ("RENAME", "k", "k2"), ("RENAME", "other", "k"),
    ("LPUSH", "k", "x"), ("DEL", "nokey"), ("PERSIST", "k"), ("EXPIRE", "k", "0"), ("SET", "k", "1"),
    ("MOVE", "k", "1"), ("SELECT", "1"), ("COPY", "other", "k", "REPLACE"),
])
def test_write_from_another_client_invalidates(raxdb, oracle, write):
    def steps(watcher, writer):
        out = [watcher.call("SET", "k", "1"), watcher.call("SET", "other", "o")]
        out.append(watcher.call("WATCH", "k"))
        out.append(writer.call(*write))
        out.append(watcher.call("MULTI"))
        out.append(watcher.call("GET", "k"))
        out.append(watcher.call("EXEC"))
        return out

    _both(raxdb, oracle, steps)


def test_watch_other_db_write_does_not_invalidate(raxdb, oracle):
    def steps(watcher, writer):
        out = [watcher.call("SET", "k", "1"), watcher.call("WATCH", "k")]
        out += [writer.call("SELECT", "1"), writer.call("SET", "k", "2")]
        out += [watcher.call("MULTI"), watcher.call("PING"), watcher.call("EXEC")]
        out += [writer.call("FLUSHDB")]
        return out

    _both(raxdb, oracle, steps)


def _wait_gone(conn: RawConnection, key: str) -> None:
    """Until `key` has no TTL left (expired), probing without touching it: PTTL is a read that
    does not count as a write."""
    while conn.call("PTTL", key) != b":-2\r\n":
        time.sleep(0.005)


def _set_and_watch(watcher: RawConnection) -> list[bytes]:
    """SET k with a 100 ms deadline and WATCH it in one write, so the two run back to back: on a
    loaded host the key must not expire before it is watched (a key watched when already expired
    does not fail EXEC)."""
    watcher.send(encode_command(("SET", "k", "1", "PX", "100")) + encode_command(("WATCH", "k")))
    return [watcher.read_frame(), watcher.read_frame()]


def test_watched_key_expiring_fails_exec(raxdb, oracle):
    def steps(watcher, writer):
        out = _set_and_watch(watcher)
        _wait_gone(writer, "k")
        out += [watcher.call("MULTI"), watcher.call("PING"), watcher.call("EXEC")]
        return out

    _both(raxdb, oracle, steps)


def test_watched_key_expiring_while_queued_fails_exec(raxdb, oracle):
    def steps(watcher, writer):
        out = _set_and_watch(watcher) + [watcher.call("MULTI"), watcher.call("PING")]
        _wait_gone(writer, "k")
        out.append(watcher.call("EXEC"))
        return out

    _both(raxdb, oracle, steps)


def test_watch_missing_key_created(raxdb, oracle):
    def steps(watcher, writer):
        out = [watcher.call("WATCH", "k"), writer.call("SET", "k", "v")]
        out += [watcher.call("MULTI"), watcher.call("PING"), watcher.call("EXEC")]
        return out

    _both(raxdb, oracle, steps)


def test_exec_is_atomic_against_other_clients(raxdb, oracle):
    # The other client's command, pipelined during the transaction, runs before or after all of it.
    def steps(watcher, writer):
        out = [watcher.call("MULTI")]
        for i in range(50):
            out.append(watcher.call("RPUSH", "l", str(i)))
        writer.send(b"*2\r\n$4\r\nLLEN\r\n$1\r\nl\r\n")
        out.append(watcher.call("EXEC"))
        n = writer.read_frame()
        assert n in (b":0\r\n", b":50\r\n")
        return out

    _both(raxdb, oracle, steps)


def test_reset_leaves_multi_and_unwatches(raxdb, oracle):
    def steps(watcher, writer):
        out = [watcher.call("SET", "k", "1"), watcher.call("WATCH", "k"), watcher.call("MULTI"),
               watcher.call("SET", "k", "2"), watcher.call("RESET"), watcher.call("EXEC"),
               writer.call("SET", "k", "3"), watcher.call("MULTI"), watcher.call("GET", "k"),
               watcher.call("EXEC")]
        return out

    _both(raxdb, oracle, steps)


def test_disconnect_releases_watches(raxdb):
    c = RawConnection(raxdb.port)
    c.call("WATCH", "a", "b", "c")
    c.close()
    probe = RawConnection(raxdb.port)
    try:
        # A fresh client watching the same keys and a write afterwards behave normally.
        assert probe.call("WATCH", "a") == b"+OK\r\n"
        assert probe.call("MULTI") == b"+OK\r\n"
        assert probe.call("SET", "a", "1") == b"+QUEUED\r\n"
        assert probe.call("EXEC") == b"*1\r\n+OK\r\n"
    finally:
        probe.close()


def test_redis_py_optimistic_locking(r):
    import redis

    r.set("counter", 0)
    other = redis.Redis(port=r.connection_pool.connection_kwargs["port"])
    try:
        attempts = 0
        with r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch("counter")
                    value = int(pipe.get("counter"))
                    attempts += 1
                    if attempts == 1:
                        other.incr("counter")  # a concurrent change: the first attempt must fail
                    pipe.multi()
                    pipe.set("counter", value + 10)
                    pipe.execute()
                    break
                except redis.WatchError:
                    continue
        assert attempts == 2
        assert r.get("counter") == b"11"
    finally:
        other.close()


@pytest.mark.parametrize("flush", [("FLUSHALL",), ("FLUSHDB",), ("FLUSHDB", "ASYNC")])
def test_flush_invalidates_existing_watched_keys(raxdb, oracle, flush):
    def steps(watcher, writer):
        out = [watcher.call("SET", "k", "1"), watcher.call("WATCH", "k", "missing"), writer.call(*flush)]
        out += [watcher.call("MULTI"), watcher.call("PING"), watcher.call("EXEC")]
        out += [watcher.call("WATCH", "missing"), writer.call(*flush)]  # nothing watched existed
        out += [watcher.call("MULTI"), watcher.call("PING"), watcher.call("EXEC")]
        return out

    _both(raxdb, oracle, steps)


def test_flush_of_other_db_leaves_watch(raxdb, oracle):
    def steps(watcher, writer):
        out = [watcher.call("SET", "k", "1"), watcher.call("WATCH", "k")]
        out += [writer.call("SELECT", "1"), writer.call("SET", "k", "x"), writer.call("FLUSHDB")]
        out += [watcher.call("MULTI"), watcher.call("PING"), watcher.call("EXEC")]
        return out

    _both(raxdb, oracle, steps)


def test_swapdb_invalidates(raxdb, oracle):
    def steps(watcher, writer):
        out = [writer.call("SELECT", "1"), writer.call("SET", "k", "1"), watcher.call("WATCH", "k")]
        out += [writer.call("SWAPDB", "0", "1")]
        out += [watcher.call("MULTI"), watcher.call("PING"), watcher.call("EXEC")]
        out += [watcher.call("WATCH", "absent"), writer.call("SWAPDB", "0", "1")]
        out += [watcher.call("MULTI"), watcher.call("PING"), watcher.call("EXEC"), writer.call("FLUSHALL")]
        return out

    _both(raxdb, oracle, steps)


def test_swapdb_and_keys_dead_but_not_reclaimed(diff):
    """SWAPDB follows touchAllWatchedKeysInDb's rules for keys past their deadline that active
    expiry has not reclaimed (it is off here): nothing replaced by a dead key, or a dead key by
    another dead key, is no change; a live key replacing a dead one is."""
    diff.script("""
        DEBUG SET-ACTIVE-EXPIRE 0
        SET x foo PX 1
        DEBUG SLEEP 0.01
        SELECT 1
        WATCH x
        SWAPDB 0 1
        MULTI
        PING
        EXEC
        FLUSHALL
        SET x foo PX 1
        SELECT 0
        SET x bar PX 1
        DEBUG SLEEP 0.01
        WATCH x
        SWAPDB 0 1
        MULTI
        PING
        EXEC
        FLUSHALL
        SET x foo PX 1
        SELECT 1
        SET x live
        SELECT 0
        DEBUG SLEEP 0.01
        WATCH x
        SWAPDB 0 1
        MULTI
        PING
        EXEC
        FLUSHALL
        SET y 1 PX 1
        DEBUG SLEEP 0.01
        WATCH y
        SWAPDB 0 1
        MULTI
        PING
        EXEC
        DEBUG SET-ACTIVE-EXPIRE 1
        SELECT 0
    """)


def test_no_multi_commands_are_refused_at_queue_time(diff):
    diff.script("""
        MULTI
        SET a 1
        SHUTDOWN
        EXEC
        MULTI
        SET a 1
        EXEC x
        EXEC
    """)


# Pipelined in one write, as a client library's transaction goes out: raxdb runs MULTI, the
# queueing and EXEC in its fast loop (server/net/client.py's `_run_fast`), and what EXEC's
# commands change (here maxmemory, by CONFIG SET) holds for the commands after it in the batch.
PIPELINED = [
    ("WATCH", "w"), ("MULTI",), ("SET", "a", "1"), ("INCR", "n"), ("WATCH", "x"), ("MULTI",),
    ("GET",), ("EXEC",), ("EXEC",), ("DISCARD",),
    ("MULTI",), ("SET", "a", "2"), ("HSET", "h", "f", "v"), ("DISCARD",), ("GET", "a"),
    ("MULTI",), ("INCR", "n"), ("CONFIG", "SET", "maxmemory", "1"), ("EXEC",),
    ("SET", "b", "1"),  # refused: over the limit EXEC's CONFIG SET just set
    ("MULTI",), ("SET", "c", "1"), ("EXEC",),  # refused at queue time: EXECABORT
    ("CONFIG", "SET", "maxmemory", "0"), ("SET", "b", "1"), ("MGET", "a", "b", "c", "n"),
    # a queued command that changes how the client's next commands are checked: after EXEC, a
    # RESP2 subscriber's GET is refused
    ("MULTI",), ("SUBSCRIBE", "ch"), ("EXEC",), ("GET", "a"), ("UNSUBSCRIBE",), ("GET", "a"),
]


def test_pipelined_transactions(raxdb, oracle):
    def steps(watcher, writer):
        watcher.send(b"".join(encode_command(cmd) for cmd in PIPELINED))
        return [watcher.read_frame() for _ in PIPELINED]

    try:
        _both(raxdb, oracle, steps)
    finally:  # a failure midway must not leave the limit to the session's next tests
        for port in (raxdb.port, oracle.port):
            conn = RawConnection(port)
            conn.call("CONFIG", "SET", "maxmemory", "0")
            conn.close()


# More distinct command names than the fast loop remembers per batch (8), same-length names
# (SET, GET, DEL), spellings that are not all-lower or all-upper, unknown names and a wrong arity,
# in one write, three times over: each command must be the one its name says.
MANY_NAMES = [
    ("MULTI",), ("set", "k", "1"), ("INCR", "k"), ("GET", "k"), ("EXEC",), ("DEL", "k"), ("Set", "k", "2"),
    ("HSET", "h", "f", "1"), ("HGET", "h", "f"), ("LPUSH", "l", "a"), ("LRANGE", "l", "0", "-1"),
    ("SADD", "s", "m"), ("SCARD", "s"), ("EXISTS", "k", "h"), ("NOSUCH", "x"), ("get",), ("incr", "k"),
    ("MULTI",), ("sEt", "k", "3"), ("hget", "h", "f"), ("Exec",), ("GET", "k"), ("set", "k", "4"),
]


def test_pipelined_batch_of_many_names(raxdb, oracle):
    def steps(watcher, writer):
        watcher.send(b"".join(encode_command(cmd) for cmd in MANY_NAMES * 3))
        return [watcher.read_frame() for _ in MANY_NAMES * 3]

    assert len({cmd[0].upper() for cmd in MANY_NAMES}) > 8
    _both(raxdb, oracle, steps)


# Commands Redis refuses inside MULTI (flag no_multi: SAVE, SYNC, PSYNC, SHUTDOWN), pipelined so
# that the fast loop's queueing branch tests the command's flag: each one aborts its transaction
# (EXECABORT), the commands around it still answer QUEUED, and nothing queued runs.
NO_MULTI = [
    ("MULTI",), ("SET", "a", "1"), ("SAVE",), ("INCR", "n"), ("EXEC",), ("GET", "a"),
    ("MULTI",), ("SYNC",), ("EXEC",),
    ("MULTI",), ("PSYNC", "?", "-1"), ("HSET", "h", "f", "v"), ("EXEC",), ("EXISTS", "h", "n"),
    ("MULTI",), ("SET", "a", "2"), ("EXEC",), ("GET", "a"),
]


def test_pipelined_no_multi_commands(raxdb, oracle):
    def steps(watcher, writer):
        watcher.send(b"".join(encode_command(cmd) for cmd in NO_MULTI))
        return [watcher.read_frame() for _ in NO_MULTI]

    replies = _both(raxdb, oracle, steps)
    assert replies[4].startswith(b"-EXECABORT") and replies[4] == replies[8] == replies[12]
    assert replies[-1] == b"$1\r\n2\r\n"
