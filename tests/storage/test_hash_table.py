"""The hashtable encoding of a hash (`storage.hashtype.HashTable` through `Hash`): a property test of
random HSET / HDEL / full HSCAN / HRANDFIELD programs against a dict model, across the listpack ->
hashtable conversion and through many deletions (holes reused, holes cut off the end, the index
shrinking, the table emptied and refilled).  A scan interleaved with writes must return every
field present for the whole scan at least once, as Redis guarantees."""

from __future__ import annotations

import gc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raxdb.storage import hashtype
from raxdb.storage.hashtype import Hash

COMPILED = hashtype.__file__.endswith(".so")
pytestmark = pytest.mark.pure  # hashtype.py is compiled: run interpreted too

# few distinct fields, so that deletes hit, updates happen and positions are reused
fields = st.integers(0, 300).map(lambda i: b"f%d" % i) | st.binary(max_size=6)
values = st.binary(max_size=8) | st.sampled_from([b"", b"1", b"x" * 70])

ops = st.one_of(
    st.tuples(st.just("set"), st.lists(st.tuples(fields, values), min_size=1, max_size=30)),
    st.tuples(st.just("del"), st.lists(fields, min_size=1, max_size=30)),
    st.tuples(st.just("delall")),  # every field but a few, one by one: holes, shrink, emptying
    st.tuples(st.just("scan"), st.integers(1, 20), st.lists(st.tuples(fields, values), max_size=5),
              st.lists(fields, max_size=5)),
    st.tuples(st.just("rand"), st.integers(1, 8)),
)


def full_scan(h: Hash, count: int, adds: list, dels: list[bytes], model: dict[bytes, bytes]) -> None:
    """HSCAN from cursor 0 to 0 while writing between steps: every field present throughout is
    returned, and nothing that was never in the hash."""
    before = set(model)
    ever = set(model)
    removed: set[bytes] = set()
    seen: list[bytes] = []
    cursor, step = 0, 0
    while True:
        cursor, got = h.scan(cursor, count)
        seen.extend(got)
        if step < len(adds):  # a write between steps
            f, v = adds[step]
            h.set_pairs([f, v], 0, 0, 64)
            model[f] = v
            ever.add(f)
        if step < len(dels):
            f = dels[step]
            h.delete(f)
            if model.pop(f, None) is not None:
                removed.add(f)
        step += 1
        if cursor == 0:
            break
        assert step < 100_000
    assert (before - removed) <= set(seen) <= ever


@settings(max_examples=300, deadline=None)
def check_picks(h: Hash, model: dict[bytes, bytes], count: int) -> None:
    """Hash's random picks (HRANDFIELD's) against `model`, the dict `h` should equal: its fields,
    `count` of them, distinct where asked for, each value its own field's."""
    assert h.random_field() in model
    assert set(h.random_fields(count)) <= set(model)
    pairs = h.random_pairs(count)
    assert len(pairs) == 2 * count
    assert all(model[f] == v for f, v in zip(pairs[::2], pairs[1::2], strict=True))
    k = min(count, len(model) - 1)
    if k > 0:
        picked = h.sample_fields(k)
        assert len(picked) == len(set(picked)) == k and set(picked) <= set(model)
        pairs = h.sample_pairs(k)
        assert len(pairs) == 2 * k and len(set(pairs[::2])) == k
        assert all(model[f] == v for f, v in zip(pairs[::2], pairs[1::2], strict=True))


