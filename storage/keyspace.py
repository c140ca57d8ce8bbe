"""One logical database: keys, their values, their expiry, and a SCAN-stable slot index.

Values: strings are `bytes` (Redis's int/embstr/raw encodings are inferred from content),
`EmbStr` (bytes Redis holds embstr although they read as an integer) or `bytearray` (a string that
was modified in place by APPEND/SETRANGE/SETBIT: Redis's `raw`).  Every other type is an object
with a `type_name` attribute.

The table.  A key lives at a position of parallel arrays: `_keys` and `_values` (lists), and
`_meta`, three uint32 per position: the low 32 bits of the key's hash, the stamp of its last
access (OBJECT IDLETIME and LRU eviction: hundredths of a second, modulo 2**32, see `_stamp`) and
its slot in the deadline arrays plus one (0: no deadline).  `_index` is an open-addressed table of
positions (int32, -1 empty), at most two thirds full, probed linearly from the hash's low bits; a
delete moves the later keys of its run back, so there are no tombstones.  Beside it `_tags` holds
a byte per slot: 0 empty, else 0x80 and the hash's top seven bits, so that a probe passes the
slots of other keys reading one line of tags, not their positions and hashes.  A key costs its
two list slots, 12 bytes of `_meta` and 7.5-15 bytes of index and tags beside its key and value
objects: where a dict of records paid a dict entry, a record object and a SCAN slot per key.
Compiled (keyspace.pxd), Database is an extension type and the arrays are read through C pointers.

Positions are stable: a key keeps its position for as long as it exists, deleted positions become
holes that later keys reuse, and only an empty database restarts at 0.  A SCAN cursor is a
position, so a key present for the whole iteration is returned at least once, as Redis
guarantees, with O(1) work per visited position and no per-cursor server state.

Expiry: a key with a deadline holds a slot in `_ttl_pos` (its position) and `_ttl_when` (its
absolute deadline in ms), arrays with holes reused like the positions.  `expires` is a read-only
mapping view (key -> deadline) for the callers that ask (TTL, INFO's expires=, persistence,
eviction); `nexpires` is its length, what the hot paths test.  Keys expire lazily (a lookup with
the cached command time past the deadline deletes them) and actively: the expire cycle
(server/events/expirecycle.py) runs sampling loops (`active_expire`) that walk the deadline arrays
from a cursor, as Redis's activeExpireCycle walks the expires dict, deleting the keys past their
deadline.  A new deadline's slot is swapped with the one its key's hash picks, so the slots' order
is unrelated to the order of writing, as the expires dict's is (see `_set_deadline`).  A deadline
costs 12 bytes beside the key.

Lookups.  `get` (every lookup that touches) and `set`/`add` stamp the access time; `peek` is the
lookup that does not touch (Redis's LOOKUP_NOTOUCH: TYPE, TTL, EXISTS, OBJECT); `stored` and
`find` see a key even past its deadline (a bare dictFind).  `replace` swaps the value and keeps the
stamp; `find` + `value_at` + `put_at` are the fast paths' read-modify-write of one key (INCR).
`set`/`add` read the time from `clock`, which the server points at itself (t_keys.attach) so
they use the cached command time (`add` takes it from a caller that has just read it).

LFU (OBJECT FREQ under an LFU maxmemory-policy): after `set_lfu(True)` lookups also keep Redis's
logarithmic access counter with decay in `freq` (key -> counter), so the common (non-LFU) path
pays one test for it; the inlined fast paths test `lfu` and step aside.
As in Redis, the lookup counts an access and an overwrite keeps the counter (dbOverwrite), so a
writer counts once for each lookup Redis's makes (GETSET twice: its read, then setKey's).

Memory accounting (only while maxmemory is set, server/memory/evict.py): `sizes`, an int64 per
position beside `_meta`, holds the figure last counted for the key there (0 for a hole), `mem`
their sum; a delete takes its key's figure out of both, so a reused position starts at 0.

Hooks: `watched` (key -> watchers, for WATCH) and the `*_hook` callables are consulted only when
non-empty or installed, so the bookkeeping costs nothing when unused.  Every key comes into being
through `set`, `set_pairs` or `add` (Redis's dbAdd), which is where `new_hook` fires.
"""

from __future__ import annotations

import random
import time
from array import array
from collections.abc import Callable, Iterator
from typing import Any

from raxdb.storage.alloc import dict_slots, sds_grown_room, sds_new_room
from raxdb.storage.stream import Stream

try:  # compiled, the decorators below are Cython's; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython: they do nothing
    from types import SimpleNamespace

    cython = SimpleNamespace(cclass=lambda cls: cls, compiled=False)


class RawStr(bytearray):
    """A string modified in place (APPEND, SETRANGE, SETBIT, ...): Redis's raw encoding, an sds
    string that grows greedily.  `size` is its allocation (what MEMORY USAGE counts) and `cap` what
    it holds before the next growth, following sdsnewlen when it is made from a value and
    sdsMakeRoomFor when it grows, so MEMORY USAGE reports the room Redis keeps for appends."""

    __slots__ = ("size", "cap")
    size: int
    cap: int

    @classmethod
    def of(cls, value: bytes | bytearray) -> RawStr:
        """`value` as a raw sds.  A short string (embstr or int in Redis) or a built one (bytearray:
        SETRANGE's or BITOP's sdsnewlen) is a fresh sdsnewlen of its length; a longer `bytes` is
        the client's argument Redis stored itself, after tryObjectEncoding trimmed its spare room
        away when that was more than a tenth of its length."""
        s = cls(value)
        n = len(value)
        s.size, s.cap = sds_new_room(n)
        if n > 44 and type(value) is bytes and s.cap - n > n // 10:
            s.cap = n
        return s

    def make_room(self, addlen: int) -> None:
        """Room for `addlen` more bytes (sdsMakeRoomFor); call before growing the string."""
        if self.cap - len(self) < addlen:
            self.size, self.cap = sds_grown_room(len(self), addlen)


class EmbStr(bytes):
    """A string value that Redis keeps embstr-encoded whatever its content: INCRBYFLOAT builds its
    result with createStringObjectFromLongDouble, which never tries the int encoding, so "3" stays
    embstr there while SET's "3" becomes int.  Only such values carry the class; the hot paths test
    `type(v) is bytes` and send it to their general branch, which treats it as any string."""

    __slots__ = ()


def is_string(value: Any) -> bool:
    """The value contract's string test (storage/__init__.py): bytes, EmbStr, bytearray or RawStr,
    by exact class, since a set's `Intset` is a bytes subclass too."""
    cls = type(value)
    return cls is bytes or cls is bytearray or cls is EmbStr or cls is RawStr


class WallClock:
    """The default clock of a Database; the server installs itself (its cached `now_ms`) instead."""

    __slots__ = ()

    @property
    def now_ms(self) -> int:
        return int(time.time() * 1000)


