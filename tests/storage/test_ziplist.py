"""storage.ziplist: the legacy ziplist / zipmap decoders against a reference encoder written here from
ziplist.c / zipmap.c (round trips, fixed byte literals) and against malformed blobs, which must all
raise ValueError and nothing else."""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raxdb.storage.ziplist import ziplist_entries, zipmap_pairs

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


# ---- reference encoders --------------------------------------------------------------------------
def try_int(v: bytes) -> int | None:
    """zipTryEncoding's test: 1..31 bytes that string2ll accepts (canonical decimal int64)."""
    if not 0 < len(v) < 32:
        return None
    try:
        i = int(v)
    except ValueError:
        return None
    return i if b"%d" % i == v and INT64_MIN <= i <= INT64_MAX else None


def zl_prevlen(n: int) -> bytes:
    return bytes([n]) if n < 254 else b"\xfe" + struct.pack("<I", n)


def zl_body(v: bytes) -> bytes:
    """Encoding + data of one entry, the smallest encoding as ziplist.c picks it."""
    i = try_int(v)
    if i is not None:
        if 0 <= i <= 12:
            return bytes([0xF1 + i])
        if -(2**7) <= i < 2**7:
            return b"\xfe" + struct.pack("<b", i)
        if -(2**15) <= i < 2**15:
            return b"\xc0" + struct.pack("<h", i)
        if -(2**23) <= i < 2**23:
            return b"\xf0" + struct.pack("<i", i)[:3]
        if -(2**31) <= i < 2**31:
            return b"\xd0" + struct.pack("<i", i)
        return b"\xe0" + struct.pack("<q", i)
    n = len(v)
    if n <= 0x3F:
        return bytes([n]) + v
    if n <= 0x3FFF:
        return bytes([0x40 | n >> 8, n & 0xFF]) + v
    return b"\x80" + struct.pack(">I", n) + v


def zl_encode(values: list[bytes], zllen: int | None = None) -> bytes:
    entries: list[bytes] = []
    prev = 0
    for v in values:
        e = zl_prevlen(prev) + zl_body(v)
        entries.append(e)
        prev = len(e)
    return zl_raw(entries, zllen)


def zl_raw(entries: list[bytes], zllen: int | None = None, tail: int | None = None) -> bytes:
    """A ziplist around already-encoded entries, with a correct header unless told otherwise."""
    body = b"".join(entries)
    if tail is None:
        tail = 10 + len(body) - len(entries[-1]) if entries else 10
    if zllen is None:
        zllen = min(len(entries), 0xFFFF)
    return struct.pack("<IIH", 10 + len(body) + 1, tail, zllen) + body + b"\xff"


def zm_len(n: int) -> bytes:
    return bytes([n]) if n < 254 else b"\xfe" + struct.pack("<I", n)


def zm_encode(pairs: list[tuple[bytes, bytes]], free: list[int] | None = None,
              zmlen: int | None = None) -> bytes:
    out = bytearray([min(len(pairs), 254) if zmlen is None else zmlen])
    for k, (f, v) in enumerate(pairs):
        fr = free[k] if free else 0
        out += zm_len(len(f)) + f + zm_len(len(v)) + bytes([fr]) + v + b"\xaa" * fr
    return bytes(out + b"\xff")


def as_text(v: bytes | int) -> bytes:
    return b"%d" % v if isinstance(v, int) else v


# ---- fixed literals ------------------------------------------------------------------------------
def test_redis6_list_literal():
    # A Redis 6 list ["a", "1", "hello"] (one quicklist node) holds this ziplist:
    #   17000000  zlbytes 23 = 10 header + 3 + 2 + 7 entries + 1 end
    #   0f000000  zltail  15 = 10 + 3 + 2 (offset of "hello")
    #   0300      zllen   3
    #   00 01 61              prevlen 0, 00000001 (1-byte string), "a"
    #   03 f2                 prevlen 3, 0xF1 + 1: immediate integer 1
    #   02 05 68656c6c6f      prevlen 2, 00000101 (5-byte string), "hello"
    #   ff
    canonical = bytes.fromhex("17000000" "0f000000" "0300" "000161" "03f2" "020568656c6c6f" "ff")
    assert zl_encode([b"a", b"1", b"hello"]) == canonical
    assert ziplist_entries(canonical) == [b"a", b"1", b"hello"]


def test_empty_ziplist():
    assert zl_encode([]) == bytes.fromhex("0b000000" "0a000000" "0000" "ff")
    assert ziplist_entries(zl_encode([])) == []


