"""List commands, differential against redis-server 7.0 in RESP2 and RESP3: every command, option
and error path, including Redis's argument-checking order (which error wins when several apply)."""

import pytest

from tests.support.diff import RawConnection
from tests.support.servers import start_raxdb, start_redis

pytestmark = pytest.mark.oracle

BIG = "9223372036854775807"
SMALL = "-9223372036854775808"


def test_push_and_length(diff):
    diff.script("""
        LPUSH l a b c
        RPUSH l d e
        LRANGE l 0 -1
        LLEN l
        LLEN missing
        LPUSHX missing a
        RPUSHX missing a
        EXISTS missing
        LPUSHX l x y
        RPUSHX l z
        LRANGE l 0 -1
        LPUSH l
        RPUSHX l
        SET s v
        LPUSH s a
        RPUSH s a
        LPUSHX s a
        RPUSHX s a
        LLEN s
    """)


def test_integers_and_binary(diff):
    diff("RPUSH", "l", "0", "-1", "127", "128", "-4096", "4095", "32768", BIG, SMALL, "01", "-0", "+1", " 1")
    diff("RPUSH", "l", "", "a\r\nb", b"\x00\xff", "x" * 70, "y" * 5000)
    diff("LRANGE", "l", "0", "-1")
    diff("LINDEX", "l", "8")
    diff("LPOS", "l", "127")
    diff("LREM", "l", "0", "128")
    diff("LRANGE", "l", "0", "-1")


@pytest.mark.parametrize("cmd", ["LPOP", "RPOP"])
def test_pop(diff, cmd):
    diff("RPUSH", "l", "a", "b", "c", "d", "e")
    diff(cmd, "l")
    diff(cmd, "l", "2")
    diff(cmd, "l", "0")
    diff(cmd, "l", "-1")
    diff(cmd, "l", "abc")
    diff(cmd, "l", "1", "2")
    diff(cmd, "l", BIG)
    diff("EXISTS", "l")
    diff(cmd, "l")
    diff(cmd, "l", "1")
    diff(cmd, "l", "0")
    diff(cmd, "l", "-1")
    diff("SET", "s", "v")
    diff(cmd, "s")
    diff(cmd, "s", "1")
    diff(cmd, "s", "0")
    diff(cmd, "s", "x")
    diff("RPUSH", "one", "x")
    diff(cmd, "one", "5")
    diff("EXISTS", "one")


def test_lindex_lset(diff):
    diff.script("""
        RPUSH l a b c d e
        LINDEX l 0
        LINDEX l -1
        LINDEX l 4
        LINDEX l 5
        LINDEX l -5
        LINDEX l -6
        LINDEX l abc
        LINDEX l 9223372036854775807
        LINDEX l -9223372036854775808
        LINDEX missing 0
        LINDEX missing abc
        LSET l 0 A
        LSET l -1 E
        LSET l 2 CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC
        LSET l 5 x
        LSET l -6 x
        LSET l abc x
        LSET missing 0 x
        LSET missing abc x
        LRANGE l 0 -1
        SET s v
        LINDEX s 0
        LINDEX s abc
        LSET s 0 x
        LSET s abc x
    """)


def test_lrange(diff):
    diff("RPUSH", "l", *[str(i) for i in range(20)])
    for a, b in [(0, -1), (0, 0), (-1, -1), (5, 10), (-5, -1), (10, 5), (-100, 100), (19, 19), (20, 30),
                 (-25, -21), (-25, -20), (0, -21), (3, -3), (BIG, BIG), (SMALL, BIG), (SMALL, SMALL)]:
        diff("LRANGE", "l", a, b)
    diff("LRANGE", "l", "a", "1")
    diff("LRANGE", "l", "1", "b")
    diff("LRANGE", "missing", "0", "-1")
    diff("LRANGE", "missing", "x", "-1")
    diff("SET", "s", "v")
    diff("LRANGE", "s", "0", "-1")
    diff("LRANGE", "s", "x", "-1")


def test_lrange_repeated_across_writes(diff):
    """A range read again must see every kind of write."""
    diff("RPUSH", "l", *[str(i) for i in range(12)], "ab", "xyz")
    writes = ["LPUSH l p", "RPUSH l q", "LPOP l", "RPOP l", "LSET l 1 changed", "LINSERT l BEFORE 5 ins",
              "LREM l 1 7", "LTRIM l 1 -2", "LMOVE l l LEFT RIGHT", "RPOPLPUSH l l", "LPOP l 2",
              "LMPOP 1 l RIGHT COUNT 2", "LPUSHX l a b", "RPUSHX l c", "DEL l",
              "RPUSH l again"]
    for w in writes:
        for a, b in (("0", "-1"), ("1", "3")):  # each write runs twice: once per range
            for _ in range(3):
                diff("LRANGE", "l", a, b)
            diff.check(w)
            diff("LRANGE", "l", a, b)


