"""Sorted-set commands, differentially against redis-server 7.0 (RESP2 and RESP3).

Sorted sets reply in (score, member) order, so almost everything is compared byte for byte; the
random commands (ZRANDMEMBER) are checked by their properties and, where Redis is deterministic
(count >= size), byte for byte.
"""

from __future__ import annotations

import pytest

from tests.support.diff import parse

LONG = "L" * 70  # longer than zset-max-listpack-value: forces the skiplist encoding


@pytest.fixture(params=["listpack", "skiplist"])
def enc(request, diff):
    """Run a test over both encodings: `big` is added to every zset made by `mk` for skiplist."""
    return request.param


def mk(diff, enc, key, *score_members):
    diff("ZADD", key, *score_members)
    if enc == "skiplist":
        diff("ZADD", key, "-1000", LONG)
        diff("ZREM", key, LONG)
    diff("OBJECT", "ENCODING", key)


def scan_same(diff, *args):
    """A one-call ZSCAN: same cursor and the same member -> score pairs in any order."""
    ours, theirs = (parse(x) for x in diff.both(*args))
    assert ours[0] == theirs[0] == b"0"
    pairs = [dict(zip(x[1][::2], x[1][1::2], strict=True)) for x in (ours, theirs)]
    assert pairs[0] == pairs[1]
    assert len(ours[1]) == len(theirs[1])


def test_zadd_basic(diff):
    diff("ZADD", "z", "1", "a", "2", "b", "1.5", "c")
    diff("ZADD", "z", "1", "a")
    diff("ZADD", "z", "3", "a")
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff("ZCARD", "z")
    diff("ZADD", "z", "CH", "4", "a", "9", "new", "2", "b")
    diff("ZADD", "z", "ch", "nx", "5", "a", "10", "n2")
    diff("ZADD", "z", "XX", "CH", "6", "a", "11", "n3")
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff("ZADD", "z", "GT", "CH", "1", "a", "100", "b")
    diff("ZADD", "z", "LT", "CH", "1", "a", "1000", "b", "7", "n4")
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff("ZADD", "z", "xx", "gt", "ch", "1000", "a")
    diff("ZSCORE", "z", "a")


def test_zadd_incr(diff):
    diff("ZADD", "z", "INCR", "1", "a")
    diff("ZADD", "z", "INCR", "2.5", "a")
    diff("ZADD", "z", "INCR", "NX", "1", "a")
    diff("ZADD", "z", "INCR", "XX", "1", "b")
    diff("ZADD", "z", "INCR", "XX", "1", "a")
    diff("ZADD", "z", "INCR", "GT", "-1", "a")
    diff("ZADD", "z", "INCR", "LT", "-1", "a")
    diff("ZADD", "z", "INCR", "GT", "0", "a")
    diff("ZADD", "z", "INCR", "0", "a")
    diff("ZADD", "z", "INCR", "CH", "1", "a")
    diff("ZADD", "z", "INCR", "inf", "a")
    diff("ZADD", "z", "INCR", "-inf", "a")
    diff("ZSCORE", "z", "a")
    diff("ZADD", "nokey", "INCR", "XX", "1", "a")
    diff("ZADD", "nokey", "XX", "1", "a")
    diff("EXISTS", "nokey")


def test_zadd_errors(diff):
    diff("ZADD", "z", "1")
    diff("ZADD", "z", "1", "a", "2")
    diff("ZADD", "z", "NX")
    diff("ZADD", "z", "NX", "XX", "1", "a")
    diff("ZADD", "z", "NX", "GT", "1", "a")
    diff("ZADD", "z", "LT", "NX", "1", "a")
    diff("ZADD", "z", "GT", "LT", "1", "a")
    diff("ZADD", "z", "INCR", "1", "a", "2", "b")
    diff("ZADD", "z", "nan", "a")
    diff("ZADD", "z", "x", "a")
    diff("ZADD", "z", "1", "a", "y", "b")
    diff("EXISTS", "z")
    diff("ZADD", "z", "NX", "XX", "INCR", "x", "a", "1")
    diff("ZADD", "z", "GT", "LT", "INCR", "1", "a", "2", "b")
    for bad in ["1e400", "-1e400", "1e-400", " 1", "1 ", "", "0x", "1.2.3", "--1", "infx", "NaN"]:
        diff("ZADD", "z", bad, "a")
    for good in ["+1", "1e10", "inf", "-inf", "+inf", "Infinity", "-INF", "0x1p3", "4e-320", ".5", "5.",
                 "1E5", "-0", "0.1", "1e-300", "12345678901234567890", "3.14159265358979323846"]:
        diff("ZADD", "g", good, good)
    diff("ZRANGE", "g", "0", "-1", "WITHSCORES")
    diff("SET", "str", "x")
    diff("ZADD", "str", "1", "a")
    diff("ZADD", "str", "x", "a")  # the score is checked before the type
    diff("ZINCRBY", "str", "1", "a")


def test_zadd_nan_result(diff):
    diff("ZADD", "z", "inf", "a")
    diff("ZADD", "z", "INCR", "-inf", "a")
    diff("ZINCRBY", "z", "-inf", "a")
    diff("ZSCORE", "z", "a")
    diff("ZADD", "z2", "GT", "INCR", "-inf", "zz")
    diff("ZADD", "z2", "INCR", "inf", "zz")
    diff("ZADD", "z2", "GT", "INCR", "-inf", "zz")