@given(st.integers(0, 40), st.lists(ops, max_size=25))
def test_hashtable_matches_dict_model(max_entries, program):
    h = Hash()
    model: dict[bytes, bytes] = {}
    for op in program:
        if op[0] == "set":
            args = [x for pair in op[1] for x in pair]
            new = len({f for f, _ in op[1]} - set(model))
            assert h.set_pairs(args, 0, max_entries, 64) == new
            model.update(op[1])
        elif op[0] == "del":
            for f in op[1]:
                assert h.delete(f) == (f in model)
                model.pop(f, None)
        elif op[0] == "delall":
            for f in list(model)[3:]:
                assert h.delete(f)
                del model[f]
        elif op[0] == "scan":
            full_scan(h, op[1], op[2], op[3], model)
        elif op[0] == "rand" and model:
            check_picks(h, model, op[1])
        assert len(h) == len(model)
        flat = h.flat()
        assert len(flat) == 2 * len(model) and dict(zip(flat[::2], flat[1::2], strict=True)) == model
        assert sorted(h.fields()) == sorted(model) and sorted(h.values()) == sorted(model.values())
        for f in list(model)[:5] + [b"absent", b"f1", b""]:
            assert h.get(f) == model.get(f) and (f in h) == (f in model)
        if h.encoding() == "hashtable":
            check_table(h)
    copy = h.copy()
    h.set_pairs([b"after-copy", b"1"], 0, 0, 64)
    assert dict(copy.items()) == model
    if copy.encoding() == "hashtable":
        check_table(copy)


@pytest.mark.parametrize("n", [0, 1, 127, 128, 300, 70_000])
def test_long_fields(n):
    """Fields of every length class of the item's header (one byte below 128, four from 128)."""
    h = Hash()
    f, g = b"f" * n, b"g" * n + b"x"
    h.set_pairs([f, b"v" * n, g, b"", b"short", b"w"], 0, 0, 64)
    assert h.encoding() == "hashtable"
    assert h.get(f) == b"v" * n and h.get(g) == b"" and h.get(b"short") == b"w"
    assert h.get(f + b"v") is None and (n == 0 or h.get(f[:-1]) is None)
    assert sorted(h.flat()) == sorted([f, b"v" * n, g, b"", b"short", b"w"])
    assert h.mem_usage(0) > 0


def check_table(h: Hash) -> None:
    """The table's invariants: every live position indexed once, under its field's hash, and found
    from that hash's slot without crossing an empty slot; listed free positions below the end are
    holes; no hole at the end; the index at most two thirds full."""
    t = h.d
    items, mask = t.items, t.mask
    live = [p for p in range(len(items)) if items[p] is not None]
    check_index(h, t.index, mask, live)
    assert t.count == len(live) and 3 * t.count <= 2 * (mask + 1)
    assert not items or items[-1] is not None
    if COMPILED:  # the items (bytes and holes) out of the cyclic collector, however the table was made
        assert not gc.is_tracked(items)
    for p in t.free:
        assert p >= len(items) or items[p] is None


EMPTY = 2**64 - 1


def check_index(h: Hash, index, mask: int, positions: list[int]) -> None:
    """`index` holds each of `positions` once, under its field's hash, found from that hash's slot
    without crossing an empty slot, and nothing else."""
    assert sorted(e & 0xFFFFFFFF for e in index if e != EMPTY) == positions
    for j, e in enumerate(index):
        if e == EMPTY:
            continue
        assert e >> 32 == hash(h.d.field_at(e & 0xFFFFFFFF)) & 0xFFFFFFFF
        i = (e >> 32) & mask
        while i != j:
            assert index[i] != EMPTY
            i = (i + 1) & mask


def test_big_table_grows_shrinks_and_keeps_cursors():
    """A table grown past 10k fields and mostly emptied: the index shrinks, a scan started
    before the deletions still returns every survivor, random picks stay uniform-ish."""
    h = Hash()
    n = 12_000
    h.set_pairs([x for i in range(n) for x in (b"field:%d" % i, b"value:%d" % i)], 0, 128, 64)
    assert h.encoding() == "hashtable" and len(h) == n
    big = h.d.mask
    cursor, seen = h.scan(0, 100)
    survivors = {b"field:%d" % i for i in range(0, n, 97)}
    for i in range(n):
        if b"field:%d" % i not in survivors:
            assert h.delete(b"field:%d" % i)
    assert h.d.mask < big // 8
    assert h.d.sparse()
    while cursor:
        cursor, got = h.scan(cursor, 100)
        seen.extend(got)
    assert survivors <= set(seen)
    assert set(h.random_fields(500)) <= survivors
    assert len(set(h.random_fields(2000))) > len(survivors) // 2
    assert h.get(b"field:97") == b"value:97" and h.get(b"field:98") is None
    for f in survivors:
        h.delete(f)
    assert len(h) == 0 and h.d.items == [] and h.d.mask == 7