INT64_MAX = (1 << 63) - 1
NO_TTL = INT64_MAX  # what a deadline array holds for a key without one: never <= the time
_MIN_INDEX = 8  # the index's smallest size (a power of two)
# An index of at least this many slots grows in steps (see `_grow_step`); a smaller one is rebuilt
# at once (a quarter of a millisecond or less).
_STEPPED_GROWTH = 1 << 16
_GROWTH_STEP = 8  # positions the next index takes in per insert while it is built
_ZERO_STEP = 1 << 16  # bytes of the next index's tags emptied per insert before that
_META = 3  # uint32 fields per position in `_meta`: hash, access second, TTL slot + 1
_U32 = 0xFFFFFFFF


# ---- the typed arrays ----------------------------------------------------------------------------
# Compiled, an array's items are read and written through its C data pointer (keyspace.pxd types
# the arrays as cpython.array); interpreted, through indexing.  Bounds are the callers' to keep.
def _u32(a: array[int], i: int) -> int:
    if cython.compiled:
        return a.data.as_uints[i]
    return a[i]


def _set_u32(a: array[int], i: int, v: int) -> None:
    if cython.compiled:
        a.data.as_uints[i] = v
    else:
        a[i] = v


def _i32(a: array[int], i: int) -> int:
    if cython.compiled:
        return a.data.as_ints[i]
    return a[i]


def _set_i32(a: array[int], i: int, v: int) -> None:
    if cython.compiled:
        a.data.as_ints[i] = v
    else:
        a[i] = v


def _u8(a: array[int], i: int) -> int:
    if cython.compiled:
        return a.data.as_uchars[i]
    return a[i]


def _set_u8(a: array[int], i: int, v: int) -> None:
    if cython.compiled:
        a.data.as_uchars[i] = v
    else:
        a[i] = v


def _i64(a: array[int], i: int) -> int:
    if cython.compiled:
        return a.data.as_longlongs[i]
    return a[i]


def _set_i64(a: array[int], i: int, v: int) -> None:
    if cython.compiled:
        a.data.as_longlongs[i] = v
    else:
        a[i] = v


def _grow(a: array[int], n: int) -> None:
    """Append `n` items to `a` (their values are the caller's to set).  Compiled, a resize of the
    array in place (over-allocated, as list.append is), without the method call frombytes costs."""
    if cython.compiled:
        resize_smart(a, len(a) + n)  # noqa: F821 (keyspace.pxd cimports it)
    else:
        a.frombytes(bytes(a.itemsize * n))


def _empty_index(size: int) -> array[int]:
    """An index of `size` slots (a power of two), all empty (-1).  Compiled, made as `_unset`
    makes it, then every byte set to 0xFF (-1 in each C int); interpreted, by repetition.  Either way no temporary of its size is
    allocated beside it (a big freed block can stay in the heap, and in the resident set)."""
    if cython.compiled:
        a = _unset(_INDEX_TEMPLATE, size)
        memset(a.data.as_uchars, 0xFF, size * cython.sizeof(cython.int))  # noqa: F821 (keyspace.pxd cimports it)
        return a
    return array("i", _EMPTY_SLOT) * size


def _empty_tags(size: int) -> array[int]:
    """The index's tags for `size` slots, all empty (0); made as _empty_index is."""
    if cython.compiled:
        a = _unset(_TAGS_TEMPLATE, size)
        _zero(a, 0, size)
        return a
    return array("B", _EMPTY_TAG) * size


_EMPTY_SLOT = (-1,)
_EMPTY_TAG = (0,)


def _unset(template: array[int], size: int) -> array[int]:
    """An array of `template`'s type and `size` items whose values are the caller's to write.
    Compiled, they are not written here: a big block comes fresh from the system, and its pages
    cost their first touch (~2.5 us each, 13 ms for the 20 MB of a 4M-slot index) only as they
    are written.  And the block is had by a realloc from nothing (an empty array resized), not a
    malloc: a process-wide allocator hook that moves big growing blocks into mappings of their
    own (a server process's: server/memory/bigarrays.py) then places the index and its tags in
    one from the start, so that the tables a growth leaves behind are unmapped rather than left
    as holes in the heap (without the hook, CPython's realloc from nothing is its malloc).
    Interpreted, `template` (one item) repeated."""
    if cython.compiled:
        a = clone(template, 0, False)  # noqa: F821 (keyspace.pxd cimports it)
        resize(a, size)  # noqa: F821 (keyspace.pxd cimports it)
        return a
    return template * size


def _zero(a: array[int], start: int, n: int) -> None:
    """Items start..start+n of a byte array set to 0."""
    if cython.compiled:
        memset(a.data.as_uchars + start, 0, n)  # noqa: F821 (keyspace.pxd cimports it)
    else:
        a[start:start + n] = array("B", bytes(n))


_INDEX_TEMPLATE = array("i", _EMPTY_SLOT)
_TAGS_TEMPLATE = array("B", _EMPTY_TAG)
_NO_ARRAY = array("B")


def _stored_is(keys: list[bytes | None], p: int, key: bytes) -> bool:
    """Is the key stored at position p `key`?  Compiled, read without taking a reference to the
    stored key: a reference count written is a page copied while a snapshot's child shares the
    heap, and a probe would write one for every key it compares."""
    if cython.compiled:
        return _same_key(_list_item(keys, p), key)  # noqa: F821 (keyspace.pxd)
    k = keys[p]
    return k is key or k == key


def _is_hole(keys: list[bytes | None], p: int) -> bool:
    """Is position p free?  Compiled, read as `_stored_is` reads."""
    if cython.compiled:
        return _list_item(keys, p) == cython.cast(cython.p_void, None)  # noqa: F821 (keyspace.pxd)
    return keys[p] is None


def _overfull(n: int, size: int) -> bool:
    """Would `n` keys fill an index of `size` slots past two thirds (the most it is let hold)?"""
    return n * 3 > size * 2


def _half_full(n: int, size: int) -> bool:
    """Would `n` keys fill an index of `size` slots past half (where a big one starts growing)?"""
    return n * 2 > size


def _place(index: array[int], tags: array[int], mask: int, h: int, p: int) -> None:
    """Put position `p`, whose key's hash's low 32 bits are `h`, into the first empty slot of its
    probe."""
    i = h & mask
    while _u8(tags, i):
        i = (i + 1) & mask
    _set_i32(index, i, p)
    _set_u8(tags, i, _tag(h))


def _unlink(index: array[int], tags: array[int], meta: array[int], mask: int, i: int) -> None:
    """Empty slot `i` of an index.  Linear probing deletes by moving back each later key of the
    run that may sit at `i`, so the index needs no tombstones."""
    j = i
    while True:
        j = (j + 1) & mask
        if not _u8(tags, j):
            break
        q = _i32(index, j)
        k = _u32(meta, q * _META) & mask  # where q's key would sit
        if (i < j and (k <= i or k > j)) or (i > j and k <= i and k > j):
            _set_i32(index, i, q)
            _set_u8(tags, i, _u8(tags, j))
            i = j
    _set_i32(index, i, -1)
    _set_u8(tags, i, 0)


def _tag(h: int) -> int:
    """A slot's tag for a key whose hash's low 32 bits are h: its top seven bits, and 0x80 (0 is
    an empty slot)."""
    return 0x80 | (h >> 25)


