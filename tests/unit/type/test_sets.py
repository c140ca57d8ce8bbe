"""Set commands, differentially against redis-server 7.0 (RESP2 and RESP3).

Intsets iterate in ascending order in Redis, so replies over integer sets are compared byte for
byte; sets of strings ("hashtable") iterate in hash order, so those replies are compared as
multisets.  Random commands are checked by their properties.
"""

from __future__ import annotations

import pytest

from tests.support.diff import parse

pytestmark = pytest.mark.pure  # set_type.py and intset.py are compiled: run interpreted too


def test_sadd_and_reads_on_intset(diff):
    diff("SADD", "s", "3", "1", "2", "-5", "1")
    diff("SADD", "s", "3")
    diff("SCARD", "s")
    diff("SMEMBERS", "s")
    diff("SISMEMBER", "s", "2")
    diff("SISMEMBER", "s", "02")
    diff("SISMEMBER", "s", "x")
    diff("SMISMEMBER", "s", "1", "7", "-5", "+1", " 1")
    diff("OBJECT", "ENCODING", "s")
    diff("SADD", "s", "9223372036854775807", "-9223372036854775808", "70000", "-40000")
    diff("SMEMBERS", "s")
    diff("OBJECT", "ENCODING", "s")


def test_non_canonical_integers_convert_to_hashtable(diff):
    for member in ["01", "+1", " 1", "1 ", "9223372036854775808", "-0", "1.0", ""]:
        diff("DEL", "s")
        diff("SADD", "s", "1", "2")
        diff("SADD", "s", member)
        diff("OBJECT", "ENCODING", "s")
        diff("SISMEMBER", "s", member)
        diff("SISMEMBER", "s", "1")
        diff.unordered("SMEMBERS", "s")


def test_sadd_strings_hashtable(diff):
    diff("SADD", "s", "a", "b", "c", "a")
    diff("OBJECT", "ENCODING", "s")
    diff.unordered("SMEMBERS", "s")
    diff("SCARD", "s")
    diff("SISMEMBER", "s", "b")
    diff("SMISMEMBER", "s", "a", "z", "c")
    diff("SADD", "s", "1")
    diff("SISMEMBER", "s", "1")
    diff("SISMEMBER", "s", "01")


def test_missing_keys(diff):
    diff("SMEMBERS", "nokey")
    diff("SCARD", "nokey")
    diff("SISMEMBER", "nokey", "a")
    diff("SMISMEMBER", "nokey", "a", "b")
    diff("SREM", "nokey", "a")
    diff("SPOP", "nokey")
    diff("SPOP", "nokey", "3")
    diff("SRANDMEMBER", "nokey")
    diff("SRANDMEMBER", "nokey", "3")
    diff("SRANDMEMBER", "nokey", "-3")
    diff("SSCAN", "nokey", "0")
    diff("SMOVE", "nokey", "dst", "a")
    diff("EXISTS", "dst")


def test_srem_deletes_empty_set(diff):
    diff("SADD", "s", "a", "b", "1")
    diff("SREM", "s", "a", "zz")
    diff("SREM", "s", "b", "1", "b")
    diff("EXISTS", "s")
    diff("SADD", "i", "1", "2")
    diff("SREM", "i", "01", "x")
    diff("SREM", "i", "2")
    diff("SMEMBERS", "i")


def test_wrongtype_and_arity(diff):
    diff("SET", "str", "x")
    for cmd in (["SADD", "str", "a"], ["SREM", "str", "a"], ["SMEMBERS", "str"], ["SISMEMBER", "str", "a"],
                ["SMISMEMBER", "str", "a"], ["SCARD", "str"], ["SPOP", "str"], ["SPOP", "str", "2"],
                ["SRANDMEMBER", "str"], ["SRANDMEMBER", "str", "2"], ["SSCAN", "str", "0"],
                ["SINTER", "str"], ["SUNION", "str"], ["SDIFF", "str"], ["SINTERCARD", "1", "str"],
                ["SINTERSTORE", "d", "str"], ["SUNIONSTORE", "d", "str"], ["SDIFFSTORE", "d", "str"]):
        diff(*cmd)
    for cmd in (["SADD", "s"], ["SREM", "s"], ["SMEMBERS"], ["SISMEMBER", "s"], ["SMISMEMBER", "s"],
                ["SCARD"], ["SPOP"], ["SRANDMEMBER"], ["SMOVE", "a", "b"], ["SINTER"], ["SINTERSTORE", "d"],
                ["SINTERCARD", "1"], ["SUNION"], ["SDIFF"], ["SSCAN", "s"], ["SCARD", "a", "b"]):
        diff(*cmd)


