"""String commands against redis-server 7.0: every option, edge case and error, in RESP2 and RESP3.

TTL-dependent checks compare properties (both servers' TTLs within the same second) instead of bytes.
Tests that need a command another family provides (TTL, OBJECT, SUBSCRIBE, ...) skip while raxdb
does not serve it yet.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raxdb.server.commands import longdouble
from raxdb.storage.lcs import lcs_length, lcs_walk
from tests.support.diff import Diff, RawConnection, parse
from tests.support.servers import start_raxdb, start_redis

pytestmark = pytest.mark.pure

HYPOTHESIS = settings(max_examples=60, deadline=None,
                      suppress_health_check=[HealthCheck.function_scoped_fixture])




def ttl_pair(diff, cmd: str = "PTTL", key: str = "k") -> tuple[int, int]:
    ours, theirs = diff.both(cmd, key)
    return parse(ours), parse(theirs)


# ---- GET / SET -----------------------------------------------------------------------------------
def test_get_set_basics(diff):
    diff.script("""
        GET k
        SET k v
        GET k
        SET k ""
        GET k
        SET "" empty-key
        GET ""
        SET k 12345
        GET k
        SET k v extra
        SET k
        GET k extra
    """)
    diff("SET", "bin\x00key", "a\x00\r\nb")
    diff("GET", "bin\x00key")


def test_get_wrongtype(diff):
    diff("DEL", "probe")
    diff("RPUSH", "l", "a")
    diff("GET", "l")
    diff("SET", "l", "v", "GET")
    diff("GETSET", "l", "v")
    diff("GETDEL", "l")
    diff("GETEX", "l")
    diff("GETRANGE", "l", "0", "1")
    diff("STRLEN", "l")
    diff("APPEND", "l", "x")
    diff("SETRANGE", "l", "0", "x")
    diff("INCR", "l")
    diff("INCRBYFLOAT", "l", "1")
    diff("MGET", "l", "nokey")
    diff("LCS", "l", "nokey")
    diff("LCS", "nokey", "l")
    diff("SET", "l", "now-a-string")  # SET overwrites any type
    diff("GET", "l")


def test_set_conditions(diff):
    diff.script("""
        SET k v NX
        SET k w NX
        GET k
        SET k w XX
        GET k
        SET missing v XX
        GET missing
        SET k v NX XX
        SET k v XX NX
        SET k v nx nx
        SET k v Xx xX
        SET k x GET
        SET k y NX GET
        GET k
        SET k z XX GET
        SET nokey z XX GET
        GET nokey
        SET nokey2 z NX GET
        GET nokey2
        SET k v GET GET
    """)


def test_set_option_words_end_at_nul(diff):
    diff("SET", "k", "v", "NX\x00junk")
    diff("SET", "k", "w", "XX\x00", "GET\x00x")
    diff("SET", "k", "v", "EX\x00x", "100")
    diff("SET", "k", "v", "NXjunk")
    diff("GETEX", "k", "PERSIST\x00")


def test_set_option_spellings_and_deadline_rewrites(diff):
    # option words in any case (the parse's lookup knows capitals and small letters, the rest goes
    # through option_word), and a SET's deadline given, rewritten, kept and dropped on overwrite
    diff.script("""
        SET k v pX 100000
        TTL k
        SET k v Ex 50
        TTL k
        SET k w kEePtTl
        TTL k
        SET k v nX eX 10
        SET k v Xx GeT pxAT 99999999999999
        PEXPIRETIME k
        SET k v EXAT 99999999999
        EXPIRETIME k
        SET k v
        TTL k
        SET k v px 100000 xx get
        TTL k
        GETEX k exat 99999999999
        EXPIRETIME k
        GETEX k PeRsIsT
        TTL k
        SET k v PX 10 KEEPTTL
        SET k v keepttl Px 10
    """)


def test_set_expire_options(diff):
    diff.script("""
        SET k v EX 100
        SET k v PX 100000
        SET k v EXAT 99999999999
        SET k v PXAT 99999999999999
        SET k v EX 0
        SET k v EX -1
        SET k v PX 0
        SET k v EX 1.5
        SET k v EX abc
        SET k v EX
        SET k v EX 9223372036854775807
        SET k v EX 9223372036854775
        SET k v EX 9223372036854776
        SET k v PX 9223372036854775807
        SET k v PXAT 9223372036854775807
        SET k v EXAT 9223372036854775
        SET k v EX 100 PX 100
        SET k v EX 100 EXAT 100
        SET k v PX 100 PXAT 100
        SET k v EX 10 EX 20
        SET k v KEEPTTL EX 100
        SET k v EX 100 KEEPTTL
        SET k v KEEPTTL KEEPTTL
        SET k v EX 100 NX
        SET k v XX PX 100 GET
        SET k v BADOPT
        SET k v EX 10 BADOPT
        SET k v EX 01
        SET k v EX +1
    """)


def test_set_ttl_effects(diff):
    diff("SET", "k", "v", "EX", "100")
    a, b = ttl_pair(diff)
    assert 99000 <= a <= 100000 and 99000 <= b <= 100000
    diff("SET", "k", "w", "KEEPTTL")
    a, b = ttl_pair(diff)
    assert 99000 <= a <= 100000 and 99000 <= b <= 100000
    diff("SET", "k", "w")
    diff("PTTL", "k")  # plain SET drops the TTL
    diff("SET", "k", "v", "PXAT", "99999999999999")
    if not diff.ours.call("PEXPIRETIME", "k").startswith(b"-ERR unknown"):
        diff("PEXPIRETIME", "k")
    diff("SET", "k", "v", "EXAT", "1")  # a deadline in the past: gone at the next access
    diff("GET", "k")
    diff("SET", "k", "v", "PX", "100000", "GET")
    diff("SET", "k", "v", "NX", "EX", "100")  # not set: TTL untouched
    a, b = ttl_pair(diff)
    assert 99000 <= a <= 100000 and 99000 <= b <= 100000


def test_setnx_setex_psetex(diff):
    diff.script("""
        SETNX k v
        SETNX k w
        GET k
        SETEX k 100 v2
        GET k
        SETEX k 0 v
        SETEX k -5 v
        SETEX k abc v
        SETEX k 9223372036854775807 v
        SETEX k 1.5 v
        PSETEX k 100000 v3
        GET k
        PSETEX k 0 v
        PSETEX k -1 v
        PSETEX k 9223372036854775807 v
        SETEX k 100
        PSETEX k
        SETNX k
    """)


def test_setex_ttl(diff):
    diff("SETEX", "k", "100", "v")
    a, b = ttl_pair(diff, "TTL")
    assert a in (99, 100) and b in (99, 100)
    diff("PSETEX", "k", "5000000", "v")
    a, b = ttl_pair(diff)
    assert 4999000 <= a <= 5000000 and 4999000 <= b <= 5000000


def test_getset_mget_mset_msetnx(diff):
    diff.script("""
        GETSET k v
        GETSET k w
        GET k
        MSET a 1 b 2 c 3
        MGET a b c nokey a
        MSET a 1 b
        MSET a
        MSETNX a 9 new 1
        GET new
        MSETNX n1 1 n2 2
        MGET n1 n2
        MSETNX n1 1 n2
        MSET x 1 x 2
        GET x
        MSETNX y 1 y 2
        GET y
    """)


def test_getset_drops_ttl(diff):
    diff("SET", "k", "v", "EX", "100")
    diff("GETSET", "k", "w")
    diff("TTL", "k")
    diff("SET", "k", "v", "EX", "100")
    diff("MSET", "k", "w")
    diff("TTL", "k")


# ---- GETEX / GETDEL ------------------------------------------------------------------------------
def test_getex_options_and_errors(diff):
    diff.script("""
        GETEX nokey
        GETEX nokey EX -1
        GETEX nokey BADOPT
        SET k v
        GETEX k
        GETEX k EX 100
        GETEX k PX 100000
        GETEX k EXAT 99999999999
        GETEX k PXAT 99999999999999
        GETEX k PERSIST
        GETEX k EX 0
        GETEX k EX -1
        GETEX k PX abc
        GETEX k EX
        GETEX k EX 10 PX 10
        GETEX k PERSIST EX 10
        GETEX k EX 10 PERSIST
        GETEX k PERSIST PERSIST
        GETEX k EX 10 EX 20
        GETEX k KEEPTTL
        GETEX k NX
        GETEX k XX
        GETEX k GET
        GETEX k EX 9223372036854775807
        GETEX k EXAT 9223372036854775
        GETEX k foo
        GET k
    """)


def test_getex_ttl_changes(diff):
    diff("SET", "k", "v")
    diff("GETEX", "k", "EX", "100")
    a, b = ttl_pair(diff, "TTL")
    assert a in (99, 100) and b in (99, 100)
    diff("GETEX", "k")  # no option: TTL untouched
    a, b = ttl_pair(diff, "TTL")
    assert a in (99, 100) and b in (99, 100)
    diff("GETEX", "k", "PERSIST")
    diff("TTL", "k")
    diff("GETEX", "k", "PERSIST")
    diff("GETEX", "k", "PXAT", "1")  # a past deadline deletes the key now
    diff("GET", "k")
    diff("SET", "k", "v")
    diff("GETEX", "k", "EXAT", "1")
    diff("GET", "k")


def test_getdel(diff):
    diff.script("""
        GETDEL nokey
        SET k v
        GETDEL k
        GETDEL k
        GET k
        SET n 123
        GETDEL n
        GETDEL
        GETDEL a b
    """)


# ---- counters ------------------------------------------------------------------------------------
def test_incr_family(diff):
    diff.script("""
        INCR n
        INCR n
        DECR n
        DECR n
        DECR n
        INCRBY n 100
        INCRBY n -100
        DECRBY n 7
        DECRBY n -7
        INCRBY n abc
        INCRBY n 1.5
        INCRBY n 9223372036854775808
        INCRBY n ""
        DECRBY n -9223372036854775808
        DECRBY n 9223372036854775807
        SET n 9223372036854775807
        INCR n
        INCRBY n 0
        SET n -9223372036854775808
        DECR n
        INCRBY n -1
        INCRBY n 9223372036854775807
        GET n
        SET s abc
        INCR s
        SET s " 1"
        INCR s
        SET s "1 "
        INCR s
        SET s 01
        INCR s
        SET s +1
        INCR s
        SET s -0
        INCR s
        SET s 1.0
        INCR s
        SET s ""
        INCR s
        SET s 99999999999999999999
        INCR s
        SET s -1
        INCR s
        GET s
        SET big 999999999999999999
        INCRBY big 9223372036854775807
        GET big
        INCRBY big 8223372036854775808
        INCRBY big 1
        SET small 9999
        INCR small
        DECR small
        DECRBY small 10000
        INCRBY small -9223372036854775807
        DECR small
        GET small
        INCR
        INCRBY n
        DECRBY n 1 2
    """)


def test_incr_past_shared_values(diff):
    """A counter past the shared values (0..9999), which INCR's common case reads as 1 to 15 digits
    and writes back as digits: the edges of that case (15 and 16 digits, a leading zero, a sign)."""
    diff.script("""
        SET c 10000
        DECR c
        DECR c
        INCR c
        INCRBY c -20000
        DECRBY c -30000
        GET c
        SET c 123456789012345
        INCR c
        SET c 999999999999999
        INCR c
        INCR c
        GET c
        SET c 12345678901234567
        DECR c
        SET c 0012345
        INCR c
        SET c 012
        DECR c
        SET c +12345
        INCR c
        SET c -12345
        INCR c
        SET c 1234x
        INCR c
        SET c 9223372036854775806
        INCR c
        INCR c
        GET c
    """)


def test_incr_short_spellings_and_the_int64_bound(diff):
    """INCR's common case reads a stored value's digits in C (no lookup of the shared values): the
    spellings of four digits or fewer that string2ll refuses (a leading zero, "00", a sign), and
    the int64 bound met by a delta added to a short value, not only by a long one."""
    diff.script("""
        SET c 0
        INCR c
        SET c 00
        INCR c
        SET c 01
        DECR c
        SET c 0999
        INCR c
        SET c 9999
        INCR c
        SET c -1
        INCR c
        SET c +1
        INCR c
        SET c 1
        INCRBY c 9223372036854775806
        GET c
        SET c 2
        INCRBY c 9223372036854775806
        GET c
        SET c 999999999999999
        INCRBY c 9223372036854775807
        DECRBY c 9223372036854775807
        GET c
        SET c 5
        DECRBY c 9223372036854775807
        GET c
    """)


def test_incr_keeps_ttl(diff):
    diff("SET", "k", "1", "EX", "100")
    diff("INCR", "k")
    a, b = ttl_pair(diff, "TTL")
    assert a in (99, 100) and b in (99, 100)
    diff("INCRBYFLOAT", "k", "1.5")
    a, b = ttl_pair(diff, "TTL")
    assert a in (99, 100) and b in (99, 100)


def test_incrbyfloat_formatting(diff):
    diff.script("""
        INCRBYFLOAT f 0.1
        INCRBYFLOAT f 0.1
        INCRBYFLOAT f 0.1
        INCRBYFLOAT f -0.3
        INCRBYFLOAT f 5.0e3
        INCRBYFLOAT f 1e308
        INCRBYFLOAT f 1e308
        INCRBYFLOAT g 10.50
        INCRBYFLOAT g -10.5
        INCRBYFLOAT g -0.0
        INCRBYFLOAT g 0.000003814697265625
        INCRBYFLOAT g -1e-20
        INCRBYFLOAT h 3.0e3
        INCRBYFLOAT h 1.23456789012345678901234567890
        INCRBYFLOAT h 0x1p-3
        INCRBYFLOAT h 0X1.8P1
        INCRBYFLOAT h .5
        INCRBYFLOAT h 5.
        INCRBYFLOAT h +2
        INCRBYFLOAT h -1E2
        SET i 18446744073709551617
        INCRBYFLOAT i 0
        SET i 12345678901234567890123
        INCRBYFLOAT i 1
        SET i 0.1
        INCRBYFLOAT i 0.2
        SET i 1e-4951
        INCRBYFLOAT i 1
        SET i 4e-4951
        INCRBYFLOAT i 0
        INCRBYFLOAT i 1
    """)


def test_incrbyfloat_errors(diff):
    diff.script("""
        INCRBYFLOAT f 1e4932
        INCRBYFLOAT f 1e4932
        INCRBYFLOAT f 1e5000
        INCRBYFLOAT f -1e4932
        INCRBYFLOAT f inf
        INCRBYFLOAT f -inf
        INCRBYFLOAT f Infinity
        INCRBYFLOAT f nan
        INCRBYFLOAT f NaN
        INCRBYFLOAT f abc
        INCRBYFLOAT f ""
        INCRBYFLOAT f " 1"
        INCRBYFLOAT f "1 "
        INCRBYFLOAT f 1e
        INCRBYFLOAT f .
        INCRBYFLOAT f 0x
        INCRBYFLOAT f 0xp1
        INCRBYFLOAT f 1e-5000
        INCRBYFLOAT f 1_000
        INCRBYFLOAT f --1
        GET f
        SET s abc
        INCRBYFLOAT s 1
        INCRBYFLOAT s abc
        SET s inf
        INCRBYFLOAT s 1
        SET s nan
        INCRBYFLOAT s 1
        INCRBYFLOAT f
        INCRBYFLOAT f 1 2
    """)
    diff("INCRBYFLOAT", "f", "1\x00")
    diff("SET", "s", "1\x00")
    diff("INCRBYFLOAT", "s", "1")


def test_incrbyfloat_length_limit(diff):
    diff("INCRBYFLOAT", "f", "0" * 5118 + "1")  # 5119 characters: parsed
    diff("INCRBYFLOAT", "f", "0" * 5119 + "1")  # 5120: refused before parsing
    diff("SET", "s", "0" * 5120 + "1")
    diff("INCRBYFLOAT", "s", "1")


@HYPOTHESIS
@given(start=st.one_of(st.none(), st.decimals(allow_nan=False, allow_infinity=False, places=None).map(str),
                       st.floats(allow_nan=False, allow_infinity=False).map(repr)),
       steps=st.lists(st.one_of(st.integers(-10**25, 10**25).map(str),
                                st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr),
                                st.decimals(allow_nan=False, allow_infinity=False, places=20).map(str),
                                st.builds(lambda m, e: f"{m}e{e}", st.integers(-999, 999), st.integers(-4960, 4940))),
                      min_size=1, max_size=4))
def test_incrbyfloat_matches_redis(diff2, start, steps):
    diff2("DEL", "f")
    if start is not None:
        diff2("SET", "f", start)
    for inc in steps:
        diff2("INCRBYFLOAT", "f", inc)


# ---- STRLEN / APPEND / GETRANGE / SETRANGE -------------------------------------------------------
def test_strlen_append(diff):
    diff.script("""
        STRLEN nokey
        APPEND k hello
        APPEND k " world"
        GET k
        STRLEN k
        APPEND k ""
        APPEND empty ""
        GET empty
        STRLEN empty
        SET n 10
        APPEND n 0
        GET n
        INCR n
        STRLEN n
        APPEND
        APPEND k
        STRLEN
    """)


def test_getrange_substr(diff):
    diff("SET", "k", "Hello World")
    for start, end in [(0, 4), (-3, -1), (0, -1), (10, 100), (5, 3), (-1, -5), (-100, 3), (-100, -100),
                       (0, 0), (11, 11), (-1, -1), (3, -100), (100, 200), (-5, 100),
                       (-9223372036854775808, 9223372036854775807)]:
        diff("GETRANGE", "k", start, end)
        diff("SUBSTR", "k", start, end)
    diff.script("""
        GETRANGE nokey 0 -1
        SUBSTR nokey 0 10
        GETRANGE k a 1
        GETRANGE k 0 b
        GETRANGE nokey a 1
        GETRANGE k 0 9223372036854775808
        GETRANGE k 0
        SET e ""
        GETRANGE e 0 -1
        GETRANGE e 0 0
        SET n 12345
        GETRANGE n 1 3
    """)


def test_setrange(diff):
    diff.script("""
        SETRANGE k 0 hello
        SETRANGE k 6 world
        GET k
        SETRANGE k 1 ""
        SETRANGE k 100 ""
        SETRANGE nokey 5 ""
        GET nokey
        SETRANGE nokey 3 x
        GET nokey
        SETRANGE k -1 x
        SETRANGE k abc x
        SETRANGE k 1.5 x
        SETRANGE k 9223372036854775808 x
        SETRANGE k 536870911 ""
        SETRANGE k 536870912 x
        SETRANGE k 536870911 xy
        SETRANGE k 9223372036854775807 x
        SETRANGE nokey2 536870912 x
        SETRANGE nokey2 -1 ""
        SET n 12345
        SETRANGE n 2 ab
        GET n
        SETRANGE k 0
    """)


def test_size_limits_at_512mb_without_allocating(diff):
    # Redis checks the final size before allocating, so these cost nothing on either server.
    diff("SET", "k", "abc")
    diff("SETRANGE", "k", "536870910", "xyz")
    diff("SETRANGE", "k", "536870912", "")


@pytest.fixture(scope="module")
def small_bulk():
    """A raxdb / redis-server pair started with the smallest proto-max-bulk-len (1 MB)."""
    opts = ("--proto-max-bulk-len", "1048576")
    ours, theirs = start_raxdb(*opts), start_redis(*opts)
    d = Diff(ours.port, theirs.port)
    yield d
    d.close()
    ours.stop()
    theirs.stop()


@pytest.mark.oracle
def test_append_setrange_size_limit(small_bulk):
    d = small_bulk
    d("FLUSHALL")
    chunk = "x" * 600_000
    d("SET", "k", chunk)
    d("APPEND", "k", chunk)  # 1.2 MB > proto-max-bulk-len
    d("STRLEN", "k")
    d("APPEND", "k", "y" * 448_576)  # exactly 1 MB: allowed
    d("APPEND", "k", "z")
    d("SETRANGE", "k", "1048575", "a")
    d("SETRANGE", "k", "1048575", "ab")
    d("SETRANGE", "new", "1048576", "a")
    d("SETRANGE", "new", "1048575", "a")
    d("STRLEN", "new")


@pytest.mark.oracle
def test_lcs_memory_limit(small_bulk):
    d = small_bulk
    d("FLUSHALL")
    d("SET", "a", "ab" * 300)
    d("SET", "b", "ba" * 300)
    d("LCS", "a", "b", "LEN")  # 601 * 601 * 4 > 1 MB
    d("SET", "b", "ba" * 200)
    d("LCS", "a", "b", "LEN")


@HYPOTHESIS
@given(ops=st.lists(st.tuples(st.sampled_from(["setrange", "append", "getrange"]),
                              st.integers(-40, 40), st.integers(-40, 40), st.binary(max_size=6)),
                    max_size=25))
def test_range_ops_against_model(raw, ops):
    raw.call("DEL", "m")
    model: bytearray | None = None
    for op, a, b, data in ops:
        if op == "setrange":
            reply = raw.call("SETRANGE", "m", abs(a), data)
            if data:
                model = model if model is not None else bytearray()
                if len(model) < abs(a) + len(data):
                    model.extend(bytes(abs(a) + len(data) - len(model)))
                model[abs(a):abs(a) + len(data)] = data
            assert reply == b":%d\r\n" % (len(model) if model is not None else 0)
        elif op == "append":
            model = (model if model is not None else bytearray()) + data
            assert raw.call("APPEND", "m", data) == b":%d\r\n" % len(model)
        else:
            got = parse(raw.call("GETRANGE", "m", a, b))
            n = len(model) if model is not None else 0
            s, e = a, b
            if s < 0 and e < 0 and s > e:
                expected = b""
            else:
                s = max(s + n, 0) if s < 0 else s
                e = max(e + n, 0) if e < 0 else e
                e = min(e, n - 1)
                expected = bytes(model[s:e + 1]) if model is not None and s <= e else b""
            assert got == expected
    assert parse(raw.call("GET", "m")) == (bytes(model) if model is not None else None)


# ---- LCS -----------------------------------------------------------------------------------------
def test_lcs_docs_example(diff):
    diff("MSET", "key1", "ohmytext", "key2", "mynewtext")
    diff.script("""
        LCS key1 key2
        LCS key1 key2 LEN
        LCS key1 key2 IDX
        LCS key1 key2 IDX MINMATCHLEN 4
        LCS key1 key2 IDX MINMATCHLEN 4 WITHMATCHLEN
        LCS key1 key2 IDX WITHMATCHLEN
        LCS key1 key2 WITHMATCHLEN
        LCS key1 key2 MINMATCHLEN 2
        LCS key1 key2 idx minmatchlen -5 withmatchlen
        LCS key2 key1 IDX WITHMATCHLEN
        LCS key1 nokey
        LCS nokey key1 IDX
        LCS nokey nokey2 LEN
        LCS key1 key1 IDX WITHMATCHLEN
    """)


def test_lcs_errors(diff):
    diff("MSET", "a", "abc", "b", "abd")
    diff.script("""
        LCS a b LEN IDX
        LCS a b IDX LEN
        LCS a b MINMATCHLEN
        LCS a b MINMATCHLEN abc
        LCS a b BADOPT
        LCS a b IDX MINMATCHLEN 1 BAD
        LCS a
    """)
    diff("LCS", "a", "b", "IDX\x00junk")


@HYPOTHESIS
@given(a=st.text(alphabet="abc", max_size=30), b=st.text(alphabet="abc", max_size=30),
       opts=st.sampled_from([[], ["LEN"], ["IDX"], ["IDX", "WITHMATCHLEN"], ["IDX", "MINMATCHLEN", "2"],
                             ["IDX", "MINMATCHLEN", "3", "WITHMATCHLEN"]]))
def test_lcs_matches_redis(diff, a, b, opts):
    diff("MSET", "a", a, "b", b)
    diff("LCS", "a", "b", *opts)


def _naive_lcs_table(a: bytes, b: bytes) -> list[list[int]]:
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            t[i][j] = t[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(t[i - 1][j], t[i][j - 1])
    return t


@settings(max_examples=300, deadline=None)
@given(a=st.binary(max_size=40), b=st.binary(max_size=150), alphabet=st.integers(1, 40))
def test_bit_parallel_lcs_equals_dynamic_programming(a, b, alphabet):
    a, b = bytes(x % alphabet for x in a), bytes(x % alphabet for x in b)
    t = _naive_lcs_table(a, b)
    assert lcs_length(a, b) == t[len(a)][len(b)]
    # The walk must be the DP table's walk: diagonal on equal bytes, else up iff strictly better.
    expected = []
    i, j = len(a), len(b)
    while i and j:
        if a[i - 1] == b[j - 1]:
            i, j = i - 1, j - 1
            expected.append((i, j))
        elif t[i - 1][j] > t[i][j - 1]:
            i -= 1
        else:
            j -= 1
    length, walk = lcs_walk(a, b)
    assert length == t[len(a)][len(b)]
    assert list(walk) == expected


def test_lcs_large_strings_are_fast(diff2):
    a = ("abcde" * 400)[:2000]
    b = ("badce" * 400)[:2000]
    diff2("MSET", "a", a, "b", b)
    diff2("LCS", "a", "b", "LEN")
    diff2("LCS", "a", "b")
    diff2("LCS", "a", "b", "IDX", "MINMATCHLEN", "3", "WITHMATCHLEN")


def test_lcs_table_limit_at_default_size(diff2):
    # 12000 x 12000 * 4 bytes > 512 MB: refused before any table is built.
    diff2("MSET", "a", "x" * 12000, "b", "y" * 12000)
    diff2("LCS", "a", "b")


# ---- long double unit checks ---------------------------------------------------------------------
@pytest.mark.parametrize("text,expected", [
    (b"0.1", b"0.1"), (b"-0", b"0"), (b"1e-20", b"0"), (b"-1e-20", b"0"), (b"1.5", b"1.5"),
    (b"0x1p-1", b"0.5"), (b"3.0e3", b"3000"), (b"0.000003814697265625", b"0.00000381469726562"),
    (b"18446744073709551617", b"18446744073709551616"),
])
def test_long_double_parse_and_format(text, expected):
    v = longdouble.parse(text)
    assert v is not None
    assert longdouble.format_human(v) == expected


@pytest.mark.parametrize("text", [b"", b" 1", b"1 ", b"nan", b"1e5000", b"1e-5000", b"0x", b"1e", b"+", b"1_0",
                                  b"0" * 5120])
def test_long_double_rejects(text):
    assert longdouble.parse(text) is None


def test_long_double_overflow_and_infinities():
    big = longdouble.parse(b"1e4932")
    assert big is not None and longdouble.add(big, big) is None
    assert longdouble.parse(b"inf") == longdouble.INF
    assert longdouble.add(longdouble.INF, (0, 0)) is None
    one = longdouble.parse(b"1")
    assert longdouble.format_human(longdouble.add(one, longdouble.parse(b"-1"))) == b"0"


# ---- notifications and encodings (need other families) -------------------------------------------
def _events(d, commands: list[tuple[str, ...]]) -> tuple[list, list]:
    """Run commands on both servers with keyspace events on; return each server's event stream."""
    conns = (d.ours, d.theirs)
    subs = []
    for conn in conns:
        conn.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
        sub = RawConnection(conn.sock.getpeername()[1])
        sub.call("PSUBSCRIBE", "__keyevent@*")
        subs.append(sub)
    streams = []
    try:
        for cmd in commands:
            d.both(*cmd)
        d.both("PUBLISH", "__keyevent@0__:end", "end")  # marks the end of each stream
        for sub in subs:
            events = []
            while (msg := parse(sub.read_frame()))[2] != b"__keyevent@0__:end":
                events.append((msg[2], msg[3]))
            streams.append(events)
    finally:
        for sub in subs:
            sub.close()
        for conn in conns:
            conn.call("CONFIG", "SET", "notify-keyspace-events", "")
    return streams[0], streams[1]


