"""Stream commands against redis-server 7.0, reply bytes compared in RESP2 and RESP3: every command,
every option, the errors word for word, edge IDs, tombstones, trimming, groups and their counters.

Time-dependent values (auto IDs, idle times, delivery times) are avoided by using explicit IDs, or
checked with diff.both() and properties."""

from __future__ import annotations

import re

import pytest

from tests.support.diff import Diff, RawConnection, encode_command, parse
from tests.support.servers import start_raxdb, start_redis

pytestmark = pytest.mark.pure

MAX = "18446744073709551615"

_TIMES = [
    (re.compile(rb"(\$4\r\nidle\r\n):\d+"), rb"\1:T"),
    (re.compile(rb"(\$9\r\nseen-time\r\n):\d+"), rb"\1:T"),
    (re.compile(rb"(\*4\r\n\$\d+\r\n\d+-\d+\r\n\$\d+\r\n[^\r]*\r\n):\d+"), rb"\1:T"),  # [id, owner, time, n]
    (re.compile(rb"(\*3\r\n\$\d+\r\n\d+-\d+\r\n):\d+"), rb"\1:T"),  # [id, time, n]
]


def timeless(diff, *args) -> bytes:
    """Like diff(*args) with idle times, seen times and delivery times masked."""
    ours, theirs = diff.both(*args)
    for rx, sub in _TIMES:
        ours, theirs = rx.sub(sub, ours), rx.sub(sub, theirs)
    assert ours == theirs, f"{args!r}\n  raxdb: {ours!r}\n  redis: {theirs!r}"
    return ours


@pytest.fixture(scope="module")
def server_pairs():
    """Pairs of (raxdb, redis) started with the same extra configuration, made on first use."""
    pairs: dict[tuple[str, ...], tuple] = {}

    def get(*config: str):
        if config not in pairs:
            pairs[config] = (start_raxdb(*config), start_redis(*config))
        return pairs[config]

    yield get
    for a, b in pairs.values():
        a.stop()
        b.stop()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def configured(request, server_pairs):
    """configured(*config) -> a Diff on servers started with that configuration, both flushed."""
    made = []

    def make(*config: str) -> Diff:
        ours, theirs = server_pairs(*config)
        for port in (ours.port, theirs.port):
            conn = RawConnection(port)
            conn.call("FLUSHALL")
            conn.close()
        d = Diff(ours.port, theirs.port, request.param)
        made.append(d)
        return d

    yield make
    for d in made:
        d.close()


def fill(diff, key="s", n=5, start=1):
    for i in range(start, start + n):
        diff("XADD", key, f"{i}-1", "f", i, "g", f"v{i}")


# ---- XADD -------------------------------------------------------------------------------------------
def test_xadd_ids_and_errors(diff):
    diff.script(f"""
        XADD s 0-0 a 1
        XADD s 0 a 1
        XADD s 0-* a 1
        XADD s 0-* a 1
        XADD s 5-* a 1
        XADD s 5-* a 1
        XADD s 5-3 a 1
        XADD s 5-3 a 1
        XADD s 4-* a 1
        XADD s 5 a 1
        XADD s 6 a 1
        XADD s abc a 1
        XADD s 1-2-3 a 1
        XADD s -1 a 1
        XADD s + a 1
        XADD s - a 1
        XADD s 7-+1 a 1
        XADD s 07 a 1
        XADD s " 8-1" a 1
        XADD s 9-01 a 1
        XADD s 10--0 a 1
        XADD s {MAX}-{MAX} a 1
        XADD s {MAX}-{MAX} a 1
        XADD s 18446744073709551616-1 a 1
        XADD t {MAX}-* a 1
        XADD t {MAX}-* a 1
        XADD u 1-{MAX} a 1
        XADD u 1-* a 1
        XADD u 2-* a 1
        XLEN s
        XLEN t
        XRANGE s - +
    """)


def test_xadd_arity_and_options(diff):
    diff.script("""
        XADD s * a
        XADD s *
        XADD s 1-1 a 1 b
        XADD s MAXLEN a 1-1 a 1
        XADD s MAXLEN -1 1-1 a 1
        XADD s MAXLEN 1 MINID 0 1-1 a 1
        XADD s MINID 0 MAXLEN 1 1-1 a 1
        XADD s LIMIT 10 1-1 a 1
        XADD s MAXLEN 1 LIMIT 10 1-1 a 1
        XADD s MAXLEN = 1 LIMIT 10 1-1 a 1
        XADD s MAXLEN ~ 1 LIMIT -1 1-1 a 1
        XADD s MAXLEN ~ 1 LIMIT abc 1-1 a 1
        XADD s MAXLEN ~ 1 LIMIT 0 1-1 a 1
        XADD s MINID abc 2-1 a 1
        XADD s MINID + 2-1 a 1
        XADD s MINID - 2-1 a 1
        XADD s NOMKSTREAM NOMKSTREAM 3-1 a 1
        XADD s NOMKSTREAM MAXLEN
        XADD s NOMKSTREAM MAXLEN 5
        XADD s FOO 4-1 a 1
        xadd s maxlen = 2 minid 0 5-1 a 1
        XADD nos NOMKSTREAM * a 1
        EXISTS nos
        XADD nos NOMKSTREAM 1-1 a 1
        XLEN s
        XRANGE s - +
    """)


@pytest.mark.oracle
def test_xadd_capped_form_repeated(configured):
    """`MAXLEN ~ <n> *` on every XADD, as capped-stream producers send it (raxdb reuses its last
    parse of those options): lengths, node counts and errors stay Redis's while the options repeat,
    change, change case or stop parsing."""
    diff = configured("--stream-node-max-entries", "3")

    def add(*args):
        ours, theirs = diff.both("XADD", *args)
        assert ours == theirs if theirs[:1] == b"-" else ours[:1] == theirs[:1] == b"$", (args, ours, theirs)

    def shape(key):  # (length, nodes), the same on both (entry IDs differ: they are the clock's)
        ours, theirs = (r if isinstance(r, dict) else dict(zip(*[iter(r)] * 2, strict=True))  # RESP3: a map
                        for r in map(parse, diff.both("XINFO", "STREAM", key)))
        assert (ours[b"length"], ours[b"radix-tree-keys"]) == (theirs[b"length"], theirs[b"radix-tree-keys"])
        return ours[b"length"], ours[b"radix-tree-keys"]

    for i in range(20):
        add("s", "MAXLEN", "~", "6", "*", "f", i, "g", "x")
    assert shape("s") == (8, 3)
    add("s", "MAXLEN", "~", "6", "*", "f")
    add("s", "MAXLEN", "~", "6", "*")
    add("s", "MAXLEN", "~", "6", "*", "f", "1", "g")
    for args in (("maxlen", "~", "6"), ("MAXLEN", "~", "2"), ("MAXLEN", "~", "06"), ("MAXLEN", "~", "-6"),
                 ("MAXLEN", "~", "6"), ("MAXLEN", "=", "6"), ("MAXLEN", "~", "6")):
        for i in range(4):
            add("s", *args, "*", "f", i)
        diff("XLEN", "s")
    diff("SET", "str", "v")
    add("str", "MAXLEN", "~", "6", "*", "f", "1")
    add("new", "MAXLEN", "~", "6", "*", "f", "1")
    assert shape("new") == (1, 1)
    # The same options before an explicit ID are not the capped form: a repeated ID must still be
    # rejected, not replaced by an automatic one (found by tests/fuzz/test_fuzz.py).
    for ident in ("0-0", "5-1", "5-*", "5"):
        for _ in range(3):
            add("e", "MAXLEN", "~", "6", ident, "f", "1")
    diff("XLEN", "e")
    diff("XRANGE", "e", "-", "+")


