"""The hash type, with Redis 7.0's two encodings: "listpack" while small, "hashtable" beyond
hash-max-listpack-entries fields or once a field or value is longer than hash-max-listpack-value
bytes.  As in Redis, conversion is one way (a hashtable never goes back to a listpack).

Representation.  A `Hash` has two slots, `lp` and `d`; exactly one of them is set.

- listpack encoding: `lp` is the listpack itself, field, value, field, value, ... byte for byte
  as Redis keeps it, held as one immutable `bytes` object.  Commands work on it as t_hash.c does:
  a lookup walks the fields (`listpack.find_key`, lpFind with skip 1), an update replaces the
  value entry where it stands (lpReplace), a new field and its value are appended at the tail
  (lpAppend), a deletion removes both entries (lpDeleteRange).  So HGETALL / HKEYS / HSCAN of a
  small hash reply in Redis's order, the bytes are the DUMP / RDB payload as they stand, and
  MEMORY USAGE is their allocation.  Why `bytes` and not a bytearray: a write builds the next
  buffer (Redis's lpInsert reallocs and moves the same bytes), and in exchange a hash costs its
  listpack plus a 33-byte header, with no separate buffer, no over-allocation, a COPY that shares
  the bytes and a DUMP that copies nothing.  Invariant: every element is in its canonical
  encoding (what lpAppend writes), so a field is found by comparing encoded bytes; a listpack
  loaded from outside that breaks it (a valid but non-canonical encoding another writer chose) is
  re-encoded on load.
- hashtable encoding: `d` is a `HashTable`, an open-addressed table of the keyspace's kind
  (storage/keyspace.py).  A field and its value are ONE `bytes` object, the item: the field's
  length (one byte below 128, else four), the field, the value; `items` is the list of items, each
  at its field's position.  `index` is a uint64 array, a power of two in size and at most two
  thirds full, probed linearly from the hash's low bits; a used slot holds the low 32 bits of
  hash(field) above the field's position (all ones: empty).  A field costs one object (a dict
  costs two, the field and the value, plus 24 bytes of entry), a list slot and 12-24 bytes of
  index.  A lookup reads the index, then only the item of a slot whose hash matches (length, then
  memcmp compiled): three memory reads where a dict makes four.  HGET returns the item's tail, a
  fresh `bytes`.  A delete moves the later entries of its probe run back (their hashes are in the
  index), so there are no tombstones; the index shrinks to a quarter when an eighth full.  An
  index of 32,768 slots or more grows in steps, its successor built beside it a few positions per
  new field while lookups read the complete one in use (`_grow_step`), so no HSET rebuilds a big
  index at once.  `items` holds bytes and holes only and is out of the cyclic collector.

  Positions are stable: a field keeps its position for as long as it exists; a deleted position
  becomes a hole (None) listed in `free` and reused by a later field, except that holes at the end
  of `items` are cut off at once (so `free` may list positions past the end: stale, skipped when
  popped; `items` only grows by appending once `free` is exhausted, so a listed position below the
  end is always a hole).  An empty table restarts at position 0.  Hence an HSCAN cursor is a
  position, and a field present for the whole iteration is returned at least once, as Redis
  guarantees, with no per-cursor state; and a random field is a random position retried over holes
  (uniform over the fields), or a pick from the live positions collected once when holes are most
  of `items`.  The iteration order (HGETALL, HKEYS, ...) is the positions' order, which Redis does
  not define for a hashtable either.

Compiled (hashtype.pxd), Hash is an extension type of the same size, the listpack functions are C
calls, and `HashTable` is an extension type whose arrays are read through their C data pointers and
whose lookups are C methods.  Callers outside this module use the methods (get, items, flat,
set_pairs, delete, listpack, ...), never the slots' contents, except for `lp is not None` as the
test of the encoding.
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Iterable, Iterator

from raxdb.storage.alloc import SIZERS, dict_table_bytes, sds_alloc, size_class
from raxdb.storage.listpack import (
    EMPTY,
    HEADER_SIZE,
    NUMELE_UNKNOWN,
    append_pair,
    build,
    bulks,
    checked_values,
    count_of,
    distinct_indexes,
    elements,
    encode_entry,
    entry_end,
    find_key,
    group_values,
    offset_at,
    pair_value,
    random_indexes,
    replace_value,
    replace_values,
    splice,
    value_at,
)
from raxdb.storage.lpcodec import LP_EMPTY, entry_size

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False, cclass=lambda cls: cls, no_gc=lambda cls: cls)

if not cython.compiled:  # compiled, hashtype.pxd cimports it: CPython's untrack
    from raxdb.storage.rax import untrack

_UNKNOWN = NUMELE_UNKNOWN
_MIN_INDEX = 8  # the index's smallest size (a power of two)
# An index of at least this many slots grows in steps (see `_grow_step`); a smaller one is rebuilt
# at once (a third of a millisecond or less).
_STEPPED_GROWTH = 1 << 15
_GROWTH_STEP = 8  # positions the next index takes in per new field while it is built
_FILL_STEP = 1 << 13  # slots of the next index emptied per new field before that (64 KB)
_U32 = 0xFFFFFFFF
_EMPTY = 0xFFFFFFFFFFFFFFFF  # an empty index slot
_MAX_FIELD = 0x7FFFFFFF  # the longest field an item's four-byte length holds
_HEADS = [bytes((n,)) for n in range(0x80)]  # one-byte field lengths (interpreted _item)


# ---- the typed arrays and the items --------------------------------------------------------------
# Compiled, an array's items are read and written through its C data pointer (hashtype.pxd types
# the arrays as cpython.array) and an item is built and compared through its bytes' pointer;
# interpreted, through indexing and bytes methods.  Bounds are the callers' to keep.
def _u64(a: array[int], i: int) -> int:
    if cython.compiled:
        return a.data.as_ulonglongs[i]
    return a[i]


def _set_u64(a: array[int], i: int, v: int) -> None:
    if cython.compiled:
        a.data.as_ulonglongs[i] = v
    else:
        a[i] = v


def _empty_index(size: int) -> array[int]:
    """An index of `size` slots (a power of two), all empty: `_unfilled_index` emptied by `_fill`
    (compiled, no temporary the size of the index)."""
    index = _unfilled_index(size)
    _fill(index, 0, size)
    return index


def _unfilled_index(size: int) -> array[int]:
    """An index of `size` slots whose contents are `_fill`'s to write.  Compiled, not written here
    (a big block's pages cost their first touch only as a step fills them), and had by a realloc
    from nothing, as storage/keyspace.py's `_unset` explains; interpreted, already empty."""
    if cython.compiled:
        a = clone(_NO_INDEX, 0, False)  # noqa: F821 (hashtype.pxd cimports it)
        resize(a, size)  # noqa: F821
        return a
    return array("Q", _EMPTY_SLOT) * size


def _fill(index: array[int], start: int, n: int) -> None:
    """Slots start..start+n of `index` emptied."""
    if cython.compiled:
        memset(index.data.as_uchars + 8 * start, 0xFF, 8 * n)  # noqa: F821 (hashtype.pxd cimports it)
    else:
        index[start:start + n] = array("Q", _EMPTY_SLOT) * n


_EMPTY_SLOT = (_EMPTY,)
_NO_INDEX = array("Q")


def _place(index: array[int], mask: int, e: int) -> None:
    """Put the entry `e` (hash << 32 | position) into the first empty slot of its probe."""
    i = (e >> 32) & mask
    while _u64(index, i) != _EMPTY:
        i = (i + 1) & mask
    _set_u64(index, i, e)


def _unlink(index: array[int], mask: int, i: int) -> None:
    """Empty slot `i` of an index.  Linear probing deletes by moving back each later entry of the
    run that may sit at `i`, so the index needs no tombstones."""
    j = i
    while True:
        j = (j + 1) & mask
        e = _u64(index, j)
        if e == _EMPTY:
            break
        k = (e >> 32) & mask  # where that entry's field would sit
        if (i < j and (k <= i or k > j)) or (i > j and k <= i and k > j):
            _set_u64(index, i, e)
            i = j
    _set_u64(index, i, _EMPTY)


def _item(field: bytes, value: bytes) -> bytes:
    """The item of a field and its value: the field's length (one byte below 128, else four bytes,
    big-endian, with the top bit set), the field, the value."""
    n = len(field)
    if n > _MAX_FIELD:
        raise OverflowError("hash field too long")
    k = 1 if n < 0x80 else 4
    if cython.compiled:
        out = PyBytes_FromStringAndSize(cython.NULL, k + n + len(value))  # noqa: F821 (hashtype.pxd)
        dst = cython.cast(cython.p_uchar, cython.cast(cython.p_char, out))
        if k == 1:
            dst[0] = n
        else:
            dst[0] = 0x80 | (n >> 24)
            dst[1] = (n >> 16) & 0xFF
            dst[2] = (n >> 8) & 0xFF
            dst[3] = n & 0xFF
        memcpy(dst + k, cython.cast(cython.p_char, field), n)  # noqa: F821
        memcpy(dst + k + n, cython.cast(cython.p_char, value), len(value))  # noqa: F821
        return out
    head = _HEADS[n] if k == 1 else (n | 0x80000000).to_bytes(4, "big")
    return b"".join((head, field, value))


def _field_len(item: bytes) -> int:
    """The length of the field in `item`."""
    if cython.compiled:
        s = cython.cast(cython.p_uchar, cython.cast(cython.p_char, item))
        if s[0] < 0x80:
            return s[0]
        return ((s[0] & 0x7F) << 24) | (s[1] << 16) | (s[2] << 8) | s[3]
    b = item[0]
    return b if b < 0x80 else int.from_bytes(item[:4], "big") & _MAX_FIELD


def _is_field(item: bytes, field: bytes, n: int) -> bool:
    """Is `field`, of length `n`, the field of `item`?"""
    if _field_len(item) != n:
        return False
    k = 1 if n < 0x80 else 4
    if cython.compiled:
        return memcmp(cython.cast(cython.p_char, item) + k, cython.cast(cython.p_char, field), n) == 0  # noqa: F821
    return item.startswith(field, k)


def _field_hash(item: bytes) -> int:
    """The low 32 bits of hash() of the field of `item`.  Compiled, CPython's hash of the bytes in
    place (what hash() of a bytes object computes), with no field object made."""
    n = _field_len(item)
    k = 1 if n < 0x80 else 4
    if cython.compiled:
        return _Py_HashBytes(cython.cast(cython.p_char, item) + k, n) & _U32  # noqa: F821 (hashtype.pxd)
    return hash(item[k:k + n]) & _U32


def _field_of(item: bytes) -> bytes:
    n = _field_len(item)
    k = 1 if n < 0x80 else 4
    return item[k:k + n]


def _value_of(item: bytes) -> bytes:
    n = _field_len(item)
    return item[(1 if n < 0x80 else 4) + n:]


def _untracked(items: list[bytes | None]) -> list[bytes | None]:
    """A table's list of items, out of the cyclic collector (compiled: storage/rax.py's `untrack`):
    it holds bytes and None only, so no cycle passes through it.  Tracked, a big hash's list stayed
    young from the row that grew it to the next collection, which walked every item (8 ms for
    100,000 fields, docs/speed-log.md, 2026-11-29, h-tail2), and walked it again in generation 1."""
    untrack(items)
    return items


class HashTable:
    """The hashtable encoding: fields and values packed by position (see the module docstring)."""

    __slots__ = ("items", "free", "index", "mask", "count", "_grow_at", "_next", "_next_mask", "_next_filled",
                 "_next_done")

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """No fields: every array empty, positions restarting at 0."""
        self.items: list[bytes | None] = _untracked([])  # the item at each position, None for a hole
        self.free = array("i")  # holes to reuse (and stale positions past the end, see above)
        self.index = _empty_index(_MIN_INDEX)
        self.mask = _MIN_INDEX - 1
        self.count = 0
        self._drop_growth()

    def copy(self) -> HashTable:
        t = HashTable()
        t.items = _untracked(self.items[:])  # the items are immutable: shared
        t.free = self.free[:]
        t.index = self.index[:]  # complete: a growth under way is not copied
        t.mask = self.mask
        t.count = self.count
        t._drop_growth()  # (its `_grow_at` for this mask)
        return t

    # ---- lookup --------------------------------------------------------------------------------
    def _slot(self, field: bytes, h: int) -> int:
        """The index slot holding `field`'s entry, or the empty slot where it would go (`h` is the
        low 32 bits of its hash)."""
        index = self.index
        items = self.items
        mask = self.mask
        n = len(field)
        i = h & mask
        while True:
            e = _u64(index, i)
            if e == _EMPTY:
                return i
            if e >> 32 == h and _is_field(items[e & _U32], field, n):  # type: ignore[arg-type]
                return i
            i = (i + 1) & mask

    def find(self, field: bytes) -> int:
        """The field's position, or -1."""
        e = _u64(self.index, self._slot(field, hash(field) & _U32))
        return -1 if e == _EMPTY else e & _U32

    def get(self, field: bytes) -> bytes | None:
        e = _u64(self.index, self._slot(field, hash(field) & _U32))
        if e == _EMPTY:
            return None
        return _value_of(self.items[e & _U32])  # type: ignore[arg-type]

    # ---- writing -------------------------------------------------------------------------------
    def set(self, field: bytes, value: bytes) -> int:
        """Set `field` to `value`: 1 if the field is new, 0 if it was there (it keeps its place)."""
        h = hash(field) & _U32
        i = self._slot(field, h)
        e = _u64(self.index, i)
        if e != _EMPTY:
            self.items[e & _U32] = _item(field, value)
            return 0
        if self.count >= self._grow_at and self._make_room(self.count + 1):  # the index was replaced
            mask = self.mask
            i = h & mask
            while _u64(self.index, i) != _EMPTY:
                i = (i + 1) & mask
        items = self.items
        free = self.free
        n = len(items)
        p = -1
        while len(free):
            p = free.pop()
            if p < n:  # a hole (else a stale position, cut off the end since)
                break
            p = -1
        if p >= 0:
            items[p] = _item(field, value)
        else:
            p = n
            items.append(_item(field, value))
        _set_u64(self.index, i, (h << 32) | p)
        if p < self._next_done:  # a position the next index has passed
            _place(self._next, self._next_mask, (h << 32) | p)
        self.count += 1
        return 1

    def delete(self, field: bytes) -> bool:
        i = self._slot(field, hash(field) & _U32)
        if _u64(self.index, i) == _EMPTY:
            return False
        self._remove(i)
        return True

    def _rebuild_index(self, size: int) -> None:
        """A new index of `size` slots over the entries of the current one (a growth under way is
        dropped)."""
        old = self.index
        index = _empty_index(size)
        mask = size - 1
        for j in range(len(old)):
            e = _u64(old, j)
            if e != _EMPTY:
                _place(index, mask, e)
        self.index = index
        self.mask = mask
        self._drop_growth()

    # Growth in steps, as storage/keyspace.py's index grows: rebuilding a big index is a pass over
    # every field with a cache miss each (1.4 ms of CPU at 43,690 fields, 3 ms at 87,381), a pause
    # for every client; Redis rehashes its dict incrementally.  A big index that gets half full
    # starts its successor, twice its size, beside it: each new field first empties a slice of it,
    # then moves `_GROWTH_STEP` more positions into it (positions below `_next_done` are in it; a
    # position's hash is its field's, computed again); a new field or a removal below that mark is
    # made in both, and lookups read the current index alone, which stays complete.  Once every
    # position is in (well before the current index is two thirds full, the most it is let hold,
    # where the rest is moved at once), the successor replaces it.
    def _drop_growth(self) -> None:
        """No growth under way (`_next_mask` 0, the other fields never written): the next one starts
        at the count `_grow_at`, where a big index is half full and a small one two thirds."""
        self._next = _NO_INDEX
        self._next_mask = 0
        self._next_filled = 0
        self._next_done = 0
        size = self.mask + 1
        self._grow_at = size // 2 if size >= _STEPPED_GROWTH else size * 2 // 3

    def _make_room(self, n: int) -> bool:
        """Room for `n` fields (the count reached `_grow_at`): a small index rebuilt twice its size,
        a big one's growth a step further.  True when the index in use was replaced."""
        size = self.mask + 1
        if self._next_mask or size >= _STEPPED_GROWTH:
            return self._grow_step(n)
        self._rebuild_index(size * 2)
        return True

    def _grow_step(self, n: int) -> bool:
        """One step of the growth toward a larger index for `n` fields, started if need be; True
        when the larger index has just replaced the current one."""
        last = n * 3 > (self.mask + 1) * 2  # the current index cannot take the next field
        if not self._next_mask:
            size = (self.mask + 1) * 2
            self._next = _unfilled_index(size)
            self._next_mask = size - 1
            self._next_filled = 0
            self._next_done = 0
            self._grow_at = 0  # every new field takes a step
        index = self._next
        mask = self._next_mask
        size = mask + 1
        f = self._next_filled
        if f < size:  # first the slots are emptied, a slice per step (their first touch)
            step = size - f if last else min(size - f, _FILL_STEP)
            _fill(index, f, step)
            self._next_filled = f + step
            if f + step < size:
                return False
        items = self.items
        end = len(items)
        p = self._next_done
        stop = end if last else min(end, p + _GROWTH_STEP)
        while p < stop:
            item = items[p]
            if item is not None:
                _place(index, mask, (_field_hash(item) << 32) | p)
            p += 1
        self._next_done = p
        if p < end:
            return False
        self.index = index
        self.mask = mask
        self._drop_growth()
        return True

    def _remove(self, i: int) -> None:
        """Take the field whose entry is in index slot `i` out."""
        index = self.index
        mask = self.mask
        e = _u64(index, i)
        p = e & _U32
        _unlink(index, mask, i)
        if p < self._next_done:  # the next index holds p too
            nxt = self._next
            nmask = self._next_mask
            j = (e >> 32) & nmask
            while _u64(nxt, j) != e:
                j = (j + 1) & nmask
            _unlink(nxt, nmask, j)
        self.count -= 1
        if not self.count:
            self.clear()  # empty: no field can be mid-scan, so the positions restart compact
            return
        items = self.items
        items[p] = None
        n = len(items)
        if p == n - 1:
            # Holes at the end are cut off: no field lives past them, so no cursor can miss one,
            # and the table does not keep the room of fields deleted from its end.
            while items[n - 1] is None:  # (stops: a field lives below, count > 0)
                n -= 1
            del items[n:]
        else:
            self.free.append(p)
        size = mask + 1
        if size > _MIN_INDEX and self.count * 8 < size:  # an eighth full: a quarter of the size
            self._rebuild_index(size // 4 if size > 4 * _MIN_INDEX else _MIN_INDEX)

    # ---- reading in bulk -----------------------------------------------------------------------
    def flat(self, start: int = 0, stop: int = -1) -> list[bytes]:
        """field, value, field, value, ... of positions start to stop (-1: the end), in position
        order."""
        items = self.items
        if stop < 0 or stop > len(items):
            stop = len(items)
        out: list[bytes] = []
        append = out.append
        for p in range(start, stop):
            item = items[p]
            if item is not None:
                n = _field_len(item)
                k = 1 if n < 0x80 else 4
                append(item[k:k + n])
                append(item[k + n:])
        return out

    def fields(self, start: int = 0, stop: int = -1) -> list[bytes]:
        """The fields at positions start to stop (-1: the end), in position order."""
        items = self.items
        if stop < 0 or stop > len(items):
            stop = len(items)
        out: list[bytes] = []
        for p in range(start, stop):
            item = items[p]
            if item is not None:
                out.append(_field_of(item))
        return out

    def values(self) -> list[bytes]:
        """The values, in position order."""
        return [_value_of(item) for item in self.items if item is not None]

    def field_at(self, p: int) -> bytes:
        """The field at live position `p`."""
        return _field_of(self.items[p])  # type: ignore[arg-type]

    def sds_first(self, k: int) -> int:
        """sds_alloc summed over the first `k` fields (k <= count) and their values: MEMORY
        USAGE's sample, a C loop compiled (a write under a memory limit sizes its hash again)."""
        total = 0
        for item in self.items:
            if not k:
                break
            if item is not None:
                n = _field_len(item)
                total += sds_alloc(n) + sds_alloc(len(item) - n - (1 if n < 0x80 else 4))
                k -= 1
        return total

    # ---- scanning and sampling -----------------------------------------------------------------
    def scan(self, cursor: int, count: int, values: bool = False) -> tuple[int, list[bytes]]:
        """Fields in at least `count` positions from `cursor`: (next cursor or 0, fields), or with
        `values` field, value, field, value, ... (one walk of the positions)."""
        n = len(self.items)
        if cursor >= n:
            return 0, []
        end = min(n, cursor + max(count, 1))
        return (0 if end >= n else end), self.flat(cursor, end) if values else self.fields(cursor, end)

    def live_positions(self) -> list[int]:
        items = self.items
        return [p for p in range(len(items)) if items[p] is not None]

    def sparse(self) -> bool:
        """Are holes most positions (so that retrying random positions would be slow)?"""
        return self.count * 4 < len(self.items)

    def random_position(self) -> int:
        """A uniformly random live position (the table is neither empty nor sparse)."""
        items = self.items
        n = len(items)
        while True:
            p = random.randrange(n)
            if items[p] is not None:
                return p


def _table(pairs: Iterable[tuple[bytes, bytes]]) -> HashTable:
    """A table of `pairs` (a repeated field keeps its first place and its last value)."""
    t = HashTable()
    for f, v in pairs:
        t.set(f, v)
    return t


def _pairs_of(flat: list[bytes]) -> Iterator[tuple[bytes, bytes]]:
    """(field, value) pairs of a flat field, value, field, value, ... list."""
    it = iter(flat)
    return zip(it, it, strict=True)


def _pack(pairs: Iterable[tuple[bytes, bytes]]) -> bytes:
    """The canonical listpack of distinct field/value pairs."""
    enc = encode_entry
    chunks = []
    for f, v in pairs:
        chunks.append(enc(f))
        chunks.append(enc(v))
    return build(b"".join(chunks), len(chunks))


@cython.no_gc  # compiled: no GC header, untracked (it holds bytes and its own tables, never a cycle)
@cython.cclass
class Hash:
    type_name = "hash"
    __slots__ = ("lp", "d")

    def __init__(self) -> None:
        self.lp: bytes | None = EMPTY  # the listpack while listpack-encoded, else None
        self.d: HashTable | None = None  # the hashtable once converted

    # ---- the value contract -------------------------------------------------------------------
    def __len__(self) -> int:
        lp = self.lp
        if lp is None:
            return self.d.count  # type: ignore[union-attr]
        n = lp[4] | (lp[5] << 8)
        if n == _UNKNOWN:
            n = count_of(lp)
        return n >> 1

    def encoding(self) -> str:
        return "hashtable" if self.lp is None else "listpack"

    def copy(self) -> Hash:
        h = Hash()
        if self.lp is None:
            h.lp = None
            h.d = self.d.copy()  # type: ignore[union-attr]
        else:
            h.lp = self.lp  # immutable: the copy shares it until either changes
        return h

    def mem_usage(self, samples: int = 5) -> int:
        return hash_usage(self, samples)

    def __repr__(self) -> str:
        return f"Hash({self.encoding()}, {dict(self.items())!r})"

    # ---- encoding ------------------------------------------------------------------------------
    def to_hashtable(self) -> None:
        lp = self.lp
        if lp is None:
            return
        self.d = _table(_pairs_of(elements(lp)))
        self.lp = None

    def listpack(self) -> bytes | None:
        """The listpack Redis keeps for this hash (field, value, field, value, ...): the bytes held,
        or None for a hashtable."""
        return self.lp

    @classmethod
    def from_listpack(cls, blob: bytes, items: list[bytes] | None = None) -> Hash:
        """A listpack hash holding `blob`, a well-formed listpack of distinct field/value pairs whose
        elements are `items` (decoded, and so checked, here when not given).  Kept as it is when its
        elements are canonically encoded (so the same bytes are saved again), re-encoded otherwise;
        a saturated element count that fits is written back, as Redis's load (lpLength) does."""
        if items is None:
            items = checked_values(blob)
        blob = bytes(blob)
        if sum(map(entry_size, items)) + LP_EMPTY != len(blob):
            blob = _pack(_pairs_of(items))
        elif blob[4] | (blob[5] << 8) == _UNKNOWN and len(items) < _UNKNOWN:
            n = len(items)
            blob = blob[:4] + bytes((n & 0xFF, n >> 8)) + blob[6:]
        h = cls()
        h.lp = blob
        return h

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[bytes, bytes]], listpack: bool = True) -> Hash:
        """A hash of `pairs` (a repeated field keeps its first place and its last value)."""
        h = cls()
        if listpack:
            h.lp = _pack(dict(pairs).items())
        else:
            h.lp = None
            h.d = _table(pairs)
        return h

    # ---- reading -------------------------------------------------------------------------------
    def get(self, field: bytes) -> bytes | None:
        return hash_get(self, field)

    def __contains__(self, field: bytes) -> bool:
        lp = self.lp
        if lp is None:
            return self.d.find(field) >= 0  # type: ignore[union-attr]
        return find_key(lp, field) >= 0

    def flat(self) -> list[bytes]:
        """field, value, field, value, ... in the hash's order."""
        lp = self.lp
        if lp is not None:
            return elements(lp)
        return self.d.flat()  # type: ignore[union-attr]

    def flat_bulks(self) -> tuple[int, bytes] | None:
        """flat() as RESP bulk strings back to back, with their number, written straight from a
        listpack's entries (LRANGE's encoder: no bytes object per element); None for a hashtable,
        whose elements the caller takes from flat()."""
        lp = self.lp
        if lp is None:
            return None
        n = count_of(lp)
        return n, bulks(lp, HEADER_SIZE, n)

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        return _pairs_of(self.flat())

    def fields(self) -> list[bytes]:
        lp = self.lp
        if lp is None:
            return self.d.fields()  # type: ignore[union-attr]
        return elements(lp)[::2]

    def values(self) -> list[bytes]:
        lp = self.lp
        if lp is None:
            return self.d.values()  # type: ignore[union-attr]
        return elements(lp)[1::2]

    def as_dict(self) -> dict[bytes, bytes]:
        """field -> value, in the hash's order (a new dict)."""
        return dict(self.items())

    # ---- writing -------------------------------------------------------------------------------
    def set_pairs(self, args: list[bytes], start: int, max_entries: int, max_value: int) -> int:
        """Set the field/value pairs args[start:] as HSET does, converting to a hashtable when a
        field or value is longer than max_value (checked before inserting, as Redis's
        hashTypeTryConversion) or the hash ends up with more than max_entries fields (checked
        after each pair, updates too, as hashTypeSet does).  Returns how many fields are new."""
        return hash_set_pairs(self, args, start, max_entries, max_value)

    def delete(self, field: bytes) -> bool:
        lp = self.lp
        if lp is not None:
            p = find_key(lp, field)
            if p < 0:
                return False
            self.lp = splice(lp, p, entry_end(lp, entry_end(lp, p)), b"", -2)
            return True
        return self.d.delete(field)  # type: ignore[union-attr]

    # ---- scanning and sampling -----------------------------------------------------------------
    def scan(self, cursor: int, count: int, values: bool = False) -> tuple[int, list[bytes]]:
        """Fields for one HSCAN step, or with `values` field, value, field, value, ... (HSCAN's
        reply, each pair read once): a listpack hash returns all of them and cursor 0 (its entries
        decoded in one walk); a hashtable `count` positions from the cursor, a position (see the
        module docstring)."""
        lp = self.lp
        if lp is not None:
            return 0, elements(lp) if values else elements(lp)[::2]
        return self.d.scan(cursor, count, values)  # type: ignore[union-attr]

    def random_field(self) -> bytes:
        lp = self.lp
        if lp is not None:  # one pair found and its field decoded (lpRandomPair)
            return value_at(lp, offset_at(lp, 2 * int(random.random() * len(self))))
        d = self.d
        if d.sparse():  # type: ignore[union-attr]
            return d.field_at(random.choice(d.live_positions()))  # type: ignore[union-attr]
        return d.field_at(d.random_position())  # type: ignore[union-attr]

    def random_fields(self, count: int) -> list[bytes]:
        """`count` fields chosen independently (repetitions allowed)."""
        return hash_picks(self, count, False, False)

    def random_pairs(self, count: int) -> list[bytes]:
        """`count` fields chosen independently, each followed by its value: field, value, ..."""
        return hash_picks(self, count, False, True)

    def sample_fields(self, count: int) -> list[bytes]:
        """`count` distinct random fields (count < len)."""
        return hash_picks(self, count, True, False)

    def sample_pairs(self, count: int) -> list[bytes]:
        """`count` distinct random fields (count < len), each followed by its value."""
        return hash_picks(self, count, True, True)