def test_keyspace_events(diff2):
    ours, theirs = _events(diff2, [
        ("SET", "k", "v"), ("SET", "k", "v", "EX", "100"), ("SET", "k", "v", "NX"), ("SETNX", "k2", "1"),
        ("SETEX", "k3", "100", "v"), ("PSETEX", "k3", "100000", "v"), ("GETSET", "k", "w"),
        ("MSET", "a", "1", "b", "2"), ("MSETNX", "a", "1", "c", "3"), ("MSETNX", "d", "1"),
        ("INCR", "n"), ("DECRBY", "n", "5"), ("INCRBYFLOAT", "n", "1.5"), ("APPEND", "ap", ""),
        ("APPEND", "ap", "x"), ("SETRANGE", "sr", "0", ""), ("SETRANGE", "sr", "2", "x"),
        ("SETRANGE", "sr", "0", ""), ("GETEX", "k", "EX", "100"), ("GETEX", "k", "PERSIST"),
        ("GETEX", "k", "PERSIST"), ("GETEX", "k", "PXAT", "1"), ("GETDEL", "a"), ("GETDEL", "a"),
        ("SET", "e", "v", "PXAT", "1"), ("GET", "e"), ("GET", "missing"), ("LCS", "b", "c"),
    ])
    assert ours == theirs


