"""Replies in pieces (protocol/reply.py's `value`): a big stored value's reply keeps the value by
reference and the connection writes the pieces in order.  Against redis-server 7.0, byte for byte,
in RESP2 and RESP3: big values read alone and pipelined among small replies, changed or replaced
behind a reply still queued (APPEND, SETRANGE, SET, DEL in the same pipeline), inside MULTI/EXEC,
from scripts (the script sees the value), under CLIENT REPLY SKIP and OFF; the same for the other
whole-value replies (HGET, HMGET, HGETALL, LINDEX, LPOP/RPOP, SMEMBERS, SPOP, SRANDMEMBER, ZRANGE,
MGET, GETRANGE, DUMP, SORT .. GET: `value`, `values`, `value_array`), a hash field, list element,
set or sorted-set member changed behind a reply still queued; and the helpers' own rules (only
immutable values by reference, `flat` the reply's bytes)."""

from __future__ import annotations

import re

import pytest

from raxdb.protocol import reply as R
from tests.support.diff import RawConnection, encode_command, parse
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



# ---- the other whole-value replies: R.value and the aggregates of stored values (R.values,
# R.value_array) -----------------------------------------------------------------------------------
def _norm(x):
    """A parsed reply with the order of unordered collections (a hashtable's HGETALL, a set's
    members) taken out: sorted, recursively."""
    if isinstance(x, dict):
        return sorted((repr(_norm(k)), repr(_norm(v))) for k, v in x.items())
    if isinstance(x, (list, set, tuple)):
        return sorted(repr(_norm(e)) for e in x)
    return x


def _unordered(diff, *cmd) -> object:
    """`cmd` on both servers, the replies the same but for the order of unordered collections."""
    ours, theirs = diff.both(*cmd)
    a, b = parse(ours), parse(theirs)
    assert _norm(a) == _norm(b), f"RESP{diff.protocol} {cmd!r}\n  raxdb: {ours[:80]!r}\n  redis: {theirs[:80]!r}"
    return a


def test_hash_values(diff):
    big1, big2, small = _value(BIG, 11), _value(30_000, 12), b"small"
    bigfield = _value(9000, 13)
    diff("HSET", "h", "f1", big1, "f2", small, "f3", big2, bigfield, "v")
    diff("HSET", "one", "f", big2)
    diff("HSET", "bigf", bigfield, "x")
    for f in ("f1", "f2", "f3", "missing", bigfield):
        diff("HGET", "h", f)
    assert diff("HGET", "h", "f3") == b"$30000\r\n" + big2 + b"\r\n"
    diff("HMGET", "h", "f1", "missing", "f2", "f3", "f1")
    diff("HMGET", "nokey", "f1", "f2")
    diff("HGETALL", "one")
    diff("HVALS", "one")
    diff("HKEYS", "bigf")
    diff("HRANDFIELD", "bigf")
    diff("HRANDFIELD", "one", "1", "WITHVALUES")
    diff("HRANDFIELD", "one", "-3", "WITHVALUES")
    got = _unordered(diff, "HGETALL", "h")
    assert big2 in (got.values() if isinstance(got, dict) else got)
    _unordered(diff, "HVALS", "h")
    _unordered(diff, "HKEYS", "h")
    diff("HSTRLEN", "h", "f3")
    replies = _pipelined(diff, ("HGET", "h", "f3"), ("HMGET", "h", "f3", "f2"), ("HSET", "h", "f3", "over"),
                         ("HGET", "h", "f3"), ("HGETALL", "one"), ("HSET", "one", "f", "x"), ("HGETALL", "one"),
                         ("HDEL", "h", "f1"), ("HGET", "h", "f1"), ("PING",))
    assert replies[0] == b"$30000\r\n" + big2 + b"\r\n"