def hash_picks(h: Hash, count: int, distinct: bool, withvalues: bool) -> list[bytes]:
    """`count` random fields of `h`, distinct (count < len, in the hash's order for a listpack) or
    not, each followed by its value when `withvalues`.  A listpack is walked once and only the
    pairs picked are decoded (listpack.group_values); a hashtable's picks are positions, their
    items split into field and value."""
    lp = h.lp
    n = len(h)
    if lp is not None:
        picks = distinct_indexes(n, count) if distinct else random_indexes(n, count)
        return group_values(lp, 2, picks, 2 if withvalues else 1)
    d = h.d
    if distinct:
        if count * 3 > n or d.sparse():  # type: ignore[union-attr]
            positions = random.sample(d.live_positions(), count)  # type: ignore[union-attr]
        else:  # few of many: random positions until `count` distinct
            pick = d.random_position  # type: ignore[union-attr]
            chosen: dict[int, None] = {}
            while len(chosen) < count:
                chosen[pick()] = None
            positions = list(chosen)
    elif d.sparse():  # type: ignore[union-attr]
        positions = random.choices(d.live_positions(), k=count)  # type: ignore[union-attr]
    else:
        pick = d.random_position  # type: ignore[union-attr]
        positions = [pick() for _ in range(count)]
    items = d.items  # type: ignore[union-attr]
    out: list[bytes] = []
    for p in positions:
        item = items[p]
        out.append(_field_of(item))
        if withvalues:
            out.append(_value_of(item))
    return out