def test_object_encoding_of_results(diff):
    diff.script("""
        SET i 123
        OBJECT ENCODING i
        SET s abc
        OBJECT ENCODING s
        APPEND s d
        OBJECT ENCODING s
        APPEND new 123
        OBJECT ENCODING new
        SET r abc
        SETRANGE r 0 x
        OBJECT ENCODING r
        SETRANGE r2 1 x
        OBJECT ENCODING r2
        SET r3 abc
        SETRANGE r3 0 ""
        OBJECT ENCODING r3
        INCR c
        OBJECT ENCODING c
        SET c2 abc
        APPEND c2 ""
        GETSET c2 5
        OBJECT ENCODING c2
    """)


def test_incrbyfloat_integral_result_is_embstr(diff):
    # INCRBYFLOAT stores its result without trying the int encoding, so "3" is embstr there (and not
    # a shared integer) where SET's "3" is int.  Every string command must still treat it as a string.
    diff.script("""
        INCRBYFLOAT f 1.5
        INCRBYFLOAT f 1.5
        GET f
        OBJECT ENCODING f
        OBJECT REFCOUNT f
        TYPE f
        STRLEN f
        GETRANGE f 0 -1
        MGET f
        MEMORY USAGE f
        COPY f g
        OBJECT ENCODING g
        RENAME f h
        OBJECT ENCODING h
        INCRBYFLOAT h 100
        OBJECT ENCODING h
        INCR h
        OBJECT ENCODING h
        INCRBYFLOAT a 7
        APPEND a 1
        OBJECT ENCODING a
        INCRBYFLOAT b 7
        SETRANGE b 1 0
        GET b
        OBJECT ENCODING b
        INCRBYFLOAT bits 64
        SETBIT bits 3 1
        GET bits
        OBJECT ENCODING bits
        INCRBYFLOAT x 1e3
        BITCOUNT x
        LCS x g
        PFCOUNT x
        GETDEL x
        INCRBYFLOAT y 2.5
        OBJECT ENCODING y
        SET y 3
        OBJECT ENCODING y
    """)


