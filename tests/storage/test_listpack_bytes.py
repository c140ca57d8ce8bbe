"""The listpack functions over immutable bytes (storage/listpack.py's second half): each checked
against the `Listpack` class, the generic codec whose bytes are tested against redis-server's in
test_listpack.py.  Run compiled, these are the typed functions of listpack.pxd."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raxdb.storage import listpack as L
from raxdb.storage.listpack import NUMELE_UNKNOWN, Listpack, encode_entry, entry_size

pytestmark = pytest.mark.pure

# Every encoding: 7-bit, 13-bit, 16/24/32/64-bit integers; 6-bit, 12-bit and 32-bit strings, with
# back-lengths of 1 and 2 bytes; strings that look like numbers but are not canonical.
values = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(lambda i: b"%d" % i),
    st.integers(-5000, 5000).map(lambda i: b"%d" % i),
    st.binary(max_size=70),
    st.sampled_from([b"", b"0", b"-0", b"01", b"+1", b" 1", b"x" * 63, b"x" * 64, b"y" * 125, b"y" * 126,
                     b"z" * 4095, b"z" * 4096, b"\x80", b"\xff" * 3]),
)


def as_bytes(v: bytes | int) -> bytes:
    return b"%d" % v if isinstance(v, int) else v


@settings(max_examples=300)
@given(st.lists(values, max_size=30))
def test_reading_matches_listpack(items):
    lp = Listpack.from_values(items)
    buf = lp.bytes()
    assert L.elements(buf) == items  # canonical strings come back as they went in
    assert L.count_of(buf) == len(items)
    offsets = []
    p = lp.first()
    while p is not None:
        offsets.append(p)
        assert L.entry_end(buf, p) == p + entry_size(buf, p)
        assert L.value_at(buf, p) == as_bytes(lp.get(p))
        p = lp.next(p)
    assert offsets == [lp.seek(i) for i in range(len(items))]
    # LRANGE's reply written from the entries: each as a bulk, integers in decimal
    assert L.bulks(buf, 6, len(items)) == b"".join([b"$%d\r\n%s\r\n" % (len(v), v) for v in items])


@settings(max_examples=300)
@given(st.lists(values, max_size=30), st.lists(values, min_size=1, max_size=8))
def test_find_key_is_lpfind_with_skip_one(items, probes):
    """find_key compares encoded bytes; the class's find decodes, as lpFind does: same answers,
    values never match, and a key appearing inside another element's bytes is not found there."""
    lp = Listpack.from_values(items)
    buf = lp.bytes()
    for key in probes + items[:4] + [b"\x81" + k + b"\x02" for k in items[:2]]:
        p = lp.find(key, skip=1)
        assert L.find_key(buf, key) == (-1 if p is None else p), key
        if p is None:
            assert L.pair_value(buf, key) is None
        elif lp.next(p) is not None:
            assert L.pair_value(buf, key) == as_bytes(lp.get(lp.next(p)))


def test_find_key_skips_lookalikes_inside_other_entries():
    inner = encode_entry(b"f")  # b"\x81f\x02"
    buf = Listpack.from_values([b"a" + inner, inner + b"b", b"v" + inner, b"x", b"f", b"1"]).bytes()
    assert buf.count(inner) == 4
    assert L.find_key(buf, b"f") == Listpack(bytearray(buf)).seek(4)
    buf = Listpack.from_values([b"g", b"f", b"h", b"1"]).bytes()  # "f" only as a value
    assert L.find_key(buf, b"f") == -1


edits = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 3), st.lists(values, max_size=3)), max_size=20)


@settings(max_examples=300)
@given(st.lists(values, max_size=20), edits)
def test_splice_matches_listpack_edits(items, program):
    lp = Listpack.from_values(items)
    buf = lp.bytes()
    model = list(items)
    for index, drop, new in program:
        index = min(index, len(model))
        drop = min(drop, len(model) - index)
        p = lp.seek(index) if index < len(model) else len(lp.buf) - 1
        q = p
        for _ in range(drop):
            q = L.entry_end(buf, q)
        buf = L.splice(buf, p, q, b"".join(map(encode_entry, new)), len(new) - drop)
        model[index:index + drop] = new
        lp = Listpack.from_values(model)
        assert buf == lp.bytes()
        Listpack.from_bytes(buf)  # well formed


