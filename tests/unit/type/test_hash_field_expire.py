"""Hash field expiration (Redis 7.4's HEXPIRE family, #59), raxdb started with compat-version 7.4.

Differential against the newer oracle (tests/support/servers.py start_newer: valkey-server 9.1,
which has the same family) in RESP2 and RESP3 where the two agree; where Valkey differs from
Redis 7.4 (docs/compatibility.md lists each difference), raxdb is checked against Redis 7.4's
facts (its t_hash.c, rdb.c) instead: the error texts, OBJECT ENCODING (listpackex), a listpackex's
field order.  Expiry is driven on raxdb by DEBUG CLOCK ADVANCE (no waiting), on the oracle by real
short deadlines awaited by polling the reply, never a fixed sleep.
"""

from __future__ import annotations

import os
import time

import pytest
import redis

from tests.support.diff import Diff, RawConnection
from tests.support.servers import start_newer, start_raxdb

OURS = ("--compat-version", "7.4", "--raxdb-test-controls", "yes")
FAR = 4102444800  # 2100-01-01, a deadline no test reaches


@pytest.fixture(scope="module")
def pair():
    ours = start_raxdb(*OURS)
    theirs = start_newer()
    yield ours, theirs
    ours.stop()
    theirs.stop()


@pytest.fixture
def ours(pair):
    r = redis.Redis(port=pair[0].port)
    r.flushall()
    yield r
    r.close()


def _until(cond, what: str, limit_s: float = 10.0) -> None:
    """Poll `cond` until true (the oracle's real deadlines); fail after `limit_s`."""
    end = time.monotonic() + limit_s
    while not cond():
        assert time.monotonic() < end, what
        time.sleep(0.005)


@pytest.mark.parametrize("resp", [2, 3])
def test_commands_differential(pair, resp):
    d = Diff(pair[0].port, pair[1].port, protocol=resp)
    try:
        d.both("FLUSHALL")
        d.script(f"""
            HSET h a 1 b 2 c 3 d 4
            HEXPIREAT h {FAR} FIELDS 2 a zz
            HPEXPIREAT h {FAR}000 NX FIELDS 2 a b
            HEXPIRETIME h FIELDS 4 a b c zz
            HPEXPIRETIME h FIELDS 4 a b c zz
            HEXPIREAT h {FAR - 10} GT FIELDS 3 a c zz
            HEXPIREAT h {FAR + 10} GT FIELDS 2 a c
            HEXPIREAT h {FAR - 10} LT FIELDS 3 a c b
            HEXPIREAT h {FAR} XX FIELDS 2 c d
            HEXPIREAT h {FAR} nx FIELDS 1 d
            HPEXPIRETIME h FIELDS 4 a b c d
            HEXPIRE h 1000 FIELDS 1 c
            HTTL h FIELDS 2 c zz
            HPERSIST h FIELDS 3 a c zz
            HEXPIRETIME h FIELDS 3 a c d
            HTTL missing FIELDS 2 a b
            HPTTL missing FIELDS 1 a
            HEXPIRETIME missing FIELDS 1 a
            HPERSIST missing FIELDS 1 a
            HEXPIRE missing 10 FIELDS 2 a b
            HPEXPIRE h 0 FIELDS 2 b zz
            HEXISTS h b
            HLEN h
            HSET plain x 1
            HTTL plain FIELDS 2 x y
            HPERSIST plain FIELDS 2 x y
            HPEXPIRE h 0 FIELDS 3 a c d
            EXISTS h
            SET s v
            HEXPIRE s 10 FIELDS 1 a
            HTTL s FIELDS 1 a
            HPERSIST s FIELDS 1 a
            HEXPIRE h 10
            HTTL h FIELDS
            HPERSIST h
        """)
        # a hashtable-encoded hash (more than 128 fields): the same replies
        d("HSET", "big", *[x for i in range(600) for x in (f"f{i}", "v")])
        d("HEXPIREAT", "big", str(FAR), "FIELDS", "3", "f1", "f2", "nope")
        d("HEXPIRETIME", "big", "FIELDS", "3", "f1", "f3", "nope")
        d("HPEXPIRE", "big", "0", "FIELDS", "1", "f1")
        d("HLEN", "big")
        d("HPERSIST", "big", "FIELDS", "2", "f2", "f3")
    finally:
        d.close()