def test_list_values(diff):
    bigs = [_value(BIG + i * 1000, 20 + i) for i in range(4)]
    diff("RPUSH", "l", bigs[0], "small", bigs[1], bigs[2], "x", bigs[3])
    for i in (0, 1, 2, -1, -2, 99):
        diff("LINDEX", "l", i)
    assert diff("LINDEX", "l", "2") == b"$%d\r\n%s\r\n" % (len(bigs[1]), bigs[1])
    diff("LPOP", "l")
    diff("RPOP", "l")
    diff("LPOP", "l", "2")
    diff("RPUSH", "l", bigs[0], bigs[1])
    diff("RPOP", "l", "3")
    diff("LPOP", "l", "10")
    diff("LPOP", "l", "1")
    diff("RPUSH", "l", bigs[0], "a", bigs[1])
    replies = _pipelined(diff, ("LINDEX", "l", "0"), ("LSET", "l", "0", "changed"), ("LINDEX", "l", "0"),
                         ("LRANGE", "l", "0", "-1"), ("LPOP", "l", "2"), ("RPUSH", "l", bigs[2]), ("RPOP", "l"),
                         ("LPUSH", "l", bigs[3]), ("LPOP", "l"), ("ECHO", "e"), ("LPOP", "l"))
    assert replies[0] == b"$%d\r\n%s\r\n" % (len(bigs[0]), bigs[0])
    diff("RPUSH", "m", bigs[0], bigs[1])
    diff("LMPOP", "1", "m", "LEFT", "COUNT", "1")
    diff("LMOVE", "m", "n", "LEFT", "RIGHT")
    diff("LRANGE", "n", "0", "-1")


def test_set_members(diff):
    big1, big2 = _value(BIG, 30), _value(20_000, 31)
    diff("SADD", "one", big2)
    diff("SMEMBERS", "one")
    diff("SRANDMEMBER", "one")
    diff("SRANDMEMBER", "one", "1")
    diff("SRANDMEMBER", "one", "5")
    diff("SRANDMEMBER", "one", "-2")
    diff("SINTER", "one", "one")
    diff("SPOP", "one")
    diff("SADD", "one", big1)
    diff("SPOP", "one", "1")
    diff("SADD", "s", big1, big2, "a", "b")
    diff("SADD", "t", big2, "b", "c")
    _unordered(diff, "SMEMBERS", "s")
    _unordered(diff, "SINTER", "s", "t")
    _unordered(diff, "SUNION", "s", "t")
    _unordered(diff, "SDIFF", "s", "t")
    _unordered(diff, "SRANDMEMBER", "s", "10")
    _unordered(diff, "SPOP", "s", "10")
    diff("SADD", "one", big2)
    _pipelined(diff, ("SMEMBERS", "one"), ("SREM", "one", big2), ("SMEMBERS", "one"), ("SADD", "one", big1),
               ("SRANDMEMBER", "one"), ("SPOP", "one"), ("PING",))


def test_zset_members(diff):
    big1, big2 = _value(BIG, 40), _value(15_000, 41)
    diff("ZADD", "z", "1", big1, "2", "small", "3", big2)
    diff("ZRANGE", "z", "0", "-1")
    diff("ZREVRANGE", "z", "0", "1")
    diff("ZRANGEBYSCORE", "z", "2", "+inf")
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff("ZPOPMIN", "z")
    diff("ZADD", "one", "1", big2)
    diff("ZRANDMEMBER", "one")
    diff("ZRANDMEMBER", "one", "1")
    diff("ZRANDMEMBER", "one", "-3")
    _pipelined(diff, ("ZRANGE", "z", "0", "-1"), ("ZREM", "z", big2), ("ZRANGE", "z", "0", "-1"), ("PING",))


def test_string_values(diff):
    big, small = _value(12_000, 50), b"small"
    diff("SET", "a", big)
    diff("SET", "b", small)
    diff("LPUSH", "list", "x")
    diff("APPEND", "c", big)  # a value APPEND made: its own growing buffer
    assert diff("MGET", "a", "missing", "b", "list", "c", "a").startswith(b"*6\r\n$12000\r\n" + big)
    diff("MGET", "b", "b")
    diff("GETRANGE", "a", "0", "-1")
    diff("GETRANGE", "a", "100", "9999")
    diff("GETRANGE", "a", "100", "200")
    diff("SUBSTR", "c", "0", "-1")
    _pipelined(diff, ("MGET", "a", "c"), ("APPEND", "c", "more"), ("SETRANGE", "a", "0", "zz"), ("MGET", "a", "c"),
               ("GETRANGE", "c", "0", "-1"), ("APPEND", "c", "x"), ("GETRANGE", "c", "1", "-1"))
    dump = diff("DUMP", "a")
    diff("RESTORE", "a2", "0", parse(dump))
    diff("GET", "a2")
    diff("RPUSH", "ids", "2", "1")
    diff("SET", "w_1", big)
    diff("SORT", "ids", "BY", "nosort", "GET", "w_*", "GET", "#")
    diff("RPUSH", "bl", big, big[::-1])
    diff("SORT", "bl", "ALPHA")