def check_next(h: Hash) -> None:
    """A growth under way: while its slots are being emptied, no position moved and the emptied
    slots empty (those past them are not written yet); then every live position below the mark
    in the next index once, under its field's hash, found from that hash's slot; nothing else."""
    t = h.d
    index, mask, done = t._next, t._next_mask, t._next_done
    assert len(index) == mask + 1 == 2 * (t.mask + 1)
    if t._next_filled < len(index):
        assert done == 0 and all(e == EMPTY for e in index[:t._next_filled])
        return
    check_index(h, index, mask, [p for p in range(min(done, len(t.items))) if t.items[p] is not None])


def test_a_big_index_grows_in_steps():
    """A big index that gets half full builds its successor beside it, a few positions per new
    field, and hands over before it is two thirds full: the index in use stays the same object
    and complete while the successor is built; deletions (holes reused below and above the mark,
    holes cut off the end), updates, a copy and an HSCAN across the growth leave every field found
    and returned, and no deleted one."""
    import random

    h = Hash()
    model: dict[bytes, bytes] = {}
    rng = random.Random(56)
    n = 0

    def add() -> None:
        nonlocal n
        f = b"field:%d" % n
        n += 1
        h.set_pairs([f, f], 0, 0, 64)
        model[f] = f

    def delete(f: bytes) -> None:
        assert h.delete(f) == (model.pop(f, None) is not None)

    while len(model) < 16_000:  # rebuilt at once while under 32768 slots
        add()
    assert h.d.mask + 1 == 1 << 15 and not h.d._next_mask
    cursor, seen = h.scan(0, 50)  # a scan started before the growth
    before = set(model)
    gone: set[bytes] = set()
    index = h.d.index
    steps = 0
    while h.d.index is index:  # the growth: new fields, with deletions, updates and a copy
        add()
        if h.d._next_mask:
            steps += 1
            assert h.d.index is index and h.d.mask + 1 == 1 << 15
            if steps % 200 == 1:
                check_table(h)
                check_next(h)
                assert all(h.get(f) == v for f, v in model.items())
            if steps == 300:
                copy = h.copy()
                assert not copy.d._next_mask and dict(copy.items()) == model
                check_table(copy)
        r = rng.random()
        if r < 0.3:
            f = b"field:%d" % rng.randrange(n)
            if f in model:
                gone.add(f)
            delete(f)
        elif r < 0.35:  # the last field (a hole at the end, cut off)
            delete(b"field:%d" % (n - 1))
            gone.add(b"field:%d" % (n - 1))
        elif r < 0.4 and model:
            f = rng.choice(list(model)) if steps % 50 == 0 else b"field:%d" % rng.randrange(n)
            if f in model:
                h.set_pairs([f, b"new"], 0, 0, 64)
                model[f] = b"new"
        if cursor and rng.random() < 0.1:
            cursor, got = h.scan(cursor, 50)
            seen.extend(got)
    assert steps > 100  # it took steps
    assert h.d.mask + 1 == 1 << 16 and not h.d._next_mask and len(h) * 3 <= (1 << 15) * 2
    while cursor:
        cursor, got = h.scan(cursor, 50)
        seen.extend(got)
    assert before - gone <= set(seen)
    check_table(h)
    assert len(h) == len(model) and all(h.get(f) == v for f, v in model.items())
    assert h.get(b"field:%d" % n) is None
    while not h.d._next_mask:  # the next growth, then nearly every field deleted mid-way
        add()
    for f in list(model)[100:]:
        delete(f)
    assert not h.d._next_mask and h.d.mask + 1 < 1 << 10  # shrunk: the growth dropped
    check_table(h)
    assert dict(h.items()) == model