def test_writes_over_a_stale_key(diff):
    # A key whose deadline passed but that nobody touched yet: writers expire it first.
    diff.script("""
        SET k v PXAT 1
        SET k v2 KEEPTTL
        GET k
        SET k v PXAT 1
        SET k v2 XX
        GET k
        SET k v PXAT 1
        SETNX k v3
        SET k v PXAT 1
        MSETNX k 1
        SET k v PXAT 1
        APPEND k x
        SET k 5 PXAT 1
        INCR k
        SET k 5 PXAT 1
        INCRBYFLOAT k 1
        SET k v PXAT 1
        SETRANGE k 1 x
        GET k
        SET k v PXAT 1
        SETBIT k 0 1
        GET k
        SET k v PXAT 1
        BITFIELD k INCRBY u8 0 1
    """)


def test_in_place_values_keep_working(diff):
    diff.script("""
        SET n 1
        APPEND n 5
        INCR n
        APPEND n .5
        INCRBYFLOAT n 1
        SETRANGE n 0 9
        INCRBYFLOAT n 0.25
        SETRANGE n 0 8
        DECRBY n 1
        GET n
        SETBIT f 2 1
        SETBIT f 3 1
        INCRBYFLOAT f 1
        GETRANGE f 0 -1
        LCS f n
    """)


