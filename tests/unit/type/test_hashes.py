"""Hash commands, differential against redis-server 7.0 in RESP2 and RESP3: every command, option
and error path.  Small hashes are listpack-encoded on both servers, so field order is Redis's and
whole replies (HGETALL, HKEYS, HSCAN, HRANDFIELD with a large count) compare byte for byte; for
hashtable-encoded hashes order is compared as a set, and HRANDFIELD's randomness by its properties."""

import pytest
import redis

from tests.support.diff import parse

BIG = "9223372036854775807"
SMALL = "-9223372036854775808"


def same_hash(diff, key: str) -> dict:
    """HGETALL of a hashtable-encoded hash: same fields and values, any order, same reply type."""
    ours, theirs = diff.both("HGETALL", key)
    assert ours[:1] == theirs[:1]
    a, b = parse(ours), parse(theirs)
    if isinstance(a, list):
        a, b = dict(zip(a[::2], a[1::2], strict=True)), dict(zip(b[::2], b[1::2], strict=True))
    assert a == b
    return a


def test_hset_hget(diff):
    diff.script("""
        HSET h a 1 b 2 c 3
        HSET h a 10 d 4
        HSET h a 11 a 12
        HGET h a
        HGET h zz
        HGET missing a
        HMSET h e 5 f 6
        HMSET h e
        HSET h e
        HSET h
        HMSET h
        HGETALL h
        HKEYS h
        HVALS h
        HLEN h
        HLEN missing
        HGETALL missing
        HKEYS missing
        HVALS missing
    """)


def test_binary_and_integer_values(diff):
    diff("HSET", "h", "", "empty", "a\r\nb", "\x00\xff", "n", "123", "neg", "-5", "big", BIG, "lead", "007",
         "long", "x" * 100, "f" * 70, "v")
    same_hash(diff, "h")
    diff("HSTRLEN", "h", "n")
    diff("HSTRLEN", "h", "big")
    diff("HSTRLEN", "h", "lead")
    diff("HSTRLEN", "h", "missing")
    diff("HSTRLEN", "missing", "x")
    diff.unordered("HKEYS", "h")


def test_hsetnx(diff):
    diff.script("""
        HSETNX h a 1
        HSETNX h a 2
        HGET h a
        HSETNX h b 3
        HGETALL h
        SET s v
        HSETNX s a 1
        HSETNX missing a 1
        HGETALL missing
    """)


def test_hmget_hexists(diff):
    diff.script("""
        HSET h a 1 b 2
        HMGET h a b c
        HMGET h c
        HMGET missing a b
        HEXISTS h a
        HEXISTS h z
        HEXISTS missing a
        HMGET h
    """)


def test_hdel(diff):
    diff.script("""
        HSET h a 1 b 2 c 3 d 4
        HDEL h a
        HDEL h a
        HDEL h b zz c
        HGETALL h
        HDEL h d e f
        EXISTS h
        HDEL missing a
        HDEL h
    """)


def test_hincrby(diff):
    diff.script("""
        HINCRBY h n 5
        HINCRBY h n -10
        HINCRBY h n 0
        HSET h s abc lead 007 sp " 1" big 9223372036854775807 small -9223372036854775808 neg0 -0
        HINCRBY h s 1
        HINCRBY h lead 1
        HINCRBY h sp 1
        HINCRBY h neg0 1
        HINCRBY h big 1
        HINCRBY h big 0
        HINCRBY h big -1
        HINCRBY h small -1
        HINCRBY h small 1
        HINCRBY h n abc
        HINCRBY h n 1.5
        HINCRBY h n 9223372036854775808
        HINCRBY missing n abc
        HGETALL h
        SET str v
        HINCRBY str n 1
        HINCRBY str n x
    """)


def test_hincrbyfloat(diff):
    diff.script("""
        HINCRBYFLOAT h f 1.5
        HINCRBYFLOAT h f 0.1
        HINCRBYFLOAT h f 0.2
        HINCRBYFLOAT h f -1.8
        HINCRBYFLOAT h f 1e3
        HINCRBYFLOAT h f 5.0e3
        HINCRBYFLOAT h f -0.00000000000000001
        HINCRBYFLOAT h g 1.0000000000000000001
        HINCRBYFLOAT h g 0x10
        HINCRBYFLOAT h g inf
        HINCRBYFLOAT h g -inf
        HINCRBYFLOAT h g nan
        HINCRBYFLOAT h g abc
        HINCRBYFLOAT h g " 1"
        HINCRBYFLOAT h g ""
        HSET h s abc i 10 e 1e2 lead 007
        HINCRBYFLOAT h s 1
        HINCRBYFLOAT h i 0.5
        HINCRBYFLOAT h e 1
        HINCRBYFLOAT h lead 1
        HINCRBYFLOAT h big 1.1e4932
        HINCRBYFLOAT h big 1.1e4932
        HINCRBYFLOAT h tiny 1e-4940
        HINCRBYFLOAT h z -1
        HINCRBYFLOAT h z 1
        SET str v
        HINCRBYFLOAT str f 1
        HINCRBYFLOAT str f x
        HINCRBYFLOAT missing f x
        EXISTS missing
    """)
    same_hash(diff, "h")


