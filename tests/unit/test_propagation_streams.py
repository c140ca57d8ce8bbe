"""Propagation of streams, served blocked clients, scripts and functions, MULTI/EXEC and PUBLISH:
what raxdb appends to its AOF against what redis-server 7.0 appends (tests/support/aofdiff.py).

XADD's generated IDs and XCLAIM's TIME are clock readings that differ between the two servers:
XCLAIM's TIME is masked (mask_times), and a generated ID is checked against the ID each server
replied with, then masked.  Everything else is compared exactly.
"""

from __future__ import annotations

import random
import re
import time

import hiredis
import pytest

from tests.support.aofdiff import AofDiff, mask
from tests.support.diff import RawConnection

_GEN_ID = re.compile(rb"^(\d{13})-(\d+)$")


def _masked_ids(ops: list[list[bytes]]) -> list[list[bytes]]:
    """Generated stream IDs (a 13-digit ms part) as <id>; the rest as mask() leaves it."""
    return [[b"<id>" if _GEN_ID.match(a) else a for a in op] for op in mask(ops)]


def _decode(raw: bytes):
    r = hiredis.Reader()
    r.feed(raw)
    return r.gets()


def check_ids(d: AofDiff) -> list[list[bytes]]:
    ours, theirs = d.ops()
    ours, theirs = _masked_ids(ours), _masked_ids(theirs)
    assert ours == theirs, f"\nraxdb: {ours}\nredis: {theirs}"
    return ours


class Waiter:
    """A second client on each server (in database `db`), sent a blocking command and left blocked
    (awaited through INFO's blocked_clients), whose replies are read when it is served."""

    def __init__(self, d: AofDiff, cmd: tuple, db: int = 0) -> None:
        self.conns = [RawConnection(s.port) for s in d.servers]
        if db:
            for c in self.conns:
                c.call("SELECT", str(db))
        before = [_blocked(c) for c in d.conns]
        for c in self.conns:
            c.send(_encode(cmd))
        for c, n in zip(d.conns, before, strict=True):
            deadline = time.monotonic() + 10
            while _blocked(c) <= n:  # an event polled for: the server has parked the command
                assert time.monotonic() < deadline, "the waiter never blocked"
                time.sleep(0.002)

    def replies(self) -> tuple[bytes, bytes]:
        ours, theirs = (c.read_frame() for c in self.conns)
        return ours, theirs

    def close(self) -> None:
        for c in self.conns:
            c.close()


def _blocked(c: RawConnection) -> int:
    info = _decode(c.call("INFO", "clients"))
    return int(re.search(rb"blocked_clients:(\d+)", info).group(1))


def _encode(cmd: tuple) -> bytes:
    from tests.support.diff import encode_command

    return encode_command(cmd)


def run_all(d: AofDiff, *cmds: tuple) -> None:
    for cmd in cmds:
        ours, theirs = d.run(*cmd)
        assert ours == theirs, (cmd, ours, theirs)


# ---- XADD and the plain stream writes -------------------------------------------------------------
@pytest.mark.parametrize("cmd", [
    ("XADD", "s", "1-1", "f", "v"),
    ("XADD", "s", "5-*", "f", "v"),
    ("XADD", "s", "MAXLEN", "=", "2", "9-1", "f", "v"),
    ("XADD", "s", "MAXLEN", "2", "9-*", "f", "v"),
    ("XADD", "s", "MAXLEN", "~", "2", "9-1", "f", "v"),
    ("XADD", "s", "maxlen", "~", "0", "9-1", "f", "v"),
    ("XADD", "s", "MINID", "~", "3", "9-1", "f", "v"),
    ("XADD", "s", "MINID", "=", "3", "9-1", "f", "v"),
    ("XADD", "s", "MINID", "~", "3", "LIMIT", "2", "9-1", "f", "v"),
    ("XADD", "s", "MAXLEN", "~", "1", "LIMIT", "0", "9-1", "f", "v"),
    ("XADD", "s", "NOMKSTREAM", "9-1", "f", "v"),
    ("XADD", "nokey", "NOMKSTREAM", "9-1", "f", "v"),  # nothing created: nothing appended
    ("XADD", "nokey", "NOMKSTREAM", "*", "f", "v"),
    ("XADD", "s", "2-1", "f", "v"),  # an error: nothing
    ("XADD", "s", "10", "f", "v"),  # the sequence left out: given as 0, not rewritten
    ("XADD", "s", "010-01", "f", "v"),
    ("XADD", "s", "MAXLEN", "~", "+3", "10-*", "f", "v"),
    ("xadd", "s", "minid", "~", "4", "limit", "1", "10-*", "f", "v"),
])
def test_xadd(aofdiff, cmd):
    aofdiff.run("CONFIG", "SET", "stream-node-max-entries", "2")
    run_all(aofdiff, *[("XADD", "s", f"{i}-1", "f", str(i)) for i in range(1, 8)])
    aofdiff.run("XDEL", "s", "1-1")  # a tombstone at the head: MINID's rewrite counts it
    aofdiff.ops()
    run_all(aofdiff, cmd)
    aofdiff.check()
    aofdiff.run("CONFIG", "SET", "stream-node-max-entries", "100")