def test_spop_and_srandmember_errors(diff):
    diff("SADD", "s", "1", "2", "3")
    diff("SPOP", "s", "-1")
    diff("SPOP", "s", "x")
    diff("SPOP", "s", "1", "2")
    diff("SPOP", "s", "0")
    diff("SRANDMEMBER", "s", "x")
    diff("SRANDMEMBER", "s", "1", "2")
    diff("SRANDMEMBER", "s", "0")
    diff("SRANDMEMBER", "s", "-9223372036854775808")
    diff("SRANDMEMBER", "s", "9223372036854775808")
    diff("SET", "str", "x")
    diff("SPOP", "str", "0")
    diff("SRANDMEMBER", "str", "0")
    diff("SPOP", "str", "-1")


def test_spop_whole_set(diff):
    diff("SADD", "s", "5", "3", "10", "-2")
    diff("SPOP", "s", "4")
    diff("EXISTS", "s")
    diff("SADD", "s", "5", "3")
    diff("SPOP", "s", "100")
    diff("EXISTS", "s")
    diff("SADD", "h", "a", "b", "c")
    diff.unordered("SPOP", "h", "3")
    diff("EXISTS", "h")


def test_srandmember_whole_intset_in_order(diff):
    diff("SADD", "s", "5", "3", "10", "-2")
    diff("SRANDMEMBER", "s", "4")
    diff("SRANDMEMBER", "s", "100")
    diff("SADD", "h", "a", "b", "c")
    diff.unordered("SRANDMEMBER", "h", "3")


@pytest.mark.parametrize("members", [[str(i) for i in range(50)], [f"m{i}" for i in range(50)]],
                         ids=["intset", "hashtable"])
def test_spop_properties(r, members):
    r.sadd("s", *members)
    popped = [r.spop("s") for _ in range(5)]
    assert len(set(popped)) == 5
    assert all(p.decode() in members for p in popped)
    assert r.scard("s") == 45
    assert not any(r.sismember("s", p) for p in popped)
    many = r.spop("s", 10)
    assert len(many) == 10 and len(set(many)) == 10
    assert r.scard("s") == 35
    # most of the set: Redis rebuilds it from the survivors
    many = r.spop("s", 33)
    assert len(set(many)) == 33
    rest = r.smembers("s")
    assert len(rest) == 2
    assert set(popped) | set(many) | rest | set(r.spop("s", 0)) <= {m.encode() for m in members}
    assert not set(many) & rest


@pytest.mark.parametrize("members", [[str(i) for i in range(20)], [f"m{i}" for i in range(20)]],
                         ids=["intset", "hashtable"])
def test_srandmember_properties(r, members):
    r.sadd("s", *members)
    universe = {m.encode() for m in members}
    one = r.srandmember("s")
    assert one in universe
    some = r.srandmember("s", 7)
    assert len(some) == 7 and len(set(some)) == 7 and set(some) <= universe
    rep = r.srandmember("s", -100)
    assert len(rep) == 100 and set(rep) <= universe
    assert len(set(rep)) < 100  # 100 draws from 20 must repeat
    all_ = r.srandmember("s", 20)
    assert sorted(all_) == sorted(universe)
    assert r.scard("s") == 20
    seen = set()
    for _ in range(200):
        seen.add(r.srandmember("s"))
    assert len(seen) > 10  # not stuck on a few members