def test_errors_are_redis_74s(pair):
    """Valkey words these errors its own way; raxdb answers Redis 7.4's (t_hash.c) and both refuse."""
    ours, theirs = RawConnection(pair[0].port), RawConnection(pair[1].port)
    cases = [
        (("HEXPIRE", "h", "-1", "FIELDS", "1", "a"), b"-ERR invalid expire time, must be >= 0\r\n"),
        (("HEXPIRE", "h", "abc", "FIELDS", "1", "a"), b"-ERR value is not an integer or out of range\r\n"),
        (("HEXPIRE", "h", "10", "FIELDS", "2", "a"),
         b"-ERR The `numfields` parameter must match the number of arguments\r\n"),
        (("HEXPIRE", "h", "10", "FILDS", "1", "a"),
         b"-ERR Mandatory argument FIELDS is missing or not at the right position\r\n"),
        (("HEXPIRE", "h", "10", "NX", "XX", "1", "a"),
         b"-ERR Mandatory argument FIELDS is missing or not at the right position\r\n"),
        (("HPEXPIRE", "h", "10", "FIELDS", "0", "a"), b"-ERR Parameter `numFields` should be greater than 0\r\n"),
        (("HTTL", "h", "FIELDS", "0", "a"), b"-ERR Number of fields must be a positive integer\r\n"),
        (("HPERSIST", "h", "FIELDS", "x", "a"), b"-ERR Number of fields must be a positive integer\r\n"),
        (("HEXPIREAT", "h", str(2 ** 46 // 1000 + 1), "FIELDS", "1", "a"),
         b"-ERR invalid expire time in 'hexpireat' command\r\n"),
        (("HPEXPIRE", "h", str(2 ** 46), "FIELDS", "1", "a"), b"-ERR invalid expire time in 'hpexpire' command\r\n"),
    ]
    try:
        ours.call("HSET", "h", "a", "1")
        theirs.call("HSET", "h", "a", "1")
        for args, want in cases:
            assert ours.call(*args) == want, args
            if b"invalid expire time in" not in want:  # Valkey takes deadlines up to 2**62
                assert theirs.call(*args).startswith(b"-"), args
    finally:
        ours.call("DEL", "h")
        theirs.call("DEL", "h")
        ours.close()
        theirs.close()


def test_encoding_and_order_as_redis_74(ours):
    """OBJECT ENCODING listpackex, and its order: fields with a deadline first, soonest first (a
    new one before those as late), then the others; HSET of a field drops its deadline and moves
    it last; HINCRBY keeps both; past 512 fields, a hashtable."""
    ours.hset("h", mapping={"a": 1, "b": 2, "c": 3, "d": 4})
    assert ours.object("encoding", "h") == b"listpack"
    assert ours.hexpire("h", 100, "zz") == [-2]
    assert ours.object("encoding", "h") == b"listpackex"  # converted whatever the fields
    assert ours.hexpire("h", 300, "c") == [1]
    assert ours.hexpire("h", 100, "b", "d") == [1, 1]
    assert ours.hkeys("h") == [b"d", b"b", b"c", b"a"]
    assert ours.hpersist("h", "b") == [1]
    assert ours.hkeys("h") == [b"d", b"c", b"a", b"b"]
    assert ours.hincrby("h", "d", 5) == 9
    assert ours.httl("h", "d")[0] > 0 and ours.hkeys("h")[0] == b"d"
    assert ours.hset("h", "c", "x") == 0
    assert ours.httl("h", "c") == [-1] and ours.hkeys("h") == [b"d", b"a", b"b", b"c"]
    assert ours.execute_command("DEBUG", "LISTPACK", "h") == b"Listpack structure printed on stdout"  # as 7.4's
    ours.hset("h", mapping={f"f{i}": "v" for i in range(600)})
    assert ours.object("encoding", "h") == b"hashtable"
    assert ours.httl("h", "d")[0] > 0
    with pytest.raises(redis.ResponseError, match="Not a listpack encoded object"):
        ours.execute_command("DEBUG", "LISTPACK", "h")


def test_expiry_on_the_servers_clock(pair, ours):
    """DEBUG CLOCK ADVANCE: due fields vanish from every read, lazily and actively; the last one
    takes the key; events hexpire, hexpired, hpersist, del."""
    p = ours.pubsub()
    ours.config_set("notify-keyspace-events", "KEA")
    p.psubscribe("__keyevent@0__:*")
    p.get_message(timeout=5)
    try:
        ours.hset("h", mapping={"a": "1", "b": "22", "c": "3"})
        ours.hpexpire("h", 1000, "a", "b")
        ours.hpersist("h", "b")
        ours.hset("big", mapping={f"f{i}": "v" for i in range(600)})
        ours.hexpire("big", 5, *[f"f{i}" for i in range(599)])
        ours.hset("gone", "x", "1")
        ours.hexpire("gone", 1, "x")
        ours.execute_command("DEBUG", "CLOCK", "ADVANCE", "10")
        assert ours.exists("gone") == 0
        assert ours.hgetall("h") == {b"b": b"22", b"c": b"3"}
        assert ours.hget("h", "a") is None and ours.hmget("h", "a", "b") == [None, b"22"]
        assert (ours.hlen("h"), ours.hexists("h", "a"), ours.hstrlen("h", "a")) == (2, False, 0)
        assert sorted(ours.hkeys("h")) == [b"b", b"c"] and sorted(ours.hvals("h")) == [b"22", b"3"]
        assert ours.hscan("h") == (0, {b"b": b"22", b"c": b"3"})
        assert set(ours.hrandfield("h", 10)) == {b"b", b"c"}
        assert ours.hgetall("big") == {b"f599": b"v"}  # the active cycle's work: nothing read it
        events = []
        while (m := p.get_message(timeout=1)) is not None:
            if m["type"] == "pmessage":
                events.append((m["channel"].split(b":")[-1], m["data"]))
        for e in [(b"hexpire", b"h"), (b"hpersist", b"h"), (b"hexpired", b"gone"), (b"del", b"gone"),
                  (b"hexpired", b"big")]:
            assert e in events
    finally:
        p.close()
        ours.config_set("notify-keyspace-events", "")
        ours.execute_command("DEBUG", "CLOCK", "RESET")


def test_keys_carry_their_field_deadlines(ours):
    """RENAME, COPY, MOVE, RESTORE keep the deadlines, and the active cycle finds the new key.
    The clock stands still but for the advances, so what is left does not hang on how long the
    steps took: 4.3 s, which HTTL rounds up to 5."""
    ours.execute_command("DEBUG", "CLOCK", "FREEZE")
    try:
        ours.hset("h", mapping={"a": "1", "b": "2"})
        ours.hexpire("h", 5, "a")
        ours.rename("h", "r")
        ours.copy("r", "c")
        ours.copy("r", "m")
        ours.move("m", 1)
        ours.restore("d", 0, ours.dump("r"))
        ours.execute_command("DEBUG", "CLOCK", "ADVANCE", "0.7")
        assert [ours.httl(k, "a")[0] for k in ("r", "c", "d")] == [5, 5, 5]
        ours.execute_command("DEBUG", "CLOCK", "ADVANCE", "6")
        for k in ("r", "c", "d"):
            assert ours.execute_command("HGETALL", k) == {b"b": b"2"}  # RESP2 map through redis-py
        r1 = redis.Redis(port=ours.connection_pool.connection_kwargs["port"], db=1)
        assert r1.hgetall("m") == {b"b": b"2"}
        r1.close()
    finally:
        ours.execute_command("DEBUG", "CLOCK", "RESET")


def test_oracle_real_deadlines(pair):
    """The same short real deadline on both servers: the field goes, then the key, on each."""
    for srv in pair:
        r = redis.Redis(port=srv.port)
        r.flushall()
        r.hset("h", mapping={"a": "1", "b": "2"})
        assert r.hpexpire("h", 30, "a") == [1]
        _until(lambda r=r: r.hgetall("h") == {b"b": b"2"}, f"{srv.name}: field a never expired")
        assert r.hpexpire("h", 30, "b") == [1]
        _until(lambda r=r: r.exists("h") == 0, f"{srv.name}: the emptied key stayed")
        r.close()


def test_dump_restore_format(ours):
    """DUMP of a hash with deadlines: Redis 7.4's types (25 listpackex, 24 hashtable) and RDB
    version 12 in the footer; RESTORE gives back the fields, values, deadlines and encoding."""
    ours.hset("s", mapping={"a": "1", "b": "2"})
    ours.hexpireat("s", FAR, "b")
    ours.hset("t", mapping={f"f{i}": "v" for i in range(600)})
    ours.hexpireat("t", FAR, "f7")
    for key, kind, enc in (("s", 25, b"listpackex"), ("t", 24, b"hashtable")):
        payload = ours.dump(key)
        assert payload[0] == kind and payload[-10:-8] == b"\x0c\x00"
        ours.restore(key + "2", 0, payload)
        assert ours.hgetall(key + "2") == ours.hgetall(key)
        assert ours.object("encoding", key + "2") == enc
    assert ours.hexpiretime("s2", "a", "b") == [-1, FAR]
    assert ours.hexpiretime("t2", "f7", "f8") == [FAR, -1]
    assert ours.hkeys("s2") == [b"b", b"a"]


def _raxdb_pair(tmp, *extra):
    master = start_raxdb(*OURS, *extra, cwd=str(tmp))
    replica = start_raxdb(*OURS, "--replicaof", "127.0.0.1", str(master.port))
    return master, replica


def test_replication_aof_and_rdb(tmp_path):
    """A replica sees HPEXPIREAT with the master's absolute deadline and the HDELs of the fields
    that expire on the master; the AOF replays to the same; an RDB saved and loaded keeps them."""
    master, replica = _raxdb_pair(tmp_path, "--appendonly", "yes", "--appendfsync", "always")
    try:
        m = redis.Redis(port=master.port)
        s = redis.Redis(port=replica.port)
        _until(lambda: s.info("replication")["master_link_status"] == "up", "replica never linked")
        m.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
        m.hexpire("h", 100, "a", "b")
        m.hexpireat("h", 1, "c")  # past: deleted, an HDEL
        assert m.wait(1, 5000) == 1
        assert s.hgetall("h") == {b"a": b"1", b"b": b"2"}
        assert s.hexpiretime("h", "a", "b") == m.hexpiretime("h", "a", "b")
        m.execute_command("DEBUG", "CLOCK", "ADVANCE", "101")
        assert m.wait(1, 5000) == 1
        assert s.exists("h") == 0
        m.hset("k", mapping={"x": "1", "y": "2"})
        m.hexpireat("k", FAR, "x")
        aof = b"".join(open(os.path.join(tmp_path, "appendonlydir", f), "rb").read()
                       for f in sorted(os.listdir(tmp_path / "appendonlydir")) if f.endswith(".aof"))
        assert b"HPEXPIREAT" in aof and b"HDEL" in aof
        m.execute_command("DEBUG", "LOADAOF")
        assert m.exists("h") == 0 and m.hexpiretime("k", "x", "y") == [FAR, -1]
        m.execute_command("DEBUG", "RELOAD")  # RDB save and load
        assert m.hexpiretime("k", "x", "y") == [FAR, -1] and m.object("encoding", "k") == b"listpackex"
        m.config_set("aof-use-rdb-preamble", "no")  # the rewrite as commands: HMSET + HPEXPIREAT per field
        m.bgrewriteaof()
        _until(lambda: not any(m.info("persistence")[f] for f in ("aof_rewrite_in_progress",
                                                                   "aof_rewrite_scheduled")), "no rewrite")
        m.execute_command("DEBUG", "LOADAOF")
        assert m.hexpiretime("k", "x", "y") == [FAR, -1] and m.hkeys("k") == [b"x", b"y"]
        m.close()
        s.close()
    finally:
        master.stop()
        replica.stop()


def test_newer_oracle_refuses_redis_74_rdb(tmp_path):
    """The round trip the issue asks for cannot be made with Valkey: it reads neither Redis 7.4's
    RDB version 12 nor, with rdb-version-check relaxed, its field-deadline types (24/25), and it
    writes its own (VALKEY080, type 22), which Redis 7.4 cannot read either.  This pins the fact
    (docs/compatibility.md), so a Valkey that learns the format shows up here."""
    ours = start_raxdb(*OURS, cwd=str(tmp_path))
    r = redis.Redis(port=ours.port)
    r.hset("h", mapping={"a": "1"})
    r.hexpireat("h", FAR, "a")
    r.save()
    r.close()
    ours.stop()
    assert open(tmp_path / "dump.rdb", "rb").read(9) == b"REDIS0012"
    newer = start_newer("--rdb-version-check", "relaxed", cwd=str(tmp_path), ready_text=None)
    try:
        assert newer.proc.wait(60) != 0
        assert newer.wait_log("Can't handle foreign type or opcode 25 in RDB with version 12")
    finally:
        newer.stop()