@pytest.mark.parametrize("a,b", [(0, -1), (1, -2), (2, 2), (-3, -1), (5, 2), (100, 200), (-100, 1),
                                 (0, 0), (-1, -1), (0, 100), (SMALL, BIG), (BIG, SMALL)])
def test_ltrim(diff, a, b):
    diff("RPUSH", "l", *[str(i) for i in range(10)])
    diff("LTRIM", "l", a, b)
    diff("LRANGE", "l", "0", "-1")
    diff("EXISTS", "l")


def test_ltrim_errors(diff):
    diff.script("""
        LTRIM missing 0 1
        LTRIM missing a 1
        RPUSH l a b
        LTRIM l a 1
        LTRIM l 0 b
        SET s v
        LTRIM s 0 1
        LTRIM s x 1
    """)


def test_lrem(diff):
    diff("RPUSH", "l", *"a b a c a b a d a".split())
    diff("LREM", "l", "2", "a")
    diff("LRANGE", "l", "0", "-1")
    diff("LREM", "l", "-1", "a")
    diff("LRANGE", "l", "0", "-1")
    diff("LREM", "l", "0", "b")
    diff("LRANGE", "l", "0", "-1")
    diff("LREM", "l", "0", "zzz")
    diff("LREM", "l", "100", "a")
    diff("LRANGE", "l", "0", "-1")
    diff("LREM", "l", "x", "a")
    diff("LREM", "l", "0", "c")
    diff("LREM", "l", "0", "d")
    diff("EXISTS", "l")
    diff("LREM", "missing", "0", "a")
    diff("LREM", "missing", "x", "a")
    diff("RPUSH", "n", "1", "01", "1", "1")
    diff("LREM", "n", "-2", "1")
    diff("LRANGE", "n", "0", "-1")
    diff("SET", "s", "v")
    diff("LREM", "s", "0", "a")
    diff("LREM", "s", "x", "a")


def test_linsert(diff):
    diff.script("""
        RPUSH l a b c
        LINSERT l BEFORE a x
        LINSERT l after c y
        LINSERT l AFTER b z
        LINSERT l before b w
        LRANGE l 0 -1
        LINSERT l AFTER nope q
        LINSERT l middle b q
        LINSERT missing AFTER a b
        LINSERT missing middle a b
        RPUSH d a a a
        LINSERT d AFTER a x
        LRANGE d 0 -1
        SET s v
        LINSERT s AFTER a b
        LINSERT s middle a b
    """)


def test_lpos(diff):
    diff("RPUSH", "l", *"a b c 1 2 3 c c".split())
    for args in [(), ("RANK", "1"), ("RANK", "2"), ("RANK", "-1"), ("RANK", "-3"), ("RANK", "10"),
                 ("COUNT", "0"), ("COUNT", "2"), ("COUNT", "10"), ("RANK", "2", "COUNT", "0"),
                 ("RANK", "-1", "COUNT", "2"), ("MAXLEN", "1"), ("MAXLEN", "3"), ("MAXLEN", "7"),
                 ("COUNT", "0", "MAXLEN", "7"), ("RANK", "-1", "MAXLEN", "1"), ("RANK", "-1", "MAXLEN", "2"),
                 ("RANK", "1", "RANK", "2"), ("rank", "-2", "count", "1", "maxlen", "0"),
                 ("RANK", BIG), ("RANK", SMALL), ("RANK", SMALL, "COUNT", "2"), ("RANK", SMALL, "COUNT", "0"),
                 ("RANK", "-" + BIG, "COUNT", "2")]:
        diff("LPOS", "l", "c", *args)
    diff("LPOS", "l", "zz")
    diff("LPOS", "l", "zz", "COUNT", "3")
    diff("LPOS", "l", "1")
    diff("LPOS", "l", "c", "RANK", "0")
    diff("LPOS", "l", "c", "RANK", "x")
    diff("LPOS", "l", "c", "COUNT", "-1")
    diff("LPOS", "l", "c", "COUNT", "x")
    diff("LPOS", "l", "c", "MAXLEN", "-1")
    diff("LPOS", "l", "c", "MAXLEN", "x")
    diff("LPOS", "l", "c", "RANK")
    diff("LPOS", "l", "c", "FOO", "1")
    diff("LPOS", "l", "c", "COUNT", "1", "FOO")
    diff("LPOS", "missing", "c")
    diff("LPOS", "missing", "c", "COUNT", "1")
    diff("LPOS", "missing", "c", "RANK", "0")
    diff("SET", "s", "v")
    diff("LPOS", "s", "c")
    diff("LPOS", "s", "c", "RANK", "0")


