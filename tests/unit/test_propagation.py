"""Propagation to the AOF against redis-server's (tests/support/aofdiff.py): what each command appends."""

from __future__ import annotations

from tests.support.diff import encode_command


def test_plain_writes_and_select(aofdiff):
    aofdiff.run("SET", "a", "1")
    aofdiff.run("GET", "a")  # reads append nothing
    aofdiff.run("SELECT", "3")
    aofdiff.run("LPUSH", "l", "x", "y")
    aofdiff.run("SELECT", "0")
    aofdiff.run("DEL", "a", "nosuchkey")
    aofdiff.run("DEL", "nosuchkey")  # nothing changed: nothing appended
    aofdiff.check()


def test_transaction_wraps_its_writes(aofdiff):
    aofdiff.run("MULTI")
    aofdiff.run("SET", "a", "1")
    aofdiff.run("GET", "a")
    aofdiff.run("INCR", "a")
    aofdiff.run("EXEC")
    aofdiff.run("MULTI")
    aofdiff.run("SET", "b", "1")  # one write: no MULTI/EXEC around it
    aofdiff.run("EXEC")
    aofdiff.check()


# One pipeline, sent as one write: raxdb runs it in its fast loop (server/net/client.py's
# `_run_fast`), through `execute()` only where a command needs processCommand's checks (MULTI,
# EXEC); what each command propagates must not depend on which of the two ran it.
PIPELINE = [
    ("SET", "a", "1"), ("GET", "a"), ("INCR", "n"), ("INCR", "n"), ("INCRBY", "n", "10"),
    ("LPUSH", "l", "x", "y"), ("RPUSH", "l", "z"), ("LPOP", "l"), ("RPOP", "l"), ("LPOP", "nolist"),
    ("LRANGE", "l", "0", "-1"), ("HSET", "h", "f", "v"), ("HSET", "h", "f", "v"), ("HGET", "h", "f"),
    ("SADD", "s", "m"), ("SADD", "s", "m"),  # no change the second time: nothing appended
    ("SELECT", "2"), ("SET", "b", "2"), ("GET", "gone"), ("SELECT", "0"),
    ("GET", "gone"),  # found expired: its DEL, and not the GET
    ("SET", "gone", "back"), ("DEL", "nosuchkey"), ("MULTI",), ("SET", "t", "1"), ("INCR", "t"),
    ("GET", "t"), ("EXEC",), ("APPEND", "t", "x"),
    ("SELECT", "3"), ("LPUSH", "l3", "x"), ("GET", "gone"), ("SELECT", "0"), ("DEL", "a", "b"),
]


def test_pipelined_commands_propagate_as_sent_one_by_one(aofdiff):
    for c in aofdiff.conns:
        c.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")  # `gone` stays until a command finds it
    try:
        aofdiff.run("SET", "gone", "v", "PX", "1")
        aofdiff.run("DEBUG", "SLEEP", "0.01")
        aofdiff.ops()  # the set-up is not compared: SET ... PX's deadline differs
        replies = []
        for c in aofdiff.conns:
            c.send(b"".join(encode_command(cmd) for cmd in PIPELINE))
            replies.append([c.read_frame() for _ in PIPELINE])
        assert replies[0] == replies[1]
        ops = aofdiff.check(mask_times=True)
        assert [b"DEL", b"gone"] in ops and [b"GET", b"a"] not in ops  # what the test is about
    finally:
        for c in aofdiff.conns:
            c.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def test_a_failed_rewriting_command_leaves_no_rewrite_behind(aofdiff):
    """GEOADD rewrites itself to ZADD, then fails on a list: the next write is appended as itself
    (a leftover rewrite stood in for it; found by tests/fuzz/test_fuzz_aof.py)."""
    aofdiff.run("LPUSH", "l", "x")
    aofdiff.run("SET", "k", "v")
    assert aofdiff.run("GEOADD", "l", "13.361389", "40.7", "b")[0].startswith(b"-WRONGTYPE")
    aofdiff.run("RENAME", "k", "k2")
    aofdiff.check()


def test_arguments_of_every_length_are_encoded_as_redis_writes_them(aofdiff):
    """Propagated commands are written by reply.py's encoder (a byte loop) below 512 bytes an
    argument and by hiredis's above: the lengths around that line, the empty argument, CRLF and
    NUL inside values, a bulk length of each digit count, and a transaction mixing them, all
    append what redis-server appends."""
    for n in (0, 1, 9, 10, 99, 100, 511, 512, 513, 1000, 10_000):
        aofdiff.run("SET", f"k{n}", "v\r\n\0" * (n // 4) + "x" * (n % 4))
    aofdiff.run("RPUSH", "l", "", "a" * 511, "b" * 512, "\r\n")
    aofdiff.run("MULTI")
    aofdiff.run("SET", "big", "z" * 600)
    aofdiff.run("SET", "small", "")
    aofdiff.run("EXEC")
    aofdiff.check()