def new_hash() -> Hash:
    """An empty hash (a listpack) as a new key gets it; compiled, a C call that skips __init__'s
    call through the type (HSET's creation)."""
    h = Hash.__new__(Hash)
    h.lp = EMPTY
    h.d = None
    return h


def hash_set_pairs(h: Hash, args: list[bytes], start: int, max_entries: int, max_value: int) -> int:
    """Hash.set_pairs's body: a module function so that, compiled, its locals are C integers and
    the compiled hash commands call it in C (hashtype.pxd)."""
    n = len(args)
    lp = h.lp
    if lp is not None:
        for i in range(start, n):
            if len(args[i]) > max_value:
                h.to_hashtable()
                lp = None
                break
    if lp is None:
        d = h.d
        created = 0
        for i in range(start, n, 2):
            created += d.set(args[i], args[i + 1])  # type: ignore[union-attr]
        return created
    if n - start == 2:  # the common single-pair write
        f = args[start]
        p = find_key(lp, f)
        if p < 0:
            lp = append_pair(lp, f, args[start + 1])
            created = 1
        else:
            # (2: the references to the listpack this function owns, h.lp and `lp`; compiled, a
            # value whose entry is as long as the old one is written in place when no other holds
            # it: COPY's hash, a DUMP or a reply waiting in a buffer)
            lp = replace_value(lp, entry_end(lp, p), args[start + 1], 2)
            created = 0
    else:
        # Several pairs build the new listpack once: the values of fields already there are
        # replaced where they stand, the fields that are new are appended in the order of their
        # first appearance with their last value, which is the listpack that setting each pair
        # in turn builds.  Checking the count once at the end converts exactly when Redis's check
        # after each pair would have (the count only grows).
        changes: dict[int, bytes] = {}
        pending: dict[bytes, bytes] = {}
        for i in range(start, n, 2):
            f = args[i]
            if f in pending:
                pending[f] = args[i + 1]
                continue
            p = find_key(lp, f)
            if p < 0:
                pending[f] = args[i + 1]
            else:
                changes[entry_end(lp, p)] = args[i + 1]
        created = len(pending)
        appended = []
        for f, v in pending.items():
            appended.append(f)
            appended.append(v)
        lp = replace_values(lp, changes, appended)
    h.lp = lp
    count = lp[4] | (lp[5] << 8)
    if (count if count != _UNKNOWN else count_of(lp)) >> 1 > max_entries:
        h.to_hashtable()
    return created


