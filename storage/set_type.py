"""The set value type (TYPE "set") with Redis 7.0's two encodings, held as Redis holds them.

What the keyspace keeps for a set depends on its encoding:
- an intset (OBJECT ENCODING "intset", while every member is the canonical text of an int64 and
  there are at most set-max-intset-entries of them) is kept as its bytes alone, an `Intset`: the
  blob `storage.intset` reads, in Redis's format, so DUMP / RDB write it as it is and RESTORE / RDB
  load keep the bytes given.  No wrapper: a small set of numbers is a key with one value object,
  as in Redis (compiled, `Intset` has no GC header either, see set_type.pxd);
- a hashtable is kept as an `RSet` whose `data` is a Python `set` of the members (`bytes`).
Commands work on an `RSet` either way: `as_set` gives one for any stored set (for an `Intset`, a
new RSet over a copy of its bytes), and after a write `stored()` says what the keyspace must keep
(a new `Intset`, or the RSet itself once it is a hashtable).  So an RSet in the keyspace is always
a hashtable, an `Intset` is immutable (shared freely, by COPY too), and `len()` of an `Intset` is
its byte length, not its member count: size it through `as_set`.

An `RSet` is a two-field wrapper (Redis's robj): `data` is either an intset blob (exact `bytes`,
only while a command works on it) or the Python set, and `_scan` caches SSCAN's index of a
hashtable (below).  Redis 7.0 has no listpack sets (7.2
added them).  It converts intset -> hashtable on the first non-integer member or when the count
passes the limit, and never back; only SPOP with a large count rebuilds the set and may land on
an intset again (`spop_many`).  The limit is passed in by the caller (read from the config at
write time) so that CONFIG SET applies to the next write, as in Redis.

Random members (SPOP, SRANDMEMBER) of a hashtable come from CPython's own set table, the way
Redis's dictGetRandomKey draws a random bucket until it finds a full one: compiled (setup.py),
`_pick` reads the table through the PySetObject declarations in set_type.pxd and draws random slots
until one holds a member, so each draw is uniform over the members and costs O(table size /
members).  To keep that ratio bounded, as Redis's htNeedsResize does, a removal that leaves the
table under 1/10 full rebuilds the set at its size (`_shrink`).  Interpreted, the same functions
walk the set to a random position (O(n) per draw, correct and uniform, for the build without a C
compiler); SRANDMEMBER / SPOP of many members copy the members to a list once instead.

SSCAN walks a virtual hash table (`storage.hashscan`) whose index is built on the first SSCAN and
dropped by every mutation, so cursors keep Redis's guarantee (a member present for the whole
iteration is returned at least once) whatever happens to the Python set's own table; an intset
is returned whole by the first call, as Redis returns its compact encodings.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from raxdb.storage import intset
from raxdb.storage.alloc import dict_table_bytes, sds_alloc_sum, size_class
from raxdb.storage.hashscan import ScanIndex
from raxdb.storage.intset import canonical_int

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython

    _COMPILED = cython.compiled
except ImportError:  # interpreted without Cython: the class decorators below do nothing
    from types import SimpleNamespace

    cython = SimpleNamespace(cclass=lambda cls: cls, no_gc=lambda cls: cls)
    _COMPILED = False

_rng = random.getrandbits(64) | 1  # _rand's state (compiled: a C unsigned 64-bit)


def _reseed() -> None:
    """A forked process draws its own numbers: a server forked from raxdb.embed's template (which
    imported this module once for all of them) must not repeat its siblings' SRANDMEMBER / SPOP
    picks.  `random` reseeds itself in a forked child first (it registered its hook earlier)."""
    global _rng
    _rng = random.getrandbits(64) | 1


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_reseed)
_random = random.random
_EMPTY_SET_SIZE = sys.getsizeof(set())
_MIN_FILL = 10  # HASHTABLE_MIN_FILL: a table under 1/10 full is rebuilt smaller


# ---- CPython's set table -------------------------------------------------------------------------
def _rand() -> int:
    """Compiled only: the next number of a xorshift64* generator, a C unsigned 64-bit (a few
    instructions where random.getrandbits is a Python call; Redis draws with random())."""
    global _rng
    x = _rng
    x ^= x >> 12
    x ^= x << 25
    x ^= x >> 27
    _rng = x
    return x * cython.cast(cython.ulonglong, 2685821657736338717)


def _below(n: int) -> int:
    """A random integer in [0, n)."""
    if _COMPILED:
        return (_rand() >> 16) % n  # 48 random bits: the bias is below n / 2**48
    return int(_random() * n)


def _pick(s: set) -> bytes:
    """A member of the non-empty set `s`, uniformly at random."""
    if _COMPILED:
        # Draw slots of the table until one holds a member (neither empty nor the dummy a removal
        # leaves): every member has the same chance.  SetPtr, ObjPtr and the C types are declared
        # in set_type.pxd and exist only compiled.
        so = cython.cast(SetPtr, s)  # noqa: F821
        mask = so.mask
        table = so.table
        dummy = cython.cast(ObjPtr, _DUMMY)  # noqa: F821
        while True:
            key = table[(_rand() >> 16) & mask].key
            if key != cython.NULL and key != dummy:
                return cython.cast(object, key)
    return next(islice(s, _below(len(s)), None))


def _dummy() -> object:
    """Compiled only: the object CPython leaves in a set's table where a member was removed."""
    s = {0, 1}
    s.discard(0)
    return cython.cast(object, cython.cast(SetPtr, s).table[0].key)  # noqa: F821 (hash(0) is 0: slot 0)