def test_zincrby(diff):
    diff("ZINCRBY", "z", "1", "a")
    diff("ZINCRBY", "z", "0.1", "a")
    diff("ZINCRBY", "z", "-5e-1", "a")
    diff("ZINCRBY", "z", "x", "a")
    diff("ZINCRBY", "z", "nan", "a")
    diff("ZINCRBY", "z", "xx", "a")
    diff("ZINCRBY", "z", "nx", "a")
    diff("ZINCRBY", "z", "1", "xx")
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES")


def test_negative_zero_by_encoding(diff, enc):
    mk(diff, enc, "z", "1", "a")
    diff("ZADD", "z", "-0", "b", "-0.0", "c")
    diff("ZSCORE", "z", "b")
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff("ZINCRBY", "z", "-0", "c")
    diff("ZADD", "z", "INCR", "-0", "new")
    diff("ZSCORE", "z", "new")
    scan_same(diff, "ZSCAN", "z", "0")
    diff("ZUNION", "1", "z", "WITHSCORES")
    diff("ZUNION", "2", "z", "z", "WEIGHTS", "-0", "1", "WITHSCORES")


def test_scores_print_like_redis(diff):
    values = ["0.1", "1e-5", "123456789.123456789", "1e20", "-3.5", "1e308", "2.2250738585072014e-308",
              "9007199254740993", "4503599627370495", "4503599627370496", "0.30000000000000004", "100"]
    diff("ZADD", "z", *[x for v in values for x in (v, "m" + v)])
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff("ZSCAN", "z", "0")
    for v in values:
        diff("ZSCORE", "z", "m" + v)
    diff("ZMSCORE", "z", *["m" + v for v in values], "nope")
    diff("ZADD", "z", "0", LONG)
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff("ZMSCORE", "z", *["m" + v for v in values])


def test_reads_on_missing_and_wrongtype(diff):
    diff("SET", "str", "x")
    for k in ("nokey", "str"):
        for cmd in (["ZCARD", k], ["ZSCORE", k, "a"], ["ZMSCORE", k, "a", "b"], ["ZRANK", k, "a"],
                    ["ZREVRANK", k, "a"], ["ZCOUNT", k, "-inf", "inf"], ["ZLEXCOUNT", k, "-", "+"],
                    ["ZRANGE", k, "0", "-1"], ["ZRANGESTORE", "dst", k, "0", "-1"], ["ZREVRANGE", k, "0", "-1"],
                    ["ZRANGEBYSCORE", k, "0", "1"], ["ZREVRANGEBYSCORE", k, "1", "0"], ["ZRANGEBYLEX", k, "-", "+"],
                    ["ZREVRANGEBYLEX", k, "+", "-"], ["ZREM", k, "a"], ["ZREMRANGEBYRANK", k, "0", "1"],
                    ["ZREMRANGEBYSCORE", k, "0", "1"], ["ZREMRANGEBYLEX", k, "-", "+"], ["ZPOPMIN", k],
                    ["ZPOPMAX", k, "2"], ["ZMPOP", "1", k, "MIN"], ["ZRANDMEMBER", k], ["ZRANDMEMBER", k, "2"],
                    ["ZSCAN", k, "0"], ["ZUNION", "1", k], ["ZINTER", "1", k], ["ZDIFF", "1", k],
                    ["ZUNIONSTORE", "dst", "1", k], ["ZINTERCARD", "1", k], ["ZINCRBY", k, "1", "a"]):
            diff(*cmd)
    diff("EXISTS", "dst")


def test_arity(diff):
    for cmd in (["ZADD", "z", "1"], ["ZINCRBY", "z", "1"], ["ZCARD"], ["ZSCORE", "z"], ["ZMSCORE", "z"],
                ["ZRANK", "z"], ["ZRANK", "z", "a", "b"], ["ZCOUNT", "z", "1"], ["ZRANGE", "z", "0"],
                ["ZRANGESTORE", "d", "z", "0"], ["ZREM", "z"], ["ZPOPMIN"], ["ZMPOP", "1", "z"],
                ["ZRANDMEMBER"], ["ZUNION", "1"], ["ZUNIONSTORE", "d", "1"], ["ZSCAN", "z"], ["ZINTERCARD", "1"]):
        diff(*cmd)


def test_rank_and_score(diff, enc):
    mk(diff, enc, "z", "1", "a", "2", "b", "2", "c", "3", "d")
    for m in ("a", "b", "c", "d", "x"):
        diff("ZRANK", "z", m)
        diff("ZREVRANK", "z", m)
        diff("ZSCORE", "z", m)
    diff("ZMSCORE", "z", "a", "x", "d")
    diff("ZCARD", "z")


