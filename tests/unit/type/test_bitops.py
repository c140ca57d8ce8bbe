"""Bitmap commands against redis-server 7.0 (RESP2 and RESP3), plus model-based property tests.

No test allocates a large bitmap: offsets near the 512 MB limit are only used where both servers
reject them before allocating.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raxdb.storage.bits import (
    FAIL,
    GET,
    INCRBY,
    SET,
    WRAP,
    apply_fields,
    bitwise,
    count_bits,
    field_ops,
    field_reply,
    first_bit,
    put_field,
)
from tests.support.diff import parse
from tests.unit.type.test_strings import _events

HYPOTHESIS = settings(max_examples=60, deadline=None,
                      suppress_health_check=[HealthCheck.function_scoped_fixture])


# ---- SETBIT / GETBIT -----------------------------------------------------------------------------
def test_setbit_getbit(diff):
    diff.script("""
        SETBIT k 7 1
        GET k
        SETBIT k 7 1
        SETBIT k 7 0
        SETBIT k 100 1
        STRLEN k
        GETBIT k 100
        GETBIT k 99
        GETBIT k 7
        GETBIT k 100000
        GETBIT nokey 0
        GET k
        SET n 1
        SETBIT n 6 1
        GET n
        SET m 1
        GETBIT m 2
        GETBIT m 7
    """)


def test_setbit_getbit_errors(diff):
    diff.script("""
        SETBIT k -1 1
        SETBIT k abc 1
        SETBIT k 1.5 1
        SETBIT k 4294967296 1
        SETBIT k 9223372036854775807 1
        SETBIT k 9223372036854775808 1
        SETBIT k #1 1
        SETBIT k 0 2
        SETBIT k 0 -1
        SETBIT k 0 abc
        SETBIT k 0 ""
        SETBIT k 0 01
        GETBIT k -1
        GETBIT k 4294967296
        GETBIT k abc
        GETBIT nokey 4294967296
        SETBIT k 0
        GETBIT k
        GET k
    """)


def test_bit_wrongtype(diff):
    diff("DEL", "probe")
    diff("RPUSH", "l", "a")
    diff.script("""
        SETBIT l 0 1
        GETBIT l 0
        BITCOUNT l
        BITCOUNT l 0 1 junk
        BITPOS l 1
        BITPOS l 2
        BITOP AND d l
        BITOP AND d nokey l
        BITFIELD l GET u8 0
        BITFIELD l SET u8 0 1
        BITFIELD_RO l GET u8 0
        SET s abc
        BITOP OR l s
        TYPE l
        GET l
    """)


# ---- BITCOUNT ------------------------------------------------------------------------------------
def test_bitcount(diff):
    diff("SET", "k", "foobar")
    diff("SET", "b", "\xff\xf0\x00\x0f")
    for key in ("k", "b"):
        diff("BITCOUNT", key)
        for start, end in [(0, 0), (1, 1), (0, -1), (-2, -1), (-1, -2), (5, 30), (2, 1), (-100, 100),
                           (-100, -50), (100, 200), (-1, 0)]:
            diff("BITCOUNT", key, start, end)
            diff("BITCOUNT", key, start, end, "BYTE")
            diff("BITCOUNT", key, start, end, "bit")
        for start, end in [(5, 30), (1, 6), (3, 3), (7, 8), (-5, -1), (0, 47), (9, 14), (-20, -3)]:
            diff("BITCOUNT", key, start, end, "BIT")


def test_bitcount_quirks_and_errors(diff):
    diff.script("""
        BITCOUNT nokey
        BITCOUNT nokey 0 1
        BITCOUNT nokey a b
        BITCOUNT nokey 1
        BITCOUNT nokey 1 2 3 4
        SET k foobar
        BITCOUNT k 1
        BITCOUNT k 1 2 3 4
        BITCOUNT k a 1
        BITCOUNT k 0 b
        BITCOUNT k 0 1 FOO
        BITCOUNT k -1 -2 FOO
        BITCOUNT k -1 -2 BIT
        BITCOUNT k 9223372036854775807 -9223372036854775808 BIT
        BITCOUNT k -9223372036854775808 9223372036854775807 BIT
        SET e ""
        BITCOUNT e
        BITCOUNT e 0 -1
        BITCOUNT e 0 -1 BIT
        SET n 12345
        BITCOUNT n
        BITCOUNT
    """)
    diff("BITCOUNT", "k", "0", "-1", "BIT\x00x")


# ---- BITPOS --------------------------------------------------------------------------------------
def test_bitpos(diff):
    diff("SET", "ones", "\xff\xff\xff")
    diff("SET", "mix", "\x00\xff\xf0")
    diff("SET", "zeros", "\x00\x00\x00")
    diff("SET", "e", "")
    for key in ("ones", "mix", "zeros", "e", "nokey"):
        for bit in (0, 1):
            diff("BITPOS", key, bit)
            for start in (0, 1, 2, 3, -1, -2, -10):
                diff("BITPOS", key, bit, start)
                for end in (0, 1, 2, -1, -2, 10, -10):
                    diff("BITPOS", key, bit, start, end)
                    diff("BITPOS", key, bit, start, end, "BYTE")
            for start, end in [(0, 23), (1, 7), (7, 9), (3, 14), (8, 15), (16, 22), (-3, -1), (-10, -9),
                               (20, 100), (5, 5), (23, 23), (0, -1), (12, 11)]:
                diff("BITPOS", key, bit, start, end, "BIT")


def test_bitpos_errors(diff):
    diff("SET", "k", "\xff")
    diff.script("""
        BITPOS k 2
        BITPOS k -1
        BITPOS k abc
        BITPOS nokey 2
        BITPOS nokey 0 junk
        BITPOS nokey 1 0 0 JUNK
        BITPOS k 0 a
        BITPOS k 0 0 b
        BITPOS k 0 0 1 FOO
        BITPOS k 0 a 1 FOO
        BITPOS k 0 0 b FOO
        BITPOS k 0 0 b BIT
        BITPOS k 0 0 1 BIT extra
        BITPOS k
    """)


# ---- BITOP ---------------------------------------------------------------------------------------
def test_bitop(diff):
    diff("SET", "a", "\x0f\xf0\xaa")
    diff("SET", "b", "\xff\x00")
    diff("SET", "c", "x")
    for op in ("AND", "OR", "XOR", "and", "Or"):
        diff("BITOP", op, "d", "a", "b")
        diff("GET", "d")
        diff("BITOP", op, "d", "a", "b", "c", "nokey")
        diff("GET", "d")
        diff("BITOP", op, "d", "nokey", "a")
        diff("GET", "d")
        diff("BITOP", op, "d", "a")
        diff("GET", "d")
    diff("BITOP", "NOT", "d", "a")
    diff("GET", "d")
    diff("BITOP", "NOT", "a", "a")  # in place
    diff("GET", "a")
    diff("SET", "n", "123")
    diff("BITOP", "XOR", "d", "n", "c")
    diff("GET", "d")


def test_bitop_empty_results_and_errors(diff):
    diff.script("""
        SET d exists
        BITOP AND d nokey nokey2
        GET d
        BITOP NOT d nokey
        BITOP OR d nokey
        SET e ""
        SET d exists
        BITOP OR d e
        GET d
        BITOP NOT d a b
        BITOP NOT d
        BITOP FOO d a
        BITOP ANDX d a
        BITOP "" d a
        BITOP AND d
    """)
    diff("BITOP", "AND\x00junk", "d", "e")


def test_bitop_overwrites_ttl_and_other_types(diff):
    diff("SET", "d", "x", "EX", "100")
    diff("SET", "a", "\x01")
    diff("BITOP", "OR", "d", "a")
    diff("TTL", "d")
    if diff.ours.call("RPUSH", "l", "x").startswith(b":"):
        diff.theirs.call("RPUSH", "l", "x")
        diff("BITOP", "OR", "l", "a")
        diff("TYPE", "l")
        diff("GET", "l")


# ---- BITFIELD ------------------------------------------------------------------------------------
def test_bitfield_get_set_incrby(diff):
    diff.script("""
        BITFIELD k SET i8 0 100 GET i8 0 INCRBY i8 0 10 GET u4 0 GET i4 4
        BITFIELD k SET u8 #1 255 GET u8 #1 GET i8 #1 GET u16 8 GET i16 4
        BITFIELD k INCRBY u2 100 1 INCRBY u2 100 1 INCRBY u2 100 1 INCRBY u2 100 1
        BITFIELD k SET i64 0 -1 GET i64 0 GET u63 0 GET u63 1 GET i64 1
        BITFIELD k SET i64 0 9223372036854775807 INCRBY i64 0 1 GET i64 0
        BITFIELD k SET u63 3 9223372036854775807 INCRBY u63 3 1
        BITFIELD k GET u1 0 GET i1 0 GET i1 1 SET i1 5 -1 GET u1 5
        BITFIELD k GET i8 1000 GET u32 2000000
        GET k
        BITFIELD nokey GET i8 0 GET u16 #3
        BITFIELD nokey2
        BITFIELD k
        SET n 12345
        BITFIELD n GET u8 0 GET i16 #1
        BITFIELD n SET u8 #0 65
        GET n
    """)


def test_bitfield_overflow_modes(diff):
    diff.script("""
        BITFIELD k SET u8 0 250 INCRBY u8 0 10 GET u8 0
        BITFIELD k OVERFLOW SAT INCRBY u8 0 100 INCRBY u8 0 -1000 OVERFLOW WRAP INCRBY u8 0 -1
        BITFIELD k OVERFLOW FAIL INCRBY u8 0 1 INCRBY u8 0 -256 GET u8 0
        BITFIELD k SET i8 8 127 OVERFLOW SAT INCRBY i8 8 1 OVERFLOW WRAP INCRBY i8 8 1 OVERFLOW FAIL INCRBY i8 8 -1
        BITFIELD k OVERFLOW SAT SET i8 8 1000 SET i8 8 -1000 SET u8 8 1000 SET u8 8 -1
        BITFIELD k OVERFLOW WRAP SET i8 8 1000 SET i8 8 -1000 SET u8 8 1000 SET u8 8 -1
        BITFIELD k OVERFLOW FAIL SET i8 8 1000 SET i8 8 -1000 SET u8 8 1000 SET u8 8 -1 SET u8 8 7
        BITFIELD k OVERFLOW SAT SET i8 0 -9223372036854775808 GET i8 0
        BITFIELD k OVERFLOW SAT SET i8 0 -9223372036854775700 GET i8 0
        BITFIELD k OVERFLOW SAT SET i8 0 -9223372036854775680 GET i8 0
        BITFIELD k OVERFLOW WRAP SET i8 0 -9223372036854775808 GET i8 0
        BITFIELD k OVERFLOW FAIL SET i8 0 -9223372036854775808 GET i8 0
        BITFIELD k OVERFLOW SAT SET i64 0 -9223372036854775808 INCRBY i64 0 -1 INCRBY i64 0 9223372036854775807
        BITFIELD k OVERFLOW SAT INCRBY i64 0 9223372036854775807 INCRBY i64 0 1
        BITFIELD k OVERFLOW WRAP INCRBY i64 0 1 INCRBY i64 0 -1
        BITFIELD k OVERFLOW FAIL INCRBY i64 0 1
        BITFIELD k OVERFLOW SAT SET u63 0 -1 SET u63 0 9223372036854775807 INCRBY u63 0 1 INCRBY u63 0 -9223372036854775808
        BITFIELD k OVERFLOW wrap INCRBY u63 0 -9223372036854775808 INCRBY u1 0 3 INCRBY i1 0 1
        GET k
    """)


def test_bitfield_wide_unaligned_fields_at_both_ends(diff):
    """i64 and u63 fields across nine bytes, every overflow mode at both ends of int64 and of the
    field, negative increments and "#n" offsets of odd widths (storage/bits.py's C-integer path)."""
    diff.script("""
        BITFIELD k SET i64 3 -2 GET i64 3 GET u63 4 GET u63 3 GET i64 2 GET u8 0 GET u8 #8
        BITFIELD k SET u63 5 9223372036854775807 GET u63 5 GET i64 5 INCRBY u63 5 -9223372036854775807 GET u63 5
        BITFIELD k OVERFLOW SAT INCRBY i64 3 -9223372036854775808 INCRBY i64 3 -1 INCRBY i64 3 9223372036854775807
        BITFIELD k OVERFLOW SAT INCRBY i64 3 9223372036854775807 INCRBY i64 3 1 INCRBY i64 3 -9223372036854775808
        BITFIELD k OVERFLOW FAIL SET i64 3 -9223372036854775808 INCRBY i64 3 -1 INCRBY i64 3 1 GET i64 3
        BITFIELD k OVERFLOW FAIL SET i64 3 9223372036854775807 INCRBY i64 3 1 INCRBY i64 3 -1 GET i64 3
        BITFIELD k OVERFLOW WRAP SET i64 3 -9223372036854775808 INCRBY i64 3 -1 INCRBY i64 3 1 GET u63 4
        BITFIELD k OVERFLOW SAT SET u63 5 0 INCRBY u63 5 -1 INCRBY u63 5 -9223372036854775808 GET u63 5
        BITFIELD k OVERFLOW FAIL SET u63 5 0 INCRBY u63 5 -1 SET u63 5 -1 SET u63 5 -9223372036854775808 GET u63 5
        BITFIELD k OVERFLOW WRAP SET u63 5 0 INCRBY u63 5 -1 INCRBY u63 5 -9223372036854775807 GET u63 5
        BITFIELD k OVERFLOW SAT SET u63 5 -9223372036854775808 SET u63 5 -1 GET u63 5
        BITFIELD k OVERFLOW SAT SET i13 #3 5000 SET i13 #3 -5000 INCRBY i13 #3 -1 INCRBY i13 #4 -4097 GET i13 #4
        BITFIELD k OVERFLOW FAIL INCRBY u7 #5 -1 INCRBY u7 #5 127 INCRBY u7 #5 1 INCRBY i7 #6 -64 INCRBY i7 #6 -1
        BITFIELD k OVERFLOW WRAP INCRBY u7 #5 -3 INCRBY i7 #6 -3 INCRBY i33 #2 -9223372036854775808 GET i33 #2
        BITFIELD k OVERFLOW SAT SET i7 1 9223372036854775807 SET i7 1 -9223372036854775807 SET u7 1 9223372036854775807
        GET k
        BITFIELD_RO k GET i64 3 GET u63 5 GET i13 #3 GET u1 999
    """)


_FIELDS = st.sampled_from(["i64", "u63", "i63", "u1", "i1", "i7", "u13", "i33", "u32"])
_OFFSETS = st.one_of(st.integers(0, 40).map(str), st.integers(0, 6).map(lambda n: f"#{n}"))
_INT64S = st.one_of(st.integers(-(2**63), 2**63 - 1),
                    st.sampled_from([-(2**63), -(2**63) + 1, -1, 0, 1, 2**62, 2**63 - 2, 2**63 - 1]))


@HYPOTHESIS
@given(ops=st.lists(st.one_of(
    st.tuples(st.just("GET"), _FIELDS, _OFFSETS),
    st.tuples(st.sampled_from(["SET", "INCRBY"]), _FIELDS, _OFFSETS, _INT64S),
    st.tuples(st.just("OVERFLOW"), st.sampled_from(["WRAP", "SAT", "FAIL"]))), min_size=1, max_size=12))
def test_bitfield_int64_arithmetic_matches_redis(diff2, ops):
    """Any int64 operand, signed or not (the model test above stays clear of C's wrap-around)."""
    diff2("SET", "bf", "\x81\x7f\x00\xff\x80\x01")
    diff2("BITFIELD", "bf", *[str(a) for op in ops for a in op])
    diff2("GET", "bf")


def test_bitfield_fail_creates_key_silently(diff):
    diff("BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "u2", "100", "100")
    diff("GET", "f")
    diff("BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "u8", "200", "1000", "GET", "u8", "0")
    diff("STRLEN", "f")


def test_bitfield_errors(diff):
    diff("SET", "k", "abc")
    diff.script("""
        BITFIELD k GET
        BITFIELD k GET i8
        BITFIELD k SET i8 0
        BITFIELD k INCRBY i8 0
        BITFIELD k OVERFLOW
        BITFIELD k OVERFLOW FOO GET i8 0
        BITFIELD k FOO
        BITFIELD k GET i8 0 FOO
        BITFIELD k GET I8 0
        BITFIELD k GET U8 0
        BITFIELD k GET u64 0
        BITFIELD k GET i65 0
        BITFIELD k GET i0 0
        BITFIELD k GET u0 0
        BITFIELD k GET i 0
        BITFIELD k GET x8 0
        BITFIELD k GET "" 0
        BITFIELD k GET i+8 0
        BITFIELD k GET i08 0
        BITFIELD k GET i-8 0
        BITFIELD k GET i8 -1
        BITFIELD k GET i8 abc
        BITFIELD k GET i8 #
        BITFIELD k GET i8 #-1
        BITFIELD k GET i8 #abc
        BITFIELD k GET i8 "# 1"
        BITFIELD k GET i8 4294967296
        BITFIELD k GET i8 #536870912
        BITFIELD k GET i8 #2305843009213693953
        BITFIELD k SET i8 #2305843009213693953 1
        GET k
        BITFIELD k GET i8 #1152921504606846976
        BITFIELD k SET i8 0 abc
        BITFIELD k SET i8 0 1.5
        BITFIELD k INCRBY i8 0 9223372036854775808
        BITFIELD k SET i8 0 1 GET u64 0
        GET k
        BITFIELD
    """)
    diff("BITFIELD", "k", "GET", "i8\x00junk", "0")
    diff("BITFIELD", "k", "GET\x00", "u8", "0")
    diff("BITFIELD", "k", "OVERFLOW", "SAT\x00", "INCRBY", "u8", "0", "1000")


@pytest.mark.parametrize("word", ["get", "GET", "Get", "gEt", "gets", "ge", "g\x00t", "gET\x00x", "set", "SeT",
                                  "sett", "incrby", "IncrBy", "INCRBY\x00", "incrb", "incrbyy", "overflow",
                                  "OverFlow", "overflow\x00", "overflo", "Gdt", "\xc7et", "'et", "Get "])
def test_bitfield_subcommand_spellings(diff, word):
    # Subcommand words are matched as Redis's strcasecmp of a C string: either case, ended by a NUL.
    diff("SET", "k", "\x81\x42")
    diff("BITFIELD", "k", word, "u8", "0", "7")
    diff("BITFIELD", "k", word, "u8", "0")
    diff("BITFIELD", "k", word, "wrap", "GET", "u8", "0")
    diff("GET", "k")


@pytest.mark.parametrize("mode", ["wrap", "WRAP", "Sat", "fAIL", "fails", "sa", "Fail\x00x", "wr\x00p", "\xd7rap"])
def test_bitfield_overflow_spellings(diff, mode):
    diff("SET", "k", "\xff")
    diff("BITFIELD", "k", "OVERFLOW", mode, "INCRBY", "u8", "0", "1", "GET", "u8", "0")
    diff("GET", "k")


@pytest.mark.parametrize("offset", ["0", "7", "8", "00", "01", "+1", "-0", "1\x00", " 1", "1 ", "#0", "#1", "#01",
                                    "#+1", "123456789012345", "999999999999999", "1234567890123456",
                                    "4294967296", "9223372036854775807", "9223372036854775808",
                                    "\xd9\xa1"])
def test_bitfield_offset_spellings(diff, offset):
    # A plain offset is read as C digits, any other spelling by string2ll: both as Redis reads them.
    diff("SET", "k", "\x81\x42\x00\x18")
    diff("BITFIELD", "k", "GET", "u8", offset, "GET", "i4", offset)
    diff("BITFIELD", "k", "SET", "u4", offset, "9", "INCRBY", "i4", offset, "3")
    diff("SETBIT", "k", offset, "1")
    diff("GETBIT", "k", offset)
    diff("GET", "k")


def test_bitfield_edits_hll_bytes_in_place(diff):
    # A string BITFIELD or SETBIT made or met raw is edited in place; an HLL's bytes so edited read
    # back (PFCOUNT, PFADD) as Redis reads them.
    diff.script("""
        PFADD h a b c d
        PFADD h e
        PFCOUNT h
        BITFIELD h INCRBY u8 160 1
        PFCOUNT h
        PFADD h f
        PFCOUNT h
        GET h
        SETBIT h 200 1
        PFADD h g
        PFCOUNT h
        GET h
        OBJECT ENCODING h
        MEMORY USAGE h
    """)


def test_bitfield_ro(diff):
    diff("SET", "k", "\x81\x42")
    diff.script("""
        BITFIELD_RO k GET u8 0 GET i8 #1 GET i4 4
        BITFIELD_RO k
        BITFIELD_RO nokey GET u8 0
        BITFIELD_RO k GET u8 0 OVERFLOW SAT
        BITFIELD_RO k SET u8 0 1
        BITFIELD_RO k INCRBY u8 0 1
        BITFIELD_RO k GET u8 0 SET u8 0 1
        BITFIELD_RO k GET i8 -1
        BITFIELD_RO k FOO
        BITFIELD_RO
        GET k
    """)


# ---- property tests ------------------------------------------------------------------------------
_field_types = st.one_of(st.tuples(st.just("i"), st.integers(1, 64)), st.tuples(st.just("u"), st.integers(1, 63)))
_bitfield_op = st.one_of(
    st.tuples(st.just("GET"), _field_types, st.integers(0, 200)),
    st.tuples(st.sampled_from(["SET", "INCRBY"]), _field_types, st.integers(0, 200),
              st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-300, 300))),
    st.tuples(st.just("OVERFLOW"), st.sampled_from(["WRAP", "SAT", "FAIL"])),
)


@HYPOTHESIS
@given(start=st.binary(max_size=12), ops=st.lists(_bitfield_op, min_size=1, max_size=8))
def test_bitfield_matches_redis(diff2, start, ops):
    diff2("DEL", "bf")
    if start:
        diff2("SET", "bf", start)
    args = []
    for op in ops:
        if op[0] == "OVERFLOW":
            args += ["OVERFLOW", op[1]]
        else:
            (sign, bits), offset = op[1], op[2]
            args += [op[0], f"{sign}{bits}", offset if offset % 3 else f"#{offset // bits}", *op[3:]]
    diff2("BITFIELD", "bf", *args)
    diff2("GET", "bf")


def _model_bitfield(buf: bytearray, ops) -> list[int | None]:
    """A plain-arithmetic BITFIELD model (operands chosen inside the quirk-free domain)."""
    mode, out = "WRAP", []
    # Redis grows the string to the furthest field any write op names before running the ops, so
    # even writes that fail under OVERFLOW FAIL leave the key padded with zeros.
    grow = max(((op[2] + op[1][1] + 7) // 8 for op in ops if op[0] in ("SET", "INCRBY")), default=0)
    if len(buf) < grow:
        buf.extend(bytes(grow - len(buf)))
    for op in ops:
        if op[0] == "OVERFLOW":
            mode = op[1]
            continue
        (sign, bits), offset = op[1], op[2]
        need = (offset + bits + 7) // 8
        raw = int.from_bytes(bytes(buf[:need]).ljust(need, b"\0"), "big") >> (need * 8 - offset - bits)
        raw &= (1 << bits) - 1
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if sign == "i" else (0, (1 << bits) - 1)
        old = raw - (1 << bits) if sign == "i" and raw > hi else raw
        if op[0] == "GET":
            out.append(old)
            continue
        target = old + op[3] if op[0] == "INCRBY" else op[3]
        if lo <= target <= hi:
            new = target
        elif mode == "FAIL":
            out.append(None)
            continue
        elif mode == "SAT":
            new = hi if target > hi else lo
        else:
            new = (target - lo) % (1 << bits) + lo
        out.append(new if op[0] == "INCRBY" else old)
        if len(buf) < need:
            buf.extend(bytes(need - len(buf)))
        x = int.from_bytes(buf[:need], "big")
        shift = need * 8 - offset - bits
        x = (x & ~(((1 << bits) - 1) << shift)) | ((new & ((1 << bits) - 1)) << shift)
        buf[:need] = x.to_bytes(need, "big")
    return out


@HYPOTHESIS
@given(ops=st.lists(st.one_of(
    st.tuples(st.just("GET"), _field_types, st.integers(0, 100)),
    st.tuples(st.sampled_from(["SET", "INCRBY"]), _field_types, st.integers(0, 100), st.integers(-(2**40), 2**40)),
    st.tuples(st.just("OVERFLOW"), st.sampled_from(["WRAP", "SAT", "FAIL"]))), min_size=1, max_size=10))
def test_bitfield_against_model(raw, ops):
    raw.call("DEL", "bm")
    # SET values are kept inside int64 and below the unsigned quirk zone (negative SETs are fine
    # for the model only with signed fields), so plain arithmetic is the reference.
    ops = [op if not (op[0] == "SET" and op[1][0] == "u" and op[3] < 0) else (op[0], op[1], op[2], -op[3])
           for op in ops]
    args = []
    for op in ops:
        args += [op[0], op[1]] if op[0] == "OVERFLOW" else [op[0], f"{op[1][0]}{op[1][1]}", *op[2:]]
    buf = bytearray()
    expected = _model_bitfield(buf, ops)
    assert parse(raw.call("BITFIELD", "bm", *args)) == expected
    got = parse(raw.call("GET", "bm"))
    if any(op[0] in ("SET", "INCRBY") for op in ops):
        assert got == bytes(buf)


@HYPOTHESIS
@given(ops=st.lists(st.tuples(st.integers(0, 300), st.integers(0, 1)), max_size=30),
       probes=st.lists(st.tuples(st.integers(0, 1), st.integers(-50, 50), st.integers(-50, 50),
                                 st.sampled_from(["BYTE", "BIT"])), max_size=8))
def test_setbit_bitcount_bitpos_match_redis(diff2, ops, probes):
    diff2("DEL", "bm")
    for offset, bit in ops:
        diff2("SETBIT", "bm", offset, bit)
    diff2("GET", "bm")
    diff2("BITCOUNT", "bm")
    diff2("BITPOS", "bm", 0)
    diff2("BITPOS", "bm", 1)
    for bit, start, end, unit in probes:
        diff2("BITCOUNT", "bm", start, end, unit)
        diff2("BITPOS", "bm", bit, start)
        diff2("BITPOS", "bm", bit, start, end, unit)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(min_size=1, max_size=40), lo=st.integers(0, 400), width=st.integers(0, 400))
def test_bit_primitives_against_bit_strings(data, lo, width):
    bits = "".join(f"{b:08b}" for b in data)
    lo %= len(bits)
    hi = min(lo + width, len(bits) - 1)
    assert count_bits(data, lo, hi) == bits[lo:hi + 1].count("1")
    for bit in (0, 1):
        idx = bits.find(str(bit), lo, hi + 1)
        assert first_bit(data, bit, lo, hi) == idx
    n = min(63, len(bits) - lo)  # BITFIELD's fields: u1..u63, i1..i64 (a negative width)
    field = int(bits[lo:lo + n], 2)
    assert _fields(data, [(GET, n, lo, 0, WRAP), (GET, -n, lo, 0, WRAP), (GET, 7, len(bits) + 3, 0, WRAP)],
                   False) == (0, [field, field - (field >> (n - 1) << n), 0])
    buf = bytearray(data)
    assert _fields(buf, [(SET, n, lo, (1 << n) - 1, WRAP)], False)[0] == (field != (1 << n) - 1)
    assert "".join(f"{b:08b}" for b in buf) == bits[:lo] + "1" * n + bits[lo + n:]


def _fields(buf, fields, grown):
    """apply_fields on (op, width, offset, value, mode) tuples: its change count and the values
    field_reply writes (None for a null)."""
    ops = field_ops(len(fields))
    for i, (op, width, offset, value, mode) in enumerate(fields):
        put_field(ops, i, op, mode, width, offset, value)
    changes = apply_fields(buf, ops, len(fields), grown)
    items = field_reply(ops, len(fields), b"_\r\n").split(b"\r\n")
    assert items[0] == b"*%d" % len(fields) and items[-1] == b""
    return changes, [None if it == b"_" else int(it[1:]) for it in items[1:-1]]


def test_field_ops_held_is_not_handed_out_again():
    """field_ops's room (compiled, one buffer shared by the requests that fit it): while one caller
    holds it, the next gets room of its own, so two sets of operations never share words; once
    dropped, any caller's writes are its own again."""
    first = field_ops(2)
    put_field(first, 0, GET, WRAP, 8, 0, 0)
    put_field(first, 1, SET, WRAP, 8, 8, 7)
    second = field_ops(2)
    assert second is not first
    put_field(second, 0, SET, WRAP, 8, 0, 5)
    put_field(second, 1, SET, WRAP, 8, 8, 6)
    buf = bytearray(2)
    assert apply_fields(buf, first, 2, False) == 1 and buf == b"\x00\x07"
    assert field_reply(first, 2, b"_\r\n") == b"*2\r\n:0\r\n:0\r\n"
    del first, second
    big = field_ops(40)  # more operations than the shared room holds: room of its own
    for i in range(40):
        put_field(big, i, SET, WRAP, 8, 8 * i, i)
    buf = bytearray(40)
    assert apply_fields(buf, big, 40, False) == 39 and buf == bytes(range(40))


def test_bitfield_words_and_reply_at_int64_ends():
    """The operations' words hold any int64, and the reply writes int64's ends and nulls."""
    buf = bytearray(16)
    fields = [(SET, -64, 0, -(2**63), WRAP), (GET, -64, 0, 0, WRAP), (SET, -64, 64, 2**63 - 1, WRAP),
              (GET, -64, 64, 0, WRAP), (INCRBY, -64, 64, 1, FAIL), (INCRBY, 63, 1, -1, WRAP), (GET, 1, 0, 0, WRAP)]
    assert _fields(buf, fields, False) == (3, [0, -(2**63), 0, 2**63 - 1, None, 2**63 - 1, 1])
    assert buf == b"\xff" * 8 + b"\x7f" + b"\xff" * 7
    assert field_reply(field_ops(0), 0, b"$-1\r\n") == b"*0\r\n"


def test_bit_primitives_span_chunks():
    data = bytes(70000) + b"\x01" + bytes(70000) + b"\xff" * 3
    assert count_bits(data, 0, len(data) * 8 - 1) == 25
    assert first_bit(data, 1, 0, len(data) * 8 - 1) == 70000 * 8 + 7
    assert first_bit(data, 1, 70000 * 8 + 8, len(data) * 8 - 1) == 140001 * 8
    assert first_bit(b"\xff" * 140000 + b"\xfe", 0, 0, 140001 * 8 - 1) == 140001 * 8 - 1
    assert bitwise(b"and", [b"\xff\x0f", b"\x3c"], 2) == bytearray(b"\x3c\x00")
    assert bitwise(b"not", [b"\x0f"], 1) == bytearray(b"\xf0")


# ---- notifications and encodings (need other families) -------------------------------------------
def test_bitmap_keyspace_events(diff2):
    ours, theirs = _events(diff2, [
        ("SETBIT", "a", "0", "1"), ("SETBIT", "a", "0", "1"), ("SETBIT", "a", "100", "0"),
        ("SETBIT", "a", "100", "0"), ("SETBIT", "a", "0", "0"),
        ("BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "100"), ("BITFIELD", "f", "SET", "u2", "0", "0"),
        ("BITFIELD", "f", "SET", "u2", "0", "1"), ("BITFIELD", "f", "GET", "u2", "0"),
        ("BITFIELD", "f", "SET", "u8", "16", "0"),
        ("BITOP", "AND", "d", "nokey"), ("SET", "d", "x"), ("BITOP", "AND", "d", "nokey"),
        ("BITOP", "OR", "d", "a", "f"), ("GETBIT", "a", "0"), ("BITCOUNT", "nokey"),
    ])
    assert ours == theirs


def test_bitmap_encodings(diff):
    diff.script("""
        SET n 123
        SETBIT n 0 0
        OBJECT ENCODING n
        SETBIT new 0 1
        OBJECT ENCODING new
        SET a 1
        BITOP OR d a
        OBJECT ENCODING d
        SET m 5
        BITFIELD m GET u8 0
        OBJECT ENCODING m
        BITFIELD m SET u8 0 53
        OBJECT ENCODING m
    """)


def test_watch_is_invalidated_only_by_real_changes(raxdb, oracle):
    """Writes that change nothing (same bit, same field value, empty SETRANGE) leave WATCH alone."""
    from tests.support.diff import RawConnection

    steps = [
        ("SET", "k", "\x80"), ("SETBIT", "k", "0", "1"), ("SETBIT", "k", "1", "0"), ("SETBIT", "k", "1", "1"),
        ("SETBIT", "k", "20", "0"), ("BITFIELD", "k", "SET", "u8", "0", "192"),
        ("BITFIELD", "k", "SET", "u4", "0", "1"), ("BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "9"),
        ("SETRANGE", "k", "0", ""), ("APPEND", "k", ""), ("BITOP", "AND", "k", "nokey"),
        ("BITOP", "AND", "k", "nokey"), ("GETEX", "k", "PERSIST"), ("GETDEL", "k"), ("GETDEL", "k"),
        ("INCRBYFLOAT", "k", "0"),
    ]
    results = []
    for port in (raxdb.port, oracle.port):
        watcher, writer = RawConnection(port), RawConnection(port)
        try:
            watcher.call("FLUSHALL")
            out = []
            for step in steps:
                watcher.call("WATCH", "k")
                out.append(writer.call(*step))
                watcher.call("MULTI")
                watcher.call("PING")
                out.append(watcher.call("EXEC"))  # nil when the write invalidated the WATCH
            results.append(out)
        finally:
            watcher.close()
            writer.close()
    assert results[0] == results[1]