@settings(max_examples=300)
@given(st.lists(values, max_size=20), st.lists(st.tuples(st.integers(0, 40), values, values), max_size=10))
def test_replace_value_and_append_pair_match_listpack_edits(items, program):
    """replace_value is lpReplace and append_pair two lpAppend: the same bytes as the class's
    operations, whatever the old and new encodings."""
    lp = Listpack.from_values(items)
    buf = lp.bytes()
    for index, a, b in program:
        if lp.buf[6] != 0xFF and index % 2:
            p = lp.seek(index % len(lp))
            buf = L.replace_value(buf, p, a)
            lp.replace(p, a)
        else:
            buf = L.append_pair(buf, a, b)
            lp.append(a)
            lp.append(b)
        assert buf == lp.bytes()


@settings(max_examples=300)
@given(st.lists(values, max_size=20), st.dictionaries(st.integers(0, 40), values, max_size=6),
       st.lists(values, max_size=6))
def test_replace_values_is_several_replaces_and_appends(items, changes, appended):
    lp = Listpack.from_values(items)
    by_offset = {lp.seek(i % len(items)): v for i, v in changes.items()} if items else {}
    buf = L.replace_values(lp.bytes(), by_offset, appended)
    for p in sorted(by_offset, reverse=True):  # from the tail, so that offsets before stay put
        lp.replace(p, by_offset[p])
    for v in appended:
        lp.append(v)
    assert buf == lp.bytes()


def test_append_pair_near_the_saturated_count():
    for start in (NUMELE_UNKNOWN - 4, NUMELE_UNKNOWN - 3, NUMELE_UNKNOWN - 2):
        lp = Listpack.from_values([b"f"] * start)
        buf = lp.bytes()
        for _ in range(3):
            buf = L.append_pair(buf, b"k", b"12")
            lp.append(b"k")
            lp.append(b"12")
            assert buf == lp.bytes()


def test_build_and_splice_saturated_count():
    half = (NUMELE_UNKNOWN + 1) // 2
    chunk = encode_entry(b"f") * (NUMELE_UNKNOWN + 1)
    buf = L.build(chunk, NUMELE_UNKNOWN + 1)
    assert buf[4:6] == b"\xff\xff" and buf == Listpack.from_values([b"f"] * (NUMELE_UNKNOWN + 1)).bytes()
    assert L.count_of(buf) == NUMELE_UNKNOWN + 1 == 2 * half
    # appending keeps it unknown; deleting two then counts again (65534 fits) and writes it back,
    # as the lpLength after every hash write does in Redis
    end = len(buf) - 1
    grown = L.splice(buf, end, end, encode_entry(b"g") * 2, 2)
    assert grown[4:6] == b"\xff\xff" and L.count_of(grown) == NUMELE_UNKNOWN + 3
    shrunk = L.splice(buf, 6, 6 + 6, b"", -2)
    assert shrunk[4:6] == (NUMELE_UNKNOWN - 1).to_bytes(2, "little")
    # a count reaching 65535 exactly is "unknown" too (lpInsert's write of 65535)
    below = L.build(encode_entry(b"f") * (NUMELE_UNKNOWN - 1), NUMELE_UNKNOWN - 1)
    end = len(below) - 1
    assert L.splice(below, end, end, encode_entry(b"f"), 1)[4:6] == b"\xff\xff"


def test_replace_values_counts_a_stale_unknown_count_again():
    # a header left "unknown" over fewer entries (Redis's lpDelete does not count again; an RDB
    # may carry one): a hash write counts them and writes the count back, as lpLength does
    stale = L.build(encode_entry(b"f") + encode_entry(b"v") + encode_entry(b"g") + encode_entry(b"7"),
                    NUMELE_UNKNOWN)
    assert stale[4:6] == b"\xff\xff"
    out = L.replace_values(stale, {L.HEADER_SIZE + 3: b"w"}, [b"h", b"8"])
    assert out[4:6] == (6).to_bytes(2, "little")
    assert out == Listpack.from_values([b"f", b"w", b"g", b"7", b"h", b"8"]).bytes()
    # still past the limit: it stays "unknown"
    full = L.build(encode_entry(b"f") * NUMELE_UNKNOWN, NUMELE_UNKNOWN)
    assert L.replace_values(full, {}, [b"x", b"y"])[4:6] == b"\xff\xff"



@settings(max_examples=400, deadline=None)
@given(st.one_of(values, st.text("0123456789-", max_size=22).map(str.encode), st.integers(-(2**65), 2**65)
                 .map(lambda i: b"%d" % i)))