@pytest.mark.parametrize("i, body", [
    (0, "f1"), (12, "fd"), (13, "fe0d"), (-1, "feff"), (127, "fe7f"), (-128, "fe80"),
    (128, "c08000"), (-129, "c07fff"), (32767, "c0ff7f"), (-32768, "c00080"),
    (32768, "f0008000"), (2**23 - 1, "f0ffff7f"), (-(2**23), "f0000080"),
    (2**23, "d000008000"), (2**31 - 1, "d0ffffff7f"), (-(2**31), "d000000080"),
    (2**31, "e0" "0000008000000000"), (INT64_MAX, "e0" "ffffffffffffff7f"),
    (INT64_MIN, "e0" "0000000000000080"),
])
def test_integer_encodings(i, body):
    v = b"%d" % i
    assert zl_body(v) == bytes.fromhex(body)
    assert ziplist_entries(zl_encode([v, b"x", v])) == [v, b"x", v]


@pytest.mark.parametrize("s", [b"01", b"+1", b"-0", b" 1", b"1 ", b"", b"-", b"1.5",
                               b"9223372036854775808", b"-9223372036854775809"])
def test_non_canonical_numbers_stay_strings(s):
    assert zl_body(s)[0] < 0xC0
    assert ziplist_entries(zl_encode([s])) == [s]


@pytest.mark.parametrize("n, header", [(0, "00"), (63, "3f"), (64, "4040"), (16383, "7fff"),
                                       (16384, "8000004000")])
def test_string_encodings(n, header):
    s = b"y" * n
    assert zl_body(s) == bytes.fromhex(header) + s
    assert ziplist_entries(zl_encode([s, b"z", s])) == [s, b"z", s]


def test_large_prevlen():
    # Entry 1 is 1 + 2 + 252 = 255 bytes raw, so entry 2 carries the 5-byte prevlen form.
    values = [b"a" * 252, b"b", b"c" * 300, b"d"]
    blob = zl_encode(values)
    assert blob[10 + 255:10 + 255 + 5] == b"\xfe" + struct.pack("<I", 255)
    assert ziplist_entries(blob) == values


def test_forms_redis_reads_but_never_writes():
    # A 5-byte prevlen holding a small length (Redis keeps it to avoid cascading updates).
    e1 = b"\x00\x01a"
    e2 = b"\xfe" + struct.pack("<I", 3) + b"\x01b"
    e3 = b"\x07\x02cd"
    assert ziplist_entries(zl_raw([e1, e2, e3])) == [b"a", b"b", b"cd"]
    # Wider string encodings than needed, and 10xxxxxx with low bits set (masked off by ziplist.c).
    e1 = b"\x00\x40\x01a"
    e2 = b"\x04\x80\x00\x00\x00\x01b"
    e3 = b"\x07\xbf\x00\x00\x00\x01c"
    assert ziplist_entries(zl_raw([e1, e2, e3])) == [b"a", b"b", b"c"]
    # An integer stored in a wider encoding than needed, and a string that looks like an integer.
    assert ziplist_entries(zl_raw([b"\x00\xe0" + struct.pack("<q", 5), b"\x0a\x0205"])) == [b"5", b"05"]


def test_saturated_zllen():
    values = [b"%d" % i for i in range(5)]
    assert ziplist_entries(zl_encode(values, zllen=0xFFFF)) == values
    many = [b"v"] * 70000
    blob = zl_encode(many)
    assert blob[8:10] == b"\xff\xff"
    assert ziplist_entries(blob) == many


def test_zipmap_literal():
    # A Redis 2.4 hash {"a": "1"}: zmlen 1, field len 1, "a", value len 1, free 0, "1", end.
    canonical = bytes.fromhex("01" "0161" "010031" "ff")
    assert zm_encode([(b"a", b"1")]) == canonical
    assert zipmap_pairs(canonical) == [(b"a", b"1")]


def test_zipmap_big_lengths_free_and_duplicates():
    pairs = [(b"f" * 254, b"v" * 300), (b"", b""), (b"k", b"x" * 253), (b"k", b"again")]
    blob = zm_encode(pairs, free=[0, 3, 255, 1])
    assert zipmap_pairs(blob) == pairs
    # 5-byte length form holding a small value.
    small_big = bytes.fromhex("01" "fe01000000" "61" "fe01000000" "00" "62" "ff")
    assert zipmap_pairs(small_big) == [(b"a", b"b")]


