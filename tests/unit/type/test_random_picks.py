"""Random picks from every encoding (HRANDFIELD, ZRANDMEMBER, SRANDMEMBER, SPOP with a count),
differentially against redis-server 7.0 in RESP2 and RESP3.  A listpack hash or sorted set is
walked once and only the pairs picked are decoded (storage/listpack.py's group_offsets): these
tests pin what that must keep.  Where Redis is deterministic the replies compare byte for byte
(errors, empty and missing keys, a count at least the size); elsewhere by their properties, on
both servers alike: the reply's shape and length, every pick a member, a value or score paired
with its own field or member (checked against HGETALL / ZRANGE of the same server), distinct
picks for a positive count.  A statistical check: every field, member and element can be picked.
"""

from __future__ import annotations

import pytest

from tests.support.diff import parse

# Values of every listpack encoding a small hash keeps (7-bit to 64-bit integers, 6- and 12-bit
# strings, non-canonical numbers, the empty string), up to hash-max-listpack-value (64 bytes).
VALUES = [b"0", b"7", b"-1", b"300", b"-5000", b"70000", b"-9000000", b"4294967296", b"-9223372036854775808",
          b"", b"x", b"01", b"+1", b"1.5", b"v" * 63, b"w" * 64, b"\x00\xff\r\n"]
# Scores of every kind a sorted set's listpack holds and prints: integers, fractions, infinities.
SCORES = [b"0", b"1", b"-3", b"1.5", b"0.1", b"-2.25", b"1e17", b"123456789012", b"inf", b"-inf", b"3.0000000000000004"]

COUNTS = [1, 2, 5, -1, -5, -40]


def _hash(diff, key: str, n: int, hashtable: bool = False) -> dict:
    fields = {b"f%d" % i if i % 4 else b"%d" % (i * 37): VALUES[i % len(VALUES)] for i in range(n)}
    if hashtable:
        fields[b"long" * 20] = b"x"  # a field longer than hash-max-listpack-value
    diff("HSET", key, *[x for kv in fields.items() for x in kv])
    diff("OBJECT", "ENCODING", key)
    return fields


def _pairs(reply, resp: int, with_second: bool) -> list:
    if not with_second:
        return [(x, None) for x in reply]
    if resp == 3:
        return [tuple(p) for p in reply]
    return list(zip(reply[::2], reply[1::2], strict=True))


def _check_forms(diff, cmd: str, key: str, option: str, model: dict, whole_alike: bool) -> None:
    """Every form of `cmd` (HRANDFIELD / ZRANDMEMBER) on `key`, whose fields or members map to
    their values or scores in `model` (as the servers print them): sizes, membership, pairing and
    distinctness on both servers; byte for byte where Redis is deterministic (`whole_alike`: a
    count at least the size returns the whole key in an order both servers share)."""
    resp = diff.protocol
    size = len(model)
    for reply in diff.both(cmd, key):
        assert parse(reply) in model
    for count in [*COUNTS, size - 1, size, size + 3, -3 * size]:
        if count == 0:
            continue
        for paired in (False, True):
            args = [cmd, key, str(count)] + ([option] if paired else [])
            ours, theirs = diff.both(*args)
            if count >= size and whole_alike:
                assert ours == theirs, args
            assert ours[:1] == theirs[:1]
            if paired and resp == 3:  # [field, value] pairs, as Redis's
                assert ours.count(b"*2\r\n") == theirs.count(b"*2\r\n")
            want = min(count, size) if count > 0 else -count
            for reply in (ours, theirs):
                got = _pairs(parse(reply), resp, paired)
                assert len(got) == want, args
                for f, v in got:
                    assert f in model
                    if paired:
                        assert v == model[f], (args, f)  # the value or score of what was picked
                if count > 0:
                    assert len({f for f, _ in got}) == want, args  # distinct


@pytest.mark.parametrize("n,hashtable", [(1, False), (2, False), (100, False), (128, False), (300, True)],
                         ids=["lp1", "lp2", "lp100", "lp128", "hashtable"])
def test_hrandfield_forms(diff, n, hashtable):
    fields = _hash(diff, "h", n, hashtable)
    for reply in diff.both("HGETALL", "h"):  # the pairs the picks are checked against
        got = parse(reply)  # (RESP3's map parses to a dict)
        assert (got if isinstance(got, dict) else dict(_pairs(got, 2, True))) == fields
    _check_forms(diff, "HRANDFIELD", "h", "WITHVALUES", fields, not hashtable)


def _zset(diff, key: str, n: int, skiplist: bool = False) -> None:
    args = []
    for i in range(n):
        args += [SCORES[i % len(SCORES)].decode(), f"m{i}" if i % 3 else str(i * 1000)]
    if skiplist:
        args += ["5", "L" * 70]
    diff("ZADD", key, *args)
    diff("OBJECT", "ENCODING", key)