def test_entry_encoding_is_lpstringtoint64s(v):
    """string_to_int is string2ll (a canonical decimal within int64, else None), and encode_entry
    writes the entry that holds it: the smallest integer encoding for such a decimal, the string
    otherwise, one entry that reads back as `v`.  Compiled, the digits are read in C and the entry
    written into a new bytes object: bytes, a bytearray and a memoryview give the same."""
    try:
        n = int(v)
        canonical = b"%d" % n == v and -(2**63) <= n < 2**63
    except ValueError:
        canonical = False
    for arg in (v, bytearray(v), memoryview(v)):
        assert L.string_to_int(arg) == (n if canonical else None)
    entry = encode_entry(v)
    assert encode_entry(bytearray(v)) == entry
    assert L.checked_values(L.build(entry, 1)) == [v]
    assert entry_size(entry, 0) == len(entry)
    if canonical:
        assert entry == L.encode_int_entry(n)
        assert entry[0] < 0x80 or entry[0] >= 0xC0  # an integer encoding
        assert len(entry) == min(k for k, (lo, hi) in ((2, (0, 127)), (3, (-4096, 4095)), (4, (-(2**15), 2**15 - 1)),
                                                        (5, (-(2**23), 2**23 - 1)), (6, (-(2**31), 2**31 - 1)),
                                                        (10, (-(2**63), 2**63 - 1))) if lo <= n <= hi)


@settings(max_examples=300)
@given(values)
def test_encoded_size_is_the_entrys_length(v):
    # the in-place writers (replace_values, append_pair, a stream entry) size their buffer with it
    assert L.encoded_size(v) == len(encode_entry(v))


def _by_long_way(buf: bytes) -> int:
    """What a loaded hash listpack's long check says (rdb._read_hash before canonical_pairs):
    its element count when it is well formed, even, with no field twice, every element in its
    canonical encoding (Hash.from_listpack keeps the bytes) and its count in the header; else -1."""
    try:
        items = L.checked_values(buf)
    except (ValueError, IndexError):
        return -1
    fields = items[0::2]
    if (len(items) % 2 or len(set(fields)) != len(fields) or L.num_elements(buf) != len(items)
            or sum(map(L.encoded_size, items)) + len(L.EMPTY) != len(buf)):
        return -1
    return len(items)


def _entry_as(v: bytes, kind: str) -> bytes:
    """v's entry in an encoding other than its canonical one, where one exists (else None)."""
    n = len(v)
    if kind == "str12" and n < 4096:
        body = bytes((0xE0 | n >> 8, n & 0xFF)) + v
    elif kind == "str32":
        body = b"\xf0" + n.to_bytes(4, "little") + v
    elif kind.startswith("int"):
        x = L.string_to_int(v)
        if x is None:
            return None
        code, width = {"int16": (0xF1, 2), "int24": (0xF2, 3), "int32": (0xF3, 4), "int64": (0xF4, 8)}[kind]
        if not -(1 << (8 * width - 1)) <= x < 1 << (8 * width - 1):
            return None
        body = bytes((code,)) + x.to_bytes(width, "little", signed=True)
    else:
        return None
    return body + L.backlen_bytes(len(body))


def _listpack_of_entries(entries: list[bytes]) -> bytes:
    body = b"".join(entries)
    return (len(body) + 7).to_bytes(4, "little") + len(entries).to_bytes(2, "little") + body + b"\xff"


@settings(max_examples=300)
@given(st.lists(values, max_size=24))
def test_canonical_pairs_counts_a_hash_listpack(items):
    """A listpack as lpAppend builds it: its count when it holds pairs with distinct fields."""
    buf = Listpack.from_values(items).bytes()
    fields = items[0::2]
    want = len(items) if len(items) % 2 == 0 and len(set(fields)) == len(fields) else -1
    assert L.canonical_pairs(buf) == want == _by_long_way(buf)


@settings(max_examples=300)
@given(st.lists(values, min_size=1, max_size=12), st.data())
def test_canonical_pairs_refuses_an_element_not_in_its_encoding(items, data):
    """One element written in a longer encoding than lpAppend's: refused (the long way re-encodes
    such a listpack), whatever the rest."""
    entries = [encode_entry(v) for v in items]
    i = data.draw(st.integers(0, len(items) - 1))
    kind = data.draw(st.sampled_from(["str12", "str32", "int16", "int24", "int32", "int64"]))
    other = _entry_as(items[i], kind)
    if other is None or other == entries[i]:
        return
    entries[i] = other
    buf = _listpack_of_entries(entries)
    assert L.canonical_pairs(buf) == -1 == _by_long_way(buf)


@settings(max_examples=500)
@given(st.lists(values, max_size=10).filter(lambda v: len(v) % 2 == 0),
       st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=3))