def test_xadd_fields_encodings(diff):
    # Master-field compression, differing fields, int-looking and long values, empty strings.
    diff.script("""
        XADD s 1-1 a 1 b 2
        XADD s 2-1 a 3 b 4
        XADD s 3-1 b 1 a 2
        XADD s 4-1 a 1
        XADD s 5-1 a 1 b 2 c 3
        XADD s 6-1 "" "" a -1
        XADD s 7-1 a -9223372036854775808 b 9223372036854775807
        XADD s 8-1 a 9223372036854775808 b 01
        XADD s 9-1 12 34 -5 -0
        XRANGE s - +
        XREVRANGE s + -
    """)
    long_value = "x" * 5000
    diff("XADD", "s", "10-1", "a", long_value, "b", "y" * 100)
    diff("XRANGE", "s", "9", "+")
    diff("XREVRANGE", "s", "+", "9")


def test_xadd_general_entries_are_redis_bytes(diff):
    # Entries whose fields differ from the master's are written element by element into the node:
    # DUMP (the node listpacks, byte for byte) shows every encoding as Redis's, with integer values
    # of each width, strings of 6-, 12- and 32-bit lengths, and ID deltas past 13 and 32 bits.
    diff.script("""
        XADD g 1-1 f x
        XADD g 1-2 a 0 b 127 c 128 d -4096 e 4095 f 4096
        XADD g 1-3 a -32768 b 32767 c -8388608 d 8388607 e -2147483648 f 2147483647
        XADD g 1-4 a -9223372036854775808 b 9223372036854775807 c 9223372036854775808 d 01 e -0 f +1
        XADD g 4097-5 f x
        XADD g 9000000000-7 f 12345678901234
        XADD g 9000000000-4294967296 j 1
    """)
    diff("XADD", "g", "9000000001-0", "a", "x" * 63, "b", "y" * 64, "c", "z" * 125, "d", "w" * 126)
    diff("XADD", "g", "9000000001-1", "a", "v" * 4095, "b", "u" * 4096)
    diff("XADD", "g", "9000000001-2", "f", "x" * 200, "g", "1")
    diff("XRANGE", "g", "-", "+")
    ours, theirs = diff.both("DUMP", "g")
    assert ours == theirs


def test_xadd_new_node_element_count_saturates_as_redis(diff):
    # A new node is written whole (master entry and first entry sized at once): with 32,764 pairs
    # its elements number 65,536, and the header's count must stay at the listpack's "unknown"
    # (65535) as lpInsert leaves it, not wrap; the node reads back and DUMPs as Redis's.  (Over
    # 4,092 pairs an entry starting a node once failed with an internal error.)
    args = [a for i in range(32764) for a in (b"f%d" % i, b"%d" % i if i % 2 else b"v")]
    diff("XADD", "wide", "1-1", *args)
    diff("XADD", "wide", "1-2", *args)
    diff("XLEN", "wide")
    ours, theirs = diff.both("DUMP", "wide")
    assert ours == theirs
    ours, theirs = diff.both("XREVRANGE", "wide", "+", "-", "COUNT", "1")
    assert ours == theirs


def test_xadd_wrongtype(diff):
    diff("SET", "str", "x")
    for cmd in [("XADD", "str", "*", "a", "1"), ("XLEN", "str"), ("XRANGE", "str", "-", "+"),
                ("XREVRANGE", "str", "+", "-"), ("XDEL", "str", "1-1"), ("XDEL", "str", "abc"),
                ("XTRIM", "str", "MAXLEN", "1"), ("XREAD", "STREAMS", "str", "0"),
                ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "str", ">"), ("XGROUP", "CREATE", "str", "g", "0"),
                ("XGROUP", "SETID", "str", "g", "0"), ("XGROUP", "DESTROY", "str", "g"),
                ("XACK", "str", "g", "1-1"), ("XPENDING", "str", "g"), ("XCLAIM", "str", "g", "c", "0", "1-1"),
                ("XAUTOCLAIM", "str", "g", "c", "0", "0"), ("XINFO", "STREAM", "str"), ("XINFO", "GROUPS", "str"),
                ("XINFO", "CONSUMERS", "str", "g"), ("XSETID", "str", "1-1")]:
        diff(*cmd)


def test_xadd_auto_id(diff):
    ours, theirs = diff.both("XADD", "s", "*", "a", "1")
    ms, seq = parse(ours).split(b"-")
    assert int(ms) > 1_600_000_000_000 and seq == b"0"
    ours, theirs = diff.both("XADD", "s", "*", "a", "2")
    ms2, seq2 = parse(ours).split(b"-")
    assert (int(ms2), int(seq2)) > (int(ms), int(seq))
    diff("XADD", "s", f"{MAX}-0", "a", "3")
    diff("XADD", "s", "*", "a", "4")
    diff("XADD", "s", "*", "a", "5")
    diff("XADD", "s", f"{MAX}-*", "a", "6")
    diff("XLEN", "s")


# ---- XRANGE / XREVRANGE ----------------------------------------------------------------------------
def test_xrange_bounds_and_count(diff):
    fill(diff, n=6)
    diff("XADD", "s", f"6-{MAX}", "f", "x")
    diff("XADD", "s", "7-0", "f", "y")
    for a, b in [("-", "+"), ("2", "4"), ("2-1", "4-1"), ("(2-1", "(4-1"), ("(2", "4"), ("2", "(4"),
                 ("(1-1", "+"), ("-", "(6-1"), ("6", "6"), ("(6-1", "7"), (f"(6-{MAX}", "+"), ("(6", "(7-0"),
                 ("4", "2"), ("0", "0"), ("0-0", "0-1"), (f"{MAX}", "+"), ("-", "-"), ("+", "+"), ("-", "0-1")]:
        diff("XRANGE", "s", a, b)
        diff("XREVRANGE", "s", b, a)
        diff("XRANGE", "s", a, b, "COUNT", "2")
        diff("XREVRANGE", "s", b, a, "count", "3")
    diff.script(f"""
        XRANGE s - + COUNT 0
        XRANGE s - + COUNT -1
        XRANGE s - + COUNT 1 COUNT 4
        XRANGE s - + COUNT
        XRANGE s - + FOO 1
        XRANGE s - + COUNT abc
        XRANGE s abc +
        XRANGE s - abc
        XRANGE s ( +
        XRANGE s (- +
        XRANGE s - (+
        XRANGE s ({MAX}-{MAX} +
        XRANGE s - (0-0
        XRANGE s - (0
        XREVRANGE s ({MAX}-{MAX} -
        XREVRANGE s + (0-0
        XRANGE s 1-1-1 +
        XRANGE s 18446744073709551616 +
        XRANGE nokey - +
        XREVRANGE nokey + -
        XRANGE nokey - + COUNT 0
        XRANGE nokey abc +
    """)