@pytest.mark.parametrize("src_where", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dst_where", ["LEFT", "right"])
def test_lmove(diff, src_where, dst_where):
    diff("RPUSH", "src", "a", "b", "c")
    diff("RPUSH", "dst", "x")
    diff("LMOVE", "src", "dst", src_where, dst_where)
    diff("LMOVE", "src", "new", src_where, dst_where)
    diff("LMOVE", "src", "src", src_where, dst_where)
    diff("LRANGE", "src", "0", "-1")
    diff("LRANGE", "dst", "0", "-1")
    diff("LRANGE", "new", "0", "-1")
    diff("LMOVE", "src", "dst", src_where, dst_where)
    diff("EXISTS", "src")
    diff("LMOVE", "src", "dst", src_where, dst_where)
    diff("RPUSH", "one", "z")
    diff("LMOVE", "one", "one", src_where, dst_where)
    diff("LRANGE", "one", "0", "-1")


def test_lmove_errors(diff):
    diff.script("""
        RPUSH l a
        SET s v
        LMOVE l s LEFT RIGHT
        LRANGE l 0 -1
        LMOVE s l LEFT RIGHT
        LMOVE l l UP LEFT
        LMOVE l l LEFT DOWN
        LMOVE missing s UP LEFT
        LMOVE missing s LEFT LEFT
        LMOVE missing l LEFT LEFT
        RPOPLPUSH l s
        RPOPLPUSH s l
        RPOPLPUSH missing l
        RPOPLPUSH l l
        RPOPLPUSH l other
        LRANGE other 0 -1
        EXISTS l
    """)


def test_lmpop(diff):
    diff("RPUSH", "b", "1", "2", "3", "4")
    diff("LMPOP", "2", "a", "b", "LEFT")
    diff("LMPOP", "2", "a", "b", "RIGHT", "COUNT", "2")
    diff("LMPOP", "1", "b", "left", "count", "10")
    diff("LMPOP", "2", "a", "b", "LEFT")
    diff("EXISTS", "b")
    for args in [("0", "a", "LEFT"), ("-1", "a", "LEFT"), ("abc", "a", "LEFT"), ("2", "a", "LEFT"),
                 ("1", "a", "MIDDLE"), ("1", "a", "LEFT", "COUNT", "0"), ("1", "a", "LEFT", "COUNT", "-1"),
                 ("1", "a", "LEFT", "COUNT", "x"), ("1", "a", "LEFT", "COUNT"), ("1", "a", "LEFT", "COUNT", "1", "COUNT", "1"),
                 ("1", "a", "LEFT", "FOO"), ("5", "a", "LEFT"), ("1", "a", "LEFT", "COUNT", BIG)]:
        diff("LMPOP", *args)
    diff("SET", "s", "v")
    diff("RPUSH", "l", "x")
    diff("LMPOP", "2", "s", "l", "LEFT")
    diff("LMPOP", "2", "l", "s", "LEFT")
    diff("LMPOP", "2", "missing", "s", "LEFT")
    diff("LMPOP", "1", "s", "LEFT", "COUNT", "0")


def test_arity(diff):
    for cmd in ["LPUSH l", "RPUSH", "LPOP", "LLEN", "LLEN a b", "LINDEX l", "LSET l 0", "LRANGE l 0",
                "LTRIM l 0", "LREM l 0", "LINSERT l BEFORE a", "LPOS l", "LMOVE a b LEFT", "RPOPLPUSH a",
                "LMPOP 1", "LMPOP"]:
        diff.check(cmd)


def test_big_list_paths(diff):
    """Operations across many quicklist nodes (8 KB each) from both ends."""
    diff("RPUSH", "l", *[("v%05d" % i) * 8 for i in range(3000)])
    diff("LPUSH", "l", *[str(i) for i in range(3000)])
    diff("LLEN", "l")
    for a, b in [(0, 99), (2990, 3010), (-100, -1), (1000, 5000), (-3500, -2500)]:
        diff("LRANGE", "l", a, b)
    for i in (0, 1, 2999, 3000, 4500, -1, -2999, -5999, 6000):
        diff("LINDEX", "l", i)
    diff("LSET", "l", "4000", "changed")
    diff("LINSERT", "l", "BEFORE", "changed", "before")
    diff("LINSERT", "l", "AFTER", "changed", "after")
    diff("LRANGE", "l", "3998", "4004")
    diff("LPOS", "l", "changed")
    diff("LPOS", "l", "7", "RANK", "-1")
    diff("LREM", "l", "0", "7")
    diff("LTRIM", "l", "1500", "-1500")
    diff("LLEN", "l")
    diff("LPOP", "l", "700")
    diff("RPOP", "l", "700")
    diff("LRANGE", "l", "0", "-1")


def test_wrongtype_other_types(diff):
    diff("HSET", "h", "f", "v")
    diff("LPUSH", "h", "x")
    diff("LLEN", "h")
    diff("LRANGE", "h", "0", "-1")
    diff("TYPE", "h")
    diff("RPUSH", "l", "x")
    diff("TYPE", "l")
    diff("GET", "l")


@pytest.fixture(scope="module")
def notifying_servers():
    """A raxdb and a redis-server with every keyspace event class enabled from the command line."""
    ours = start_raxdb("--notify-keyspace-events", "KEA")
    theirs = start_redis("--notify-keyspace-events", "KEA")
    yield ours, theirs
    ours.stop()
    theirs.stop()


def events_of(port: int, script: list[tuple[str, ...]]) -> list[bytes]:
    """The keyspace notifications a subscriber receives while `script` runs, in order."""
    ctl = RawConnection(port)
    ctl.call("FLUSHALL")
    sub = RawConnection(port)
    sub.call("PSUBSCRIBE", "__key*__:*")
    sub.call("SUBSCRIBE", "end")
    for cmd in script:
        ctl.call(*cmd)
    ctl.call("PUBLISH", "end", "x")
    events = []
    while True:
        frame = sub.read_frame()
        if frame.startswith(b"*3\r\n$7\r\nmessage\r\n$3\r\nend"):
            break
        events.append(frame)
    ctl.close()
    sub.close()
    return events


def test_keyspace_events(notifying_servers):
    """Events (and their order) for every list write, as a subscriber sees them."""
    script = [
        ("RPUSH", "l", "a", "b", "c"), ("LPUSH", "l", "z"), ("LPUSHX", "l", "y"), ("RPUSHX", "l", "x"),
        ("LPUSHX", "nope", "y"), ("LSET", "l", "0", "q"), ("LINSERT", "l", "AFTER", "q", "r"),
        ("LINSERT", "l", "AFTER", "nothere", "r"), ("LREM", "l", "1", "r"), ("LREM", "l", "1", "nothere"),
        ("LTRIM", "l", "0", "3"), ("LPOP", "l"), ("RPOP", "l", "1"), ("LMOVE", "l", "m", "LEFT", "RIGHT"),
        ("RPOPLPUSH", "m", "l"), ("LMPOP", "1", "l", "LEFT", "COUNT", "5"), ("RPUSH", "t", "a"),
        ("LTRIM", "t", "1", "0"), ("LPOP", "m"), ("RPUSH", "z", "a"), ("LMOVE", "z", "z", "LEFT", "RIGHT"),
        ("LPOP", "z", "0"), ("LPOP", "nope"),
    ]
    ours, theirs = notifying_servers
    assert events_of(ours.port, script) == events_of(theirs.port, script)


def test_watch_invalidated_by_list_writes(diff2):
    for cmd in [("RPUSH", "l", "x"), ("LPOP", "l"), ("LSET", "l", "0", "y"), ("LREM", "l", "0", "b"),
                ("LTRIM", "l", "0", "0"), ("LINSERT", "l", "BEFORE", "b", "x"), ("LMOVE", "o", "l", "LEFT", "LEFT")]:
        diff2("DEL", "l", "o")
        diff2("RPUSH", "l", "a", "b", "c")
        diff2("RPUSH", "o", "q")
        diff2("WATCH", "l")
        diff2(*cmd)
        diff2("MULTI")
        diff2("LLEN", "l")
        diff2("EXEC")
    # No-op writes do not touch the key.
    for cmd in [("LREM", "l", "0", "zzz"), ("LINSERT", "l", "BEFORE", "zzz", "x"), ("LPUSHX", "n", "x")]:
        diff2("WATCH", "l")
        diff2(*cmd)
        diff2("MULTI")
        diff2("LLEN", "l")
        diff2("EXEC")
