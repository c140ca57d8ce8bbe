"""Redis 7.2's listpack encoding of small sets (compat-version 7.2+, #59).

- RSet against a plain model under 7.2's limits (hypothesis): membership, size, the listpack's
  order (insertion order, numbers ascending first when it came from an intset), conversions
  exactly where t_set.c's setTypeAddAux makes them, and the listpack bytes (RDB type 20) decoding
  back to the members; MEMORY USAGE is the robj and the listpack's allocation.
- Against the newer oracle (valkey-server 9.1, which keeps Redis 7.2's set encodings), raxdb in
  7.2 mode, RESP2 and RESP3: OBJECT ENCODING through every transition (intset -> listpack,
  listpack -> hashtable by count and by length, SADD's size hint, SMOVE / SINTERSTORE /
  SUNIONSTORE / SDIFFSTORE / SPOP results), the replies whose order is deterministic for a listpack
  (SMEMBERS, SSCAN, SINTER, SUNION, SDIFF, whole-set SPOP), DEBUG RELOAD keeping encodings and
  order, CONFIG GET / SET of set-max-listpack-*.  Random picks (SRANDMEMBER, SPOP with a count)
  are compared as membership and counts only.
- DUMP: the payload body (type 20, the listpack) is byte for byte valkey's; valkey loads raxdb's
  payloads.  Valkey stamps its payloads and files with RDB version 80, which Redis 7.2 (RDB 11)
  and raxdb refuse as newer, so valkey's bodies are re-sealed with version 11 to be read here.
- raxdb to raxdb: SAVE / restart and an AOF rewrite keep listpack sets.  7.0 mode stays 7.0.15's:
  no set-max-listpack-* options, hashtables, RDB 10, and version-11 payloads and files refused
  with 7.0.15's errors (the `diff` fixture's oracle).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raxdb.storage.alloc import size_class
from raxdb.storage.crc64 import crc64
from raxdb.storage.intset import canonical_int
from raxdb.storage.listpack import checked_values
from raxdb.storage.set_type import RSet
from tests.support.diff import Diff, RawConnection, parse
from tests.support.servers import ServerProcess, newer_pair, start_raxdb

# ---- the storage type against a model --------------------------------------------------------------
members = st.one_of(st.integers(-300, 300).map(lambda v: b"%d" % v), st.sampled_from([b"a", b"b", b"c", b"", b"01"]),
                    st.binary(min_size=1, max_size=9))
ops = st.lists(st.tuples(st.sampled_from(["add", "add", "add", "rem", "pop"]), members), max_size=60)


@pytest.mark.pure
@given(ops, st.integers(0, 6), st.integers(0, 10), st.integers(0, 8))
def test_listpack_model(seq, max_ints, max_entries, max_value):
    limits = (max_ints, max_entries, max_value, True)
    s = RSet()
    model: list[bytes] = []  # the listpack's order while it is one
    for op, m in seq:
        before = s.encoding()
        if op == "add":
            assert s.add(m, limits) == (m not in model)
            if m not in model:
                if before == "intset" and canonical_int(m) is None:
                    n = len(model)
                    longest = max((len(x) for x in model), default=0)
                    want = "listpack" if n < max_entries and len(m) <= max_value and longest <= max_value else "hashtable"
                    assert s.encoding() == want
                    model.sort(key=int)  # the intset's order is the listpack's
                elif before == "listpack":
                    assert s.encoding() == ("listpack" if len(model) < max_entries and len(m) <= max_value
                                            else "hashtable")
                model.append(m)
        elif op == "rem":
            assert s.remove(m) == (m in model)
            if m in model:
                model.remove(m)
        elif model:
            model.remove(s.pop_random())
        assert before != "hashtable" or s.encoding() == "hashtable"  # never back
        assert len(s) == len(model) and all(x in s for x in model)
        if s.encoding() == "listpack":
            assert s.members() == model
            lp = s.listpack_bytes()
            assert checked_values(lp) == model
            assert s.mem_usage() == 16 + size_class(len(lp))
        else:
            assert sorted(s.members()) == sorted(model)


def test_building_a_set_follows_7_2():
    """SUNION's and SINTERSTORE's results: an intset's numbers ascending then the rest; an intset
    again only for all numbers; 7.0's limits never make a listpack."""
    l72 = (3, 4, 5, True)
    assert RSet.of([b"9", b"2", b"x", b"1"], l72).members() == [b"2", b"9", b"x", b"1"]
    assert RSet.of([b"9", b"2"], l72).encoding() == "intset"
    assert RSet.of([b"1", b"2", b"3", b"4", b"x"], l72).encoding() == "hashtable"  # past the intset first
    assert RSet.of([b"x", b"y", b"z", b"w", b"v"], l72).encoding() == "hashtable"  # past 4 entries
    assert RSet.of([b"x", b"123456"], l72).encoding() == "hashtable"  # a member longer than 5
    assert RSet.of([b"x", b"y"], (512, 0, 0, False)).encoding() == "hashtable"
    assert RSet.built([b"y", b"1", b"x"], l72, False).members() == [b"y", b"1", b"x"]
    assert RSet.built([b"7", b"1"], l72, False).members() == [b"1", b"7"]  # all numbers: an intset
    assert RSet.built([b"1", b"2", b"3", b"4"], l72, False).encoding() == "listpack"  # numbers past the intset
    assert RSet.built([b"1", b"2", b"3", b"4"], l72, True).encoding() == "hashtable"