def test_zcount_ranges(diff, enc):
    mk(diff, enc, "z", "-inf", "ninf", "1", "a", "2", "b", "2", "c", "3", "d", "inf", "pinf")
    ranges = [("-inf", "inf"), ("(-inf", "(inf"), ("1", "2"), ("(1", "2"), ("1", "(2"), ("(1", "(2"),
              ("2", "2"), ("(2", "2"), ("2", "(2"), ("3", "1"), ("inf", "inf"), ("(inf", "inf"),
              ("-inf", "-inf"), ("-inf", "(-inf"), ("", "2"), ("(", "2"), (" 1", "2"), ("1", "\t2"),
              ("0x1", "0x2"), ("1e0", "2E0"), ("-1e400", "1e400"), ("(1e400", "inf"), ("1.5", "+2.5"),
              ("( 1", "2")]
    for lo, hi in ranges:
        diff("ZCOUNT", "z", lo, hi)
        diff("ZRANGEBYSCORE", "z", lo, hi, "WITHSCORES")
        diff("ZREVRANGEBYSCORE", "z", hi, lo, "WITHSCORES")
        diff("ZRANGE", "z", lo, hi, "BYSCORE")
        diff("ZRANGE", "z", hi, lo, "BYSCORE", "REV", "WITHSCORES")
    for lo, hi in [("x", "1"), ("1", "x"), ("nan", "1"), ("1", "(nan"), (" ", "1"), ("((1", "2"), ("1 ", "2"),
                   ("[1", "2"), ("-", "+")]:
        diff("ZCOUNT", "z", lo, hi)
        diff("ZRANGEBYSCORE", "z", lo, hi)
        diff("ZREMRANGEBYSCORE", "z", lo, hi)
    diff("ZCOUNT", "nokey", "x", "1")


