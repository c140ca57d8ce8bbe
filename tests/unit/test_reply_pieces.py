"""Replies in pieces (protocol/reply.py's `value`): a big stored value's reply keeps the value by
reference and the connection writes the pieces in order.  Against redis-server 7.0, byte for byte,
in RESP2 and RESP3: big values read alone and pipelined among small replies, changed or replaced
behind a reply still queued (APPEND, SETRANGE, SET, DEL in the same pipeline), inside MULTI/EXEC,
from scripts (the script sees the value), under CLIENT REPLY SKIP and OFF; and the helpers' own
rules (only immutable values by reference, `flat` the reply's bytes)."""

from __future__ import annotations

import re

import pytest

from raxdb.protocol import reply as R
from tests.support.diff import RawConnection, encode_command
from tests.support.servers import run_on_both

BIG = R.PIECE_MIN  # the smallest value sent in pieces
SIZES = (BIG - 1, BIG, 10_000, 100_000, 1_000_000)


def _pipelined(diff, *cmds: tuple) -> list[bytes]:
    """`cmds` sent in one write to each server; each reply compared; raxdb's replies."""
    data = b"".join(encode_command(cmd) for cmd in cmds)
    diff.ours.send(data)
    diff.theirs.send(data)
    out = []
    for cmd in cmds:
        ours, theirs = diff.ours.read_frame(), diff.theirs.read_frame()
        assert ours == theirs, f"RESP{diff.protocol} {cmd!r}\n  raxdb: {ours[:80]!r}\n  redis: {theirs[:80]!r}"
        out.append(ours)
    return out


def _value(n: int, seed: int = 0) -> bytes:
    return bytes((seed + i * 7) % 251 for i in range(n))


def test_values_about_the_threshold(diff):
    for n in SIZES:
        v = _value(n, n)
        diff("SET", "k", v)
        assert diff("GET", "k") == b"$%d\r\n%s\r\n" % (n, v)


def test_pipelined_between_small_replies_in_order(diff):
    big, other = _value(20_000, 1), _value(BIG, 2)
    diff("SET", "big", big)
    diff("SET", "other", other)
    cmds = [("PING",), ("GET", "big"), ("INCR", "n"), ("GET", "big"), ("GET", "other"), ("GET", "missing"),
            ("ECHO", "x"), ("GET", "other")] * 8
    replies = _pipelined(diff, *cmds)
    assert replies[1] == b"$20000\r\n" + big + b"\r\n"


def test_a_reply_queued_is_not_changed_by_later_writes(diff):
    v = _value(30_000, 3)
    diff("SET", "k", v)
    replies = _pipelined(diff, ("GET", "k"), ("APPEND", "k", "tail"), ("GET", "k"), ("SETRANGE", "k", "0", "ZZ"),
                         ("GET", "k"), ("SET", "k", "small"), ("GET", "k"), ("SET", "k", v), ("GETDEL", "k"),
                         ("GET", "k"))
    assert replies[0] == b"$30000\r\n" + v + b"\r\n"
    assert replies[2] == b"$30004\r\n" + v + b"tail\r\n"
    assert replies[4] == b"$30004\r\nZZ" + v[2:] + b"tail\r\n"


def test_the_get_family(diff):
    v = _value(50_000, 4)
    diff("SET", "k", v)
    diff("GETSET", "k", v[::-1])
    diff("SET", "k", v, "GET")
    diff("GETEX", "k", "PX", "100000")
    diff("GETEX", "k", "PERSIST")
    diff("SET", "k", v[:9000], "GET")
    diff("GETDEL", "k")
    diff("GETDEL", "k")
    diff("APPEND", "a", v)  # a value APPEND made (its own buffer)
    diff("APPEND", "a", v)
    diff("GET", "a")
    diff("SETRANGE", "s", "20000", "x")
    diff("GET", "s")


def test_inside_multi_exec(diff):
    v = _value(40_000, 5)
    diff("SET", "k", v)
    diff("MULTI")
    diff("GET", "k")
    diff("PING")
    diff("GET", "k")
    diff("APPEND", "k", "x")
    diff("GET", "k")
    diff("GETDEL", "k")
    reply = diff("EXEC")
    assert reply.startswith(b"*6\r\n$40000\r\n" + v + b"\r\n")
    diff("SET", "k", v)
    _pipelined(diff, ("MULTI",), ("GET", "k"), ("GET", "k"), ("EXEC",), ("GET", "k"))