def test_zipmap_saturated_zmlen():
    pairs = [(b"%d" % i, b"v") for i in range(300)]
    blob = zm_encode(pairs)
    assert blob[0] == 254
    assert zipmap_pairs(blob) == pairs
    assert zipmap_pairs(zm_encode(pairs[:3], zmlen=254)) == pairs[:3]


# ---- round trips ---------------------------------------------------------------------------------
_BOUNDARY_INTS = [b for i in (0, 12, 2**7, 2**15, 2**23, 2**31, 2**63) for b in (i - 1, i, -i, -i - 1)]
_values = st.one_of(
    st.binary(max_size=80),
    st.binary(min_size=250, max_size=320),
    st.sampled_from([63, 64, 253, 254, 255, 16383, 16384]).map(lambda n: b"s" * n),
    st.integers(INT64_MIN, INT64_MAX),
    st.sampled_from(_BOUNDARY_INTS).filter(lambda i: INT64_MIN <= i <= INT64_MAX),
    st.sampled_from([b"01", b"+1", b"-0", b"1 ", b"9223372036854775808", b"-"]),
).map(as_text)


@settings(max_examples=300, derandomize=True)
@given(st.lists(_values, max_size=40))
def test_ziplist_round_trip(values):
    blob = zl_encode(values)
    assert ziplist_entries(blob) == values


@settings(max_examples=200, derandomize=True)
@given(st.lists(st.tuples(_values, _values, st.integers(0, 255)), min_size=1, max_size=30))
def test_zipmap_round_trip(triples):
    pairs = [(f, v) for f, v, _ in triples]
    blob = zm_encode(pairs, free=[fr for _, _, fr in triples])
    assert zipmap_pairs(blob) == pairs


# ---- malformed ziplists --------------------------------------------------------------------------
_SAMPLE = zl_encode([b"a", b"1", b"hello", b"-300", b"x" * 70, b"y" * 260, b"2147483648", b"zz"])


def _with_header(body: bytes, zlbytes: int | None = None) -> bytes:
    """`body` (header included) with zlbytes set to its length (or `zlbytes`)."""
    return struct.pack("<I", len(body) if zlbytes is None else zlbytes) + body[4:]


def test_ziplist_truncations():
    for k in range(len(_SAMPLE)):
        cut = _SAMPLE[:k]
        with pytest.raises(ValueError):
            ziplist_entries(cut)
        if k >= 4:  # the same prefix with a consistent zlbytes and a terminator put back
            with pytest.raises(ValueError):
                ziplist_entries(_with_header(cut[:-1] + b"\xff") if k > 10 else _with_header(cut))


@pytest.mark.parametrize("delta", [-1, 1, 1000, -len(_SAMPLE)])
def test_ziplist_wrong_zlbytes(delta):
    with pytest.raises(ValueError):
        ziplist_entries(_with_header(_SAMPLE, len(_SAMPLE) + delta))


def test_ziplist_terminator():
    with pytest.raises(ValueError):  # last byte not 0xFF
        ziplist_entries(_SAMPLE[:-1] + b"\x00")
    with pytest.raises(ValueError):  # bytes after an early terminator
        ziplist_entries(_with_header(_SAMPLE + b"\x00\xff"))
    with pytest.raises(ValueError):
        ziplist_entries(_with_header(zl_encode([]) + b"\xff"))


def test_ziplist_wrong_prevlen():
    e1, e2, e3 = b"\x00\x01a", b"\x03\x01b", b"\x03\x01c"
    assert ziplist_entries(zl_raw([e1, e2, e3])) == [b"a", b"b", b"c"]
    for bad in ([b"\x01\x01a", e2, e3], [e1, b"\x02\x01b", e3], [e1, e2, b"\x04\x01c"],
                [e1, b"\xfe" + struct.pack("<I", 4) + b"\x01b", e3]):
        with pytest.raises(ValueError):
            ziplist_entries(zl_raw(bad))
    # Every prevlen of the sample bumped in turn.
    offsets, p, prev = [], 10, 0
    for v in [b"a", b"1", b"hello", b"-300", b"x" * 70, b"y" * 260, b"2147483648", b"zz"]:
        offsets.append(p)
        n = len(zl_prevlen(prev) + zl_body(v))
        p, prev = p + n, n
    for off in offsets:
        blob = bytearray(_SAMPLE)
        blob[off if blob[off] != 0xFE else off + 1] += 1
        with pytest.raises(ValueError):
            ziplist_entries(bytes(blob))