def _hits_misses_expired(conn) -> tuple[int, int, int]:
    fields = dict(line.split(":", 1) for line in parse(conn.call("INFO", "stats")).decode().splitlines()
                  if ":" in line)
    return int(fields["keyspace_hits"]), int(fields["keyspace_misses"]), int(fields["expired_keys"])


def test_keyspace_hit_miss_and_expiry_stats(diff2):
    script = """
        GET nokey
        SET k abc
        GET k
        MGET k nokey k
        SET k v GET
        SET nokey2 v GET
        GETSET k w
        GETEX k
        GETEX nokey
        GETDEL nokey
        STRLEN k
        STRLEN nokey
        GETRANGE k 0 1
        GETRANGE nokey 0 1
        LCS k nokey
        APPEND k x
        SETRANGE k 0 x
        INCRBYFLOAT f 1
        INCR i
        SETNX k v
        MSETNX k v
        SETBIT b 0 1
        GETBIT b 0
        GETBIT nokey 0
        BITCOUNT b
        BITCOUNT nokey
        BITPOS b 1
        BITPOS nokey 1
        BITOP OR d b nokey
        BITFIELD b GET u8 0
        BITFIELD nokey GET u8 0
        BITFIELD b SET u8 0 1
        BITFIELD_RO b GET u8 0
        GETDEL k
        SET x v PXAT 1
        SET x v
        SET x v PXAT 1
        MSET x 1 y 2
        SET x v PXAT 1
        GET x
    """
    before = [_hits_misses_expired(c) for c in (diff2.ours, diff2.theirs)]
    diff2.script(script)
    after = [_hits_misses_expired(c) for c in (diff2.ours, diff2.theirs)]
    deltas = [tuple(a - b for a, b in zip(after[i], before[i], strict=True)) for i in (0, 1)]
    assert deltas[0] == deltas[1]