def test_xadd_repeated_given_id_forms(aofdiff):
    """A repeated `MAXLEN ~ <n> <ID>` and IDs straight after the key (parsed without the option
    parser): the trim made exact and `ms-*` made the ID it became, every time."""
    aofdiff.run("CONFIG", "SET", "stream-node-max-entries", "2")
    run_all(aofdiff, *[("XADD", "s", "MAXLEN", "~", "3", f"{i}-1", "f", str(i)) for i in range(1, 9)],
            ("XADD", "s", "MAXLEN", "~", "3", "9-*", "f", "v"), ("XADD", "s", "MAXLEN", "~", "3", "9-*", "f", "v"),
            ("XADD", "s", "MAXLEN", "~", "3", "9", "f", "v"), ("XADD", "s", "10-*", "f", "v"),
            ("XADD", "s", "10-*", "f", "v"), ("XADD", "s", "11", "f", "v"), ("XADD", "s", "12-3", "f", "v"))
    aofdiff.check()
    aofdiff.run("CONFIG", "SET", "stream-node-max-entries", "100")


def test_xadd_star_is_the_replied_id(aofdiff):
    aofdiff.run("CONFIG", "SET", "stream-node-max-entries", "2")
    sent = [("XADD", "g", "*", "a", "1"), ("XADD", "g", "MAXLEN", "~", "3", "*", "a", "2"),
            ("XADD", "g", "MAXLEN", "~", "3", "LIMIT", "1", "*", "a", "3"), ("XADD", "g", "MINID", "~", "0", "*", "a", "4"),
            ("XADD", "g", "NOMKSTREAM", "*", "a", "5")] * 2 + [("XADD", "g", "9999999999999-*", "a", "6"),
                                                              ("XADD", "g", "9999999999999-*", "a", "7"),
                                                              ("XADD", "g", "*", "a", "8")]
    replies = [aofdiff.run(*cmd) for cmd in sent]
    ours, theirs = aofdiff.ops()
    for ops, which in ((ours, 0), (theirs, 1)):
        written = [op for op in ops if op[0] == b"XADD"]
        assert len(written) == len(sent)
        for op, reply in zip(written, replies, strict=True):
            rid = _decode(reply[which])
            assert rid in op, (op, rid)
    assert _masked_ids(ours) == _masked_ids(theirs), (ours, theirs)
    aofdiff.run("CONFIG", "SET", "stream-node-max-entries", "100")


@pytest.mark.parametrize("cmd", [
    ("XTRIM", "s", "MAXLEN", "3"),
    ("XTRIM", "s", "MAXLEN", "=", "3"),
    ("XTRIM", "s", "MAXLEN", "~", "3"),
    ("XTRIM", "s", "MAXLEN", "~", "3", "LIMIT", "1"),
    ("XTRIM", "s", "MINID", "~", "6-1"),
    ("XTRIM", "s", "MINID", "6-1"),
    ("XTRIM", "s", "MAXLEN", "~", "100"),  # nothing trimmed: nothing appended
    ("XTRIM", "nokey", "MAXLEN", "0"),
    ("XDEL", "s", "3-1", "4", "99-1"),
    ("XDEL", "s", "99-1"),
    ("XSETID", "s", "100-1"),
    ("XSETID", "s", "100-1", "ENTRIESADDED", "50", "MAXDELETEDID", "3-0"),
])
def test_stream_writes(aofdiff, cmd):
    aofdiff.run("CONFIG", "SET", "stream-node-max-entries", "2")
    run_all(aofdiff, *[("XADD", "s", f"{i}-1", "f", str(i)) for i in range(1, 10)])
    aofdiff.run("XDEL", "s", "1-1")
    aofdiff.ops()
    run_all(aofdiff, cmd)
    aofdiff.check()
    aofdiff.run("CONFIG", "SET", "stream-node-max-entries", "100")


# ---- consumer groups -----------------------------------------------------------------------------
def _group_setup(d: AofDiff, n: int = 5) -> None:
    run_all(d, *[("XADD", "s", f"{i}-0", "f", str(i)) for i in range(1, n + 1)],
            ("XGROUP", "CREATE", "s", "g", "0"))
    d.ops()