def test_scripts_see_the_value(diff):
    v = _value(20_000, 6)
    diff("SET", "k", v)
    diff("EVAL", "return redis.call('GET', KEYS[1])", "1", "k")
    diff("EVAL", "local v = redis.call('GET', KEYS[1]) return {string.len(v), string.sub(v, 1, 5)}", "1", "k")
    diff("EVAL", "return redis.pcall('GETEX', KEYS[1], 'PERSIST')", "1", "k")
    diff("EVAL", "local v = redis.call('GET', KEYS[1]) redis.call('SET', KEYS[2], v) return redis.call('STRLEN', KEYS[2])",
         "2", "k", "copy")
    diff("GET", "copy")
    diff("FUNCTION", "LOAD", "#!lua name=pieces\n"
         "redis.register_function('getit', function(keys) return redis.call('GET', keys[1]) end)")
    diff("FCALL", "getit", "1", "k")
    diff("FUNCTION", "DELETE", "pieces")


def test_client_reply_skip_and_off(diff):
    v = _value(25_000, 7)
    diff("SET", "k", v)
    diff.ours.send(encode_command(("CLIENT", "REPLY", "SKIP")) + encode_command(("GET", "k")))
    diff.theirs.send(encode_command(("CLIENT", "REPLY", "SKIP")) + encode_command(("GET", "k")))
    diff("ECHO", "after skip")
    cmds = [("CLIENT", "REPLY", "OFF"), ("GET", "k"), ("SET", "k", "small"), ("GET", "k"), ("SET", "k", v),
            ("GET", "k"), ("CLIENT", "REPLY", "ON"), ("GET", "k")]
    data = b"".join(encode_command(cmd) for cmd in cmds)
    diff.ours.send(data)
    diff.theirs.send(data)
    ours, theirs = diff.ours.read_frame(), diff.theirs.read_frame()
    assert ours == theirs == b"+OK\r\n"  # CLIENT REPLY ON's: nothing of the GETs before it
    assert diff.ours.read_frame() == diff.theirs.read_frame() == b"$25000\r\n" + v + b"\r\n"
    diff("ECHO", "after off")


def test_only_immutable_values_are_kept_by_reference():
    v = _value(BIG)
    r = R.value(v)
    assert type(r) is tuple and r[1] is v  # by reference
    assert R.flat(r) == R.bulk(v)
    ba = bytearray(v)
    r = R.value(ba)
    assert type(r) is bytes and r == R.bulk(v)  # a bytearray may change in place: copied
    ba[0] ^= 1
    assert r == R.bulk(v)
    assert R.value(v[:-1]) == R.bulk(v[:-1])  # below PIECE_MIN: one bytes object
    assert R.flat(b"+OK\r\n") == b"+OK\r\n"


def _monitored(srv) -> tuple[bytes, list[bytes]]:
    """A client GETs a big value (alone, pipelined, in EXEC) while another MONITORs: its replies,
    and the monitor's lines without their time stamps and addresses."""
    v = _value(30_000, 8)
    mon = RawConnection(srv.port)
    assert mon.call("MONITOR") == b"+OK\r\n"
    c = RawConnection(srv.port)
    c.call("SET", "k", v)
    cmds = [("GET", "k"), ("MULTI",), ("GET", "k"), ("EXEC",), ("GET", "k")]
    c.send(b"".join(encode_command(cmd) for cmd in cmds))
    replies = b"".join(c.read_frame() for _ in cmds)
    lines = [_MONITOR_STAMP.sub(b"", mon.read_frame()) for _ in range(6)]
    c.close()
    mon.close()
    return replies, lines


_MONITOR_STAMP = re.compile(rb"^\+[0-9.]+ \[\d+ [^\]]+\] ")


@pytest.mark.oracle
def test_monitor_sees_the_commands_and_the_client_its_replies():
    ours, theirs = run_on_both(_monitored)
    assert ours == theirs
    assert ours[1][0].startswith(b'"SET" "k"')

