"""storage/hashfe.py and Redis 7.4's RDB forms of a hash with field deadlines (storage/rdb.py),
checked against bytes written out by hand from Redis 7.4's rdb.c and listpack.c (no Redis 7.4
binary to diff with: the newer oracle, Valkey 9.1, has its own format), and the listpackex order of
t_hash.c's listpackExAddInternal."""

from __future__ import annotations

import pytest

from raxdb.storage import rdb
from raxdb.storage.hashfe import HashEx
from raxdb.storage.hashtype import Hash


def _hash(pairs, deadlines, listpack=True) -> HashEx:
    h = HashEx.of(Hash.from_pairs(pairs, listpack))
    for f, w in deadlines:
        h.set_deadline(f, w)
    return h


def test_listpackex_order():
    h = _hash([(b"a", b"1"), (b"b", b"2"), (b"c", b"3"), (b"d", b"4")], [(b"c", 300), (b"b", 100), (b"d", 100)])
    assert h.fields() == [b"d", b"b", b"c", b"a"]  # soonest first, a new one before those as late
    h.persist(b"b")
    assert h.fields() == [b"d", b"c", b"a", b"b"]
    assert h.set_pairs([b"c", b"x", b"e", b"5"], 0, 128, 64) == 1  # c loses its deadline, goes last
    assert h.fields() == [b"d", b"a", b"b", b"c", b"e"] and h.ttl == {b"d": 100}
    assert h.due(99) == [] and h.due(100) == [b"d"]


def test_listpackex_bytes():
    """RDB_TYPE_HASH_LISTPACK_EX (25): the earliest deadline (ms, 8 bytes little-endian), then a
    listpack of field, value, deadline triples, 0 for none."""
    h = _hash([(b"a", b"1"), (b"b", b"2")], [(b"b", 1004)])
    lp = bytes([0x81, ord("b"), 2, 0x02, 1, 0xC3, 0xEC, 2,  # "b", 2, 1004 (13-bit int)
                0x81, ord("a"), 2, 0x01, 1, 0x00, 1, 0xFF])  # "a", 1, 0 (no deadline), end
    lp = (len(lp) + 6).to_bytes(4, "little") + (6).to_bytes(2, "little") + lp
    w = rdb.Writer(False)
    assert rdb.write_value(w, h) == 25
    assert bytes(w.buf) == (1004).to_bytes(8, "little") + bytes([len(lp)]) + lp
    back = rdb.read_value(rdb.Reader(bytes(w.buf)), 25, rdb.Limits())
    assert back.encoding() == "listpackex" and back.fields() == [b"b", b"a"] and back.ttl == {b"b": 1004}


def test_hash_metadata_bytes():
    """RDB_TYPE_HASH_METADATA (24): the earliest deadline, the field count, then per field its
    deadline relative to the earliest plus one (0: none) as a length, the field, the value."""
    body = (1000).to_bytes(8, "little") + bytes([2, 0, 1, ord("a"), 1, ord("1"), 5, 1, ord("b"), 1, ord("2")])
    h = rdb.read_value(rdb.Reader(body), 24, rdb.Limits())
    assert type(h) is HashEx and h.as_dict() == {b"a": b"1", b"b": b"2"} and h.ttl == {b"b": 1004}
    h.to_hashtable()
    w = rdb.Writer(False)
    # written with the hash's own earliest deadline; "1" and "2" integer-encoded (rdbTryIntegerEncoding);
    # b first, as the listpackex it loaded into held it (a field with a deadline first)
    want = (1004).to_bytes(8, "little") + bytes([2, 1, 1, ord("b"), 0xC0, 2, 0, 1, ord("a"), 0xC0, 1])
    assert rdb.write_value(w, h) == 24 and bytes(w.buf) == want


def test_hash_metadata_into_a_listpackex_in_its_order():
    """A small RDB_TYPE_HASH_METADATA hash (a dict: its fields in any order) becomes a listpackex
    as Redis adds each field: those with a deadline first, soonest first, then the others; its
    DUMP then loads back (out of order, the listpackex check refused it: found by the restore
    fuzz target, tests/fuzz/corpus/restore/regress-hash-metadata-listpackex-order)."""
    body = (1000).to_bytes(8, "little") + bytes([3, 0, 1, ord("a"), 1, ord("1"), 11, 1, ord("b"), 1, ord("2"),
                                                 1, 1, ord("c"), 1, ord("3")])
    h = rdb.read_value(rdb.Reader(body), 24, rdb.Limits())
    assert h.encoding() == "listpackex" and h.fields() == [b"c", b"b", b"a"]
    assert h.ttl == {b"b": 1010, b"c": 1000}
    w = rdb.Writer(False)
    assert rdb.write_value(w, h) == 25
    back = rdb.read_value(rdb.Reader(bytes(w.buf)), 25, rdb.Limits())
    assert back.fields() == [b"c", b"b", b"a"] and back.ttl == h.ttl


def test_hash_metadata_deadlines_in_uint64():
    """A field's deadline is its relative TTL plus minExpire less one in uint64, as Redis reads it:
    a minExpire stored negative makes one past the maximum, refused (it loaded as a negative
    deadline whose DUMP was refused: found by the restore fuzz target,
    regress-hash-metadata-negative-min-expire), or wraps round to a valid one."""
    refused = (-(1 << 62)).to_bytes(8, "little", signed=True) + bytes([1, 2, 1, ord("f"), 1, ord("v")])
    with pytest.raises(rdb.RDBError, match=f"invalid expireAt time: {(1 << 64) - (1 << 62) + 1}"):
        rdb.read_value(rdb.Reader(refused), 24, rdb.Limits())
    wraps = (-5).to_bytes(8, "little", signed=True) + bytes([1, 10, 1, ord("f"), 1, ord("v")])
    assert rdb.read_value(rdb.Reader(wraps), 24, rdb.Limits()).ttl == {b"f": 4}


@pytest.mark.parametrize("lp_items", [
    [b"f1", b"v1", b"x"],  # a deadline that is not an integer
    [b"f1", b"v1", b"0", b"f2", b"v2", b"5"],  # a field with a deadline after one without
    [b"f1", b"v1", b"9", b"f2", b"v2", b"5"],  # deadlines out of order
])
def test_listpackex_refused(lp_items):
    from raxdb.storage.listpack import build, encode_entry
    blob = build(b"".join(encode_entry(x) for x in lp_items), len(lp_items))
    w = rdb.Writer(False)
    w.ms(0)
    w.string(blob)
    with pytest.raises(rdb.RDBError):
        rdb.read_value(rdb.Reader(bytes(w.buf)), 25, rdb.Limits())