@pytest.mark.parametrize("cmds", [
    [("XGROUP", "CREATE", "s", "g2", "$")],
    [("XGROUP", "CREATE", "s", "g2", "3-0", "ENTRIESREAD", "3")],
    [("XGROUP", "CREATE", "new", "g", "$", "MKSTREAM")],
    [("XGROUP", "CREATE", "s", "g", "$")],  # BUSYGROUP: nothing
    [("XGROUP", "SETID", "s", "g", "2-0")],
    [("XGROUP", "SETID", "s", "g", "$", "ENTRIESREAD", "1")],
    [("XGROUP", "DESTROY", "s", "g")],
    [("XGROUP", "DESTROY", "s", "nogroup")],
    [("XGROUP", "CREATECONSUMER", "s", "g", "c")],
    [("XGROUP", "CREATECONSUMER", "s", "g", "c"), ("XGROUP", "CREATECONSUMER", "s", "g", "c")],
    [("XGROUP", "DELCONSUMER", "s", "g", "c")],
    [("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"), ("XGROUP", "DELCONSUMER", "s", "g", "c")],
    [("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">")],
    [("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")],
    [("XREADGROUP", "GROUP", "g", "c", "NOACK", "COUNT", "2", "STREAMS", "s", ">")],
    [("XGROUP", "CREATECONSUMER", "s", "g", "c"),
     ("XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "s", ">")],
    [("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"),
     ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")],  # nothing new: nothing
    [("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")],  # history of a new consumer: nothing
    [("XREADGROUP", "GROUP", "g", "c", "COUNT", "3", "STREAMS", "s", ">"),
     ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")],
    [("XREADGROUP", "GROUP", "g", "c", "COUNT", "3", "STREAMS", "s", ">"),
     ("XACK", "s", "g", "1-0", "2", "9-0")],
    [("XACK", "s", "g", "1-0")],
    [("XADD", "s2", "1-0", "f", "v"), ("XGROUP", "CREATE", "s2", "g", "0"),
     ("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", "s2", ">", ">"),
     ("XREADGROUP", "GROUP", "g", "d", "NOACK", "STREAMS", "s", "s2", ">", ">")],
    [("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "nokey", ">", ">")],  # NOGROUP: nothing
    [("XREADGROUP", "GROUP", "g", "c", "COUNT", "3", "STREAMS", "s", ">"),
     ("XGROUP", "SETID", "s", "g", "0"),
     ("XREADGROUP", "GROUP", "g", "d", "COUNT", "2", "STREAMS", "s", ">")],  # NACKs change owner
    [("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">"),
     ("XDEL", "s", "3-0"),
     ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")],  # ENTRIESREAD past a tombstone
    [("XREADGROUP", "GROUP", "g", "c", "NOACK", "COUNT", "2", "STREAMS", "s", ">"),
     ("XDEL", "s", "3-0"),
     ("XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "s", ">")],
])
def test_groups(aofdiff, cmds):
    _group_setup(aofdiff)
    run_all(aofdiff, *cmds)
    aofdiff.check(mask_times=True)


@pytest.mark.parametrize("cmds", [
    [("XCLAIM", "s", "g", "d", "0", "1-0", "2")],  # the ID as the client spelled it
    [("XCLAIM", "s", "g", "d", "0", "1-0", "JUSTID")],
    [("XCLAIM", "s", "g", "d", "0", "1-0", "RETRYCOUNT", "7", "IDLE", "5")],
    [("XCLAIM", "s", "g", "d", "0", "5-0", "FORCE")],
    [("XCLAIM", "s", "g", "d", "0", "5-0")],  # not pending, no FORCE: nothing
    [("XCLAIM", "s", "g", "d", "0", "5-0", "LASTID", "4-0")],  # only the last ID: XGROUP SETID
    [("XCLAIM", "s", "g", "d", "0", "1-0", "LASTID", "4-0")],
    [("XCLAIM", "s", "g", "d", "999999999", "1-0")],  # not idle enough: nothing
    [("XDEL", "s", "2-0"), ("XCLAIM", "s", "g", "d", "0", "1-0", "2-0")],  # a deleted entry's NACK dropped
    [("XAUTOCLAIM", "s", "g", "d", "0", "0")],
    [("XAUTOCLAIM", "s", "g", "d", "0", "0", "COUNT", "1", "JUSTID")],
    [("XDEL", "s", "1-0", "3-0"), ("XAUTOCLAIM", "s", "g", "d", "0", "0")],
    [("XAUTOCLAIM", "s", "g", "d", "999999999", "0")],
])
def test_claims(aofdiff, cmds):
    _group_setup(aofdiff)
    run_all(aofdiff, ("XREADGROUP", "GROUP", "g", "c", "COUNT", "3", "STREAMS", "s", ">"))
    aofdiff.ops()
    run_all(aofdiff, *cmds)
    aofdiff.check(mask_times=True)


# ---- served blocked clients ----------------------------------------------------------------------
@pytest.mark.parametrize("block,wake", [
    (("BLPOP", "l", "l2", "0"), [("RPUSH", "l", "a", "b")]),
    (("BRPOP", "l2", "l", "0"), [("RPUSH", "l", "a", "b")]),
    (("BLMOVE", "l", "dst", "left", "Right", "0"), [("RPUSH", "l", "a", "b")]),
    (("BLMOVE", "l", "l", "RIGHT", "LEFT", "0"), [("RPUSH", "l", "a", "b")]),
    (("BRPOPLPUSH", "l", "dst", "0"), [("RPUSH", "l", "a", "b")]),
    (("BLMPOP", "0", "2", "l2", "l", "LEFT", "COUNT", "5"), [("RPUSH", "l", "a", "b")]),
    (("BLMPOP", "0", "1", "l", "RIGHT"), [("RPUSH", "l", "a", "b")]),
    (("BZPOPMIN", "z", "0"), [("ZADD", "z", "1", "a", "2", "b")]),
    (("BZPOPMAX", "z", "0"), [("ZADD", "z", "1", "a", "2", "b")]),
    (("BZMPOP", "0", "1", "z", "MIN", "COUNT", "5"), [("ZADD", "z", "1", "a", "2", "b")]),
    (("BZMPOP", "0", "1", "z", "MAX"), [("ZADD", "z", "1", "a")]),
    (("BLPOP", "l", "0"), [("MULTI",), ("RPUSH", "l", "a"), ("SET", "x", "1"), ("EXEC",)]),
    (("BLPOP", "l", "0"), [("EVAL", "redis.call('rpush', KEYS[1], 'a'); redis.call('set', 'x', 1)", "1", "l")]),
    (("XREAD", "BLOCK", "0", "STREAMS", "s", "$"), [("XADD", "s", "9-0", "f", "v")]),
    (("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"), [("XADD", "s", "9-0", "f", "v")]),
    (("XREADGROUP", "GROUP", "g", "newc", "NOACK", "BLOCK", "0", "STREAMS", "s", ">"),
     [("XADD", "s", "9-0", "f", "v")]),
    (("XREADGROUP", "GROUP", "g", "c", "COUNT", "5", "BLOCK", "0", "STREAMS", "s", ">"),
     [("MULTI",), ("XADD", "s", "9-0", "f", "v"), ("XADD", "s", "10-0", "f", "v"), ("EXEC",)]),
    (("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"), [("XGROUP", "DESTROY", "s", "g")]),
    (("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"), [("DEL", "s")]),
])
def test_served(aofdiff, block, wake):
    """A served waiter's command travels as its non-blocking form (or XCLAIMs), after the write
    that woke it, in the waiter's database."""
    run_all(aofdiff, ("SELECT", "2"), ("XADD", "s", "1-0", "f", "v"), ("XGROUP", "CREATE", "s", "g", "$"),
            ("XGROUP", "CREATECONSUMER", "s", "g", "c"))
    aofdiff.ops()
    w = Waiter(aofdiff, block, db=2)
    run_all(aofdiff, *wake)
    ours, theirs = w.replies()
    w.close()
    assert ours == theirs
    aofdiff.run("SELECT", "0")
    aofdiff.check(mask_times=True)


@pytest.mark.parametrize("cmd", [
    ("BLPOP", "l2", "l", "0"),
    ("BRPOP", "l", "0"),
    ("BLMOVE", "l", "dst", "left", "Right", "0"),
    ("BRPOPLPUSH", "l", "dst", "0"),
    ("BLMPOP", "0", "2", "l2", "l", "LEFT", "COUNT", "5"),
    ("BLMPOP", "0", "1", "l", "right"),
    ("BZPOPMIN", "z2", "z", "0"),
    ("BZPOPMAX", "z", "0"),
    ("BZMPOP", "0", "1", "z", "MIN", "COUNT", "5"),
    ("BZMPOP", "0", "1", "z", "max"),
    ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"),
    ("XREAD", "BLOCK", "0", "STREAMS", "s", "0"),
])
def test_not_blocked(aofdiff, cmd):
    """A blocking command with something to take at once travels as its non-blocking form."""
    run_all(aofdiff, ("RPUSH", "l", "a", "b", "c"), ("ZADD", "z", "1", "a", "2", "b"),
            ("XADD", "s", "1-0", "f", "v"), ("XGROUP", "CREATE", "s", "g", "0"))
    aofdiff.ops()
    run_all(aofdiff, cmd)
    aofdiff.run("MULTI")  # inside a transaction it cannot block either
    aofdiff.run(*cmd)
    aofdiff.run("EXEC")
    aofdiff.check(mask_times=True)


def test_served_in_turn(aofdiff):
    """Two waiters on one key, served by one push: each one's pop on its own, after the push."""
    w1 = Waiter(aofdiff, ("BLPOP", "l", "0"))
    w2 = Waiter(aofdiff, ("BLMOVE", "l", "l2", "RIGHT", "LEFT", "0"))
    w3 = Waiter(aofdiff, ("BLMPOP", "0", "1", "l2", "LEFT", "COUNT", "3"))
    run_all(aofdiff, ("RPUSH", "l", "a", "b", "c"))
    for w in (w1, w2, w3):
        ours, theirs = w.replies()
        w.close()
        assert ours == theirs
    aofdiff.check()


# ---- scripts and functions -----------------------------------------------------------------------
LIB = "#!lua name=lib\nredis.register_function('w', function(keys, args) redis.call('set', keys[1], args[1]); " \
      "return redis.call('incr', keys[2]) end)\n" \
      "redis.register_function('one', function(keys, args) return redis.call('set', keys[1], args[1]) end)\n" \
      "redis.register_function{function_name='r', callback=function(keys) return redis.call('get', keys[1]) end, " \
      "flags={'no-writes'}}"


@pytest.mark.parametrize("cmds", [
    [("EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "k")],
    [("EVAL", "redis.call('set', KEYS[1], 'v'); return redis.call('incr', 'n')", "1", "k")],
    [("EVAL", "return redis.call('get', 'k')", "0")],
    [("EVAL_RO", "return redis.call('get', 'k')", "0")],
    [("EVAL", "redis.call('select', 3); redis.call('set', 'k', 1); redis.call('select', 0); "
      "return redis.call('set', 'k', 2)", "0")],
    [("EVAL", "redis.call('set', 'a', 1); error('boom')", "0")],  # what ran before the error travels
    [("EVAL", "return redis.pcall('incr', 'list')", "0")],
    [("SCRIPT", "LOAD", "return redis.call('set', 'a', 1)"),
     ("EVALSHA", "bd5fa8a1d5ad2b08a6e9b0a6ad6a3c0ba3578ee8", "0"),
     ("SCRIPT", "FLUSH"), ("SCRIPT", "FLUSH", "ASYNC")],
    [("EVAL", "redis.set_repl(redis.REPL_NONE); redis.call('set', 'a', 1); redis.set_repl(redis.REPL_ALL); "
      "redis.call('set', 'b', 1)", "0")],
    [("EVAL", "redis.set_repl(redis.REPL_REPLICA); redis.call('set', 'a', 1); redis.call('set', 'b', 1)", "0")],
    [("EVAL", "redis.set_repl(redis.REPL_SLAVE); redis.call('set', 'a', 1); redis.set_repl(redis.REPL_AOF); "
      "redis.call('set', 'b', 1); redis.call('set', 'c', 1)", "0")],
    [("EVAL", "redis.set_repl(redis.REPL_NONE); redis.call('set', 'a', 1)", "0")],
    [("EVAL", "redis.set_repl(redis.REPL_NONE); return redis.call('xreadgroup', 'GROUP', 'g', 'c', 'STREAMS', "
      "'s', '>')", "0")],
    [("EVAL", "redis.set_repl(7)", "0")],
    [("EVAL", "redis.set_repl(-1)", "0")],
    [("EVAL", "redis.set_repl('2')", "0")],
    [("EVAL", "redis.set_repl('x')", "0")],
    [("EVAL", "redis.set_repl()", "0")],
    [("EVAL", "redis.set_repl(1, 2)", "0")],
    [("EVAL", "redis.set_repl(2.7); redis.call('set', 'a', 1)", "0")],
    [("EVAL", "return redis.replicate_commands()", "0")],
    [("EVAL", "redis.call('xreadgroup', 'GROUP', 'g', 'c', 'STREAMS', 's', '>'); "
      "return redis.call('xadd', 's', '5-*', 'f', 'v')", "0")],
    [("FUNCTION", "LOAD", LIB), ("FCALL", "w", "2", "k", "n", "v"), ("FCALL", "one", "1", "k", "v"),
     ("FCALL", "r", "1", "k"), ("FCALL_RO", "r", "1", "k"),
     ("FUNCTION", "DELETE", "lib"), ("FUNCTION", "DELETE", "lib"), ("FUNCTION", "FLUSH"),
     ("FUNCTION", "FLUSH", "SYNC")],
    [("FUNCTION", "LOAD", "REPLACE", LIB), ("FUNCTION", "LOAD", LIB), ("FUNCTION", "LOAD", "bad")],
    [("MULTI",), ("EVAL", "redis.call('set', 'a', 1); redis.call('set', 'b', 2)", "0"), ("SET", "c", "3"),
     ("EXEC",)],
    [("MULTI",), ("EVAL", "redis.call('set', 'a', 1)", "0"), ("EXEC",)],
    [("MULTI",), ("FCALL", "w", "2", "k", "n", "v"), ("EXEC",)],
])
def test_scripts(aofdiff, cmds):
    run_all(aofdiff, ("FUNCTION", "FLUSH"), ("FUNCTION", "LOAD", LIB), ("SET", "k", "1"), ("RPUSH", "list", "x"),
            ("XADD", "s", "1-0", "f", "v"), ("XGROUP", "CREATE", "s", "g", "0"))
    aofdiff.ops()
    run_all(aofdiff, *cmds)
    check_ids(aofdiff)


def test_function_restore(aofdiff):
    run_all(aofdiff, ("FUNCTION", "FLUSH"), ("FUNCTION", "LOAD", LIB))
    ours, theirs = aofdiff.run("FUNCTION", "DUMP")
    aofdiff.ops()
    for policy in ([], ["FLUSH"], ["REPLACE"], ["APPEND"]):  # APPEND over the same library: an error
        run_all(aofdiff, ("FUNCTION", "RESTORE", _decode(theirs), *policy))
    aofdiff.check()


def test_script_finds_expired_key(aofdiff):
    """A key found expired by a script: its DEL travels with the script's writes."""
    run_all(aofdiff, ("DEBUG", "SET-ACTIVE-EXPIRE", "0"), ("SET", "e", "1", "PX", "1"), ("SET", "e2", "1", "PX", "1"))
    time.sleep(0.01)  # the keys' 1 ms lifetimes pass (a clock, not an event)
    aofdiff.ops()
    run_all(aofdiff, ("EVAL", "return redis.call('get', 'e')", "0"),
            ("EVAL", "redis.call('get', 'e2'); return redis.call('set', 'x', 1)", "0"))
    aofdiff.run("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    aofdiff.check()


# ---- MULTI/EXEC and PUBLISH ----------------------------------------------------------------------
@pytest.mark.parametrize("cmds", [
    [("MULTI",), ("SELECT", "1"), ("SET", "a", "1"), ("SELECT", "2"), ("SET", "b", "1"), ("SELECT", "0"),
     ("EXEC",)],
    [("MULTI",), ("SELECT", "1"), ("SET", "a", "1"), ("EXEC",), ("SET", "b", "1"), ("SELECT", "0")],
    [("MULTI",), ("GET", "a"), ("EXISTS", "b"), ("EXEC",)],
    [("MULTI",), ("SET", "a", "1"), ("EXEC",)],
    [("MULTI",), ("SET", "a", "1"), ("DISCARD",)],
    [("WATCH", "w"), ("SET", "w", "changed"), ("MULTI",), ("SET", "a", "1"), ("SET", "b", "2"), ("EXEC",)],
    [("MULTI",), ("SET", "a", "1"), ("INCR", "a"), ("XADD", "s", "5-*", "f", "v"), ("EXEC",)],
    [("MULTI",), ("SET", "a", "1"), ("PUBLISH", "ch", "m"), ("EXEC",)],
    [("MULTI",), ("PUBLISH", "ch", "m"), ("SPUBLISH", "ch", "m"), ("EXEC",)],
    [("PUBLISH", "ch", "m"), ("SPUBLISH", "ch", "m")],
    [("EVAL", "redis.call('publish', 'ch', 'm'); return redis.call('set', 'a', 1)", "0")],
    [("MULTI",), ("SET", "a", "x"), ("INCR", "a"), ("SET", "b", "1"), ("EXEC",)],  # a failing command inside
    [("MULTI",), ("SET", "a", "x"), ("SET", "b"), ("EXEC",)],  # EXECABORT: nothing
    [("MULTI",), ("SET", "a", "x"), ("SELECT", "5"), ("EXEC",), ("SET", "b", "1"), ("SELECT", "0")],
])
def test_multi(aofdiff, cmds):
    run_all(aofdiff, *cmds)
    check_ids(aofdiff)


# ---- a seeded random differential --------------------------------------------------------------
class StreamWorkload:
    """Random stream and consumer-group commands over two streams, with blocked readers served by
    the writes that follow them.  IDs come from a counter that only grows, so every XADD succeeds
    unless its options make it fail the same way on both servers, and a blocked reader is always
    woken by the next XADD to its key."""

    KEYS = ("s1", "s2")
    GROUPS = ("g1", "g2")
    CONSUMERS = ("c1", "c2", "c3")

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)
        self.t = 1

    def some_id(self) -> str:
        """An ID in the range used so far, often a recent one (more likely pending)."""
        r = self.r
        low = max(0, self.t - 10) if r.random() < 0.6 else 0
        return f"{r.randint(low, self.t)}-{r.choice((0, 0, 1))}"

    def xadd(self, key: str) -> tuple:
        r = self.r
        self.t += 1
        opts: list[str] = []
        if r.random() < 0.4:
            strategy = r.choice(("MAXLEN", "MINID"))
            opts += [strategy, r.choice(("~", "=", "~"))]
            opts.append(str(r.randint(0, 6)) if strategy == "MAXLEN" else self.some_id())
            if opts[1] == "~" and r.random() < 0.3:
                opts += ["LIMIT", str(r.randint(0, 3))]
        if r.random() < 0.1:
            opts.append("NOMKSTREAM")
        eid = r.choice((f"{self.t}-*", f"{self.t}-1", f"{self.t}-*"))
        return ("XADD", key, *opts, eid, "f", str(self.t), *(["g", "x"] if r.random() < 0.3 else []))

    def command(self) -> tuple:
        r = self.r
        key, group, cons = r.choice(self.KEYS), r.choice(self.GROUPS), r.choice(self.CONSUMERS)
        kind = r.choices(
            ("xadd", "xreadgroup", "xclaim", "xautoclaim", "xack", "xgroup", "xtrim", "xdel", "xsetid", "del"),
            weights=(30, 20, 8, 5, 10, 10, 5, 5, 2, 1))[0]
        if kind == "xadd":
            return self.xadd(key)
        if kind == "xreadgroup":
            opts = ["COUNT", str(r.randint(1, 4))] if r.random() < 0.7 else []
            if r.random() < 0.3:
                opts.append("NOACK")
            return ("XREADGROUP", "GROUP", group, cons, *opts, "STREAMS", key, r.choice((">", ">", "0")))
        if kind == "xclaim":
            ids = [self.some_id() for _ in range(r.randint(1, 3))]
            opts = []
            for opt in ("FORCE", "JUSTID"):
                if r.random() < 0.3:
                    opts.append(opt)
            if r.random() < 0.3:
                opts += ["RETRYCOUNT", str(r.randint(0, 5))]
            if r.random() < 0.2:
                opts += ["LASTID", self.some_id()]
            return ("XCLAIM", key, group, cons, "0", *ids, *opts)
        if kind == "xautoclaim":
            opts = ["COUNT", str(r.randint(1, 4))] if r.random() < 0.5 else []
            if r.random() < 0.3:
                opts.append("JUSTID")
            return ("XAUTOCLAIM", key, group, cons, "0", self.some_id(), *opts)
        if kind == "xack":
            recent = [f"{i}-{q}" for i in range(max(0, self.t - 12), self.t + 1) for q in (0, 1)]
            return ("XACK", key, group, *r.sample(recent, min(len(recent), r.randint(1, 8))))
        if kind == "xgroup":
            sub = r.choice(("CREATE", "CREATE", "SETID", "DESTROY", "CREATECONSUMER", "DELCONSUMER"))
            if sub == "CREATE":
                return ("XGROUP", "CREATE", key, group, r.choice(("$", "0", self.some_id())),
                        *(["MKSTREAM"] if r.random() < 0.5 else []))
            if sub == "SETID":
                return ("XGROUP", "SETID", key, group, r.choice(("$", self.some_id())),
                        *(["ENTRIESREAD", str(r.randint(0, 5))] if r.random() < 0.3 else []))
            if sub == "DESTROY":
                return ("XGROUP", "DESTROY", key, group)
            return ("XGROUP", sub, key, group, cons)
        if kind == "xtrim":
            strategy = r.choice(("MAXLEN", "MINID"))
            arg = str(r.randint(0, 6)) if strategy == "MAXLEN" else self.some_id()
            approx = r.choice(("~", "=", ""))
            return ("XTRIM", key, strategy, *([approx] if approx else []), arg,
                    *(["LIMIT", str(r.randint(0, 3))] if approx == "~" and r.random() < 0.3 else []))
        if kind == "xdel":
            return ("XDEL", key, *[self.some_id() for _ in range(r.randint(1, 3))])
        if kind == "xsetid":
            self.t += 3
            return ("XSETID", key, f"{self.t}-0")
        return ("DEL", key)

    def wrapped(self) -> list[tuple]:
        """One step: a command, or a few in MULTI/EXEC or in a script."""
        r = self.r
        x = r.random()
        if x < 0.1:
            return [("MULTI",), *[self.command() for _ in range(r.randint(1, 3))], ("EXEC",)]
        if x < 0.17:
            cmds = [self.command() for _ in range(r.randint(1, 3))]
            body = " ".join(f"redis.pcall({', '.join(repr(a) for a in c)});" for c in cmds)
            return [("EVAL", body, "0")]
        return [self.command()]

    def waiter(self, d: AofDiff) -> tuple[Waiter, tuple]:
        """A reader blocked on a stream, and the write that will serve it."""
        r = self.r
        key = r.choice(self.KEYS)
        self.t += 1
        run_all(d, ("XADD", key, f"{self.t}-0", "f", "w"))
        if r.random() < 0.3:
            cmd: tuple = ("XREAD", "COUNT", "3", "BLOCK", "0", "STREAMS", key, "$")
        else:
            group, cons = r.choice(self.GROUPS), r.choice(self.CONSUMERS)
            d.run("XGROUP", "CREATE", key, group, "$")
            run_all(d, ("XGROUP", "SETID", key, group, "$"))
            opts = ["COUNT", str(r.randint(1, 3))] if r.random() < 0.6 else []
            if r.random() < 0.3:
                opts.append("NOACK")
            cmd = ("XREADGROUP", "GROUP", group, cons, *opts, "BLOCK", "0", "STREAMS", key, ">")
        w = Waiter(d, cmd)
        if r.random() < 0.3:
            self.t += 1
            wake: tuple = ("EVAL", f"redis.call('xadd', KEYS[1], '{self.t}-0', 'f', 'a'); "
                           f"return redis.call('xadd', KEYS[1], '{self.t + 1}-0', 'f', 'b')", "1", key)
            self.t += 1
        else:
            self.t += 1
            wake = ("XADD", key, f"{self.t}-*", "f", "wake")
        return w, wake


@pytest.mark.parametrize("seed", range(10))
def test_random_stream_workload(aofdiff, seed):
    wl = StreamWorkload(seed)
    aofdiff.run("CONFIG", "SET", "stream-node-max-entries", str(wl.r.choice((2, 3, 100))))
    appended: list[list[bytes]] = []
    for step in range(200):
        if wl.r.random() < 0.06:
            w, wake = wl.waiter(aofdiff)
            run_all(aofdiff, wake)
            ours, theirs = w.replies()
            w.close()
            assert ours == theirs, (seed, step, ours, theirs)
        else:
            run_all(aofdiff, *wl.wrapped())
        if step % 10 == 9:
            appended += aofdiff.check(mask_times=True)
    appended += aofdiff.check(mask_times=True)
    aofdiff.run("CONFIG", "SET", "stream-node-max-entries", "100")
    seen = {(op[0].upper(), op[1].upper() if op[0] == b"XGROUP" else b"") for op in appended}
    # the workload reached the propagation it is here for
    assert {(b"XCLAIM", b""), (b"XADD", b""), (b"MULTI", b""), (b"XGROUP", b"SETID")} <= seen


def test_served_chain(aofdiff):
    """A served BLMOVE's push serves the next waiter: LMOVE, then that waiter's pop; a BLMOVE onto a
    key of another type is served an error and propagates nothing."""
    run_all(aofdiff, ("SET", "str", "x"))
    aofdiff.ops()
    w1 = Waiter(aofdiff, ("BLMOVE", "a", "b", "LEFT", "RIGHT", "0"))
    w2 = Waiter(aofdiff, ("BRPOP", "b", "0"))
    w3 = Waiter(aofdiff, ("BLMOVE", "c", "str", "LEFT", "RIGHT", "0"))
    run_all(aofdiff, ("RPUSH", "a", "1", "2"), ("RPUSH", "c", "1"))
    for w in (w1, w2, w3):
        ours, theirs = w.replies()
        w.close()
        assert ours == theirs
    aofdiff.check()


@pytest.mark.parametrize("script", [
    "return redis.call('blpop', 'l', 0)",
    "return redis.call('blmove', 'l', 'd', 'left', 'left', 0)",
    "return redis.call('bzmpop', 0, 1, 'z', 'MAX', 'COUNT', 9)",
    "return redis.call('blpop', 'none', 0)",
    "redis.call('xreadgroup', 'GROUP', 'g', 'c', 'NOACK', 'STREAMS', 's', '>'); return redis.call('brpop', 'l', 0)",
])
def test_blocking_in_scripts(aofdiff, script):
    run_all(aofdiff, ("RPUSH", "l", "a", "b"), ("ZADD", "z", "1", "a"), ("XADD", "s", "1-0", "f", "v"),
            ("XGROUP", "CREATE", "s", "g", "0"))
    aofdiff.ops()
    run_all(aofdiff, ("EVAL", script, "0"))
    aofdiff.check()


def test_served_readers_each_flushed(aofdiff):
    """Readers of two groups served by one XADD: each one's XCLAIM on its own, no MULTI around
    both; a NOACK reader of a stream trimmed to nothing is served no entries, its consumer created."""
    run_all(aofdiff, ("XADD", "s", "1-0", "f", "v"), ("XGROUP", "CREATE", "s", "g1", "$"),
            ("XGROUP", "CREATE", "s", "g2", "$"), ("XGROUP", "CREATE", "s", "g3", "$"))
    aofdiff.ops()
    waiters = [Waiter(aofdiff, ("XREADGROUP", "GROUP", g, "c", *opts, "BLOCK", "0", "STREAMS", "s", ">"))
               for g, opts in (("g1", ()), ("g2", ("NOACK",)), ("g3", ("COUNT", "1")))]
    run_all(aofdiff, ("XADD", "s", "2-0", "f", "v"))
    for w in waiters:
        ours, theirs = w.replies()
        assert ours == theirs
    last = Waiter(aofdiff, ("XREADGROUP", "GROUP", "g2", "new", "NOACK", "BLOCK", "0", "STREAMS", "s", ">"))
    run_all(aofdiff, ("XADD", "s", "MAXLEN", "0", "3-0", "f", "v"))
    ours, theirs = last.replies()
    assert ours == theirs
    for w in [*waiters, last]:
        w.close()
    aofdiff.check(mask_times=True)


def _random_waiter(r: random.Random) -> tuple:
    side = lambda: r.choice(("LEFT", "RIGHT", "left"))  # noqa: E731
    return r.choice((
        ("BLPOP", "l1", "l2", "0.3"),
        ("BRPOP", r.choice(("l1", "l2")), "0.3"),
        ("BLMOVE", "l1", r.choice(("l1", "l2", "z1")), side(), side(), "0.3"),
        ("BRPOPLPUSH", "l2", "l1", "0.3"),
        ("BLMPOP", "0.3", "2", "l2", "l1", side(), *(["COUNT", str(r.randint(1, 4))] if r.random() < 0.6 else [])),
        ("BZPOPMIN", "z1", "0.3"),
        ("BZPOPMAX", "z1", "0.3"),
        ("BZMPOP", "0.3", "1", "z1", r.choice(("MIN", "MAX")), *(["COUNT", str(r.randint(1, 3))] if r.random() < 0.6
                                                                  else [])),
    ))


def _random_wake(r: random.Random) -> list[tuple]:
    def write() -> tuple:
        if r.random() < 0.3:
            return ("ZADD", "z1", *[str(x) for i in range(r.randint(1, 3)) for x in (i, f"m{r.randint(0, 5)}")])
        return (r.choice(("RPUSH", "LPUSH")), r.choice(("l1", "l2")), *[f"e{i}" for i in range(r.randint(1, 4))])

    x = r.random()
    if x < 0.25:
        return [("MULTI",), *[write() for _ in range(r.randint(1, 3))], ("EXEC",)]
    if x < 0.4:
        body = " ".join(f"redis.call({', '.join(repr(a) for a in write())});" for _ in range(r.randint(1, 3)))
        return [("EVAL", body, "0")]
    return [write() for _ in range(r.randint(1, 2))]


@pytest.mark.parametrize("seed", range(4))
def test_random_blocked_pops(aofdiff, seed):
    """Rounds of list and zset waiters, then writes (plain, in MULTI, in a script) that serve some
    of them: every served pop after the write, each on its own; the rest time out alike."""
    r = random.Random(seed)
    served = 0
    for _ in range(8):
        run_all(aofdiff, ("DEL", "l1", "l2", "z1"))
        waiters = [Waiter(aofdiff, _random_waiter(r)) for _ in range(r.randint(1, 3))]
        run_all(aofdiff, *_random_wake(r))
        for w in waiters:
            ours, theirs = w.replies()
            w.close()
            assert ours == theirs
            served += ours not in (b"*-1\r\n", b"$-1\r\n")
        aofdiff.check()
    assert served >= 3