@pytest.mark.parametrize("enc", [*range(0xC1, 0xD0), *range(0xD1, 0xE0), *range(0xE1, 0xF0)])
def test_ziplist_invalid_encoding(enc):
    with pytest.raises(ValueError, match="invalid encoding"):
        ziplist_entries(zl_raw([b"\x00\x01a", bytes([3, enc]) + b"\x00" * 8]))


def test_ziplist_wrong_tail_and_len():
    entries = [b"\x00\x01a", b"\x03\x01b"]
    assert ziplist_entries(zl_raw(entries, tail=13)) == [b"a", b"b"]
    for tail in (10, 12, 14, 15, 2**32 - 1):
        with pytest.raises(ValueError):
            ziplist_entries(zl_raw(entries, tail=tail))
    with pytest.raises(ValueError):
        ziplist_entries(zl_raw([], tail=0))
    for zllen in (0, 1, 3, 0xFFFE):
        with pytest.raises(ValueError):
            ziplist_entries(zl_raw(entries, zllen=zllen))
    assert ziplist_entries(zl_raw(entries, zllen=0xFFFF)) == [b"a", b"b"]


def test_ziplist_lengths_past_the_end():
    for entry in (b"\x00\x80\xff\xff\xff\xff", b"\x00\x7f\xff", b"\x00\x05abc", b"\x00\xe0\x01",
                  b"\x00\xc0", b"\xfe\x00\x00", b"\x00\x40"):
        with pytest.raises(ValueError):
            ziplist_entries(zl_raw([entry]))


def _only_value_errors(decode, sample: bytes, seed: int, garbage_max: int, fix_header) -> None:
    """Mutated samples and random garbage (its header and terminator often made plausible by
    `fix_header`) decode or raise ValueError, nothing else."""
    rng = random.Random(seed)
    for _ in range(3000):
        blob = bytearray(sample)
        for _ in range(rng.randint(1, 4)):
            blob[rng.randrange(len(blob))] = rng.randrange(256)
        try:
            decode(bytes(blob))
        except ValueError:
            pass
    for _ in range(2000):
        blob = bytearray(rng.randbytes(rng.randint(0, garbage_max)))
        fix_header(rng, blob)
        try:
            decode(bytes(blob))
        except ValueError:
            pass


def _plausible_ziplist(rng: random.Random, blob: bytearray) -> None:
    if len(blob) >= 4 and rng.random() < 0.8:
        blob[:4] = struct.pack("<I", len(blob))
    if blob and rng.random() < 0.8:
        blob[-1] = 0xFF


def _plausible_zipmap(rng: random.Random, blob: bytearray) -> None:
    if blob and rng.random() < 0.8:
        blob[-1] = 0xFF


def test_ziplist_garbage_raises_only_value_error():
    _only_value_errors(ziplist_entries, _SAMPLE, 1234, 40, _plausible_ziplist)


# ---- malformed zipmaps ---------------------------------------------------------------------------
_ZM_SAMPLE = zm_encode([(b"a", b"1"), (b"f" * 300, b"v"), (b"k", b"w" * 260)], free=[2, 0, 1])


def test_zipmap_truncations():
    for k in range(len(_ZM_SAMPLE)):
        cut = _ZM_SAMPLE[:k]
        with pytest.raises(ValueError):
            zipmap_pairs(cut)
        if k >= 1:
            with pytest.raises(ValueError):
                zipmap_pairs(cut[:-1] + b"\xff")


def test_zipmap_malformed():
    for blob in (
        b"", b"\xff", b"\x00\xff",                 # too short / empty
        bytes.fromhex("010161ff"),                  # field without its value
        bytes.fromhex("010161fe01000000ff"),        # value length cut short
        bytes.fromhex("01016101ff"),                # free byte missing
        bytes.fromhex("0101610100ff"),              # value missing
        bytes.fromhex("0101610103" "62ff"),         # free space runs past the end
        bytes.fromhex("010161ff0000000000ff"),      # 0xFF (the end marker) read as a length
        bytes.fromhex("02016101" "0062ff"),         # zmlen 2, one pair
        bytes.fromhex("00016101" "0062ff"),         # zmlen 0, one pair
        bytes.fromhex("01016101" "0062ff00"),       # no terminator at the end
        bytes.fromhex("01016101" "0062ff00ff"),     # bytes after an early terminator
        bytes.fromhex("01fe" "ffffffff" "61ff"),    # huge field length
    ):
        with pytest.raises(ValueError):
            zipmap_pairs(blob)


def test_zipmap_garbage_raises_only_value_error():
    _only_value_errors(zipmap_pairs, _ZM_SAMPLE, 4321, 30, _plausible_zipmap)