# ---- against the newer oracle ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pair72() -> Iterator[tuple[ServerProcess, ServerProcess]]:
    with newer_pair() as pair:
        yield pair


def _fresh(pair, protocol: int = 2) -> Diff:
    for srv in pair:
        c = RawConnection(srv.port)
        c.call("FLUSHALL")
        c.call("CONFIG", "SET", "set-max-intset-entries", "512", "set-max-listpack-entries", "128",
               "set-max-listpack-value", "64")
        c.close()
    return Diff(pair[0].port, pair[1].port, protocol)


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def diff72(request, pair72) -> Iterator[Diff]:
    d = _fresh(pair72, request.param)
    yield d
    d.close()


@pytest.fixture
def diff72_2(pair72) -> Iterator[Diff]:
    d = _fresh(pair72)
    yield d
    d.close()


@pytest.mark.oracle
def test_encodings_and_ordered_replies(diff72):
    diff72.script("""
        CONFIG GET set-max-listpack-*
        SADD s 3 1
        OBJECT ENCODING s
        SADD s b a 2
        OBJECT ENCODING s
        SMEMBERS s
        SSCAN s 0
        SSCAN s 0 MATCH ? COUNT 1
        SISMEMBER s a
        SMISMEMBER s a x 3
        SCARD s
        SREM s 3 zz
        SMEMBERS s
        SADD t a c 2 d
        OBJECT ENCODING t
        SINTER s t
        SINTER t s
        SINTERCARD 2 s t
        SINTERCARD 2 s t LIMIT 1
        SUNION t s
        SUNION s t
        SDIFF s t
        SDIFF t s
        SINTERSTORE i s t
        OBJECT ENCODING i
        SMEMBERS i
        SUNIONSTORE u t s
        OBJECT ENCODING u
        SMEMBERS u
        SDIFFSTORE d t s
        SMEMBERS d
        SADD n 5 9 1
        SUNIONSTORE un n s
        OBJECT ENCODING un
        SMEMBERS un
        SINTERSTORE ni n un
        OBJECT ENCODING ni
        SMOVE s t b
        SMEMBERS t
        SMOVE s nw a
        OBJECT ENCODING nw
        SMOVE n nw2 5
        OBJECT ENCODING nw2
        SMEMBERS s
        SPOP t 100
        EXISTS t
        SADD x a
        SPOP x
        EXISTS x
        SADD w a b c
        SORT w ALPHA
        SORT w BY nosort
        OBJECT ENCODING w
    """)