def test_canonical_pairs_never_accepts_what_the_long_way_refuses(items, flips):
    """Corrupted bytes: whatever canonical_pairs accepts, the long check accepts with the same
    count (so a loaded hash is kept as the long way would keep it), and never an exception."""
    buf = bytearray(Listpack.from_values(items).bytes())
    for pos, val in flips:
        buf[pos % len(buf)] = val
    buf = bytes(buf)
    got = L.canonical_pairs(buf)
    assert got == -1 or got == _by_long_way(buf)


@pytest.mark.parametrize("n", [8, 9, 10, 17, 300])
def test_canonical_pairs_finds_a_field_twice_past_the_first_eight(n):
    """The first 8 fields are compared in place, later ones looked up in a set of those before
    them (a scan per field was quadratic): a repeat is found wherever its two places are."""
    fields = [b"f%d" % i if i % 3 else i * 1000 for i in range(n)]  # strings and ints of 1-3 bytes
    items = [v for i, f in enumerate(fields) for v in (f, b"v%d" % i)]
    assert L.canonical_pairs(Listpack.from_values(items).bytes()) == 2 * n
    for first, second in {(0, 1), (0, n - 1), (6, 7), (7, n - 1), (n - 2, n - 1), (3, n // 2 + 4)}:
        if first < second < n:
            twice = list(items)
            twice[2 * second] = items[2 * first]
            buf = Listpack.from_values(twice).bytes()
            assert L.canonical_pairs(buf) == -1 == _by_long_way(buf), (first, second)


def test_canonical_pairs_edges():
    pairs = Listpack.from_values([b"f", b"1", b"g", b"2"]).bytes()
    assert L.canonical_pairs(pairs) == 4
    assert L.canonical_pairs(Listpack.from_values([b"f", b"1", b"f", b"2"]).bytes()) == -1  # a field twice
    assert L.canonical_pairs(Listpack.from_values([b"7", b"a", b"7", b"b"]).bytes()) == -1  # an int field twice
    assert L.canonical_pairs(Listpack.from_values([b"f", b"1", b"g"]).bytes()) == -1  # odd
    assert L.canonical_pairs(L.EMPTY) == 0
    unknown = pairs[:4] + NUMELE_UNKNOWN.to_bytes(2, "little") + pairs[6:]
    assert L.canonical_pairs(unknown) == -1  # a saturated count is written back the long way
    # "12" as a 6-bit string, and 5 as a 13-bit integer: both have a shorter encoding
    assert L.canonical_pairs(_listpack_of_entries([b"\x82" b"12" b"\x03", encode_entry(b"v")])) == -1
    assert L.canonical_pairs(_listpack_of_entries([b"\xc0\x05\x02", encode_entry(b"v")])) == -1
    for bad in (b"", b"\x07\x00\x00\x00\x00\x00", pairs[:-1] + b"\x00", pairs[:-2] + b"\xff"):
        assert L.canonical_pairs(bad) == -1


@settings(max_examples=300)
@given(st.lists(values, min_size=1, max_size=30), st.sampled_from([1, 2]), st.data())
def test_group_picks_decode_what_they_name(items, width, data):
    """group_offsets / group_values (the random picks of HRANDFIELD and ZRANDMEMBER): picks in any
    order, repeated, give the groups they name, in the picks' order, over every entry encoding."""
    items = items[:len(items) - len(items) % width] or items[:1] * width
    buf = Listpack.from_values(items).bytes()
    groups = len(items) // width
    picks = data.draw(st.lists(st.integers(0, groups - 1), max_size=12))
    offsets = L.group_offsets(buf, width, picks)
    assert [L.value_at(buf, p) for p in offsets] == [items[i * width] for i in picks]
    want_pairs = [v for i in picks for v in items[i * width:i * width + width]]
    assert L.group_values(buf, width, picks, width) == want_pairs
    assert L.group_values(buf, width, picks, 1) == [items[i * width] for i in picks]
    for bad in ([groups], [0, -1], [groups + 5]):
        with pytest.raises(IndexError):
            L.group_offsets(buf, width, bad)


@pytest.mark.parametrize("n", [1, 2, 7, 100])
def test_random_and_distinct_indexes(n):
    drawn = L.random_indexes(n, 5000)
    assert len(drawn) == 5000 and set(drawn) == set(range(n))  # every index can be drawn, none outside
    assert L.random_indexes(n, 0) == []
    for k in (0, 1, n // 2, n):
        some = L.distinct_indexes(n, k)
        assert some == sorted(set(some)) and len(some) == k and set(some) <= set(range(n))