def hash_usage(h: Hash, samples: int = 5) -> int:
    """Hash.mem_usage, Redis's estimate: the robj and the listpack's allocation, or the dict's
    tables plus the average of the first `samples` entries (two sds strings and a dictEntry) times
    the field count.  A module function on the typed hash (hashtype.pxd, as hash_get): a write
    under a memory limit sizes its hash again after every HSET or HDEL (server/memory/usage.py), a
    C call."""
    lp = h.lp
    if lp is not None:
        return 16 + size_class(len(lp))
    d = h.d
    n = d.count  # type: ignore[union-attr]
    size = 16 + 56 + dict_table_bytes(n)
    if n:
        k = min(samples, n) if samples > 0 else n  # SAMPLES 0: every field
        total = d.sds_first(k) + 24 * k  # type: ignore[union-attr]
        size += int(total / k * n)
    return size


def hash_get(h: Hash, field: bytes) -> bytes | None:
    """Hash.get's body, a module function that the compiled hash commands call in C
    (hashtype.pxd): Hash keeps def methods only (a cpdef method would add a vtable pointer to
    every hash)."""
    lp = h.lp
    if lp is None:
        return h.d.get(field)  # type: ignore[union-attr]  # Hash's invariant: d is set when lp is None
    return pair_value(lp, field)


SIZERS[Hash] = hash_usage  # MEMORY USAGE's estimate by exact class (alloc.py)