@pytest.mark.oracle
def test_xrange_across_nodes(configured):
    diff = configured("--stream-node-max-entries", "3", "--stream-node-max-bytes", "0")
    fill(diff, n=20)
    diff("XDEL", "s", "5-1", "6-1", "10-1")
    for a, b in [("-", "+"), ("4", "11"), ("(3-1", "(12-1"), ("7-1", "7-1"), ("7-2", "8-0"), ("5", "6")]:
        diff("XRANGE", "s", a, b)
        diff("XREVRANGE", "s", b, a)
        for n in (1, 2, 3, 4, 7):
            diff("XRANGE", "s", a, b, "COUNT", n)
            diff("XREVRANGE", "s", b, a, "COUNT", n)
    diff("XINFO", "STREAM", "s")
    diff("XREAD", "COUNT", "4", "STREAMS", "s", "4-1")


# ---- XDEL / XTRIM ---------------------------------------------------------------------------------
def test_xdel(diff):
    fill(diff, n=6)
    diff.script("""
        XDEL s 3-1
        XDEL s 3-1 4-1 99-1
        XDEL s abc
        XDEL s 1-1 abc
        XDEL s +
        XDEL s 1
        XDEL s 1-1
        XDEL nokey 1-1
        XDEL nokey abc
        XRANGE s - +
        XREVRANGE s + -
        XLEN s
        XINFO STREAM s
        XDEL s 2-1 5-1 6-1
        XLEN s
        EXISTS s
        XINFO STREAM s
        XADD s 7-1 a 1
        XINFO STREAM s
        XRANGE s - +
    """)


@pytest.mark.oracle
@pytest.mark.parametrize("strategy", ["MAXLEN", "MINID"])
def test_xtrim_exact_and_approx(configured, strategy):
    diff = configured("--stream-node-max-entries", "4")
    fill(diff, n=22)
    diff("XDEL", "s", "2-1", "9-1")
    args = ["20", "17", "15", "13", "12"] if strategy == "MAXLEN" else ["3", "6-1", "9", "10-1", "11"]
    for arg in args:
        diff("XTRIM", "s", strategy, "~", arg)
        diff("XINFO", "STREAM", "s")
        diff("XTRIM", "s", strategy, arg)
        diff("XINFO", "STREAM", "s")
        diff("XRANGE", "s", "-", "+", "COUNT", "3")
    everything = "0" if strategy == "MAXLEN" else "999"
    diff("XTRIM", "s", strategy, "~", everything, "LIMIT", "4")
    diff("XINFO", "STREAM", "s")
    diff("XTRIM", "s", strategy, "~", everything, "LIMIT", "0")
    diff("XINFO", "STREAM", "s")
    diff("XTRIM", "s", strategy, "=", everything)
    diff("XINFO", "STREAM", "s")
    diff("EXISTS", "s")


@pytest.mark.oracle
def test_approx_trim_default_limit(configured):
    # Without LIMIT, `~` trims at most 100 * stream-node-max-entries entries (10000 when that is 0).
    diff = configured("--stream-node-max-entries", "2")
    fill(diff, n=450)
    diff("XTRIM", "s", "MAXLEN", "~", "0")
    diff("XLEN", "s")
    diff("XTRIM", "s", "MINID", "~", "400")
    diff("XINFO", "STREAM", "s")


@pytest.mark.oracle
def test_xtrim_same_approx_options_again(configured):
    # The same `MAXLEN ~ <n>` sent again and again (a capped stream's trimmer, BullMQ's scripts):
    # parsed once and reused, the LIMIT still taken from the configuration of each call, the key's
    # type still checked.
    diff = configured("--stream-node-max-entries", "2")
    fill(diff, n=450)
    for _ in range(3):
        diff("XTRIM", "s", "MAXLEN", "~", "10")
        diff("XINFO", "STREAM", "s")
    diff("CONFIG", "SET", "stream-node-max-entries", "1")
    fill(diff, n=250, start=500)
    for _ in range(2):
        diff("XTRIM", "s", "MAXLEN", "~", "10")
        diff("XLEN", "s")
    diff("XTRIM", "nokey", "MAXLEN", "~", "10")
    diff("SET", "str", "x")
    diff("XTRIM", "str", "MAXLEN", "~", "10")
    diff("XTRIM", "s", "maxlen", "~", "10")
    diff("XTRIM", "s", "MAXLEN", "~", "10", "LIMIT", "1")
    diff("XTRIM", "s", "MAXLEN", "~", "-1")
    diff("XTRIM", "s", "MAXLEN", "~", "10")
    diff("XINFO", "STREAM", "s")
    diff("CONFIG", "SET", "stream-node-max-entries", "2")  # the servers are shared by the module's tests


def test_xtrim_errors(diff):
    fill(diff, n=3)
    diff.script("""
        XTRIM s
        XTRIM s MAXLEN
        XTRIM s LIMIT 5
        XTRIM s MAXLEN ~
        XTRIM s MAXLEN 1 foo
        XTRIM s MAXLEN = 1 LIMIT 5
        XTRIM s MAXLEN -1
        XTRIM s MINID abc
        XTRIM s MINID +
        XTRIM s MAXLEN 1 MINID 1
        XTRIM s FOO 1
        XTRIM s LIMIT 5 MAXLEN ~ 1
        XTRIM s NOMKSTREAM MAXLEN 1
        XTRIM nokey MAXLEN 1
        XTRIM nokey MAXLEN abc
        XTRIM s MAXLEN ~ 1 LIMIT 5
        XTRIM s MAXLEN 2
        XTRIM s MINID 3
        XTRIM s MINID 3-2
        XLEN s
    """)


@pytest.mark.oracle
def test_xadd_with_trimming(configured):
    diff = configured("--stream-node-max-entries", "3")
    for i in range(1, 15):
        diff("XADD", "s", "MAXLEN", "~", "5", f"{i}-1", "a", i)
        diff("XADD", "t", "MAXLEN", "4", f"{i}-1", "a", i)
        diff("XADD", "u", "MINID", "~", f"{max(i - 5, 0)}", f"{i}-1", "a", i)
        diff("XADD", "v", "MINID", f"{i - 2}", "LIMIT", "0", f"{i}-1", "a", i)
    for k in "stuv":
        diff("XINFO", "STREAM", k)


