"""storage/hashfe.py and Redis 7.4's RDB forms of a hash with field deadlines (storage/rdb.py),
checked against bytes written out by hand from Redis 7.4's rdb.c and listpack.c (no Redis 7.4
binary to diff with: the newer oracle, Valkey 9.1, has its own format), and the listpackex order of
t_hash.c's listpackExAddInternal."""

from __future__ import annotations

import pytest

from raxdb.storage import hashfe, rdb
from raxdb.storage.hashfe import HashEx, TableDeadlines
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


def test_hashtable_deadlines_by_position():
    """A hashtable-encoded hash keeps its deadlines by table position (TableDeadlines): a deleted
    field's position, reused by a new field, starts without one; a copy keeps them; a listpack
    converted by HSET carries them over."""
    h = _hash([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")], [(b"a", 50), (b"c", 70)], listpack=False)
    assert type(h.ttl) is TableDeadlines and h.ttl == {b"a": 50, b"c": 70}
    assert h.delete(b"a") and h.set_pairs([b"n", b"x"], 0, 0, 0) == 1  # n takes a's position
    assert h.deadline(b"n") is None and h.ttl == {b"c": 70}
    x = h.copy()
    x.set_deadline(b"b", 10)
    assert h.ttl == {b"c": 70} and x.ttl == {b"b": 10, b"c": 70}
    lp = _hash([(b"a", b"1"), (b"b", b"2")], [(b"b", 30)])
    lp.set_pairs([b"z" * 100, b"v"], 0, 128, 64)  # too long for a listpack: converted
    assert lp.encoding() == "hashtable" and type(lp.ttl) is TableDeadlines and lp.ttl == {b"b": 30}


@pytest.mark.parametrize("seed", range(20))
def test_hashtable_due_against_a_model(seed, monkeypatch):
    """Random deadline writes, HSETs, deletions, copies and due calls on a hashtable hash, checked
    against a dict of deadlines: `due` returns exactly the due fields, soonest first, once each,
    and `next_ms` stays a lower bound.  A short head (`_SOON_MIN` 2) makes refills and cuts of
    `soon` frequent."""
    import random

    monkeypatch.setattr(hashfe, "_SOON_MIN", 2)
    rnd = random.Random(seed)
    h = _hash([(b"x", b"1")], [], listpack=False)
    values = {b"x": b"1"}
    ttl: dict[bytes, int] = {}
    now = 0
    for _ in range(600):
        op = rnd.random()
        f = b"f%d" % rnd.randrange(120)
        if op < 0.3:
            assert h.set_pairs([f, b"v"], 0, 0, 0) == (f not in values)
            values[f] = b"v"
            ttl.pop(f, None)
        elif op < 0.55 and f in values:
            w = now + rnd.randrange(-5, 200) if rnd.random() < 0.8 else now + 1000 - len(ttl)
            h.set_deadline(f, max(w, 1))
            ttl[f] = max(w, 1)
        elif op < 0.65:
            assert h.delete(f) == (f in values)
            values.pop(f, None)
            ttl.pop(f, None)
        elif op < 0.7:
            h = h.copy()
        elif op >= 0.7:
            now += rnd.randrange(30)
            got = h.due(now)
            assert got == [f for _, f in sorted((w, f) for f, w in ttl.items() if w <= now)] or (
                sorted(got) == sorted(f for f, w in ttl.items() if w <= now)
                and [ttl[f] for f in got] == sorted(ttl[f] for f in got))  # ties in any order
            for g in got:
                h.delete(g)
                del values[g], ttl[g]
            if not values:
                h.set_pairs([b"x", b"1"], 0, 0, 0)
                values[b"x"] = b"1"
        assert h.as_dict() == values and h.ttl == ttl
        assert not ttl or h.next_ms <= min(ttl.values())