def _stamp(ms: int) -> int:
    """A key's access stamp for a time in ms: hundredths of a second, modulo 2**32 (an idle time is
    a difference of stamps, right up to 248 days, where Redis's 24-bit LRU clock of seconds wraps
    at 194)."""
    return (ms // 10) & _U32


def _idle(meta: array[int], p: int, stamp: int) -> int:
    """Milliseconds since the last access of the key at position `p`, to a hundredth of a second,
    at the access stamp `stamp` (0 for one stamped after it)."""
    d = (stamp - _u32(meta, p * _META + 1)) & _U32
    return 0 if d >= 0x80000000 else d * 10


def _records(keys: list[bytes | None], values: list[Any], meta: array[int], when: array[int]) -> Iterator[tuple[bytes, Any, int | None]]:
    """Database.records over copies of its arrays."""
    for p in range(len(keys)):
        k = keys[p]
        if k is not None:
            t = meta[p * _META + 2]
            yield k, values[p], (None if t == 0 else when[t - 1])


class Expires:
    """The keys with a deadline and their deadlines, as a read-only mapping (Redis's db->expires,
    seen from outside the keyspace)."""

    __slots__ = ("db",)

    def __init__(self, db: Database) -> None:
        self.db = db

    def __len__(self) -> int:
        return self.db.nexpires

    def __bool__(self) -> bool:
        return self.db.nexpires > 0

    def get(self, key: bytes, default: int | None = None) -> int | None:
        when = self.db.ttl_ms(key)
        return default if when is None else when

    def __contains__(self, key: object) -> bool:
        return self.db.ttl_ms(key) is not None  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[bytes]:
        return iter([k for k, _ in self.db.deadlines()])

    def keys(self) -> Iterator[bytes]:
        return iter(self)

    def items(self) -> Iterator[tuple[bytes, int]]:
        return iter(self.db.deadlines())

    def values(self) -> Iterator[int]:
        return iter([w for _, w in self.db.deadlines()])


@cython.cclass
class Database:
    """One logical database (see the module essay); compiled, an extension type (keyspace.pxd)."""

    def __init__(self, dbid: int) -> None:
        self.id = dbid
        self._reset()
        self.expires = Expires(self)
        self.watched: dict[bytes, list[Any]] = {}
        self.blocking: dict[bytes, Any] = {}
        # LFU mode (set_lfu): `freq` holds key -> (minutes << 8) | LFU counter, empty at first
        # after the switch, while the keys already there must start counting at once
        self.lfu = False
        self.clock: Any = WallClock()  # anything with `now_ms`; the server installs itself
        # Must a change of one of this db's keys be signalled (Redis's signalModifiedKey)?  True
        # while clients WATCH keys here or client tracking is on; the server sets it, and the
        # writers test it before they signal, so that a db nobody listens to pays one test.
        self.signals = False
        # expired_hook(db, key): keyspace notification + replication of the DEL, installed by the server.
        self.expired_hook: Callable[[Database, bytes], None] | None = None
        # ready_hook(db, key, value): Redis's signalKeyAsReady, for a key that clients block on
        # (`blocking` has it) and that was created with `value` (dbAdd), or that held the stream
        # `value` and was deleted or overwritten (a blocked XREADGROUP must then fail);
        # installed by the server.
        self.ready_hook: Callable[[Database, bytes, Any], None] | None = None
        # new_hook(db, key): a key was created (the "new" keyspace event, Redis's dbAdd); installed
        # by the server only while notify-keyspace-events has 'n'.
        self.new_hook: Callable[[Database, bytes], None] | None = None
        self.stat_expired = 0
        # INFO keyspace's avg_ttl: the active expire cycle's running average (ms) of the remaining
        # TTL of the keys it samples and leaves alive, 2% weight to each loop's mean (Redis's
        # db->avg_ttl); 0 again when a cycle finds no deadline, on a flush, swapped by SWAPDB.
        self.avg_ttl = 0
        # While clients are paused (CLIENT PAUSE) the dataset stays as it is: a key past its
        # deadline reads as missing but is not deleted (expireIfNeeded's pause check).
        self.expire_paused = False
        # While the server loads its data (an RDB, the AOF replayed), nothing expires: a key past
        # its deadline is alive, and a deadline already past is set rather than deleting the key
        # (Redis's keyIsExpired and checkAlreadyExpired during loading).  A replayed command must
        # see what the command saw when it was logged, or what it moved elsewhere is lost; keys
        # still past their deadline expire once loading ends.
        self.loading = False
        # Does a lookup count as an access (OBJECT IDLETIME's stamp, the LFU counter)?  Not while
        # a snapshot's child runs (Redis's lookupKey skips them while hasActiveChildProcess): the
        # stamp written would copy its page of `_meta` for the child.  The server sets it.
        self.touch = True
        # Memory accounting (server/memory/evict.py, only while maxmemory is set; None otherwise):
        # the bytes last counted for the key at each position (int64, 0 for a hole or a key not
        # counted yet), and their sum.  A deleted key's figure leaves the sum at once; the server
        # counts the keys a command touched again after it runs (`recounted`).  Per position, not
        # per key: the recount reaches it through the probe that finds the value, with no hash
        # lookup of its own, and a counted key costs 8 bytes.
        self.sizes: array[int] | None = None
        self.mem = 0
        # Cluster mode (storage/slots.py's SlotIndex, installed by the cluster): the keys of each
        # hash slot, kept by _insert_at and _remove.  None in a standalone server.
        self.slot_keys: Any = None
        # Hash field expiration (storage/hashfe.py): a heap of (deadline, key) for the hashes whose
        # fields have deadlines, each the hash's earliest when pushed; entries go stale (the key
        # renamed, the field persisted) and are checked when popped (server/events/hashexpire.py).
        self.hfe: list[tuple[int, bytes]] = []

    def _reset(self) -> None:
        """No keys: every array empty, positions restarting at 0."""
        self._keys: list[bytes | None] = []
        self._values: list[Any] = []
        self._meta = array("I")
        self._free: list[int] = []
        self._index = _empty_index(_MIN_INDEX)
        self._tags = _empty_tags(_MIN_INDEX)
        self._mask = _MIN_INDEX - 1
        self._drop_growth()
        self.count = 0
        self._ttl_pos = array("i")
        self._ttl_when = array("q")
        self._ttl_free: list[int] = []
        self._ttl_cursor = 0
        self.nexpires = 0
        self.freq: dict[bytes, int] = {}
        # The buckets Redis's main and expires dicts would have for these keys (used_memory's
        # table terms, server/memory/evict.py): a dict grows to the power of two above its count
        # as keys are added (_dictExpandIfNeeded) and shrinks only when the cron finds it under a
        # tenth full (`resize_tables`, tryResizeHashTables), so deleting keys leaves its size be.
        # A flush frees both (dictEmpty); deleting the last key does not (`_remove` keeps them).
        self.main_slots = 0
        self.expires_slots = 0

    # ---- the table -----------------------------------------------------------------------------
    def _slot(self, key: bytes, h: int) -> int:
        """The index slot holding `key`'s position, or the empty slot where it would go (`h` is
        the low 32 bits of its hash).  The probe reads the tags, one byte a slot: a slot whose tag
        differs is passed without reading its position, its hash or its key (each a cache miss
        in a big table); one whose tag matches (the key's, or 1 in 128 others) compares the key."""
        tags = self._tags
        index = self._index
        keys = self._keys
        mask = self._mask
        tag = _tag(h)
        i = h & mask
        while True:
            t = _u8(tags, i)
            if t == 0:
                return i
            if t == tag and _stored_is(keys, _i32(index, i), key):
                return i
            i = (i + 1) & mask

    def _pos(self, key: bytes, h: int) -> int:
        """The position of `key` (`h`: its hash's low 32 bits), or -1: `_slot`'s probe for the
        callers that need only the position, so that a key not stored costs the tags' line alone."""
        i = self._slot(key, h)
        return _i32(self._index, i) if _u8(self._tags, i) else -1

    def find(self, key: bytes) -> int:
        """The key's position, or -1: expired or not, without touching it."""
        return self._pos(key, hash(key) & _U32)

    def _rebuild_index(self, size: int) -> None:
        """A new index of `size` slots over every live position (a growth under way is dropped)."""
        index = _empty_index(size)
        tags = _empty_tags(size)
        mask = size - 1
        meta = self._meta
        keys = self._keys
        for p in range(len(keys)):
            if not _is_hole(keys, p):
                _place(index, tags, mask, _u32(meta, p * _META), p)
        self._index = index
        self._tags = tags
        self._mask = mask
        self._drop_growth()

    # Growth in steps.  Rebuilding an index is a pass over every key with a cache miss each (5 ms
    # of CPU at 350k keys, 30 ms at 1.4M), a pause for every client; Redis rehashes its dict
    # incrementally for the same reason.  Here a big index that gets half full starts its
    # successor, twice its size, beside it: each insert first empties a slice of its tags (an
    # index slot is read only where its tag is set, so the slots need no filling), then moves
    # `_GROWTH_STEP` more positions into it (positions below `_next_done` are in it), inserts and removes below that mark are made in
    # both, and lookups read the current index alone, whose content does not change.  Once every
    # position is in (well before the current index is two thirds full, the most it is let hold:
    # inserts between a half and two thirds move a size's worth of positions), the successor
    # replaces it.
    def _drop_growth(self) -> None:
        self._next_index = _NO_ARRAY  # no growth under way: `_next_mask` 0, these never written
        self._next_tags = _NO_ARRAY
        self._next_mask = 0
        self._next_zeroed = 0
        self._next_done = 0

    def _grow_step(self, n: int) -> bool:
        """One step of the growth toward a larger index for `n` keys, started if need be; True
        when the larger index has just replaced the current one."""
        last = _overfull(n, self._mask + 1)  # the current index cannot take the next key
        if not self._next_mask:
            size = (self._mask + 1) * 2
            self._next_index = _unset(_INDEX_TEMPLATE, size)
            self._next_tags = _unset(_TAGS_TEMPLATE, size)
            self._next_mask = size - 1
            self._next_zeroed = 0
            self._next_done = 0
        index = self._next_index
        tags = self._next_tags
        mask = self._next_mask
        size = mask + 1
        z = self._next_zeroed
        if z < size:  # first the tags are emptied, a slice per step (their first touch)
            step = size - z if last else min(size - z, _ZERO_STEP)
            _zero(tags, z, step)
            self._next_zeroed = z + step
            if z + step < size:
                return False
        meta = self._meta
        keys = self._keys
        end = len(keys)
        p = self._next_done
        stop = end if last else min(end, p + _GROWTH_STEP)
        while p < stop:
            if not _is_hole(keys, p):
                _place(index, tags, mask, _u32(meta, p * _META), p)
            p += 1
        self._next_done = p
        if p < end:
            return False
        self._index = index
        self._tags = tags
        self._mask = mask
        self._drop_growth()
        return True

    def reserve(self, n: int) -> None:
        """Room in the index for `n` keys in all, so that a load (a file's RESIZEDB, Redis's
        dictExpand) does not rebuild it again and again as it fills; nothing if it has the room."""
        size = self._mask + 1
        while _overfull(n, size):
            size *= 2
        if size > self._mask + 1:
            self._rebuild_index(size)

    def _insert(self, key: bytes, value: Any, now_ms: int) -> int:
        """Add `key`, which is not here, with `value`: its position."""
        return self._insert_at(key, value, now_ms, hash(key) & _U32, -1)

    def _insert_at(self, key: bytes, value: Any, now_ms: int, h: int, i: int) -> int:
        """`_insert` for a key whose hash's low 32 bits are `h` and whose probe ended at the empty
        index slot `i` (-1: not probed yet)."""
        size = self._mask + 1
        if self._next_mask or (size >= _STEPPED_GROWTH and _half_full(self.count + 1, size)):
            if self._grow_step(self.count + 1):
                i = -1
        elif _overfull(self.count + 1, size):
            self._rebuild_index(size * 2)
            i = -1
        sizes = self.sizes
        if self._free:
            p = self._free.pop()
            self._keys[p] = key
            self._values[p] = value
        else:
            p = len(self._keys)
            self._keys.append(key)
            self._values.append(value)
            _grow(self._meta, _META)
            if sizes is not None:
                _grow(sizes, 1)
                _set_i64(sizes, p, 0)
        meta = self._meta
        _set_u32(meta, p * _META, h)
        _set_u32(meta, p * _META + 1, _stamp(now_ms))
        _set_u32(meta, p * _META + 2, 0)
        index = self._index
        tags = self._tags
        if i < 0:
            mask = self._mask
            i = h & mask
            while _u8(tags, i):
                i = (i + 1) & mask
        _set_i32(index, i, p)
        _set_u8(tags, i, _tag(h))
        if p < self._next_done:  # a reused position the next index has passed
            _place(self._next_index, self._next_tags, self._next_mask, h, p)
        self.count += 1
        if self.count > self.main_slots:
            self.main_slots = dict_slots(self.count)
        if self.slot_keys is not None:
            self.slot_keys.add(key)
        return p

    def _remove(self, i: int) -> None:
        """Take the key whose position is in index slot `i` out of the table (its TTL, if any,
        already dropped)."""
        index = self._index
        tags = self._tags
        meta = self._meta
        mask = self._mask
        p = _i32(index, i)
        if self.slot_keys is not None:
            self.slot_keys.discard(self._keys[p])
        _unlink(index, tags, meta, mask, i)
        if p < self._next_done:  # the next index holds p too
            self._unlink_next(p)
        self.count -= 1
        if not self.count:
            # Empty: no key can be mid-iteration, so the positions restart compact (Redis's
            # dicts keep their tables until the cron shrinks them).
            freq = self.freq
            counting = self.sizes is not None
            main, expires = self.main_slots, self.expires_slots
            self._reset()
            self.freq = freq
            self.main_slots, self.expires_slots = main, expires
            if counting:
                self.sizes = array("q")
            return
        self._keys[p] = None
        self._values[p] = None
        self._free.append(p)
        size = mask + 1
        if size > _MIN_INDEX and self.count * 8 < size:  # an eighth full: a quarter of the size
            self._rebuild_index(size // 4 if size > 4 * _MIN_INDEX else _MIN_INDEX)

    def _unlink_next(self, p: int) -> None:
        """Take position `p` out of the index being grown."""
        index = self._next_index
        tags = self._next_tags
        mask = self._next_mask
        i = _u32(self._meta, p * _META) & mask
        while _i32(index, i) != p:
            i = (i + 1) & mask
        _unlink(index, tags, self._meta, mask, i)

    def _deadline(self, p: int) -> int:
        """The deadline of the key at position p: NO_TTL when it has none."""
        t = _u32(self._meta, p * _META + 2)
        return NO_TTL if t == 0 else _i64(self._ttl_when, t - 1)

    # ---- lookups -------------------------------------------------------------------------------
    def get(self, key: bytes, now_ms: int) -> Any:
        """The live value of `key` or None, expiring it first if its deadline has passed; a hit
        counts as an access (OBJECT IDLETIME, LFU)."""
        i = self._slot(key, hash(key) & _U32)
        if not _u8(self._tags, i):
            return None
        p = _i32(self._index, i)
        t = _u32(self._meta, p * _META + 2)
        if t and _i64(self._ttl_when, t - 1) <= now_ms and not self.loading:
            self._expire_slot(key, i)
            return None
        if self.touch:
            _set_u32(self._meta, p * _META + 1, _stamp(now_ms))
            if self.lfu:
                self._lfu_touch(key, now_ms)
        return self._values[p]

    def peek(self, key: bytes, now_ms: int) -> Any:
        """Like `get` but not an access (Redis's LOOKUP_NOTOUCH)."""
        i = self._slot(key, hash(key) & _U32)
        if not _u8(self._tags, i):
            return None
        p = _i32(self._index, i)
        t = _u32(self._meta, p * _META + 2)
        if t and _i64(self._ttl_when, t - 1) <= now_ms and not self.loading:
            self._expire_slot(key, i)
            return None
        return self._values[p]

    def stored(self, key: bytes) -> Any:
        """The value as stored, even past its deadline and without touching it (a bare dictFind:
        MEMORY USAGE sizes a key that has expired but was not yet reclaimed, as Redis does)."""
        p = self._pos(key, hash(key) & _U32)
        return None if p < 0 else self._values[p]

    def value_at(self, p: int) -> Any:
        """The value at position p (from `find`)."""
        return self._values[p]

    def put_at(self, p: int, value: Any, now_ms: int) -> None:
        """Store `value` at position p (from `find`) as an access at now_ms: the fast paths'
        overwrite of a key they found without a TTL, outside LFU mode."""
        self._values[p] = value
        _set_u32(self._meta, p * _META + 1, _stamp(now_ms))

    def record_id(self, key: bytes) -> int:
        """A number naming the key's record while the key exists (DEBUG OBJECT's address of a value
        that is not shared): INCR rewrites a counter in that record as Redis rewrites the robj in
        place, so the number stays put where the bytes object does not."""
        return id(self._values) + 16 * self.find(key)

    def exists(self, key: bytes, now_ms: int) -> bool:
        return self.peek(key, now_ms) is not None

    def access_ms(self, key: bytes) -> int | None:
        """The time of the key's last access, to a hundredth of a second (from the clock's time
        and the key's idle time), or None if there is no such key."""
        now = self.clock.now_ms
        return None if self.find(key) < 0 else now - self.idle_ms(key, now)

    def idle_ms(self, key: bytes, now_ms: int) -> int:
        """Milliseconds since the key's last access, to a hundredth of a second (0 for a missing
        key, or one stamped after now_ms)."""
        p = self.find(key)
        if p < 0:
            return 0
        return _idle(self._meta, p, _stamp(now_ms))

    def set_access_ms(self, key: bytes, ms: int) -> None:
        """Make the key's last access `ms` (RESTORE IDLETIME, a loaded LRU idle time)."""
        p = self.find(key)
        if p >= 0:
            _set_u32(self._meta, p * _META + 1, _stamp(ms))

    def ttl_ms(self, key: bytes) -> int | None:
        """The key's deadline in ms, or None if it has none (or does not exist)."""
        p = self.find(key)
        if p < 0:
            return None
        t = _u32(self._meta, p * _META + 2)
        return None if t == 0 else _i64(self._ttl_when, t - 1)

    def records(self) -> Iterator[tuple[bytes, Any, int | None]]:
        """(key, value, deadline or None) for every key, expired or not, from a snapshot of the
        arrays (what a dump writes)."""
        return _records(list(self._keys), list(self._values), array("I", self._meta), array("q", self._ttl_when))

    def items(self) -> list[tuple[bytes, Any]]:
        """(key, value) for every key, expired or not, as a snapshot."""
        values = self._values
        return [(k, values[p]) for p, k in enumerate(self._keys) if k is not None]

    def key_list(self) -> list[bytes]:
        """Every key, expired or not, as a snapshot."""
        return [k for k in self._keys if k is not None]

    def deadlines(self) -> list[tuple[bytes, int]]:
        """(key, deadline) for every key with one, as a snapshot."""
        keys = self._keys
        when = self._ttl_when
        return [(keys[p], _i64(when, t)) for t, p in enumerate(self._ttl_pos) if p >= 0]  # type: ignore[misc]  # a live TTL slot's key is never a hole

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return self.count > 0

    def __contains__(self, key: object) -> bool:
        """Whether the key is stored, expired or not (a bare dictFind)."""
        return self.find(key) >= 0  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.key_list())

    def keys(self) -> Iterator[bytes]:
        return iter(self.key_list())

    def positions(self) -> int:
        """How many positions the arrays hold, live or free (what SCAN cursors range over)."""
        return len(self._keys)

    # ---- writes --------------------------------------------------------------------------------
    def set(self, key: bytes, value: Any, keep_ttl: bool = False, when_ms: int = -1) -> None:
        """Create or overwrite `key`; an overwrite drops the TTL unless keep_ttl (SET's semantics).
        With `when_ms` (>= 0) the key gets that deadline, in the same probe (SET's EX/PX, SETEX):
        an overwritten key's deadline slot is rewritten in place."""
        now = self.clock.now_ms
        p = self._pos(key, hash(key) & _U32)
        if p < 0:
            p = self._insert(key, value, now)
            if when_ms >= 0:
                self._set_deadline(p, when_ms)
            if self.lfu:
                self.freq[key] = (((now // 60000) & 0xFFFF) << 8) | LFU_INIT_VAL
            if self.blocking or self.new_hook is not None:
                self._created(key, value)
            return
        if when_ms >= 0:
            self._set_deadline(p, when_ms)
        elif not keep_ttl and _u32(self._meta, p * _META + 2):
            self._drop_ttl(p)
        old = self._values[p]
        if self.blocking and key in self.blocking and self.ready_hook is not None and type(old) is Stream:
            # Overwriting a stream wakes its waiters (a blocked XREADGROUP then fails), as Redis's
            # dbOverwrite does; overwriting any other type wakes no one, even when the new value
            # is what they wait for (ZUNIONSTORE over a set leaves BZPOPMIN blocked in 7.0).
            self.ready_hook(self, key, old)
        # An overwrite keeps the LFU counter, as dbOverwrite keeps the old object's: the access
        # was counted by the lookup every writer makes first (setKey's lookupKeyWrite).
        self._values[p] = value
        _set_u32(self._meta, p * _META + 1, _stamp(now))

    def set_pairs(self, args: list[bytes], start: int) -> None:
        """`set` for each key, value pair of args[start:] (MSET), in one call: per-pair method
        calls were most of MSET's cost."""
        if self.nexpires or self.blocking or self.lfu or self.new_hook:
            for i in range(start, len(args), 2):
                self.set(args[i], args[i + 1])
            return
        now = self.clock.now_ms
        stamp = _stamp(now)
        for i in range(start, len(args), 2):
            key = args[i]
            p = self._pos(key, hash(key) & _U32)
            if p < 0:
                self._insert(key, args[i + 1], now)
            else:
                self._values[p] = args[i + 1]
                _set_u32(self._meta, p * _META + 1, stamp)

    def add(self, key: bytes, value: Any, now_ms: int = -1) -> None:
        """Create `key`, which must not exist; `now_ms`, the clock's time when the caller has it
        (a command's lookup has just read it), else read here."""
        now = now_ms if now_ms >= 0 else self.clock.now_ms
        self._insert(key, value, now)
        if self.lfu:
            self.freq[key] = (((now // 60000) & 0xFFFF) << 8) | LFU_INIT_VAL
        if self.blocking or self.new_hook is not None:
            self._created(key, value)

    def add_new(self, key: bytes, value: Any) -> bool:
        """`add` if `key` is not stored (True), else nothing (False): one probe for both, what a
        load does for each key."""
        h = hash(key) & _U32
        i = self._slot(key, h)
        if _u8(self._tags, i):
            return False
        now = self.clock.now_ms
        self._insert_at(key, value, now, h, i)
        if self.lfu:
            self.freq[key] = (((now // 60000) & 0xFFFF) << 8) | LFU_INIT_VAL
        if self.blocking or self.new_hook is not None:
            self._created(key, value)
        return True

    def _created(self, key: bytes, value: Any) -> None:
        """Redis's dbAdd side effects: waiters on the key are signalled (only here and for a stream
        that goes away: a push onto an existing list wakes no one) and the "new" event fires."""
        if self.blocking and key in self.blocking and self.ready_hook is not None:
            self.ready_hook(self, key, value)
        if self.new_hook is not None:
            self.new_hook(self, key)

    def replace(self, key: bytes, value: Any) -> None:
        """Swap the value object of an existing key in place, keeping its TTL and access time."""
        self._values[self.find(key)] = value

    def delete(self, key: bytes) -> bool:
        i = self._slot(key, hash(key) & _U32)
        if not _u8(self._tags, i):
            return False
        self._delete_slot(key, i)
        return True

    def _delete_slot(self, key: bytes, i: int) -> None:
        """`delete` of `key`, whose position is in index slot `i` (the caller's probe found it)."""
        p = _i32(self._index, i)
        value = self._values[p]
        if self.blocking and key in self.blocking and self.ready_hook is not None and type(value) is Stream:
            self.ready_hook(self, key, value)  # dbGenericDelete: a blocked XREADGROUP must fail
            i = self._slot(key, hash(key) & _U32)  # the hook may have changed the table
            if not _u8(self._tags, i):
                return
            p = _i32(self._index, i)
        if _u32(self._meta, p * _META + 2):
            self._drop_ttl(p)
        if self.freq:
            self.freq.pop(key, None)
        sizes = self.sizes
        if sizes is not None:  # (a hole's figure is 0: a reused position starts uncounted)
            self.mem -= _i64(sizes, p)
            _set_i64(sizes, p, 0)
        self._remove(i)

    def evict_key(self, key: bytes, volatile: bool) -> int:
        """Delete `key` as an eviction does, in one probe: its figure last counted (0 when figures
        are not kept), or -1 if it is not here, or has no deadline while `volatile` (a ghost of
        eviction's pool, which takes the next candidate)."""
        i = self._slot(key, hash(key) & _U32)
        if not _u8(self._tags, i):
            return -1
        p = _i32(self._index, i)
        if volatile and not _u32(self._meta, p * _META + 2):
            return -1
        sizes = self.sizes
        figure = 0 if sizes is None else _i64(sizes, p)
        self._delete_slot(key, i)
        return figure

    def pop(self, key: bytes) -> Any:
        value = self.stored(key)
        if value is not None:
            self.delete(key)
        return value

    def set_expire(self, key: bytes, when_ms: int) -> None:
        """Give the existing `key` the deadline `when_ms` (ms)."""
        self._set_deadline(self.find(key), when_ms)

    def _set_deadline(self, p: int, when_ms: int) -> None:
        """Give the key at position p the deadline `when_ms` (ms): its slot rewritten if it has
        one, else a slot taken (a free one first) and swapped with the live slot its hash picks.

        The swap keeps the slots' order unrelated to the time the deadlines were set, as the
        order of Redis's expires dict is its keys' hashes: the expire cycle's sampling loops
        read runs of neighbouring slots, and where those held keys written together (a freed run
        refilled, an appended one) a loop of fresh keys would end a cycle among stale ones."""
        t = _u32(self._meta, p * _META + 2)
        if t == 0:
            if self._ttl_free:
                t = self._ttl_free.pop()
            else:
                t = len(self._ttl_pos)
                self._ttl_pos.append(-1)
                self._ttl_when.append(NO_TTL)
            r = _u32(self._meta, p * _META) % len(self._ttl_pos)
            q = _i32(self._ttl_pos, r)
            if r != t and q >= 0:  # the key at r moves to t; this one takes r
                _set_i32(self._ttl_pos, t, q)
                _set_i64(self._ttl_when, t, _i64(self._ttl_when, r))
                _set_u32(self._meta, q * _META + 2, t + 1)
                t = r
            _set_i32(self._ttl_pos, t, p)
            _set_u32(self._meta, p * _META + 2, t + 1)
            self.nexpires += 1
            if self.nexpires > self.expires_slots:
                self.expires_slots = dict_slots(self.nexpires)
        else:
            t -= 1
        _set_i64(self._ttl_when, t, when_ms)

    def _drop_ttl(self, p: int) -> None:
        """Forget the deadline of the key at position p, which has one."""
        t = _u32(self._meta, p * _META + 2) - 1
        _set_u32(self._meta, p * _META + 2, 0)
        self.nexpires -= 1
        if self.nexpires:
            _set_i32(self._ttl_pos, t, -1)
            _set_i64(self._ttl_when, t, NO_TTL)
            self._ttl_free.append(t)
        else:  # none left: the arrays restart compact
            self._ttl_pos = array("i")
            self._ttl_when = array("q")
            self._ttl_free = []
            self._ttl_cursor = 0

    def resize_tables(self) -> None:
        """tryResizeHashTables, on the model's tables: a dict of more than 4 buckets under a tenth
        full (htNeedsResize) shrinks to the power of two at or above its count (dictResize)."""
        if self.main_slots > 4 and self.count * 100 // self.main_slots < 10:
            self.main_slots = dict_slots(self.count)
        if self.expires_slots > 4 and self.nexpires * 100 // self.expires_slots < 10:
            self.expires_slots = dict_slots(self.nexpires)

    def persist(self, key: bytes) -> bool:
        """Remove the key's deadline; False if it had none."""
        p = self.find(key)
        if p < 0 or not _u32(self._meta, p * _META + 2):
            return False
        self._drop_ttl(p)
        return True

    def flush(self) -> int:
        n = self.count
        self._reset()
        self.avg_ttl = 0
        self.hfe = []
        if self.slot_keys is not None:
            self.slot_keys.clear()
        if self.sizes is not None:
            self.sizes = array("q")
            self.mem = 0
        return n

    # ---- memory accounting (server/memory/evict.py) -------------------------------------------
    def count_sizes(self, counting: bool) -> None:
        """Keep a figure per key (`sizes`, all 0: none counted yet) or stop keeping them."""
        self.sizes = array("q", bytes(8 * len(self._keys))) if counting else None
        self.mem = 0

    def recounted(self, p: int, figure: int) -> int:
        """The key at position p (from `find`, while `sizes` is kept) counted again at `figure`
        bytes: by how much its figure grew."""
        sizes: array[int] = self.sizes  # type: ignore[assignment]
        grown = figure - _i64(sizes, p)
        if grown:
            _set_i64(sizes, p, figure)
            self.mem += grown
        return grown

    def size_of(self, key: bytes) -> int:
        """The figure last counted for `key` (0 if it is not here or figures are not kept)."""
        sizes = self.sizes
        if sizes is None:
            return 0
        p = self.find(key)
        return 0 if p < 0 else _i64(sizes, p)

    def size_map(self) -> dict[bytes, int]:
        """key -> figure last counted, of every key (tests' check of the running figures)."""
        sizes = self.sizes
        if sizes is None:
            return {}
        return {k: _i64(sizes, p) for p, k in enumerate(self._keys) if k is not None}

    def swap_contents(self, other: Database) -> None:
        """SWAPDB: exchange keyspaces; hooks, watchers and blocked clients stay with the db number."""
        self._drop_growth()  # the state below is the current index alone
        other._drop_growth()
        mine = self._state()
        self._restore(other._state())
        other._restore(mine)
        for db in (self, other):  # a slot index stays with its db (cluster mode's db 0): rebuilt
            if db.slot_keys is not None:
                db.slot_keys.rebuild(db.key_list())

    def _state(self) -> tuple[Any, ...]:
        return (self._keys, self._values, self._meta, self._free, self._index, self._tags, self._mask, self.count,
                self._ttl_pos, self._ttl_when, self._ttl_free, self._ttl_cursor, self.nexpires, self.freq,
                self.sizes, self.mem, self.hfe, self.avg_ttl, self.main_slots, self.expires_slots)

    def _restore(self, s: tuple[Any, ...]) -> None:
        (self._keys, self._values, self._meta, self._free, self._index, self._tags, self._mask, self.count,
         self._ttl_pos, self._ttl_when, self._ttl_free, self._ttl_cursor, self.nexpires, self.freq,
         self.sizes, self.mem, self.hfe, self.avg_ttl, self.main_slots, self.expires_slots) = s

    # ---- expiry --------------------------------------------------------------------------------
    def _expire(self, key: bytes) -> None:
        self._expire_slot(key, self._slot(key, hash(key) & _U32))

    def _expire_slot(self, key: bytes, i: int) -> None:
        """Expire `key`, whose position is in index slot `i`: deleted (the one probe its caller
        made serves), counted, and the expired hook told."""
        if self.expire_paused:
            return  # logically expired (the caller treats it as gone), deleted after the pause
        self._delete_slot(key, i)
        self.stat_expired += 1
        if self.expired_hook is not None:
            self.expired_hook(self, key)

    def expire_if_needed(self, key: bytes, now_ms: int) -> bool:
        p = self.find(key)
        if p >= 0 and self._deadline(p) <= now_ms and not self.loading:
            self._expire(key)
            return True
        return False

    def already_expired(self, when_ms: int, now_ms: int) -> bool:
        """checkAlreadyExpired: does a deadline given to EXPIRE, GETEX or RESTORE delete the key
        at once?  Not while loading (see `loading`)."""
        return when_ms <= now_ms and not self.loading

    def active_expire(self, now_ms: int, num: int, visits: int) -> tuple[int, int]:
        """One sampling loop of the active expire cycle (server/events/expirecycle.py): from
        where the last loop stopped, the deadline slots are walked until `num` keys were sampled,
        `visits` slots were visited or every slot was once, and each sampled key past its
        deadline is deleted; the keys left alive update `avg_ttl`.  Returns (sampled, expired)."""
        if self.loading or self.expire_paused:
            return 0, 0
        ttl_pos = self._ttl_pos
        n = len(ttl_pos)
        if visits > n:
            visits = n
        pos = self._ttl_cursor
        sampled = expired = 0
        ttl_sum = ttl_samples = 0
        while sampled < num and visits > 0:
            if pos >= n:
                pos = 0
            p = _i32(ttl_pos, pos)
            when = _i64(self._ttl_when, pos)
            pos += 1
            visits -= 1
            if p < 0:
                continue
            sampled += 1
            if when <= now_ms:
                self._expire(self._keys[p])  # type: ignore[arg-type]  # a live TTL slot's key is never a hole
                expired += 1
                if not self.nexpires:
                    break  # the arrays restarted empty
            else:
                ttl_sum += when - now_ms
                ttl_samples += 1
        self._ttl_cursor = pos if self.nexpires else 0
        if ttl_samples:
            mean = ttl_sum // ttl_samples
            if not self.avg_ttl:
                self.avg_ttl = mean
            # Redis's integer arithmetic, each term divided first
            self.avg_ttl = self.avg_ttl // 50 * 49 + mean // 50
        return sampled, expired

    def expire_all_due(self, now_ms: int) -> int:
        """Delete every key past its deadline (one walk of every deadline slot); how many."""
        return self.active_expire(now_ms, self.nexpires, len(self._ttl_pos))[1]

    # ---- iteration -----------------------------------------------------------------------------
    def scan(self, cursor: int, count: int) -> tuple[int, list[bytes]]:
        """Keys from position `cursor` on: about `count` of them, visiting at most 10 * count
        positions (Redis's bound on empty buckets per call).  Returns (next cursor or 0 when done,
        keys).

        Any cursor is accepted: one past the end finishes the iteration."""
        slots = self._keys
        n = len(slots)
        count = max(count, 1)
        keys: list[bytes] = []
        limit = min(n, cursor + 10 * count)
        pos = cursor
        while pos < limit and len(keys) < count:
            end = min(limit, pos + count - len(keys))
            keys.extend([k for k in slots[pos:end] if k is not None])
            pos = end
        return (0 if pos >= n else pos), keys

    def key_stride(self, step: int) -> list[bytes]:
        """Every `step`-th position's key, holes left out: the same keys while nothing moves."""
        return [k for k in self._keys[::step] if k is not None]

    def random_key(self) -> bytes | None:
        """A random key (not uniform, like Redis's): probes the positions, which are at least a
        quarter full unless many keys were deleted; then falls back to a linear pick."""
        if not self.count:
            return None
        return self._keys[self._random_position()]

    def _random_position(self) -> int:
        """random_key's position (the database holds a key).  A draw is random.random()'s, one C
        call (randrange's is several Python-level ones, and eviction draws five per key it frees).
        Positions mostly holes (many keys deleted, which leaves the position array as long as it
        was) fall back to the first key at or after a random position: a walk over the holes
        between two keys, not a list of every key made for each draw (eviction draws five a key
        it frees, and a cache evicting down to its last keys makes the holes)."""
        slots = self._keys
        n = len(slots)
        rnd = random.random
        for _ in range(64 if self.count * 4 < n else 1 << 30):
            p = int(rnd() * n)
            # (a draw of n: the product rounded up; the key itself is not read, its object is a
            # cache miss of its own, which eviction's draws mostly do not need)
            if p < n and not _is_hole(slots, p):
                return p
        p = int(rnd() * n) % n
        while _is_hole(slots, p):
            p += 1
            if p == n:
                p = 0
        return p

    def _sample_positions(self, count: int, volatile: bool) -> list[int]:
        """The positions of up to `count` random keys, with a TTL only if `volatile` (Redis's
        dictGetSomeKeys on the main or the expires dict, for eviction): not uniform and possibly
        repeated, as there."""
        out: list[int] = []
        if volatile:
            if not self.nexpires:
                return out
            ttl_pos = self._ttl_pos
            n = len(ttl_pos)
            rnd = random.random
            # (at least 64 draws, as _random_position's: the slots may be mostly holes after many
            # deletions, and the fallback below is a pass over all of them)
            for _ in range(max(count * 4, 64)):
                t = int(rnd() * n)
                p = _i32(ttl_pos, t) if t < n else -1
                if p >= 0:
                    out.append(p)
                    if len(out) == count:
                        break
            if not out:  # mostly holes: the first live slot at or after a random one (a walk, as
                t = int(rnd() * n) % n  # _random_position's)
                p = _i32(ttl_pos, t)
                while p < 0:
                    t += 1
                    if t == n:
                        t = 0
                    p = _i32(ttl_pos, t)
                out.append(p)
            return out
        if self.count:
            out = [self._random_position() for _ in range(count)]
        return out

    def sample_keys(self, count: int, volatile: bool) -> list[bytes]:
        """Up to `count` random keys, with a TTL only if `volatile` (`_sample_positions`)."""
        keys = self._keys
        return [keys[p] for p in self._sample_positions(count, volatile)]  # type: ignore[misc]  # a drawn position is never a hole

    def sample_idle(self, count: int, volatile: bool, now_ms: int, floor: int = -1) -> list[tuple[int, bytes]]:
        """sample_keys' draw as (idle_ms, key) pairs, the LRU policies' score read at the drawn
        position (no probe per key), of the keys idle longer than `floor` ms only: eviction's
        pool, full, takes no key idle less than its worst, and a key left out is not read."""
        keys = self._keys
        meta = self._meta
        stamp = _stamp(now_ms)
        out: list[tuple[int, bytes]] = []
        for p in self._sample_positions(count, volatile):
            idle = _idle(meta, p, stamp)
            if idle > floor:
                out.append((idle, keys[p]))  # type: ignore[arg-type]  # never a hole
        return out

    def sample_freq(self, count: int, volatile: bool, now_ms: int, floor: int = -1) -> list[tuple[int, bytes]]:
        """sample_keys' draw as (255 - LFU counter, key) pairs, the LFU policies' score (the
        counter decayed as lfu_counter's), of the scores above `floor` only (as sample_idle's)."""
        keys = self._keys
        freq = self.freq
        minutes = now_ms // 60000
        out: list[tuple[int, bytes]] = []
        for p in self._sample_positions(count, volatile):
            key: bytes = keys[p]  # type: ignore[assignment]  # never a hole
            packed = freq.get(key) if freq else None
            score = 255 if packed is None else 255 - _lfu_decayed(packed, minutes)
            if score > floor:
                out.append((score, key))
        return out

    def sample_deadlines(self, count: int, before: int = NO_TTL) -> list[tuple[int, bytes]]:
        """sample_keys' draw of keys with a TTL as (deadline ms, key) pairs (volatile-ttl's
        score), of the deadlines before `before` only (as sample_idle's `floor`)."""
        keys = self._keys
        out: list[tuple[int, bytes]] = []
        for p in self._sample_positions(count, True):
            when = self._deadline(p)
            if when < before:
                out.append((when, keys[p]))  # type: ignore[arg-type]  # never a hole
        return out

    # ---- LFU -----------------------------------------------------------------------------------
    def set_lfu(self, enabled: bool) -> None:
        """Start or stop keeping LFU counters (maxmemory-policy *-lfu).  Keys that exist when it
        starts have counter 0 until accessed, as data needs time to adjust in Redis too."""
        if self.lfu and not enabled:
            self.freq = {}
        self.lfu = enabled

    def lfu_counter(self, key: bytes, now_ms: int) -> int:
        """The decayed LFU counter (OBJECT FREQ)."""
        packed = self.freq.get(key)
        if packed is None:
            return 0
        return _lfu_decayed(packed, now_ms // 60000)

    def set_lfu_counter(self, key: bytes, counter: int, now_ms: int) -> None:
        """Give the key the LFU counter `counter` as of now (RESTORE FREQ, a loaded LFU field);
        nothing outside LFU mode."""
        if self.lfu:
            self.freq[key] = (((now_ms // 60000) & 0xFFFF) << 8) | counter

    def _lfu_touch(self, key: bytes, now_ms: int) -> None:
        minutes = (now_ms // 60000) & 0xFFFF
        packed = self.freq.get(key)
        counter = 0 if packed is None else _lfu_decayed(packed, minutes)
        self.freq[key] = (minutes << 8) | _lfu_incremented(counter)

    def copy_lfu(self, src: bytes, dst_db: Database, dst: bytes) -> None:
        """COPY/MOVE: `dst` in dst_db gets src's LFU counter, if it has one."""
        f = self.freq.get(src)
        if f is not None:
            dst_db.freq[dst] = f


# lfu-log-factor and lfu-decay-time, kept current by the server's config hooks.
LFU_PARAMS = {"log_factor": 10, "decay_time": 1}
LFU_INIT_VAL = 5


def _lfu_decayed(packed: int, minutes: int) -> int:
    counter = packed & 255
    decay_time = LFU_PARAMS["decay_time"]
    if decay_time > 0:
        elapsed = (minutes - (packed >> 8)) & 0xFFFF  # Redis keeps a 16-bit minutes clock
        periods = elapsed // decay_time
        if periods:
            counter = 0 if periods > counter else counter - periods
    return counter


def _lfu_incremented(counter: int) -> int:
    if counter >= 255:
        return 255
    base = counter - LFU_INIT_VAL
    if base < 0:
        base = 0
    if random.random() < 1.0 / (base * LFU_PARAMS["log_factor"] + 1):
        counter += 1
    return counter