@pytest.mark.oracle
def test_capped_stream_with_auto_ids(configured):
    """`XADD key MAXLEN ~ n * ...`, the capped stream's usual form (parsed inline by raxdb): auto IDs
    differ between the servers, so lengths, node counts and the trimmed first entries are compared."""
    diff = configured("--stream-node-max-entries", "4")
    values = ["v", "1", "-x", "", "w" * 70, "ok"]
    for i in range(40):
        ours, theirs = diff.both("XADD", "s", "MAXLEN", "~", "9", "*", "a", values[i % 6], "b", "y")
        assert ours.startswith(b"$") and theirs.startswith(b"$")
        diff("XLEN", "s")
    for args in (("XADD", "s", "maxlen", "~", "3", "*", "a", "z"), ("XADD", "s", "MAXLEN", "~", "03", "*", "a", "z"),
                 ("XADD", "s", "MAXLEN", "~", "-1", "*", "a", "z"), ("XADD", "s", "MAXLEN", "~", "3", "*", "a"),
                 ("XADD", "s", "MAXLEN", "~", "x", "*", "a", "z"), ("XADD", "s", "MAXLEN", "~", "0", "*", "a", "z")):
        ours, theirs = diff.both(*args)
        assert ours[:1] == theirs[:1], args
        if ours.startswith(b"-"):
            assert ours == theirs
        diff("XLEN", "s")
    ours, theirs = diff.both("XINFO", "STREAM", "s")
    for field in (b"length", b"radix-tree-keys", b"entries-added"):
        pos = ours.index(field)
        assert ours[pos:pos + 30].split(b"\r\n")[:3] == theirs[theirs.index(field):][:30].split(b"\r\n")[:3]


@pytest.mark.oracle
def test_xadd_given_ids_fast_forms(configured):
    """The forms raxdb parses without its option parser: an ID straight after the key, and a
    repeated `MAXLEN ~ <n> <ID>` (the Spark sink's, with an id column): IDs, trimming, node counts
    and errors as Redis's while the options repeat, change or stop parsing."""
    diff = configured("--stream-node-max-entries", "3")
    for i in range(1, 16):
        diff("XADD", "s", "MAXLEN", "~", "5", f"{i}-{i % 3}", "n", i, "kind", "x")
        diff("XADD", "t", f"{i}", "n", i)
        diff("XADD", "t", f"{i}-*", "n", i)
    diff.script("""
        XADD s MAXLEN ~ 5 16-* n 1
        XADD s MAXLEN ~ 5 16-* n 2
        XADD s MAXLEN ~ 5 16 n 3
        XADD s MAXLEN ~ 5 0-0 n 1
        XADD s MAXLEN ~ 5 0 n 1
        XADD s MAXLEN ~ 5 1x n 1
        XADD s MAXLEN ~ 5 17-1 n
        XADD s MAXLEN ~ 5 17-1
        XADD s MAXLEN ~ 5
        XADD s MAXLEN ~ 5 NOMKSTREAM 17-1 n 1
        XADD s MAXLEN ~ 5 LIMIT 1 18-1 n 1
        XADD s MAXLEN ~ 6 19-1 n 1
        XADD s 0-0 n 1
        XADD s 0 n 1
        XADD s 01-1 n 1
        XADD s 20-01 n 1
        XADD s 2 n 1
        XADD s 21- n 1
        XADD s 21-1 n
        XADD s 21-18446744073709551615 n 1
        XADD s 21-* n 1
        XLEN s
        XRANGE s - +
        XINFO STREAM s
        XINFO STREAM t FULL
    """)


def test_xadd_auto_id_after_other_writers_of_the_last_id(diff):
    """`*` after an XSETID, a last ID at the end of its millisecond, or a stream made again: the next
    ID follows the stream's last ID whoever set it (raxdb keeps the parts of the last one it
    appended, and must not use them once something else set it).  Far-future IDs, so that the
    clock cannot decide and both servers reply the same."""
    diff.script(f"""
        XADD s 1-1 a 1
        XSETID s 9999999999999-5
        XADD s * a 2
        XADD s * a 3
        XSETID s 9999999999999-{MAX}
        XADD s * a 4
        XADD s 10000000000001-{MAX} a 5
        XADD s * a 6
        XADD s * a 7
        DEL s
        XADD s 10000000000002-3 a 8
        XADD s * a 9
        XDEL s 10000000000002-4
        XADD s * a 10
        XRANGE s - +
    """)


@pytest.mark.oracle
@pytest.mark.parametrize("max_bytes", ["100", "1"])
def test_node_limits_by_bytes(configured, max_bytes):
    diff = configured("--stream-node-max-bytes", max_bytes)
    for i in range(1, 30):
        diff("XADD", "s", f"{i}-1", "field", "v" * (i % 7 * 5))
    diff("XINFO", "STREAM", "s")
    diff("XRANGE", "s", "10", "20")
    diff("XREVRANGE", "s", "20", "10")


# ---- XREAD --------------------------------------------------------------------------------------------
def test_xread(diff):
    fill(diff, n=4)
    fill(diff, key="t", n=2, start=3)
    diff.script("""
        XREAD STREAMS s 0
        XREAD COUNT 2 STREAMS s 0
        XREAD COUNT 2 STREAMS s 2-1
        XREAD count 0 STREAMS s 2
        XREAD COUNT -5 STREAMS s 0
        XREAD STREAMS s t 0 0
        XREAD STREAMS s t 3-1 0
        XREAD STREAMS s t 4-1 4-1
        XREAD STREAMS s t 4-1 2
        XREAD STREAMS s nokey t 0 0 4
        XREAD STREAMS nokey 0
        XREAD STREAMS s $
        XREAD STREAMS s 0-0
        XREAD STREAMS s 18446744073709551615-18446744073709551615
        XREAD BLOCK 0 STREAMS s 0
        XREAD BLOCK 100 COUNT 1 STREAMS s 0
        XREAD BLOCK 9223372036854775807 STREAMS s 0
        XREAD STREAMS s
        XREAD STREAMS s 0 x
        XREAD COUNT 1 STREAMS
        XREAD COUNT 1
        XREAD GROUP g c STREAMS s 0
        XREAD NOACK STREAMS s 0
        XREAD FOO STREAMS s 0
        XREAD COUNT abc STREAMS s 0
        XREAD BLOCK -1 STREAMS s 0
        XREAD BLOCK abc STREAMS s 0
        XREAD STREAMS s >
        XREAD STREAMS s abc
        XREAD STREAMS s -
        XREAD STREAMS s 1
        XREAD STREAMS s 2 STREAMS t 0
        xread streams s 3
    """)
    diff("XDEL", "s", "4-1")
    diff("XREAD", "STREAMS", "s", "3-5")
    diff("XREAD", "STREAMS", "s", "2-5")


def test_xread_block_without_data_times_out(diff):
    # Until blocking is wired in, BLOCK with nothing to deliver answers as an expired timeout.
    diff("XADD", "s", "1-1", "a", "1")
    ours, _ = diff.both("XREAD", "BLOCK", "10", "STREAMS", "s", "$")
    assert ours in (b"*-1\r\n", b"_\r\n")