def test_spop_reencodes_survivors_like_redis(diff):
    # 600 integers: hashtable (over 512); popping most rebuilds the set from the survivors -> intset
    diff("SADD", "s", *range(600))
    diff("OBJECT", "ENCODING", "s")
    ours, theirs = diff.both("SPOP", "s", "590")
    assert len(parse(ours)) == len(parse(theirs)) == 590
    diff("SCARD", "s")
    diff("OBJECT", "ENCODING", "s")
    # popping a few keeps the hashtable
    diff("SADD", "t", *range(600))
    diff.both("SPOP", "t", "10")
    diff("OBJECT", "ENCODING", "t")


def test_smove(diff):
    diff("SADD", "a", "1", "2", "x")
    diff("SADD", "b", "3")
    diff("SMOVE", "a", "b", "1")
    diff("SMOVE", "a", "b", "1")
    diff("SMEMBERS", "b")
    diff("SMOVE", "a", "b", "x")
    diff("OBJECT", "ENCODING", "b")
    diff("SMOVE", "a", "a", "2")
    diff("SMOVE", "a", "a", "zz")
    diff("SMOVE", "a", "new", "2")
    diff("EXISTS", "a")
    diff("SMEMBERS", "new")
    diff("OBJECT", "ENCODING", "new")
    diff("SADD", "a", "q")
    diff("SMOVE", "a", "b2", "q")
    diff("OBJECT", "ENCODING", "b2")
    diff("SET", "str", "v")
    diff("SADD", "a", "z")
    diff("SMOVE", "a", "str", "z")
    diff("SMOVE", "str", "a", "z")
    diff("SMOVE", "nokey", "str", "z")
    diff("SADD", "c", "m", "n")
    diff("SADD", "d", "m")
    diff("SMOVE", "c", "d", "m")
    diff.unordered("SMEMBERS", "d")
    diff.unordered("SMEMBERS", "c")


def test_algebra_on_intsets_is_ordered(diff):
    diff("SADD", "a", "5", "1", "3", "7", "9")
    diff("SADD", "b", "3", "9", "11", "1")
    diff("SADD", "c", "1", "9", "100")
    diff("SINTER", "a", "b")
    diff("SINTER", "a", "b", "c")
    diff("SINTER", "a")
    diff("SINTER", "a", "a")
    diff("SUNION", "a", "b", "c")
    diff("SUNION", "a", "nokey")
    diff("SDIFF", "a", "b")
    diff("SDIFF", "a", "b", "c")
    diff("SDIFF", "a", "a")
    diff("SDIFF", "a", "nokey")
    diff("SDIFF", "nokey", "a")
    diff("SINTER", "a", "nokey")
    diff("SINTER", "nokey")
    diff("SUNION", "nokey")
    diff("SINTERCARD", "2", "a", "b")
    diff("SINTERCARD", "2", "a", "b", "LIMIT", "1")
    diff("SINTERCARD", "2", "a", "b", "limit", "0")
    diff("SINTERCARD", "3", "a", "b", "nokey")


def test_algebra_on_strings(diff):
    diff("SADD", "a", "x", "y", "z", "1")
    diff("SADD", "b", "y", "z", "w", "1")
    diff("SADD", "i", "1", "2")
    diff.unordered("SINTER", "a", "b")
    diff("SINTER", "a", "i")
    diff.unordered("SUNION", "a", "b", "i")
    diff.unordered("SDIFF", "a", "b")
    diff.unordered("SDIFF", "b", "a", "i")
    diff("SDIFF", "i", "a")
    diff("SINTERCARD", "2", "a", "b")
    diff("SINTERCARD", "2", "a", "b", "LIMIT", "2")


def test_sintercard_errors(diff):
    diff("SADD", "a", "1")
    diff("SINTERCARD", "0", "a")
    diff("SINTERCARD", "-1", "a")
    diff("SINTERCARD", "x", "a")
    diff("SINTERCARD", "2", "a")
    diff("SINTERCARD", "1", "a", "LIMIT")
    diff("SINTERCARD", "1", "a", "LIMIT", "-1")
    diff("SINTERCARD", "1", "a", "LIMIT", "x")
    diff("SINTERCARD", "1", "a", "FOO", "1")
    diff("SINTERCARD", "1", "a", "LIMIT", "1", "LIMIT", "2")
    diff("SET", "str", "x")
    diff("SINTERCARD", "2", "nokey", "str")