@pytest.mark.oracle
def test_conversions_at_the_limits(diff72):
    d = diff72
    d.script("""
        CONFIG SET set-max-listpack-entries 4 set-max-listpack-value 3 set-max-intset-entries 3
        CONFIG GET set-max-listpack-*
        SADD a x y z w
        OBJECT ENCODING a
        SADD a v
        OBJECT ENCODING a
        SADD b x
        SADD b long
        OBJECT ENCODING b
        SADD c 1 2 3
        OBJECT ENCODING c
        SADD c x
        OBJECT ENCODING c
        SMEMBERS c
        SADD c2 1 2 3
        SADD c2 1 1 1 1
        OBJECT ENCODING c2
        SADD c3 1000 -1
        SADD c3 x
        OBJECT ENCODING c3
        SADD c4 100 -1
        SADD c4 x
        OBJECT ENCODING c4
        SMEMBERS c4
        SADD e 1 2 3 4
        OBJECT ENCODING e
        SMEMBERS e
        SADD f x y z w v
        OBJECT ENCODING f
        SADD g x
        SADD g y z w v
        OBJECT ENCODING g
        SADD h 1 2 3
        SADD h x
        SREM h x
        OBJECT ENCODING h
        SUNIONSTORE hu h
        OBJECT ENCODING hu
        SMEMBERS hu
        SPOP h 3
        OBJECT ENCODING h
    """)


@pytest.mark.oracle
def test_random_picks_and_reload(diff72_2, pair72):
    d = diff72_2
    d("SADD", "s", *[b"m%d" % i for i in range(40)])
    members = set(parse(d("SMEMBERS", "s")))
    for srv in pair72:
        c = RawConnection(srv.port)
        assert parse(c.call("SRANDMEMBER", "s")) in members
        picks = parse(c.call("SRANDMEMBER", "s", "7"))
        assert len(set(picks)) == 7 and set(picks) <= members
        assert len(parse(c.call("SRANDMEMBER", "s", "-50"))) == 50
        assert set(parse(c.call("SRANDMEMBER", "s", "100"))) == members
        assert parse(c.call("SPOP", "s")) in members
        popped = parse(c.call("SPOP", "s", "5"))  # CASE 2: in the listpack's order
        assert len(set(popped)) == 5
        popped = parse(c.call("SPOP", "s", "30"))  # CASE 3: 4 stay
        assert len(set(popped)) == 30
        c.close()
    d.script("""
        SCARD s
        OBJECT ENCODING s
        SADD big 1 2 x
        SADD hash a
        SADD hash 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30
        SADD hash 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57
        SADD hash 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84
        SADD hash 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108
        SADD hash 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127 128
        OBJECT ENCODING hash
        DEBUG RELOAD
        OBJECT ENCODING s
        OBJECT ENCODING big
        SMEMBERS big
        OBJECT ENCODING hash
        CONFIG SET set-max-listpack-entries 2
        DEBUG RELOAD
        OBJECT ENCODING big
    """)


def _body(payload: bytes) -> bytes:
    return payload[:-10]


def _sealed(body: bytes, version: int) -> bytes:
    data = body + version.to_bytes(2, "little")
    return data + crc64(data).to_bytes(8, "little")