def test_xread_plus_is_the_last_entry(raw):
    # Redis 7.4's `+`: accepted here although 7.0 rejects it.
    for i in (1, 2, 3):
        raw.call("XADD", "s", f"{i}-1", "a", str(i))
    raw.call("XDEL", "s", "3-1")
    assert parse(raw.call("XREAD", "STREAMS", "s", "+")) == [[b"s", [[b"2-1", [b"a", b"2"]]]]]
    assert raw.call("XREAD", "STREAMS", "nokey", "+") == b"*-1\r\n"


# ---- consumer groups -------------------------------------------------------------------------------
def test_xgroup_errors(diff):
    fill(diff, n=2)
    diff.script(f"""
        XGROUP CREATE s g $
        XGROUP CREATE s g $
        XGROUP CREATE nokey g $
        XGROUP CREATE s g2 abc
        XGROUP CREATE s g2 +
        XGROUP CREATE s g2 -
        XGROUP CREATE s g3 0 FOO
        XGROUP CREATE s g3 0 ENTRIESREAD
        XGROUP CREATE s g3 0 ENTRIESREAD -2
        XGROUP CREATE s g3 0 ENTRIESREAD abc
        XGROUP CREATE s g3 0 ENTRIESREAD -1 MKSTREAM
        XGROUP CREATE s g4 0 MKSTREAM MKSTREAM MKSTREAM MKSTREAM
        XGROUP CREATE s g4 0 MKSTREAM MKSTREAM MKSTREAM
        xgroup create s g5 0 foo
        xgroup Create s g5 0 foo
        XGROUP CREATE nokey g abc MKSTREAM
        EXISTS nokey
        XGROUP CREATE nokey g {MAX}-{MAX} MKSTREAM ENTRIESREAD 7
        XINFO STREAM nokey
        XINFO GROUPS nokey
        XGROUP SETID s nog 0
        XGROUP SETID s g 0 MKSTREAM
        XGROUP SETID s g -
        XGROUP SETID s g +
        XGROUP SETID s g 0 ENTRIESREAD 5 x
        XGROUP SETID s g 0 ENTRIESREAD -3
        XGROUP SETID s g abc
        XGROUP SETID nokey2 g 0
        XGROUP SETID s g $ ENTRIESREAD 2
        XINFO GROUPS s
        XGROUP SETID s g 1
        XINFO GROUPS s
        XGROUP DESTROY s nog
        XGROUP DESTROY s g3
        XGROUP DESTROY s g3 x
        XGROUP DESTROY nokey2 g
        XGROUP CREATECONSUMER s g c1
        XGROUP CREATECONSUMER s g c1
        XGROUP CREATECONSUMER s nog c1
        XGROUP CREATECONSUMER s g c1 x
        XGROUP DELCONSUMER s g c9
        XGROUP DELCONSUMER s g c1
        XGROUP DELCONSUMER s nog c1
        XGROUP HELP
        XGROUP help
        XGROUP HELP x
        XGROUP CREATE s
        XGROUP CREATE s g
        XGROUP
        XINFO GROUPS s
    """)


def test_xreadgroup_flow(diff):
    fill(diff, n=5)
    diff.script("""
        XGROUP CREATE s g 0
        XREADGROUP GROUP g c1 COUNT 2 STREAMS s >
        XREADGROUP GROUP g c2 COUNT 1 STREAMS s >
        XREADGROUP GROUP g c1 STREAMS s 0
        XREADGROUP GROUP g c1 COUNT 1 STREAMS s 0
        XREADGROUP GROUP g c1 STREAMS s 1-1
        XREADGROUP GROUP g c2 STREAMS s 0-0
        XREADGROUP GROUP g c3 STREAMS s 0
        XINFO GROUPS s
        XPENDING s g
        XPENDING s g - + 10 nocons
        XACK s g 1-1
        XACK s g 1-1 2-1 9-1
        XPENDING s g
        XREADGROUP GROUP g c1 NOACK STREAMS s >
        XPENDING s g
        XINFO GROUPS s
        XREADGROUP GROUP g c1 STREAMS s >
        XADD s 6-1 f 6
        XREADGROUP GROUP g c1 STREAMS s >
        XREADGROUP GROUP g c4 STREAMS s >
        XINFO GROUPS s
        XDEL s 6-1
        XREADGROUP GROUP g c1 STREAMS s 0
        XPENDING s g
    """)
    for cmd in ("XINFO CONSUMERS s g", "XPENDING s g - + 10", "XPENDING s g - + 10 c1", "XPENDING s g (1-1 3-1 1",
                "XINFO STREAM s FULL", "XINFO STREAM s FULL COUNT 1"):
        timeless(diff, *cmd.split())


def test_xreadgroup_errors(diff):
    fill(diff, n=2)
    diff("XGROUP", "CREATE", "s", "g", "0")
    diff.script("""
        XREADGROUP GROUP g c STREAMS s $
        XREADGROUP GROUP g c STREAMS s +
        XREADGROUP COUNT 1 STREAMS s >
        XREADGROUP STREAMS s 0
        XREADGROUP GROUP g STREAMS s 0
        XREADGROUP GROUP nog c STREAMS s >
        XREADGROUP GROUP g c STREAMS nokey >
        XREADGROUP GROUP g c STREAMS s 0 x
        XREADGROUP GROUP g c COUNT 1 STREAMS s 0 nokey 0
        XREADGROUP GROUP g c COUNT 1 STREAMS nokey 0 s 0
        XREADGROUP GROUP g c STREAMS s abc
        XREADGROUP GROUP g c BLOCK abc STREAMS s >
        XREADGROUP GROUP g c COUNT -1 STREAMS s >
        XREADGROUP GROUP g c NOACK NOACK STREAMS s >
        XREADGROUP GROUP g c BLOCK 10 STREAMS s >
        XINFO GROUPS s
    """)


def test_xreadgroup_multiple_keys_and_groups(diff):
    fill(diff, key="a", n=3)
    fill(diff, key="b", n=2, start=2)
    diff.script("""
        XGROUP CREATE a g 0
        XGROUP CREATE b g $
        XREADGROUP GROUP g c STREAMS a b > >
        XADD b 9-1 f 9
        XREADGROUP GROUP g c COUNT 1 STREAMS a b > >
        XREADGROUP GROUP g c STREAMS a b 0 0
        XREADGROUP GROUP g c STREAMS a b 2 >
        XINFO GROUPS a
        XINFO GROUPS b
    """)


def test_xack_xpending_errors(diff):
    fill(diff, n=3)
    diff.script("""
        XGROUP CREATE s g 0
        XREADGROUP GROUP g c COUNT 2 STREAMS s >
        XACK s g abc
        XACK s g 1-1 abc
        XACK s nog abc
        XACK nokey g 1-1
        XACK s g 5
        XACK s g + -
        XPENDING s g -
        XPENDING s g - +
        XPENDING s g - + abc
        XPENDING s g IDLE 10 - +
        XPENDING s g IDLE abc - + 10
        XPENDING s g abc + 10
        XPENDING s g (+ + 10
        XPENDING s g (18446744073709551615-18446744073709551615 + 10
        XPENDING s g - (0-0 10
        XPENDING s g - + -1
        XPENDING s g - + 0
        XPENDING s nog
        XPENDING nokey g
        XPENDING nokey g - + abc
        XPENDING s nog - + 10
        XPENDING s g - + 1 nocons
        XPENDING s g IDLE 99999999 - + 10
        XACK s g 1-1 2-1
        XPENDING s g
    """)
    timeless(diff, "XPENDING", "s", "g", "-", "+", "10")
    timeless(diff, "XPENDING", "s", "g", "IDLE", "0", "-", "+", "10")
    ours, theirs = diff.both("XPENDING", "s", "g", "IDLE", "-5", "-", "+", "10")
    assert parse(ours) == parse(theirs) == []