def _slots(s: set) -> int:
    """The number of slots of `s`'s table (8 while it uses the set's built-in small table)."""
    if _COMPILED:
        return cython.cast(SetPtr, s).mask + 1  # noqa: F821
    extra = sys.getsizeof(s) - _EMPTY_SET_SIZE  # sys.getsizeof counts an allocated table's slots
    return extra // 16 if extra > 0 else 8


_DUMMY = _dummy() if _COMPILED else None


@cython.no_gc  # (compiled: no GC header, see set_type.pxd)
@cython.cclass
class RSet:
    type_name = "set"
    __slots__ = ("data", "_scan")

    def __init__(self, data: bytes | set[bytes] = intset.EMPTY) -> None:
        self.data = data
        self._scan: ScanIndex | None = None

    @classmethod
    def of(cls, members: Iterable[bytes], max_ints: int) -> RSet:
        """A set holding `members`, encoded as Redis would after adding them one by one to a new
        set: an intset if they are all integers and no more than `max_ints` (its width the widest
        any needs), a hashtable otherwise."""
        table = set(members)
        if len(table) <= max_ints:
            vals = []
            for m in table:
                v = canonical_int(m)
                if v is None:
                    return cls(table)
                vals.append(v)
            vals.sort()
            return cls(intset.from_values(vals))
        return cls(table)

    # ---- contract ------------------------------------------------------------------------------
    def __len__(self) -> int:
        d = self.data
        if type(d) is bytes:
            return (len(d) - 8) // d[0]  # intset.length, inlined: SADD and SREM ask it
        return len(d)

    def encoding(self) -> str:
        return "intset" if type(self.data) is bytes else "hashtable"

    def copy(self) -> RSet:
        d = self.data
        return RSet(d if type(d) is bytes else d.copy())  # an intset's bytes are immutable

    def mem_usage(self, samples: int = 5) -> int:
        """MEMORY USAGE's estimate: exact for an intset (the robj and its blob's allocation), for a
        hashtable Redis's dict (its bucket array) plus the average of the first `samples` entries
        (sds + dictEntry) times the count."""
        d = self.data
        if type(d) is bytes:
            return 16 + size_class(len(d))
        n = len(d)
        size = 16 + 56 + dict_table_bytes(n)
        if n:
            k = min(samples, n) if samples > 0 else n
            size += int((sds_alloc_sum(map(len, islice(d, k))) + 24 * k) / k * n)
        return size

    # ---- membership and updates ----------------------------------------------------------------
    def __contains__(self, m: bytes) -> bool:
        d = self.data
        if type(d) is not bytes:
            return m in d
        v = canonical_int(m)
        return v is not None and intset.contains(d, v)

    def add(self, m: bytes, max_ints: int) -> bool:
        d = self.data
        if type(d) is not bytes:
            if m in d:
                return False
            d.add(m)
            self._scan = None
            return True
        v = canonical_int(m)
        if v is None:  # not an integer: convert, then add
            self.data = d = set(intset.members(d))
            d.add(m)
            self._scan = None
            return True
        new = intset.add(d, v)
        if new is None:
            return False
        if (len(new) - 8) // new[0] > max_ints:
            self.data = set(intset.members(new))
        else:
            self.data = new
        return True

    def remove(self, m: bytes) -> bool:
        d = self.data
        if type(d) is not bytes:
            if m not in d:
                return False
            d.discard(m)
            self._scan = None
            self._shrink()
            return True
        v = canonical_int(m)
        if v is None:
            return False
        new = intset.remove(d, v)
        if new is None:
            return False
        self.data = new
        return True

    def _shrink(self) -> None:
        """Rebuild a hashtable whose table is under 1/10 full (deletions leave it as large as it
        grew): random draws stay cheap and the memory goes back, as Redis's dictResize does."""
        d = self.data
        slots = _slots(d)
        if slots > 8 and len(d) * _MIN_FILL < slots:
            self.data = set(d)

    # ---- reading -------------------------------------------------------------------------------
    def members(self) -> list[bytes]:
        """Every member in this encoding's iteration order (ascending numbers for an intset), as
        a new list."""
        d = self.data
        if type(d) is bytes:
            return intset.members(d)
        return list(d)

    def view(self) -> list[bytes] | set[bytes]:
        """Every member, for reading only while the set is not changed: a hashtable's own Python
        set (no copy: SMEMBERS writes its reply straight from it), an intset's members as a list."""
        d = self.data
        return intset.members(d) if type(d) is bytes else d

    def __iter__(self) -> Iterator[bytes]:
        d = self.data
        return iter(intset.members(d)) if type(d) is bytes else iter(d)

    def is_intset(self) -> bool:
        return type(self.data) is bytes

    def stored(self) -> Any:
        """What the keyspace keeps for this set: an intset as an `Intset` of its bytes, a
        hashtable as this RSet."""
        d = self.data
        return Intset(d) if type(d) is bytes else self

    # ---- randomness ----------------------------------------------------------------------------
    def random_member(self) -> bytes:
        d = self.data
        if type(d) is bytes:
            return b"%d" % intset.get(d, _below((len(d) - 8) // d[0]))
        return _pick(d)

    def pop_random(self) -> bytes:
        d = self.data
        if type(d) is bytes:
            v, self.data = intset.remove_at(d, _below((len(d) - 8) // d[0]))
            return b"%d" % v
        m = _pick(d)
        d.discard(m)
        self._scan = None
        self._shrink()
        return m

    def sample(self, k: int) -> list[bytes]:
        """`k` distinct random members (k <= len)."""
        d = self.data
        if type(d) is bytes:
            return [b"%d" % v for v in random.sample(intset.values(d), k)]
        if _COMPILED and k * 3 <= len(d):
            # few of many: draw until k distinct (SRANDMEMBER's CASE 4), in the order drawn
            picked: dict[bytes, None] = {}
            while len(picked) < k:
                picked[_pick(d)] = None
            return list(picked)
        return random.sample(list(d), k)

    def choices(self, k: int) -> list[bytes]:
        """`k` random members, with repetition."""
        d = self.data
        if type(d) is bytes:
            return [b"%d" % v for v in random.choices(intset.values(d), k=k)]
        if _COMPILED and k < len(d):
            return [_pick(d) for _ in range(k)]
        return random.choices(list(d), k=k)

    def spop_many(self, count: int, max_ints: int) -> tuple[list[bytes], RSet | None]:
        """Pop `count` (< len) distinct random members.  Returns (popped, replacement): when most of
        the set goes, Redis builds a new set from the few survivors (so its encoding is chosen
        afresh, possibly intset again) and the caller must store `replacement` under the key."""
        d = self.data
        n = len(self)
        remaining = n - count
        if remaining * 5 > count:  # SPOP's CASE 2: draw and remove `count` members
            if type(d) is bytes:
                vals = intset.values(d)
                gone = random.sample(vals, count)
                out = set(gone)
                self.data = intset.pack(d[0], [v for v in vals if v not in out])  # the width stays
                return [b"%d" % v for v in gone], None
            if _COMPILED:
                popped = []
                for _ in range(count):
                    m = _pick(d)
                    d.discard(m)
                    popped.append(m)
            else:
                popped = random.sample(list(d), count)
                d.difference_update(popped)
            self._scan = None
            self._shrink()
            return popped, None
        # CASE 3: draw the few that stay, build the new set from them, reply with the rest
        keep = self.sample(remaining)
        kept = set(keep)
        popped = [m for m in self.members() if m not in kept]
        return popped, RSet.of(keep, max_ints)

    # ---- SSCAN ---------------------------------------------------------------------------------
    def scan(self, cursor: int, count: int) -> tuple[int, list[bytes]]:
        d = self.data
        if type(d) is bytes:
            return 0, intset.members(d)
        idx = self._scan
        if idx is None:
            idx = self._scan = ScanIndex(d, len(d))
        return idx.scan(cursor, count)


# ---- the stored form of an intset ----------------------------------------------------------------
def _intset_encoding(self: bytes) -> str:
    return "intset"


def _intset_copy(self: bytes) -> bytes:
    return self  # immutable: a copy may share it


def _intset_mem_usage(self: bytes, samples: int = 5) -> int:
    return 16 + size_class(len(self))  # as RSet counts an intset: Redis's robj and the blob


def _intset_type() -> type:
    """`Intset`: a bytes subclass holding an intset blob, with the value contract's attributes
    (`type_name`, `encoding()`, `copy()`, `mem_usage()`; storage/__init__.py).  Compiled, made by
    C without a GC header (its instances refer to nothing but their type), so an intset costs
    what a bytes object of its length costs; interpreted, a plain subclass."""
    if _COMPILED:
        cls = _plain_bytes_subclass(b"raxdb.storage.set_type.Intset")  # noqa: F821 (set_type.pxd)
    else:
        cls = type("Intset", (bytes,), {"__slots__": (), "__module__": __name__})
    cls.type_name = "set"
    cls.encoding = _intset_encoding
    cls.copy = _intset_copy
    cls.mem_usage = _intset_mem_usage
    return cls


Intset = _intset_type()


def as_set(v: Any) -> RSet | None:
    """The RSet to work on for a stored value: the value itself when it is an RSet, a new RSet
    over a copy of the bytes of an `Intset` (the intset functions take exact bytes), None when
    `v` is not a set."""
    cls = type(v)
    if cls is RSet:
        return v
    if cls is Intset:
        return RSet(bytes(v))
    return None