def test_hrandfield_errors(diff):
    diff("HSET", "h", "a", "1", "b", "2")
    for args in [("x",), ("1.5",), (SMALL,), (SMALL, "WITHVALUES"), ("-" + BIG, "WITHVALUES"),
                 ("-4611686018427387904", "WITHVALUES"), ("4611686018427387904", "WITHVALUES"),
                 ("1", "WITHVALUE"), ("1", "WITHVALUES", "x"), ("x", "WITHVALUES"), ("1", "x", "y")]:
        diff("HRANDFIELD", "h", *args)
    diff("HRANDFIELD", "missing")
    diff("HRANDFIELD", "missing", "5")
    diff("HRANDFIELD", "missing", "-5", "WITHVALUES")
    diff("HRANDFIELD", "missing", "x")
    diff("HRANDFIELD", "h", "0")
    diff("HRANDFIELD", "h", "0", "WITHVALUES")
    diff("SET", "s", "v")
    diff("HRANDFIELD", "s")
    diff("HRANDFIELD", "s", "1")
    diff("HRANDFIELD", "s", SMALL)


def test_hrandfield_whole_hash_in_order(diff):
    """A count at least the size returns the whole (listpack) hash in its order."""
    diff("HSET", "h", *[x for i in range(20) for x in (f"f{i}", f"v{i}")])
    for args in [("20",), ("21",), ("1000",), ("20", "WITHVALUES"), ("500", "withvalues")]:
        diff("HRANDFIELD", "h", *args)
    diff("HSET", "one", "only", "x")
    for args in [(), ("1",), ("-1",), ("-3",), ("1", "WITHVALUES"), ("-3", "WITHVALUES")]:
        diff("HRANDFIELD", "one", *args)


def _pairs(reply, resp: int, withvalues: bool):
    if not withvalues:
        return [(f, None) for f in reply]
    if resp == 3:
        return [tuple(p) for p in reply]
    return list(zip(reply[::2], reply[1::2], strict=True))