@pytest.mark.parametrize("script", [
    [("SET", "k", "v" * 50), ("APPEND", "k", "bb"), ("APPEND", "k", "x" * 40)],  # trimmed argument, then greedy
    [("SET", "k", "v" * 60), ("APPEND", "k", "bb")],  # little spare room: kept, no growth
    [("SET", "k", "v" * 31), ("APPEND", "k", "b"), ("APPEND", "k", "c" * 30)],  # embstr made raw, then grown
    [("SET", "k", "12345"), ("SETRANGE", "k", "3", "hello"), ("SETBIT", "k", "2048", "1")],
    [("SETRANGE", "k", "100", "x"), ("SETRANGE", "k", "101", "y")],  # created exact, then grown
    [("SETBIT", "k", "7", "1"), ("BITFIELD", "k", "SET", "u8", "800", "5")],
    # made by BITFIELD or SETBIT, edited in place while no longer, then grown
    [("BITFIELD", "k", "INCRBY", "u8", "100", "1"), ("BITFIELD", "k", "INCRBY", "u8", "100", "1", "GET", "u4", "0"),
     ("SETBIT", "k", "3", "1"), ("BITFIELD", "k", "SET", "i5", "101", "-3"), ("APPEND", "k", "x" * 10)],
    [("SETBIT", "k", "30", "1"), ("BITFIELD", "k", "SET", "u8", "0", "9"), ("SETBIT", "k", "100", "1")],
    [("SET", "a", "abc"), ("BITOP", "NOT", "k", "a"), ("BITFIELD", "k", "SET", "u8", "8", "7"),
     ("SETBIT", "k", "5", "1"), ("BITFIELD", "k", "SET", "u8", "100", "5")],
    [("SET", "k", "w" * 70000), ("SETRANGE", "k", "70000", "qq")],  # past 64 KiB: a 32-bit header
    [("SET", "a", "x" * 50), ("APPEND", "a", "y"), ("COPY", "a", "k"), ("APPEND", "k", "z")],
    [("SET", "a", "abc"), ("BITOP", "NOT", "k", "a"), ("APPEND", "k", "d" * 20)],
], ids=lambda s: " ".join(c[0] for c in s))
def test_memory_usage_follows_sds_growth(diff, script):
    """A string grown in place keeps the room sds's greedy growth gave it, and MEMORY USAGE counts
    that allocation as Redis does; OBJECT ENCODING stays raw."""
    for cmd in script:
        diff(*cmd)
        diff("MEMORY", "USAGE", "k")
        diff("OBJECT", "ENCODING", "k")