def test_score_range_limits(diff, enc):
    mk(diff, enc, "z", *[x for i in range(10) for x in (str(i // 2), f"m{i}")])
    for off, cnt in [(0, 3), (2, 3), (0, 0), (0, -1), (3, -5), (9, 5), (10, 1), (20, 1), (-1, 5), (-5, -1),
                     (1, 100)]:
        diff("ZRANGEBYSCORE", "z", "-inf", "inf", "LIMIT", off, cnt)
        diff("ZRANGEBYSCORE", "z", "(1", "3", "WITHSCORES", "LIMIT", off, cnt)
        diff("ZREVRANGEBYSCORE", "z", "inf", "-inf", "LIMIT", off, cnt, "WITHSCORES")
        diff("ZREVRANGEBYSCORE", "z", "3", "(1", "LIMIT", off, cnt)
        diff("ZRANGE", "z", "1", "3", "BYSCORE", "LIMIT", off, cnt)
        diff("ZRANGE", "z", "3", "1", "BYSCORE", "REV", "LIMIT", off, cnt, "WITHSCORES")
    diff("ZRANGEBYSCORE", "z", "0", "1", "LIMIT", "1")
    diff("ZRANGEBYSCORE", "z", "0", "1", "LIMIT", "x", "1")
    diff("ZRANGEBYSCORE", "z", "0", "1", "LIMIT", "1", "y")
    diff("ZRANGEBYSCORE", "z", "0", "1", "WITHSCORES", "LIMIT", "0", "1", "LIMIT", "1", "1")
    diff("ZRANGEBYSCORE", "z", "0", "1", "REV")
    diff("ZRANGEBYSCORE", "z", "0", "1", "BYSCORE")
    diff("ZRANGEBYSCORE", "z", "0", "1", "foo")


def test_rank_ranges(diff, enc):
    mk(diff, enc, "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
    for start, stop in [(0, -1), (0, 0), (1, 3), (-2, -1), (-100, 100), (3, 1), (5, 10), (-1, -2), (0, -6),
                        (2, -100), (-3, 2)]:
        diff("ZRANGE", "z", start, stop)
        diff("ZRANGE", "z", start, stop, "WITHSCORES")
        diff("ZRANGE", "z", start, stop, "REV", "WITHSCORES")
        diff("ZREVRANGE", "z", start, stop, "WITHSCORES")
    diff("ZRANGE", "z", "x", "1")
    diff("ZRANGE", "z", "0", "1.5")
    diff("ZRANGE", "z", "0", "-1", "LIMIT", "0", "1")
    diff("ZRANGE", "z", "0", "-1", "LIMIT", "5", "-1")
    diff("ZRANGE", "z", "0", "-1", "LIMIT", "x", "-1")
    diff("ZREVRANGE", "z", "0", "-1", "LIMIT", "0", "1")
    diff("ZREVRANGE", "z", "0", "-1", "REV")
    diff("ZRANGE", "z", "0", "-1", "REV", "REV")
    diff("ZRANGE", "z", "0", "-1", "BYSCORE", "BYLEX")
    diff("ZRANGE", "z", "0", "-1", "BYSCORE", "BYSCORE")
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES", "WITHSCORES")
    diff("ZRANGE", "z", "0", "-1", "FOO")
    diff("ZRANGE", "z", "0", "-1", "LIMIT")
    diff("ZRANGE", "z", "(0", "+", "BYLEX", "WITHSCORES")
    diff("ZRANGE", "z", "-", "+", "BYLEX", "LIMIT", "1", "2")
    diff("ZRANGE", "z", "(0", "1", "BYSCORE", "WITHSCORES")
    diff("ZRANGE", "z", "x", "1", "BYSCORE")
    diff("ZRANGE", "z", "x", "1", "BYLEX")
    diff("SET", "str", "v")
    diff("ZRANGE", "str", "0", "1", "LIMIT", "0", "1")  # syntax before type


def test_lex_ranges(diff, enc):
    members = ["a", "b", "c", "d", "e", "foo", "zap", "zip", "ALPHA", "alpha", ""]
    mk(diff, enc, "z", *[x for m in members for x in ("0", m)])
    ranges = [("-", "+"), ("+", "-"), ("-", "-"), ("+", "+"), ("[a", "[c"), ("(a", "[c"), ("[a", "(c"), ("(a", "(c"),
              ("[c", "[a"), ("[b", "[b"), ("(b", "[b"), ("[", "+"), ("(", "+"), ("-", "[z"), ("[z", "+"),
              ("[foo", "(zip"), ("-", "(a"), ("[ALPHA", "[alpha")]
    for lo, hi in ranges:
        diff("ZLEXCOUNT", "z", lo, hi)
        diff("ZRANGEBYLEX", "z", lo, hi)
        diff("ZREVRANGEBYLEX", "z", hi, lo)
        diff("ZRANGE", "z", lo, hi, "BYLEX")
        diff("ZRANGE", "z", hi, lo, "BYLEX", "REV")
        for off, cnt in [(0, 2), (1, 1), (2, -1), (-1, 3), (0, 0), (20, 1)]:
            diff("ZRANGEBYLEX", "z", lo, hi, "LIMIT", off, cnt)
            diff("ZREVRANGEBYLEX", "z", hi, lo, "LIMIT", off, cnt)
    for lo, hi in [("a", "+"), ("-", "c"), ("", "+"), ("++", "-"), ("--", "+"), ("{a", "+")]:
        diff("ZLEXCOUNT", "z", lo, hi)
        diff("ZRANGEBYLEX", "z", lo, hi)
        diff("ZREMRANGEBYLEX", "z", lo, hi)
    diff("ZRANGEBYLEX", "z", "-", "+", "WITHSCORES")
    diff("ZRANGEBYLEX", "z", "-", "+", "LIMIT", "0")
    diff("ZRANGEBYLEX", "z", "-", "+", "BYLEX")


def test_lex_on_mixed_scores_listpack(diff):
    # Unspecified by the docs, but a listpack's linear walk makes Redis deterministic here.
    diff("ZADD", "z", "1", "b", "2", "a", "3", "d", "4", "c", "5", "a2")
    for lo, hi in [("[a", "[c"), ("[b", "+"), ("-", "[b"), ("(a", "(d"), ("[c", "+")]:
        diff("ZRANGEBYLEX", "z", lo, hi)
        diff("ZREVRANGEBYLEX", "z", hi, lo)
        diff("ZLEXCOUNT", "z", lo, hi)


def test_zrangestore(diff, enc):
    mk(diff, enc, "z", "1", "a", "2", "b", "3", "c", "4", "d")
    diff("ZRANGESTORE", "d", "z", "0", "-1")
    diff("ZRANGE", "d", "0", "-1", "WITHSCORES")
    diff("OBJECT", "ENCODING", "d")
    diff("ZRANGESTORE", "d", "z", "1", "2", "REV")
    diff("ZRANGE", "d", "0", "-1", "WITHSCORES")
    diff("ZRANGESTORE", "d", "z", "(1", "inf", "BYSCORE", "LIMIT", "1", "2")
    diff("ZRANGE", "d", "0", "-1", "WITHSCORES")
    diff("ZRANGESTORE", "d", "z", "inf", "-inf", "BYSCORE", "REV", "LIMIT", "0", "2")
    diff("ZRANGE", "d", "0", "-1", "WITHSCORES")
    diff("ZRANGESTORE", "d", "z", "[b", "+", "BYLEX")
    diff("ZRANGE", "d", "0", "-1", "WITHSCORES")
    diff("ZRANGESTORE", "d", "z", "0", "-1", "WITHSCORES")
    diff("SET", "d", "str")
    diff("EXPIRE", "d", "100")
    diff("ZRANGESTORE", "d", "z", "0", "0")
    diff("TTL", "d")
    diff("TYPE", "d")
    diff("ZRANGESTORE", "d", "z", "5", "10")
    diff("EXISTS", "d")
    diff("ZRANGESTORE", "d", "nokey", "0", "-1")
    diff("ZRANGESTORE", "z", "z", "1", "2")
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES")


def test_zrem_and_remrange(diff, enc):
    mk(diff, enc, "z", *[x for i in range(12) for x in (str(i % 4), f"m{i:02d}")])
    diff("ZREM", "z", "m00", "nope", "m00", "m05")
    diff("ZREMRANGEBYRANK", "z", "0", "1")
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff("ZREMRANGEBYRANK", "z", "-2", "-1")
    diff("ZREMRANGEBYRANK", "z", "5", "2")
    diff("ZREMRANGEBYRANK", "z", "x", "2")
    diff("ZREMRANGEBYSCORE", "z", "(1", "2")
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff("ZREMRANGEBYSCORE", "z", "10", "20")
    # lex ranges are only specified over equal scores (a skiplist's walk over mixed ones is random)
    diff("ZADD", "z", *[x for i in range(12) for x in ("7", f"n{i:02d}")])
    diff("ZREMRANGEBYLEX", "z", "[n03", "(n07")
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff("ZREMRANGEBYRANK", "z", "0", "-1")
    diff("EXISTS", "z")
    diff("ZADD", "y", "1", "a", "1", "b")
    diff("ZREM", "y", "a", "b", "c")
    diff("EXISTS", "y")
    diff("ZADD", "y", "1", "a", "1", "b")
    diff("ZREMRANGEBYLEX", "y", "-", "+")
    diff("EXISTS", "y")
    diff("ZADD", "y", "1", "a", "1", "b")
    diff("ZREMRANGEBYSCORE", "y", "-inf", "inf")
    diff("EXISTS", "y")


def test_zpop(diff, enc):
    mk(diff, enc, "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
    diff("ZPOPMIN", "z")
    diff("ZPOPMAX", "z")
    diff("ZPOPMIN", "z", "2")
    diff("ZPOPMAX", "z", "1")
    diff("ZPOPMIN", "z", "0")
    diff("ZPOPMIN", "z", "-1")
    diff("ZPOPMIN", "z", "x")
    diff("ZPOPMIN", "z", "1", "2")
    diff("ZPOPMAX", "z", "10")
    diff("EXISTS", "z")
    diff("ZPOPMIN", "z")
    diff("ZPOPMIN", "z", "3")


def test_zmpop(diff, enc):
    mk(diff, enc, "b", "1", "x", "2", "y", "3", "z")
    diff("ZMPOP", "2", "a", "b", "MIN")
    diff("ZMPOP", "2", "a", "b", "max", "COUNT", "10")
    diff("ZMPOP", "2", "a", "b", "MIN")
    diff("EXISTS", "b")
    diff("SET", "str", "x")
    diff("ZADD", "c", "1", "x")
    diff("ZMPOP", "3", "a", "str", "c", "MIN")
    diff("ZMPOP", "2", "c", "str", "MIN", "COUNT", "1")
    for args in (["0", "a", "MIN"], ["-1", "a", "MIN"], ["x", "a", "MIN"], ["1", "a"], ["2", "a", "MIN"],
                 ["1", "a", "MID"], ["1", "a", "MIN", "COUNT"], ["1", "a", "MIN", "COUNT", "0"],
                 ["1", "a", "MIN", "COUNT", "-1"], ["1", "a", "MIN", "COUNT", "x"],
                 ["1", "a", "MIN", "COUNT", "1", "COUNT", "1"], ["1", "a", "MIN", "FOO"]):
        diff("ZMPOP", *args)


def test_zrandmember(diff, r):
    diff("ZADD", "z", "1", "a", "2", "b", "3", "c")
    diff("ZRANDMEMBER", "z", "3")
    diff("ZRANDMEMBER", "z", "10", "WITHSCORES")
    diff("ZRANDMEMBER", "z", "0")
    diff("ZRANDMEMBER", "z", "0", "WITHSCORES")
    diff("ZRANDMEMBER", "z", "x")
    diff("ZRANDMEMBER", "z", "1", "FOO")
    diff("ZRANDMEMBER", "z", "1", "WITHSCORES", "x")
    diff("ZRANDMEMBER", "z", "-9223372036854775808")
    diff("ZRANDMEMBER", "z", "9223372036854775808")
    diff("ZRANDMEMBER", "z", "4611686018427387904", "WITHSCORES")
    diff("ZRANDMEMBER", "z", "-4611686018427387904", "WITHSCORES")
    ours, theirs = diff.both("ZRANDMEMBER", "z", "-2", "WITHSCORES")
    assert ours[:4] == theirs[:4]  # same shape header


@pytest.mark.parametrize("n", [20, 200], ids=["listpack", "skiplist"])
def test_zrandmember_properties(r, n):
    scores = {f"m{i}".encode(): float(i) for i in range(n)}
    r.zadd("z", scores)
    assert r.zrandmember("z") in scores
    some = r.zrandmember("z", 7)
    assert len(some) == 7 and len(set(some)) == 7 and set(some) <= set(scores)
    with_scores = r.zrandmember("z", 5, withscores=True)
    assert len(with_scores) == 10
    for m, s in zip(with_scores[::2], with_scores[1::2], strict=True):
        assert scores[m] == float(s)
    rep = r.zrandmember("z", -3 * n)
    assert len(rep) == 3 * n and set(rep) <= set(scores) and len(set(rep)) < 3 * n
    near = r.zrandmember("z", n - 1)
    assert len(set(near)) == n - 1
    assert r.zcard("z") == n


def test_zunion_zinter_zdiff(diff, enc):
    mk(diff, enc, "a", "1", "x", "2", "y", "3", "z")
    mk(diff, enc, "b", "10", "y", "20", "z", "30", "w")
    diff("SADD", "s", "x", "w", "q")
    diff("SADD", "i", "1", "2")
    for op in ("ZUNION", "ZINTER"):
        diff(op, "2", "a", "b")
        diff(op, "2", "a", "b", "WITHSCORES")
        diff(op, "2", "a", "b", "WEIGHTS", "2", "0.5", "WITHSCORES")
        diff(op, "2", "a", "b", "AGGREGATE", "MIN", "WITHSCORES")
        diff(op, "2", "a", "b", "AGGREGATE", "max", "WEIGHTS", "-1", "1", "WITHSCORES")
        diff(op, "3", "a", "b", "s", "WITHSCORES")
        diff(op, "2", "a", "i", "WITHSCORES")
        diff(op, "2", "a", "nokey", "WITHSCORES")
        diff(op, "2", "a", "a", "WITHSCORES")
        diff(op, "2", "a", "a", "WEIGHTS", "1", "inf", "WITHSCORES")
        diff(op, "2", "a", "b", "WEIGHTS", "inf", "-inf", "WITHSCORES")
        diff(op, "2", "a", "b", "WEIGHTS", "0", "inf", "AGGREGATE", "MAX", "WITHSCORES")
        diff(op, "1", "s", "WITHSCORES")
        diff(op, "1", "nokey")
        diff(op, "2", "a", "b", "WITHSCORES", "WITHSCORES")
        diff(op, "2", "a", "b", "WEIGHTS", "1", "2", "WEIGHTS", "3", "4", "WITHSCORES")
    diff("ZDIFF", "2", "a", "b", "WITHSCORES")
    diff("ZDIFF", "2", "b", "a", "WITHSCORES")
    diff("ZDIFF", "2", "b", "s", "WITHSCORES")
    diff("ZDIFF", "2", "s", "a", "WITHSCORES")
    diff("ZDIFF", "1", "a")
    diff("ZDIFF", "2", "a", "a")
    diff("ZDIFF", "2", "nokey", "a")
    diff("ZDIFF", "2", "a", "nokey", "WITHSCORES")
    diff("ZINTERCARD", "2", "a", "b")
    diff("ZINTERCARD", "2", "a", "b", "LIMIT", "1")
    diff("ZINTERCARD", "2", "a", "b", "LIMIT", "0")
    diff("ZINTERCARD", "3", "a", "b", "s")
    diff("ZINTERCARD", "2", "a", "nokey")


def test_aggregate_float_order(diff):
    # Redis sorts the inputs by size before accumulating: the float sum depends on that order.
    diff("ZADD", "a", "0.1", "x")
    diff("ZADD", "b", "0.2", "x", "1", "y")
    diff("ZADD", "c", "0.3", "x", "1", "y", "2", "z")
    for keys in (["a", "b", "c"], ["c", "b", "a"], ["b", "c", "a"]):
        diff("ZUNION", "3", *keys, "WITHSCORES")
        diff("ZINTER", "3", *keys, "WITHSCORES")
        diff("ZUNION", "3", *keys, "WEIGHTS", "3", "7", "0.1", "WITHSCORES")


def test_zsetop_errors(diff):
    diff("ZADD", "a", "1", "x")
    diff("SET", "str", "v")
    for op in ("ZUNION", "ZINTER", "ZDIFF", "ZINTERCARD"):
        diff(op, "0", "a")
        diff(op, "-1", "a")
        diff(op, "x", "a")
        diff(op, "2", "a")
        diff(op, "1", "str")
        diff(op, "1", "str", "WEIGHTS", "x")
        diff(op, "1", "a", "WEIGHTS", "1")
        diff(op, "1", "a", "WEIGHTS", "x")
        diff(op, "1", "a", "WEIGHTS", "nan")
        diff(op, "1", "a", "WEIGHTS", "1", "2")
        diff(op, "1", "a", "AGGREGATE", "avg")
        diff(op, "1", "a", "AGGREGATE")
        diff(op, "1", "a", "WITHSCORES")
        diff(op, "1", "a", "LIMIT", "1")
        diff(op, "1", "a", "LIMIT", "-1")
        diff(op, "1", "a", "LIMIT", "x")
        diff(op, "1", "a", "FOO")
    for op in ("ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"):
        diff(op, "d", "0", "a")
        diff(op, "d", "2", "a")
        diff(op, "d", "1", "a", "WITHSCORES")
        diff(op, "d", "1", "a", "WEIGHTS", "2")
        diff(op, "d", "1", "str")
    diff("EXISTS", "d")


def test_store_ops(diff, enc):
    mk(diff, enc, "a", "1", "x", "2", "y", "3", "z")
    mk(diff, enc, "b", "10", "y", "20", "z", "30", "w")
    diff("SADD", "s", "x")
    for op in ("ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"):
        diff(op, "d", "2", "a", "b")
        diff("ZRANGE", "d", "0", "-1", "WITHSCORES")
        diff("OBJECT", "ENCODING", "d")
        diff(op, "d", "2", "b", "s")
        diff("ZRANGE", "d", "0", "-1", "WITHSCORES")
    diff("ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2", "AGGREGATE", "MAX")
    diff("ZRANGE", "d", "0", "-1", "WITHSCORES")
    diff("SET", "d", "v")
    diff("EXPIRE", "d", "100")
    diff("ZINTERSTORE", "d", "2", "a", "s")
    diff("TTL", "d")
    diff("TYPE", "d")
    diff("ZINTERSTORE", "d", "2", "a", "nokey")
    diff("EXISTS", "d")
    diff("ZDIFFSTORE", "a", "2", "a", "s")
    diff("ZRANGE", "a", "0", "-1", "WITHSCORES")


def test_zrangestore_negative_zero_depends_on_add_order(diff):
    diff("ZADD", "x", "1", LONG, "-0", "a", *[x for i in range(200) for x in (i + 2, f"m{i}")])
    for args in (["0", "3"], ["0", "-1"], ["-inf", "inf", "BYSCORE"], ["inf", "-inf", "BYSCORE", "REV"],
                 ["3", "0", "BYSCORE", "REV"], ["-inf", "3", "BYSCORE"], ["0", "200", "REV"], ["199", "201"]):
        diff("ZRANGESTORE", "u", "x", *args)
        diff("OBJECT", "ENCODING", "u")
        diff("ZRANGE", "u", "0", "3", "WITHSCORES")
        diff("ZSCORE", "u", "a")


def test_store_result_encoding(diff):
    diff("ZADD", "big", *[x for i in range(200) for x in (i, f"m{i}")])
    diff("OBJECT", "ENCODING", "big")
    diff("ZUNIONSTORE", "d", "1", "big")
    diff("OBJECT", "ENCODING", "d")
    diff("ZRANGESTORE", "d", "big", "0", "9")
    diff("OBJECT", "ENCODING", "d")
    diff("ZINTERSTORE", "d", "1", "big")
    diff("OBJECT", "ENCODING", "d")
    diff("ZADD", "long", "1", LONG, "2", "short")
    diff("ZRANGESTORE", "d", "long", "1", "1")
    diff("OBJECT", "ENCODING", "d")
    diff("ZRANGESTORE", "d", "long", "0", "0")
    diff("OBJECT", "ENCODING", "d")


def test_zscan(diff):
    diff("ZADD", "z", "1", "a", "2.5", "b", "-inf", "c", "inf", "d", "1e17", "e", "4611686018427387904", "f",
         "4611686018427387905", "g", "1e19", "h", "-1e18", "i", "123.0", "j")
    diff("ZSCAN", "z", "0")
    diff("ZSCAN", "z", "0", "MATCH", "[ab]")
    diff("ZSCAN", "z", "7", "COUNT", "1")
    diff("ZSCAN", "z", "x")
    diff("ZSCAN", "z", "0", "COUNT", "0")
    diff("ZSCAN", "z", "0", "TYPE", "zset")
    diff("ZSCAN", "z", "0", "MATCH")
    diff("ZSCAN", "nokey", "0")


def test_zscan_skiplist_scores_print_like_redis(diff):
    """A skiplist's ZSCAN writes its scores itself (integers in C, others as %.17g): the same
    text as redis-server's in RESP2 and RESP3 (bulk strings in both), MATCH applied to members."""
    values = ["1", "2.5", "-inf", "inf", "1e17", "99999999999999999", "-99999999999999999", "4611686018427387905",
              "1e19", "-1e18", "123.0", "0.1", "-3.5", "1e-5", "0", "-0", "9007199254740993", "0.30000000000000004"]
    diff("ZADD", "z", "7", LONG, *[x for i, v in enumerate(values) for x in (v, f"m{i}")])
    diff("OBJECT", "ENCODING", "z")
    scan_same(diff, "ZSCAN", "z", "0", "COUNT", "1000")
    scan_same(diff, "ZSCAN", "z", "0", "COUNT", "1000", "MATCH", "m1*")


def test_zscan_skiplist_full_iteration(r):
    scores = {f"m{i}".encode(): i / 3 for i in range(500)}
    r.zadd("z", scores)
    assert r.object("encoding", "z") == b"skiplist"
    seen = {}
    cursor, calls = 0, 0
    while True:
        cursor, batch = r.zscan("z", cursor, count=20)
        seen.update(batch)
        calls += 1
        if cursor == 0:
            break
    assert seen == scores
    assert calls > 10


def test_encoding_thresholds_default(diff):
    diff("ZADD", "z", *[x for i in range(128) for x in (i, f"m{i}")])
    diff("OBJECT", "ENCODING", "z")
    diff("ZADD", "z", "128", "m128")
    diff("OBJECT", "ENCODING", "z")
    diff("ZREMRANGEBYRANK", "z", "0", "-3")
    diff("OBJECT", "ENCODING", "z")
    diff("ZADD", "v", "1", "x" * 64)
    diff("OBJECT", "ENCODING", "v")
    diff("ZADD", "v", "1", "x" * 65)
    diff("OBJECT", "ENCODING", "v")
    diff("ZADD", "w", "1", "x" * 65)
    diff("OBJECT", "ENCODING", "w")


def test_same_score_member_order(diff, enc):
    members = ["b", "a", "ab", "", "B", "\x00", "\xff", "aa", "a\x00"]
    mk(diff, enc, "z", *[x for m in members for x in ("1", m)])
    diff("ZRANGE", "z", "0", "-1")
    for m in members:
        diff("ZRANK", "z", m)
    ours = parse(diff("ZRANGE", "z", "0", "-1"))
    assert ours == sorted(ours)


def test_score_updates_on_a_big_skiplist(diff):
    """Updates of a skiplist set of 2,000 members in runs of ten equal scores (several of the
    order's sublists): new scores that keep a member's rank (changed in place, as zslUpdateScore
    does: first and last of a run, first and last of the set, a sublist's edges) and ones that
    move it, into and out of runs of equal scores, under each ZADD option; ranks read after each."""
    diff("ZADD", "z", *[x for i in range(2000) for x in (str(i // 10), "m%04d" % i)])
    diff("OBJECT", "ENCODING", "z")
    steps = [
        ["0", "m0009"], ["-5", "m0000"], ["500", "m1999"], ["199.5", "m1990"],  # keep their ranks
        ["49.5", "m0499"], ["50.25", "m0500"], ["99.9", "m0999"], ["100.1", "m1000"],
        ["3", "m0035"], ["3", "m0029"], ["3.5", "m0031"],  # into a run: the member order decides
        ["GT", "CH", "2", "m0050"], ["GT", "CH", "7.5", "m0050"], ["LT", "CH", "9", "m0040"],
        ["LT", "CH", "-1", "m0040"], ["XX", "CH", "4", "m0044", "4", "new1"], ["NX", "4", "m0045", "4", "new2"],
        ["INCR", "0.5", "m0060"], ["INCR", "-0.5", "m0060"], ["INCR", "100", "m0070"],
        ["XX", "GT", "INCR", "1", "m0080"], ["CH", "8.5", "m0081", "8.5", "m0082", "8.25", "m0083"],
        ["-inf", "m0100"], ["inf", "m0101"], ["-inf", "m0102"], ["inf", "m0100"],
    ]
    for args in steps:
        diff("ZADD", "z", *args)
        for m in args[-1::-2][:3]:
            diff("ZRANK", "z", m)
            diff("ZSCORE", "z", m)
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff("ZRANGE", "z", "0", "30", "WITHSCORES")
    diff("ZRANGEBYSCORE", "z", "3", "5", "WITHSCORES")
    diff("ZCARD", "z")


def test_random_score_updates_keep_redis_ranks(diff2):
    """A seeded run of ZADDs over a 600-member skiplist set, each a score near the member's own
    (mostly keeping its rank) or anywhere, with random options; every rank and the whole range
    compared at the end."""
    import random

    rnd = random.Random(56)
    names = ["m%03d" % i for i in range(620)]
    rnd.shuffle(names)  # member order within a run of equal scores is not the order of i
    diff2("ZADD", "z", *[x for i in range(600) for x in (str(i // 4), names[i])])
    options = [[], [], ["CH"], ["XX"], ["NX"], ["GT"], ["LT"], ["GT", "CH"], ["XX", "LT", "CH"]]
    for _ in range(300):
        i = rnd.randrange(620)
        score = (i // 4 + rnd.choice([0, 0.25, -0.25, 0.75, 1, -1])) if rnd.random() < 0.7 else rnd.randrange(160)
        diff2("ZADD", "z", *rnd.choice(options), str(score), names[i])
    diff2("ZRANGE", "z", "0", "-1", "WITHSCORES")
    for i in range(0, 620, 7):
        diff2("ZRANK", "z", names[i])


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
        ("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"), ("ZADD", "z", "1", "a"),
        ("ZADD", "z", "XX", "9", "nope"), ("ZADD", "z", "INCR", "1", "a"), ("ZINCRBY", "z", "1", "a"),
        ("ZADD", "z", "NX", "INCR", "1", "a"), ("ZREM", "z", "nope"), ("ZREM", "z", "a"),
        ("ZPOPMIN", "z"), ("ZPOPMAX", "z", "1"), ("ZADD", "z", "1", "a", "2", "b", "3", "c"),
        ("ZREMRANGEBYRANK", "z", "0", "0"), ("ZREMRANGEBYSCORE", "z", "100", "200"),
        ("ZREMRANGEBYSCORE", "z", "0", "2"), ("ZADD", "z", "0", "m", "0", "n", "0", "o"),
        ("ZREMRANGEBYLEX", "z", "[m", "[n"), ("ZRANGESTORE", "d", "z", "0", "-1"),
        ("ZUNIONSTORE", "d", "1", "z"), ("ZINTERSTORE", "d", "2", "z", "nokey"), ("ZDIFFSTORE", "d", "1", "z"),
        ("ZMPOP", "2", "nokey", "z", "MAX", "COUNT", "10"), ("ZADD", "y", "1", "a"), ("ZPOPMIN", "y", "5"),
        ("ZRANGESTORE", "d", "nokey", "0", "-1"), ("ZSCORE", "nokey", "a"), ("ZRANGE", "nokey", "0", "-1"),
    ])


def test_generic_commands_on_zsets(diff, enc):
    mk(diff, enc, "z", "1", "a", "2", "b")
    diff("TYPE", "z")
    diff("COPY", "z", "z2")
    diff("ZADD", "z2", "5", "c")
    diff("ZINCRBY", "z2", "5", "a")
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff("ZRANGE", "z2", "0", "-1", "WITHSCORES")
    diff("OBJECT", "ENCODING", "z2")
    diff("RENAME", "z2", "z3")
    diff("MOVE", "z3", "1")
    diff("GETDEL", "z")
    diff("DEL", "z")
    diff("SELECT", "1")
    diff("ZRANGE", "z3", "0", "-1", "WITHSCORES")
    diff("SCAN", "0", "TYPE", "zset")


def test_score_bounds_end_at_nul(diff):
    """zslParseRange runs strtod over the C string: a bound ends at its first NUL byte."""
    diff("ZADD", "z", "1", "a", "2", "b", "3", "c")
    diff("ZRANGEBYSCORE", "z", b"1\x00x", "3")
    diff("ZRANGEBYSCORE", "z", b"(1\x00", "+inf")
    diff("ZCOUNT", "z", b"-inf\x00", b"2\x00zz")
    diff("ZREMRANGEBYSCORE", "z", b"(\x00", b"\x001")
    diff("ZRANGE", "z", b"(2\x00", b"+inf", "BYSCORE")


def test_decimal_score_texts(diff):
    """Scores parsed by string2d's plain-decimal path (a C walk, compiled) and what it must refuse
    to the general parser: the same scores and errors as redis-server's."""
    for i, text in enumerate(["5.", "-.5", ".5", "13.361389", "-0.000", "007.25", "1" * 40 + ".5",
                              ".-5", "-", ".", "1.2.3", "--1", "5-", "+.5", "1e5", " 1", "1 "]):
        diff("ZADD", "z", text, f"m{i}")
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff("GEOADD", "g", "13.361389", "38.115556", "a", "-.5", ".5", "b")
    diff("GEOADD", "g", ".-5", "1", "c")
    diff("GEOPOS", "g", "a", "b")