def test_xclaim(diff):
    fill(diff, n=5)
    diff.script("""
        XGROUP CREATE s g 0
        XREADGROUP GROUP g c1 STREAMS s >
        XCLAIM s g c2 0 1-1 JUSTID
        XCLAIM s g c2 0 2-1 3-1 RETRYCOUNT 7
        XCLAIM s g c2 99999999 4-1
        XCLAIM s g c2 -5 4-1 JUSTID RETRYCOUNT 3
        XCLAIM s g c3 0 9-1 FORCE
        XCLAIM s g c3 0 5-1 FORCE JUSTID
        XDEL s 5-1
        XCLAIM s g c3 0 5-1 FORCE
        XCLAIM s g c3 0 1-1 LASTID 3-1
        XINFO GROUPS s
        XCLAIM s g c3 0 1-1 LASTID 7-1
        XINFO GROUPS s
        XCLAIM s g c2 abc 1-1
        XCLAIM s g c2 0 1-1 FOO
        XCLAIM s g c2 0 1-1 IDLE abc
        XCLAIM s g c2 0 1-1 TIME abc
        XCLAIM s g c2 0 1-1 RETRYCOUNT abc
        XCLAIM s g c2 0 1-1 LASTID abc
        XCLAIM s g c2 0 1-1 IDLE
        XCLAIM s nog c2 0 1-1
        XCLAIM nokey g c2 0 1-1
        XCLAIM nokey g c2 abc 1-1
        XCLAIM s g c2 0 abc
        XCLAIM s g c2 0 1-1 abc 2-1
        XCLAIM s g c2 0 1-1 2-1 JUSTID IDLE 1000 RETRYCOUNT 2 FORCE
        XPENDING s g
    """)
    timeless(diff, "XINFO", "CONSUMERS", "s", "g")
    ours, theirs = diff.both("XPENDING", "s", "g", "-", "+", "10")
    strip = [[e[0], e[1], e[3]] for e in parse(ours)]
    assert strip == [[e[0], e[1], e[3]] for e in parse(theirs)]
    # IDLE moves the delivery time into the past; TIME sets it (clamped to now).
    diff("XCLAIM", "s", "g", "c1", "0", "3-1", "IDLE", "500000", "JUSTID")
    ours, theirs = diff.both("XPENDING", "s", "g", "3-1", "3-1", "1")
    assert 500000 <= parse(ours)[0][2] < 510000
    diff("XCLAIM", "s", "g", "c1", "0", "3-1", "TIME", "1", "JUSTID")
    ours, _ = diff.both("XPENDING", "s", "g", "IDLE", "1000000", "3-1", "3-1", "1")
    assert parse(ours)[0][0] == b"3-1"
    diff("XCLAIM", "s", "g", "c1", "0", "3-1", "TIME", "99999999999999", "JUSTID")
    ours, _ = diff.both("XPENDING", "s", "g", "3-1", "3-1", "1")
    assert parse(ours)[0][2] < 10000


def test_xautoclaim(diff):
    fill(diff, n=6)
    diff.script("""
        XGROUP CREATE s g 0
        XREADGROUP GROUP g c STREAMS s >
        XDEL s 2-1 3-1 5-1
        XAUTOCLAIM s g c2 0 0 COUNT 2
        XAUTOCLAIM s g c2 0 0 COUNT 2
        XAUTOCLAIM s g c2 0 0 COUNT 2 JUSTID
        XAUTOCLAIM s g c2 0 (4-1 JUSTID
        XAUTOCLAIM s g c2 0 - COUNT 1
        XAUTOCLAIM s g c2 999999999 0
        XAUTOCLAIM s g c3 0 5-0
        XAUTOCLAIM s g c3 0 7
        XAUTOCLAIM s g c2 abc 0
        XAUTOCLAIM s g c2 0 abc
        XAUTOCLAIM s g c2 0 0 COUNT 0
        XAUTOCLAIM s g c2 0 0 COUNT -1
        XAUTOCLAIM s g c2 0 0 COUNT abc
        XAUTOCLAIM s g c2 0 0 COUNT 9223372036854775807
        XAUTOCLAIM s g c2 0 0 COUNT 576460752303423488
        XAUTOCLAIM s g c2 0 0 FOO
        XAUTOCLAIM s g c2 0 0 COUNT
        XAUTOCLAIM s nog c2 0 0
        XAUTOCLAIM nokey g c2 0 0
        XAUTOCLAIM s g c2 0 (18446744073709551615-18446744073709551615
        XPENDING s g
    """)
    timeless(diff, "XINFO", "CONSUMERS", "s", "g")
    timeless(diff, "XPENDING", "s", "g", "-", "+", "10")