def test_aggregates_in_multi_exec_and_scripts(diff):
    big = _value(BIG + 5, 60)
    diff("HSET", "h", "f", big)
    diff("RPUSH", "l", big, "x", big)
    diff("SADD", "s", big)
    diff("ZADD", "z", "1", big)
    diff("SET", "k", big)
    cmds = [("HGET", "h", "f"), ("HGETALL", "h"), ("HMGET", "h", "f", "no"), ("LINDEX", "l", "0"),
            ("LRANGE", "l", "0", "-1"), ("SMEMBERS", "s"), ("ZRANGE", "z", "0", "-1"), ("MGET", "k", "no", "k"),
            ("GETRANGE", "k", "0", "-1"), ("LPOP", "l", "2"), ("RPOP", "l")]
    diff("MULTI")
    for cmd in cmds:
        diff(*cmd)
    assert diff("EXEC").startswith(b"*%d\r\n$%d\r\n%s\r\n" % (len(cmds), len(big), big))
    diff("RPUSH", "l", big, "x", big)
    for cmd in cmds:
        lua = "return redis.call(%s)" % ", ".join(["'%s'" % cmd[0]] + ["KEYS[1]"] + ["'%s'" % a for a in cmd[2:]])
        diff("EVAL", lua, "1", cmd[1])
    diff("EVAL", "local v = redis.call('LPOP', KEYS[1], 2) return {#v[1], v[2]}", "1", "l")
    diff("RPUSH", "l", big, "x", big)
    _pipelined(diff, ("MULTI",), *cmds, ("EXEC",), ("HGET", "h", "f"))


def test_client_reply_skip_and_off_over_aggregates(diff):
    big = _value(25_000, 70)
    diff("HSET", "h", "f", big)
    diff("RPUSH", "l", big, big)
    for cmd in (("HGET", "h", "f"), ("HMGET", "h", "f", "f"), ("LRANGE", "l", "0", "-1"), ("LPOP", "l", "1")):
        data = encode_command(("CLIENT", "REPLY", "SKIP")) + encode_command(cmd)
        diff.ours.send(data)
        diff.theirs.send(data)
        diff("ECHO", "after skip")
    cmds = [("CLIENT", "REPLY", "OFF"), ("HGET", "h", "f"), ("HGETALL", "h"), ("RPOP", "l", "1"), ("MGET", "h"),
            ("CLIENT", "REPLY", "ON"), ("HMGET", "h", "f")]
    data = b"".join(encode_command(cmd) for cmd in cmds)
    diff.ours.send(data)
    diff.theirs.send(data)
    assert diff.ours.read_frame() == diff.theirs.read_frame() == b"+OK\r\n"
    assert diff.ours.read_frame() == diff.theirs.read_frame() == b"*1\r\n$25000\r\n" + big + b"\r\n"
    diff("ECHO", "after off")


def test_values_and_value_array_rules():
    small, big = b"abc", _value(BIG)
    assert R.values([small, b"de"]) == R.bulk_strings([small, b"de"])
    assert R.values([]) == b"*0\r\n"
    r = R.values([small, big, small])
    assert type(r) is tuple and any(p is big for p in r)  # by reference
    assert R.flat(r) == R.bulk_strings([small, big, small])
    assert R.flat(R.values({big}, 126)) == b"~1\r\n" + R.bulk(big)
    assert R.flat(R.values([b"f", big], 37, 1)) == b"%1\r\n" + R.bulk(b"f") + R.bulk(big)
    ba = bytearray(big)
    r = R.values([ba, small])
    assert type(r) is bytes and r == R.bulk_strings([big, small])  # a bytearray may change: copied
    parts = [R.value(big), R.NULL_BULK2, R.bulk(small)]
    r = R.value_array(parts)
    assert type(r) is tuple and any(p is big for p in r)
    assert R.flat(r) == b"*3\r\n" + R.bulk(big) + R.NULL_BULK2 + R.bulk(small)
    assert R.value_array([R.bulk(small), R.NULL_BULK2]) == b"*2\r\n" + R.bulk(small) + R.NULL_BULK2