@pytest.mark.oracle
def test_dump_restore_with_valkey(diff72_2):
    d = diff72_2
    d("SADD", "lp", "3", "1", "a", "2", "x" * 40, "-5")
    d("SADD", "is", "3", "1")
    d("SADD", "ht", *[b"k%d" % i for i in range(200)])
    for key in ("lp", "is"):
        ours, theirs = (parse(x) for x in d.both("DUMP", key))
        assert ours[0] == theirs[0] and _body(ours) == _body(theirs)
        assert ours[-10:-8] == b"\x0b\x00" and theirs[-10:-8] == b"P\x00"  # RDB 11 and valkey's 80
        # raxdb's payload loads in valkey; valkey's body, sealed as 11, loads in raxdb
        assert d.theirs.call("RESTORE", key + "2", "0", ours) == b"+OK\r\n"
        assert d.ours.call("RESTORE", key + "2", "0", _sealed(_body(theirs), 11)) == b"+OK\r\n"
        d("OBJECT", "ENCODING", key + "2")
        d("SMEMBERS", key + "2")
    ours = parse(d.ours.call("DUMP", "ht"))
    assert ours[0] == 2  # a hashtable: RDB_TYPE_SET, in its own order
    assert d.theirs.call("RESTORE", "ht2", "0", ours) == d.ours.call("RESTORE", "ht2", "0", ours) == b"+OK\r\n"
    d("OBJECT", "ENCODING", "ht2")
    assert d.ours.call("RESTORE", "v80", "0", parse(d.theirs.call("DUMP", "lp"))).startswith(
        b"-ERR DUMP payload version or checksum are wrong")
    # a payload of a set listpack past the entries limit loads as a hashtable; one with a repeat fails
    d("CONFIG", "SET", "set-max-listpack-entries", "3")
    d("RESTORE", "big", "0", parse(d.ours.call("DUMP", "lp")))
    d("OBJECT", "ENCODING", "big")
    lp = b"\x0b\x00\x00\x00\x02\x00\x81a\x02\x81a\x02\xff"  # "a" twice
    d("RESTORE", "rep", "0", _sealed(b"\x14\x0b" + lp, 11))


@pytest.mark.oracle
def test_restart_and_aof_rewrite_keep_listpacks(tmp_path):
    srv = start_raxdb("--compat-version", "7.2", "--dir", str(tmp_path), "--appendonly", "yes")
    try:
        c = RawConnection(srv.port)
        c.call("SADD", "s", "3", "b", "1", "a")
        c.call("SADD", "t", "z", "y")
        assert c.call("BGREWRITEAOF").startswith(b"+")
        assert srv.wait_log("Background AOF rewrite finished successfully")
        c.call("SADD", "t", "x")
        assert c.call("SAVE") == b"+OK\r\n"
        c.close()
        srv.stop()
        srv = srv.restarted()  # loads the AOF: its base (an RDB with type 20) and the SADD after it
        c = RawConnection(srv.port)
        assert parse(c.call("SMEMBERS", "s")) == [b"3", b"b", b"1", b"a"]
        assert parse(c.call("SMEMBERS", "t")) == [b"z", b"y", b"x"]
        assert parse(c.call("OBJECT", "ENCODING", "t")) == b"listpack"
        c.call("CONFIG", "SET", "appendonly", "no")
        c.close()
        srv.stop()
        with open(tmp_path / "dump.rdb", "rb") as f:
            data = f.read()
        assert data.startswith(b"REDIS0011") and b"\x14\x01s" in data  # type 20, key "s"
        # a 7.0 server refuses the version-11 file as 7.0.15 does
        old = start_raxdb("--dir", str(tmp_path), ready_text=None)
        assert old.wait_log("Can't handle RDB format version 11")
        old.kill()
    finally:
        srv.stop()


# ---- 7.0 mode: 7.0.15 exactly ----------------------------------------------------------------------
@pytest.mark.oracle
def test_7_0_has_no_set_listpacks(diff):
    diff.script("""
        CONFIG GET set-max-listpack-*
        CONFIG GET set-max-listpack-entries
        CONFIG SET set-max-listpack-entries 10
        CONFIG SET set-max-listpack-value 10
        SADD s a b
        OBJECT ENCODING s
        SADD i 1 2
        OBJECT ENCODING i
        SADD i x
        OBJECT ENCODING i
    """)
    ours = parse(diff.ours.call("DUMP", "s"))
    assert ours[0] == 2 and ours[-10:-8] == b"\x0a\x00"
    # a 7.2 payload (version 11) is refused with 7.0.15's error, and so is type 20 under version 10
    lp72 = _sealed(b"\x14\x0b\x0b\x00\x00\x00\x02\x00\x81a\x02\x81b\x02\xff", 11)
    diff("RESTORE", "k", "0", lp72)
    diff("RESTORE", "k", "0", _sealed(_body(lp72), 10))