def test_wrongtype_checked_on_every_source(diff):
    diff("SET", "str", "x")
    diff("SADD", "a", "1")
    diff("SINTER", "nokey", "str")
    diff("SINTER", "a", "nokey", "str")
    diff("SUNION", "a", "str")
    diff("SDIFF", "nokey", "str")
    diff("SINTERSTORE", "d", "nokey", "str")
    diff("SDIFFSTORE", "d", "a", "str")


def test_store_variants(diff):
    diff("SADD", "a", "5", "1", "3")
    diff("SADD", "b", "3", "9", "x")
    for cmd in ("SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"):
        diff(cmd, "d", "a", "b")
        diff("TYPE", "d")
        diff("OBJECT", "ENCODING", "d")
        diff.unordered("SMEMBERS", "d")
    diff("SUNIONSTORE", "d", "a")
    diff("SMEMBERS", "d")
    # the destination is overwritten whatever it held, and loses its TTL
    diff("SET", "d", "string")
    diff("EXPIRE", "d", "100")
    diff("SINTERSTORE", "d", "a", "a")
    diff("TTL", "d")
    diff("SMEMBERS", "d")
    # an empty result deletes the destination
    diff("SINTERSTORE", "d", "a", "nokey")
    diff("EXISTS", "d")
    diff("SET", "d", "string")
    diff("SDIFFSTORE", "d", "a", "a")
    diff("EXISTS", "d")
    diff("SET", "d", "string")
    diff("SUNIONSTORE", "d", "nokey")
    diff("EXISTS", "d")
    # the destination may be a source
    diff("SUNIONSTORE", "a", "a", "b")
    diff.unordered("SMEMBERS", "a")


def test_sscan_intset_returns_everything(diff):
    diff("SADD", "s", *range(30))
    diff("SSCAN", "s", "0")
    diff("SSCAN", "s", "0", "COUNT", "5")
    diff("SSCAN", "s", "123", "COUNT", "5")
    diff("SSCAN", "s", "0", "MATCH", "1*")
    diff("SSCAN", "s", "0", "MATCH", "*", "COUNT", "1000")


def test_sscan_errors(diff):
    diff("SADD", "s", "1")  # an intset: any cursor returns everything (a hashtable's buckets are salted)
    diff("SSCAN", "s", "x")
    diff("SSCAN", "s", "-1")
    diff("SSCAN", "s", "0", "COUNT", "0")
    diff("SSCAN", "s", "0", "COUNT", "x")
    diff("SSCAN", "s", "0", "COUNT")
    diff("SSCAN", "s", "0", "MATCH")
    diff("SSCAN", "s", "0", "TYPE", "string")
    diff("SSCAN", "s", "0", "FOO", "bar")
    diff("SSCAN", "s", "18446744073709551616")


def _full_scan(r, key, **kw):
    seen = []
    cursor = 0
    calls = 0
    while True:
        cursor, batch = r.sscan(key, cursor, **kw)
        seen.extend(batch)
        calls += 1
        if cursor == 0:
            return seen, calls


def test_sscan_hashtable_full_iteration(r):
    members = {f"m{i}".encode() for i in range(1000)}
    r.sadd("s", *members)
    seen, calls = _full_scan(r, "s", count=20)
    assert set(seen) == members
    assert calls > 10  # really incremental
    matched, _ = _full_scan(r, "s", match="m1*", count=50)
    assert set(matched) == {m for m in members if m.startswith(b"m1")}


def test_sscan_guarantee_under_growth_and_shrink(r):
    """Members present for the whole scan are returned, while others come and go."""
    stable = {f"s{i}".encode() for i in range(300)}
    r.sadd("s", *stable)
    seen = set()
    cursor = 0
    step = 0
    while True:
        cursor, batch = r.sscan("s", cursor, count=15)
        seen.update(batch)
        step += 1
        if step % 2:
            r.sadd("s", *[f"grow{step}-{i}" for i in range(60)])  # table grows
        else:
            r.srem("s", *[f"grow{step - 1}-{i}" for i in range(60)])
        if cursor == 0:
            break
    assert stable <= seen