@pytest.mark.parametrize("size", [5, 300, 1000])
def test_hrandfield_properties(diff, size):
    fields = {f"f{i}".encode(): f"v{i}".encode() for i in range(size)}
    diff("HSET", "h", *[x for kv in fields.items() for x in kv])
    resp = diff.protocol
    single = parse(diff.ours.call("HRANDFIELD", "h"))
    assert single in fields
    for count, withvalues in [(3, False), (3, True), (size - 1, False), (size // 2, True), (1, True),
                              (-7, False), (-7, True), (-(size * 3), True), (-1, False)]:
        args = ["HRANDFIELD", "h", str(count)] + (["WITHVALUES"] if withvalues else [])
        ours, theirs = (parse(x) for x in diff.both(*args))
        for reply in (ours, theirs):
            got = _pairs(reply, resp, withvalues)
            assert len(got) == abs(count)
            for f, v in got:
                assert f in fields
                if withvalues:
                    assert v == fields[f]
            if count > 0:
                assert len({f for f, _ in got}) == count, "positive count must give distinct fields"
    # The shapes are the same as Redis's (array of pairs in RESP3, flat in RESP2).
    ours, theirs = diff.both("HRANDFIELD", "h", "-2", "WITHVALUES")
    assert ours[:4] == theirs[:4] and ours.count(b"*2\r\n") == theirs.count(b"*2\r\n")


def test_hrandfield_negative_count_repeats(r):
    r.hset("h", mapping={"a": 1, "b": 2})
    got = r.hrandfield("h", -200)
    assert len(got) == 200 and set(got) == {b"a", b"b"}


@pytest.mark.parametrize("cmd", [["SRANDMEMBER", "s", "-4294967296"], ["SRANDMEMBER", "s", "-9223372036854775807"],
                                 ["ZRANDMEMBER", "z", "-9223372036854775807"], ["HRANDFIELD", "h", "-4294967296"],
                                 ["HRANDFIELD", "h", "-4611686018427387903", "WITHVALUES"]])
def test_random_picks_past_any_reply_are_refused(r, cmd):
    """Redis 7.0 accepts these counts and builds the reply until memory runs out; raxdb refuses
    them with the range error Redis gives just past its own bound, and keeps serving."""
    r.sadd("s", "a")
    r.zadd("z", {"a": 1})
    r.hset("h", "a", 1)
    with pytest.raises(redis.ResponseError, match="value is out of range"):
        r.execute_command(*cmd)
    assert len(r.execute_command(cmd[0], cmd[1], "-429")) == 429  # the server still answers


def test_hscan_small(diff):
    diff("HSET", "h", *[x for i in range(30) for x in (f"f{i}", f"v{i}")])
    diff("HSCAN", "h", "0")
    diff("HSCAN", "h", "0", "COUNT", "5")
    diff("HSCAN", "h", "17")
    diff("HSCAN", "h", "0", "MATCH", "f1*")
    diff("HSCAN", "h", "0", "MATCH", "nomatch", "COUNT", "100")
    diff("HSCAN", "h", "0", "match", "*", "count", "1")
    for bad in [("0", "COUNT", "0"), ("0", "COUNT", "-1"), ("0", "COUNT", "x"), ("0", "MATCH"), ("0", "TYPE", "hash"),
                ("0", "FOO", "1"), ("x",), ("-1",), ("18446744073709551615",), ("18446744073709551616",), ("1.5",)]:
        diff("HSCAN", "h", *bad)
    diff("HSCAN", "missing", "0")
    diff("HSCAN", "missing", "x")
    diff("HSCAN", "missing", "0", "COUNT", "0")
    diff("SET", "s", "v")
    diff("HSCAN", "s", "0")
    diff("HSCAN", "s", "0", "COUNT", "0")


def test_hscan_listpack_pairs_of_every_entry_encoding(diff):
    """HSCAN of a listpack reads its field, value pairs in one walk: each value stays beside its
    field, for entries of every encoding (integers of 7 to 64 bits, empty, 6- and 12-bit strings),
    with and without MATCH, on a hash restored from Redis's own payload too."""
    values = ["0", "-1", "127", "-4096", "30000", "-8388608", "2147483647", "-9223372036854775808", "", "x" * 63,
              "y" * 64, "007", "1.5"]
    diff("HSET", "h", *[x for i, v in enumerate(values) for x in (f"f{i}", v)], "12", "34", "-5", "")
    diff("OBJECT", "ENCODING", "h")
    diff("HSCAN", "h", "0")
    diff("HSCAN", "h", "0", "MATCH", "f1*")
    diff("HSCAN", "h", "0", "MATCH", "1*", "COUNT", "1")
    diff("HSCAN", "h", "0", "MATCH", "-*")
    payload = diff.theirs.call("DUMP", "h")
    diff("RESTORE", "r", "0", parse(payload))
    diff("HSCAN", "r", "0")
    diff("HSCAN", "r", "0", "MATCH", "f?")


def test_hscan_hashtable_full_iteration(r):
    """A big hash scanned while it changes: every field present throughout is returned."""
    n = 3000
    r.hset("h", mapping={f"f{i}": i for i in range(n)})
    assert r.object("encoding", "h") == b"hashtable"
    seen = set()
    cursor = 0
    step = 0
    while True:
        cursor, items = r.hscan("h", cursor, count=50)
        seen.update(items)
        step += 1
        # churn: delete a few fields, add new ones, between scan calls
        r.hdel("h", f"f{step}", f"f{n - step}")
        r.hset("h", f"new{step}", 1)
        if cursor == 0:
            break
    stayed = {f"f{i}".encode() for i in range(n)} - {f"f{s}".encode() for s in range(step + 1)} - \
        {f"f{n - s}".encode() for s in range(step + 1)}
    assert stayed <= seen
    assert step > 10  # it really iterated in steps


def test_hscan_hashtable_match_and_values(r):
    r.hset("h", mapping={f"k{i}": f"v{i}" for i in range(1000)})
    cursor, out = 0, {}
    while True:
        cursor, items = r.hscan("h", cursor, match="k1*", count=100)
        out.update(items)
        if cursor == 0:
            break
    assert out == {f"k{i}".encode(): f"v{i}".encode() for i in range(1000) if str(i).startswith("1")}


def test_big_hash_commands(diff):
    diff("HSET", "h", *[x for i in range(1000) for x in (f"f{i}", f"v{i}")])
    diff("HLEN", "h")
    diff("HGET", "h", "f999")
    diff("HMGET", "h", "f1", "nope", "f500")
    diff.unordered("HKEYS", "h")
    diff.unordered("HVALS", "h")
    diff("HDEL", "h", *[f"f{i}" for i in range(0, 1000, 2)])
    diff("HLEN", "h")
    diff("HINCRBY", "h", "f1", "1")
    diff("HINCRBYFLOAT", "h", "f3", "1")
    diff("HSET", "h", "f1", "7")
    diff("HINCRBY", "h", "f1", "1")
    diff("HINCRBYFLOAT", "h", "f1", "0.5")
    diff("HSTRLEN", "h", "f1")
    diff("HEXISTS", "h", "f5")
    diff("HEXISTS", "h", "f4")


def test_hgetall_resp3_map(diff):
    diff("HSET", "h", "a", "1", "b", "2")
    out = diff("HGETALL", "h")
    assert out.startswith(b"%2\r\n" if diff.protocol == 3 else b"*4\r\n")


def test_hgetall_listpack_every_encoding(diff):
    """A listpack hash's HGETALL is written from its entries: every integer width (7-bit, 13-,
    16-, 24-, 32-, 64-bit, negative), 6- and 12-bit strings, and strings that look numeric but
    are not canonical, in Redis's order and bytes."""
    diff("CONFIG", "SET", "hash-max-listpack-value", "5000")
    try:
        values = ["0", "7", "127", "128", "-1", "4095", "-4096", "4096", "32767", "-32768", "8388607",
                  "-8388608", "2147483647", "-2147483648", "2147483648", BIG, SMALL, "007", "-0", "1e3",
                  "", "x" * 63, "y" * 64, "z" * 4095, "\x00\xff"]
        args = [x for i, v in enumerate(values) for x in ("f%d" % i, v)]
        diff("HSET", "h", *args)
        diff("HSET", "h", "12", "34", "-5", "")  # integer-encoded fields
        diff("OBJECT", "ENCODING", "h")
        diff("HGETALL", "h")
    finally:
        diff("CONFIG", "SET", "hash-max-listpack-value", "64")


def test_wrongtype(diff):
    diff("RPUSH", "l", "a")
    for cmd in [("HSET", "l", "a", "1"), ("HMSET", "l", "a", "1"), ("HGET", "l", "a"), ("HMGET", "l", "a"),
                ("HGETALL", "l"), ("HKEYS", "l"), ("HVALS", "l"), ("HLEN", "l"), ("HEXISTS", "l", "a"),
                ("HDEL", "l", "a"), ("HINCRBY", "l", "a", "1"), ("HINCRBYFLOAT", "l", "a", "1"),
                ("HSTRLEN", "l", "a"), ("HRANDFIELD", "l"), ("HRANDFIELD", "l", "2", "WITHVALUES"),
                ("HSCAN", "l", "0"), ("HSETNX", "l", "a", "1"), ("HSET", "l", "a"), ("HINCRBY", "l", "a", "x")]:
        diff(*cmd)
    diff("TYPE", "l")
    diff("HSET", "h", "a", "1")
    diff("TYPE", "h")
    diff("LLEN", "h")
    diff("GET", "h")


def test_arity(diff):
    for cmd in ["HSET h a", "HGET h", "HMGET h", "HGETALL", "HKEYS", "HVALS h x", "HLEN", "HEXISTS h",
                "HDEL h", "HINCRBY h f", "HINCRBYFLOAT h f", "HSTRLEN h", "HRANDFIELD", "HSCAN h", "HSETNX h f",
                "HMSET h f"]:
        diff.check(cmd)


def test_watch_and_noop_writes(diff2):
    for cmd, touches in [(("HSET", "h", "a", "2"), True), (("HDEL", "h", "a"), True), (("HDEL", "h", "zz"), False),
                         (("HSETNX", "h", "a", "3"), False), (("HSETNX", "h", "n", "3"), True),
                         (("HINCRBY", "h", "c", "1"), True), (("HINCRBYFLOAT", "h", "c", "1"), True)]:
        diff2("DEL", "h")
        diff2("HSET", "h", "a", "1", "b", "2")
        diff2("WATCH", "h")
        diff2(*cmd)
        diff2("MULTI")
        diff2("HLEN", "h")
        assert (diff2("EXEC") == b"*-1\r\n") == touches, cmd