def test_the_options_follow_the_generation(tmp_path):
    """set-max-listpack-* in a config file: known with compat-version 7.2 wherever that line
    stands (the file or the command line after it), "Bad directive" in 7.0 mode."""
    from raxdb.server.config.options import Config, FatalConfigError

    conf = tmp_path / "redis.conf"
    conf.write_text("set-max-listpack-entries 5\nset-max-listpack-value 7\n")
    cfg = Config()
    cfg.load_argv([str(conf), "--compat-version", "7.2"])
    assert cfg.set_limits == (512, 5, 7, True)
    assert cfg.matching([b"set-max-listpack-*"]) == [(b"set-max-listpack-entries", b"5"),
                                                     (b"set-max-listpack-value", b"7")]
    with pytest.raises(FatalConfigError, match="Bad directive or wrong number of arguments"):
        Config().load_argv([str(conf)])
    cfg = Config()
    assert cfg.set_limits == (512, 0, 0, False) and cfg.canonical("set-max-listpack-entries") is None


# SDIFF's second algorithm (t_set.c picks it when the first set's size times half the number of
# sets passes the sum of the sizes): the whole first set goes into the result before the others
# come out, so the result keeps the encoding the first set made.
_SDIFF_SCRIPT = """
    SADD big2 m0 m1 m2 m3 m4 m5 m6 m7 m8 m9 {long}
    SADD o3 {long}
    SADD o4 m0
    SDIFFSTORE d2 big2 o3 o4
    OBJECT ENCODING d2
    SDIFFSTORE d2b big2 o3
    OBJECT ENCODING d2b
    SADD mix 5 a 3 b c d
    SADD o7 a
    SADD o8 zz
    SADD o9 yy
    SDIFFSTORE d4 mix o7 o8 o9
    OBJECT ENCODING d4
    SDIFFSTORE d5 mix o7
    OBJECT ENCODING d5
"""


@pytest.mark.oracle
def test_sdiff_keeps_the_first_sets_encoding(diff72):
    d = diff72
    d.script(_SDIFF_SCRIPT.format(long="x" * 100))
    d("SMEMBERS", "d4")  # listpacks: the first set's order
    d("SDIFF", "mix", "o7", "o8", "o9")
    d.unordered("SDIFF", "big2", "o3", "o4")
    d("SADD", "big", *[b"m%d" % i for i in range(130)])
    d("SADD", "o1", "m1", "m2")
    d("SADD", "o2", "m3")
    d("SDIFFSTORE", "d", "big", "o1", "o2")  # 127 left: a hashtable still, as the 130 made it
    d("OBJECT", "ENCODING", "d")
    d.unordered("SMEMBERS", "d")


@pytest.mark.oracle
def test_debug_listpack_72(diff72):
    diff72.script("""
        SADD s a b
        DEBUG LISTPACK s
        SADD i 1 2
        DEBUG LISTPACK i
        HSET h a 1
        DEBUG LISTPACK h
        DEBUG LISTPACK nokey
    """)


@pytest.mark.oracle
def test_sdiff_keeps_the_first_sets_encoding_7_0(diff):
    """7.0.15 makes the same choice: an intset's worth of numbers left of a hashtable's stay one."""
    diff.script(_SDIFF_SCRIPT.format(long="x" * 100))
    diff("SADD", "ints", *[b"%d" % i for i in range(515)])
    diff("SADD", "o5", "1", "2", "3", "4")
    diff("SADD", "o6", "1000")
    diff("SDIFFSTORE", "d3", "ints", "o5", "o6")
    diff("OBJECT", "ENCODING", "d3")
    diff("SDIFFSTORE", "d6", "ints", "o5")  # two sets: the first algorithm, an intset
    diff("OBJECT", "ENCODING", "d6")