def test_encoding_conversion_at_default_intset_limit(diff):
    diff("SADD", "s", *range(512))
    diff("OBJECT", "ENCODING", "s")
    diff("SADD", "s", "512")
    diff("OBJECT", "ENCODING", "s")
    diff("SREM", "s", *range(100, 513))
    diff("OBJECT", "ENCODING", "s")  # no conversion back
    diff("SINTERSTORE", "d", "s")
    diff("OBJECT", "ENCODING", "d")
    diff("SMEMBERS", "d")


@pytest.fixture(scope="module")
def notify_pair():
    from tests.support.servers import start_raxdb, start_redis

    ours = start_raxdb("--notify-keyspace-events", "KEA")
    theirs = start_redis("--notify-keyspace-events", "KEA")
    yield ours, theirs
    ours.stop()
    theirs.stop()


@pytest.mark.oracle
def test_keyspace_events(notify_pair):
    from tests.unit.test_notify import check

    check(notify_pair, [
        ("SADD", "s", "1", "2", "3"), ("SADD", "s", "1"), ("SREM", "s", "9"), ("SREM", "s", "1"),
        ("SREM", "s", "2"), ("SPOP", "s"), ("SADD", "s", "5", "6", "7", "8"), ("SPOP", "s", "0"),
        ("SPOP", "s", "10"), ("SADD", "s", "x"), ("SPOP", "s", "1"), ("SADD", "a", "x", "y"), ("SADD", "b", "y"), ("SMOVE", "a", "b", "x"),
        ("SMOVE", "a", "b", "y"), ("SMOVE", "b", "b", "x"), ("SMOVE", "b", "c", "zz"),
        ("SINTERSTORE", "d", "b", "c"), ("SUNIONSTORE", "d", "b", "c"), ("SDIFFSTORE", "d", "b", "b"),
        ("SUNIONSTORE", "d", "b"), ("SINTERSTORE", "d", "b", "nokey"), ("SREM", "b", "x", "y"),
        ("SRANDMEMBER", "nokey"), ("SMEMBERS", "nokey"), ("SISMEMBER", "nokey", "a"),
    ])


def test_generic_commands_on_sets(diff):
    diff("SADD", "i", "3", "1", "2")
    diff("SADD", "h", "a", "b")
    for k in ("i", "h"):
        diff("TYPE", k)
        diff("COPY", k, k + "2")
        diff("SADD", k + "2", "99", "zz")
        diff("SCARD", k)
        diff("OBJECT", "ENCODING", k)
        diff("OBJECT", "ENCODING", k + "2")
        diff("RENAME", k + "2", k + "3")
        diff("EXISTS", k + "2")
        diff("MOVE", k + "3", "1")
        diff("GETDEL", k)
        diff("DEL", k)
    diff("SELECT", "1")
    diff.unordered("SMEMBERS", "i3")
    ours, theirs = (parse(x) for x in diff.both("SCAN", "0", "TYPE", "set"))
    assert ours[0] == theirs[0] == b"0" and sorted(ours[1]) == sorted(theirs[1]) == [b"h3", b"i3"]



def test_a_copied_intset_and_its_original_stay_apart(diff):
    """The keyspace keeps an intset as immutable bytes that COPY may share: every write to one key
    leaves the other as it was, and two keys are never taken for one (SMOVE between them moves)."""
    steps = [
        "SADD a 1 2 3", "COPY a b", "SMOVE a b 1", "SMEMBERS a", "SMEMBERS b", "SMOVE b a 1",
        "SMEMBERS a", "SMEMBERS b", "COPY a c", "SADD c 4", "SREM a 3",
        "SPOP b 3",  # the whole set: ascending, not random
        "SMEMBERS a", "SMEMBERS b", "SMEMBERS c", "COPY c d", "SINTER c d", "SDIFF c d",
        "SUNIONSTORE e c d", "SDIFFSTORE c c d", "EXISTS c", "SMEMBERS d", "SMEMBERS e",
        "SADD d x",  # the copy converts; the set it came from does not
        "OBJECT ENCODING d", "OBJECT ENCODING e",
    ]
    for step in steps:
        diff(*step.split())