_INTEGER_EDGES = ["0", "1", "-1", "00", "01", "-0", "-01", "+1", "-", "", " 1", "1 ", "1_0", "1a", "١", "--1",
                  "1.0", "1795641062959", "-1795641062959", "999999999999999999", "-999999999999999999",
                  "9223372036854775806", "9223372036854775807", "9223372036854775808", "-9223372036854775807",
                  "-9223372036854775808", "-9223372036854775809", "18446744073709551616",
                  "99999999999999999999", "-99999999999999999999", "999999999999999999999", "1\x00"]


@pytest.mark.parametrize("arg", _INTEGER_EDGES)
def test_integer_argument_edges(diff, arg):
    # string2ll's rules (protocol/request.py's string2ll, through INCRBY, HINCRBY, DECRBY, SET's
    # PX and LRANGE's indexes): the digits checked at once rather than byte by byte.
    diff("SET", "n", "5")
    diff("INCRBY", "n", arg)
    diff("DECRBY", "n", arg)
    diff("HINCRBY", "h", "f", arg)
    diff("HSET", "h", "g", arg)
    diff("HINCRBY", "h", "g", "1")
    diff("SET", "s", arg)
    diff("INCR", "s")
    diff("SET", "p", "v", "PX", arg)
    diff("LRANGE", "nolist", arg, "1")