def test_xautoclaim_attempts_limit(diff):
    fill(diff, n=30)
    diff("XGROUP", "CREATE", "s", "g", "0")
    diff("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    diff("XCLAIM", "s", "g", "c", "0", "25-1", "IDLE", "100000", "JUSTID")
    # COUNT 1 allows 10 attempts: none of the fresh entries qualify, so the cursor moves by 10.
    diff("XAUTOCLAIM", "s", "g", "c2", "50000", "0", "COUNT", "1")
    diff("XAUTOCLAIM", "s", "g", "c2", "50000", "11-1", "COUNT", "2")
    diff("XAUTOCLAIM", "s", "g", "c2", "50000", "0", "COUNT", "3", "JUSTID")


# ---- XINFO / XSETID -------------------------------------------------------------------------------
def test_xinfo(diff):
    fill(diff, n=4)
    diff.script("""
        XINFO STREAM s
        XINFO STREAM s FULL
        XINFO STREAM s FULL COUNT 2
        XINFO STREAM s FULL COUNT 0
        XINFO STREAM s FULL COUNT -1
        XINFO STREAM s FULL count 1
        XINFO STREAM nokey
        XINFO GROUPS nokey
        XINFO CONSUMERS nokey g
        XINFO GROUPS s
        XINFO CONSUMERS s nog
        XINFO STREAM s FOO
        XINFO STREAM s FULL COUNT
        XINFO STREAM s FULL COUNT abc
        XINFO STREAM s FULL FOO 1
        XINFO stream s foo
        XINFO GROUPS s x
        XINFO CONSUMERS s
        XINFO
        XINFO HELP
        XINFO HELP x
        XGROUP CREATE s g1 0
        XGROUP CREATE s g0 $
        XGROUP CREATE s a 2-1 ENTRIESREAD 1
        XINFO GROUPS s
        XINFO STREAM s
        XGROUP CREATE e g 0 MKSTREAM
        XINFO STREAM e
        XINFO STREAM e FULL
    """)


def test_xinfo_full_with_pending(diff):
    fill(diff, n=4)
    diff("XGROUP", "CREATE", "s", "g", "0")
    diff("XREADGROUP", "GROUP", "g", "c", "COUNT", "3", "STREAMS", "s", ">")
    diff("XCLAIM", "s", "g", "d", "0", "2-1", "TIME", "1000", "RETRYCOUNT", "4", "JUSTID")
    ours = timeless(diff, "XINFO", "STREAM", "s", "FULL")
    timeless(diff, "XINFO", "STREAM", "s", "FULL", "COUNT", "1")
    ours, _ = diff.both("XINFO", "STREAM", "s", "FULL")
    assert b"$3\r\n2-1\r\n$1\r\nd\r\n:1000\r\n:4\r\n" in ours  # group PEL: [id, owner, time, count]
    assert b"$3\r\n2-1\r\n:1000\r\n:4\r\n" in ours  # consumer PEL: [id, time, count]


def test_xsetid(diff):
    fill(diff, n=3)
    diff.script(f"""
        XSETID s abc
        XSETID s 1-0
        XSETID s 3-0
        XSETID s 5-0 ENTRIESADDED -1
        XSETID s 5-0 ENTRIESADDED 1
        XSETID s 5-0 MAXDELETEDID 6-0
        XSETID s 5-0 MAXDELETEDID abc
        XSETID s 5-0 FOO
        XSETID nokey 5-0
        XSETID nokey abc
        XSETID s +
        XSETID s -
        XSETID s 5-0 ENTRIESADDED
        XSETID s 3-1
        XINFO STREAM s
        XSETID s 9-0 ENTRIESADDED 50 MAXDELETEDID 4-0
        XINFO STREAM s
        XSETID s 9-0 MAXDELETEDID 0-0
        XINFO STREAM s
        XSETID s 8-5
        XADD s 8-6 a 1
        XADD s 8-* a 1
        XDEL s 1-1 2-1 3-1 8-6
        XSETID s 1-0
        XINFO STREAM s
        XSETID s {MAX}-{MAX}
        XADD s * a 1
        XADD s {MAX}-* a 1
    """)


# ---- lag and entries-read -------------------------------------------------------------------------
LAG_SCENARIOS = [
    # plain reading
    ["XREADGROUP GROUP g c COUNT 2 STREAMS s >"],
    ["XREADGROUP GROUP g c STREAMS s >"],
    # tombstones before, at and after the group's position
    ["XDEL s 2-1", "XREADGROUP GROUP g c COUNT 1 STREAMS s >"],
    ["XREADGROUP GROUP g c COUNT 2 STREAMS s >", "XDEL s 4-1"],
    ["XREADGROUP GROUP g c COUNT 2 STREAMS s >", "XDEL s 1-1"],
    ["XREADGROUP GROUP g c COUNT 2 STREAMS s >", "XDEL s 2-1"],
    ["XDEL s 1-1", "XREADGROUP GROUP g c COUNT 1 STREAMS s >"],
    ["XDEL s 6-1"],
    ["XDEL s 3-1", "XREADGROUP GROUP g c STREAMS s >", "XADD s 7-1 f 7"],
    # trimming
    ["XTRIM s MAXLEN 3", "XREADGROUP GROUP g c COUNT 1 STREAMS s >"],
    ["XREADGROUP GROUP g c COUNT 4 STREAMS s >", "XTRIM s MAXLEN 1"],
    ["XTRIM s MINID 3-1", "XDEL s 5-1", "XREADGROUP GROUP g c COUNT 1 STREAMS s >"],
    ["XTRIM s MAXLEN 0"],
    ["XTRIM s MAXLEN 0", "XADD s 9-1 f 9"],
    # explicit positions
    ["XGROUP SETID s g 3-1"],
    ["XGROUP SETID s g 3-1 ENTRIESREAD 3"],
    ["XGROUP SETID s g 3-1 ENTRIESREAD 10"],
    ["XGROUP SETID s g 0-5"],
    ["XGROUP SETID s g 6-1"],
    ["XGROUP SETID s g 99-0"],
    ["XGROUP SETID s g 1-1", "XDEL s 1-1"],
    ["XSETID s 9-0 ENTRIESADDED 20"],
    ["XSETID s 9-0 ENTRIESADDED 20", "XREADGROUP GROUP g c COUNT 3 STREAMS s >"],
    ["XSETID s 9-0 MAXDELETEDID 7-0"],
    ["XSETID s 9-0 MAXDELETEDID 7-0", "XREADGROUP GROUP g c COUNT 3 STREAMS s >"],
    ["XDEL s 3-1", "XGROUP SETID s g 2-1 ENTRIESREAD 2", "XREADGROUP GROUP g c COUNT 2 STREAMS s >"],
    ["XCLAIM s g c 0 1-1 FORCE LASTID 4-1"],
]


@pytest.mark.parametrize("steps", LAG_SCENARIOS, ids=[" / ".join(s) for s in LAG_SCENARIOS])
def test_lag_and_entries_read(diff2, steps):
    diff = diff2
    fill(diff, n=6)
    diff("XGROUP", "CREATE", "s", "g", "0")
    diff("XGROUP", "CREATE", "s", "late", "$")
    diff("XGROUP", "CREATE", "s", "mid", "3-1", "ENTRIESREAD", "3")
    for step in steps:
        diff.check(step)
        diff("XINFO", "GROUPS", "s")
    diff.check("XREADGROUP GROUP g c STREAMS s >")
    diff.check("XREADGROUP GROUP mid c STREAMS s >")
    diff("XINFO", "GROUPS", "s")
    diff("XINFO", "STREAM", "s")


def test_empty_stream_kept_by_groups(diff):
    diff.script("""
        XGROUP CREATE s g $ MKSTREAM
        XLEN s
        TYPE s
        XRANGE s - +
        XREAD STREAMS s 0
        XREADGROUP GROUP g c STREAMS s >
        XREADGROUP GROUP g c STREAMS s 0
        XINFO STREAM s
        XINFO GROUPS s
        XADD s 1-1 a 1
        XDEL s 1-1
        EXISTS s
        XINFO STREAM s
        XTRIM s MAXLEN 0
        XADD s MAXLEN 0 2-1 a 1
        XLEN s
        XINFO STREAM s
        OBJECT ENCODING s
    """)


def test_copy_of_streams_is_independent(r):
    r.xadd("s", {"a": "1"}, id="1-1")
    r.xgroup_create("s", "g", id="0")
    r.xreadgroup("g", "c", {"s": ">"})
    assert r.copy("s", "t")
    r.xadd("t", {"b": "2"}, id="2-1")
    r.xack("t", "g", "1-1")
    assert r.xlen("s") == 1 and r.xlen("t") == 2
    assert r.xpending("s", "g")["pending"] == 1 and r.xpending("t", "g")["pending"] == 0


def test_keyspace_events(raxdb, oracle):
    """Every stream write publishes Redis's event names, in Redis's order."""
    script = [
        ("XADD", "s", "1-1", "a", "1"), ("XADD", "s", "MAXLEN", "1", "2-1", "a", "2"),
        ("XADD", "s", "NOMKSTREAM", "3-1", "a", "3"), ("XADD", "nos", "NOMKSTREAM", "1-1", "a", "1"),
        ("XDEL", "s", "3-1"), ("XDEL", "s", "9-1"), ("XTRIM", "s", "MAXLEN", "0"), ("XTRIM", "s", "MAXLEN", "0"),
        ("XGROUP", "CREATE", "s", "g", "$"), ("XGROUP", "CREATE", "m", "g", "$", "MKSTREAM"),
        ("XGROUP", "SETID", "s", "g", "0"), ("XGROUP", "CREATECONSUMER", "s", "g", "c"),
        ("XGROUP", "CREATECONSUMER", "s", "g", "c"), ("XADD", "s", "5-1", "a", "5"),
        ("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", ">"), ("XCLAIM", "s", "g", "c5", "0", "5-1"),
        ("XAUTOCLAIM", "s", "g", "c6", "0", "0"), ("XACK", "s", "g", "5-1"),
        ("XCLAIM", "s", "g", "c3", "0", "5-1"), ("XAUTOCLAIM", "s", "g", "c4", "0", "0"),
        ("XGROUP", "DELCONSUMER", "s", "g", "c"), ("XGROUP", "DESTROY", "s", "g"), ("XSETID", "s", "9-9"),
        ("DEL", "s"),
    ]
    seen = []
    for port in (raxdb.port, oracle.port):
        ctl, sub = RawConnection(port), RawConnection(port)
        ctl.call("FLUSHALL")
        ctl.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
        sub.call("PSUBSCRIBE", "__key*__:*")
        for cmd in script:
            ctl.call(*cmd)
        ctl.call("PUBLISH", "end", "x")
        sub.call("SUBSCRIBE", "end")  # its confirmation arrives after every earlier event
        events = []
        while True:
            msg = parse(sub.read_frame())
            if msg[0] in (b"subscribe", b"psubscribe"):
                break
            events.append(msg[2:])
        ctl.call("CONFIG", "SET", "notify-keyspace-events", "")
        ctl.close()
        sub.close()
        seen.append(events)
    assert seen[0] == seen[1]
    assert [b"__keyevent@0__:xgroup-createconsumer", b"s"] in seen[0]


def test_claims_create_consumers_only_when_claiming(diff):
    fill(diff, n=2)
    diff.script("""
        XGROUP CREATE s g 0
        XCLAIM s g c1 0 1-1
        XAUTOCLAIM s g c2 0 0
        XCLAIM s g c3 0 9-9 FORCE
        XINFO CONSUMERS s g
        XREADGROUP GROUP g c STREAMS s >
        XCLAIM s g c4 99999999 2-1
        XAUTOCLAIM s g c5 99999999 0
        XINFO GROUPS s
        XCLAIM s g c6 0 1-1 JUSTID
        XAUTOCLAIM s g c7 0 0 JUSTID
        XINFO GROUPS s
    """)
    timeless(diff, "XINFO", "CONSUMERS", "s", "g")


@pytest.mark.parametrize("cmd", [
    "XADD s 9-1 a 1", "XADD s NOMKSTREAM 9-1 a 1", "XDEL s 1-1", "XDEL s 9-9", "XTRIM s MAXLEN 0",
    "XTRIM s MAXLEN 5", "XGROUP CREATE s g2 0", "XGROUP CREATE n g 0 MKSTREAM", "XGROUP SETID s g 0",
    "XGROUP DESTROY s g", "XGROUP CREATECONSUMER s g c9", "XGROUP DELCONSUMER s g c",
    "XREADGROUP GROUP g c2 STREAMS s >", "XACK s g 1-1", "XCLAIM s g c3 0 1-1", "XAUTOCLAIM s g c4 0 0",
    "XSETID s 99-0", "XRANGE s - +",
])
def test_which_commands_touch_watched_keys(raxdb, oracle, cmd):
    """WATCH is invalidated exactly by the stream commands that signal a modified key in Redis 7.0."""
    results = []
    for port in (raxdb.port, oracle.port):
        a, b = RawConnection(port), RawConnection(port)
        a.call("FLUSHALL")
        a.call("XADD", "s", "1-1", "a", "1")
        a.call("XGROUP", "CREATE", "s", "g", "0")
        a.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
        a.call("WATCH", "s", "n")
        b.call(*cmd.split())
        a.call("MULTI")
        a.call("PING")
        results.append(a.call("EXEC"))
        a.close()
        b.close()
    assert results[0] == results[1], cmd


def test_memory_usage_follows_the_listpacks(raxdb, oracle):
    """MEMORY USAGE of a stream is Redis's figure to the byte: the rax, each listpack at its
    allocation (the last node keeps lpNew's 4096-byte preallocation until it is closed or a
    counter rewrite shrinks it), the groups' PELs and consumers, and SAMPLES (the first N nodes
    averaged, the last one added)."""
    def session(port: int) -> list[bytes]:
        c = RawConnection(port)
        out = []

        def usage(*extra: str) -> None:
            out.append(c.call("MEMORY", "USAGE", "s", *extra))

        c.call("DEL", "s", "t", "s2")
        c.call("XADD", "s", "1-1", "f", "v")
        usage()
        for n in (40, 300, 3000):
            c.send(b"".join(encode_command(["XADD", "s", f"{i}-1", "f", "v" * (i % 7), "g", str(i)])
                            for i in range(2, n)))
            for _ in range(2, n):
                c.read_frame()
            usage()
            usage("SAMPLES", "0")
            usage("SAMPLES", "1")
        c.call("XGROUP", "CREATE", "s", "g", "0")
        c.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", "50", "STREAMS", "s", ">")
        c.call("XREADGROUP", "GROUP", "g", "bob", "COUNT", "5", "STREAMS", "s", ">")
        c.call("XGROUP", "CREATECONSUMER", "s", "g", "a-consumer-with-a-longer-name")
        usage()
        for i in range(2, 300, 3):
            c.call("XDEL", "s", f"{i}-1")
        c.call("XTRIM", "s", "MAXLEN", "2500")
        usage("SAMPLES", "0")
        c.call("COPY", "s", "s2")
        out.append(c.call("MEMORY", "USAGE", "s2", "SAMPLES", "0"))
        # the last node's live count drops from 128 to 127: its encoding shrinks, so does the node
        c.call("CONFIG", "SET", "stream-node-max-entries", "1000")
        for i in range(1, 129):
            c.call("XADD", "t", f"{i}-1", "f", "v")
        out.append(c.call("MEMORY", "USAGE", "t"))
        c.call("XDEL", "t", "1-1")
        out.append(c.call("MEMORY", "USAGE", "t"))
        c.call("CONFIG", "SET", "stream-node-max-entries", "100")
        c.call("DEL", "s", "t", "s2")
        c.close()
        return out

    assert session(raxdb.port) == session(oracle.port)