@pytest.mark.parametrize("n,skiplist", [(1, False), (3, False), (100, False), (128, False), (200, True)],
                         ids=["lp1", "lp3", "lp100", "lp128", "skiplist"])
def test_zrandmember_forms(diff, n, skiplist):
    _zset(diff, "z", n, skiplist)
    whole = diff("ZRANGE", "z", "0", "-1", "WITHSCORES")  # the same on both servers
    _check_forms(diff, "ZRANDMEMBER", "z", "WITHSCORES", dict(_pairs(parse(whole), diff.protocol, True)), True)


@pytest.mark.parametrize("members", [["1", "2", "-7", "300000", "9223372036854775807"],
                                     [str(i * 11) for i in range(200)],
                                     ["a", "b", "12", "c"],
                                     [f"m{i}" for i in range(300)]],
                         ids=["intset5", "intset200", "small", "hashtable"])
def test_srandmember_and_spop_count(diff, members):
    diff("SADD", "s", *members)
    diff("OBJECT", "ENCODING", "s")
    size = len(members)
    everything = {m.encode() for m in members}
    for count in [*COUNTS, size - 1, size, size + 2, -3 * size]:
        ours, theirs = diff.both("SRANDMEMBER", "s", str(count))
        assert ours[:1] == theirs[:1]
        want = min(count, size) if count > 0 else -count
        for reply in (ours, theirs):
            got = parse(reply)
            assert len(got) == want and set(got) <= everything
            if count > 0:
                assert len(set(got)) == want
    diff("SRANDMEMBER", "s", "0")
    diff("SRANDMEMBER", "missing", "5")
    diff("SRANDMEMBER", "missing", "-5")
    # SPOP with a count: distinct members, gone from the set, the rest kept (on each server)
    for count in (1, size // 3, size // 2, size - 1):
        ours, theirs = diff.both("SPOP", "s", str(count))
        for reply, conn in ((ours, diff.ours), (theirs, diff.theirs)):
            got = set(parse(reply))
            assert len(got) == len(parse(reply)) == count and got <= everything
            left = set(parse(conn.call("SMEMBERS", "s")))
            assert not left & got and left | got == everything
        diff("SCARD", "s")
        diff("DEL", "s")
        diff("SADD", "s", *members)


def test_random_picks_errors_and_missing_keys(diff):
    _hash(diff, "h", 10)
    _zset(diff, "z", 10)
    diff("SADD", "s", "1", "2", "3")
    diff("SET", "str", "x")
    for cmd in ("HRANDFIELD", "ZRANDMEMBER", "SRANDMEMBER"):
        for args in [("missing",), ("missing", "3"), ("missing", "-3"), ("str",), ("str", "-3"), ("h", "x"),
                     ("z", "1.5"), ("s", "")]:
            diff(cmd, *args)
    for args in [("h", "0", "WITHVALUES"), ("h", "-3", "WITHVALUE"), ("missing", "-3", "WITHVALUES")]:
        diff("HRANDFIELD", *args)
    for args in [("z", "0", "WITHSCORES"), ("z", "-3", "WITHSCORE"), ("missing", "-3", "WITHSCORES")]:
        diff("ZRANDMEMBER", *args)
    diff("SPOP", "missing", "3")
    diff("SPOP", "s", "-1")


@pytest.mark.parametrize("kind", ["hash", "zset", "intset"])
def test_every_element_can_be_picked(r, kind):
    """100 elements of a small encoding: 3,000 picks with repeats (each element missed with
    probability 0.99**3000, about 1e-13) and 40 draws of 50 distinct (0.5**40) reach them all."""
    names = [b"e%d" % i for i in range(100)] if kind != "intset" else [b"%d" % (i * 7) for i in range(100)]
    if kind == "hash":
        r.hset("k", mapping={n: b"v" + n for n in names})
        pick = ["HRANDFIELD", "k"]
    elif kind == "zset":
        r.zadd("k", {n: i for i, n in enumerate(names)})
        pick = ["ZRANDMEMBER", "k"]
    else:
        r.sadd("k", *names)
        pick = ["SRANDMEMBER", "k"]
    assert r.object("encoding", "k") in (b"listpack", b"intset")
    seen = set(r.execute_command(*pick, -3000))
    assert seen == set(names)
    seen = set()
    for _ in range(40):
        got = r.execute_command(*pick, 50)
        assert len(set(got)) == 50
        seen.update(got)
    assert seen == set(names)
    if kind != "intset":  # the single pick too
        assert {r.execute_command(*pick) for _ in range(3000)} == set(names)
