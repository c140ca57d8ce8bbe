"""The set value type (TYPE "set") with Redis 7.0's two encodings and 7.2's third, held as Redis
holds them.

What the keyspace keeps for a set depends on its encoding:
- an intset (OBJECT ENCODING "intset", while every member is the canonical text of an int64 and
  there are at most set-max-intset-entries of them) is kept as its bytes alone, an `Intset`: the
  blob `storage.intset` reads, in Redis's format, so DUMP / RDB write it as it is and RESTORE / RDB
  load keep the bytes given.  No wrapper: a small set of numbers is a key with one value object,
  as in Redis (compiled, `Intset` has no GC header either, see set_type.pxd);
- a hashtable is kept as an `RSet` whose `data` is a Python `set` of the members (`bytes`), made
  by `table_of` and so out of the cyclic collector (it holds bytes only);
- a listpack (Redis 7.2: compat-version 7.2+, OBJECT ENCODING "listpack") is kept as an `RSet`
  whose `data` is a Python `list` of the members in the listpack's order (appended at the tail,
  removed in place), which SMEMBERS and the other iterations follow as 7.2 does.  The listpack's
  bytes are built only when written out (DUMP / RDB type 20, `listpack_bytes`) and sized for
  MEMORY USAGE; the members are not held as one blob, so such a set costs what a list of bytes
  objects costs (no more than the hashtable it would be in 7.0 mode).
Commands work on an `RSet` either way: `as_set` gives one for any stored set (for an `Intset`, a
new RSet over a copy of its bytes), and after a write `stored()` says what the keyspace must keep
(a new `Intset`, or the RSet itself once it is a hashtable or a listpack).  So an RSet in the
keyspace is a hashtable or a listpack, an `Intset` is immutable (shared freely, by COPY too), and
`len()` of an `Intset` is its byte length, not its member count: size it through `as_set`.

An `RSet` is a two-field wrapper (Redis's robj): `data` is an intset blob (exact `bytes`, only
while a command works on it), the Python set or the listpack's list, and `_scan` caches SSCAN's
index of a hashtable (below).  The encoding limits come in as one tuple, `limits`:
(set-max-intset-entries, set-max-listpack-entries, set-max-listpack-value, newer), read from the
config at write time so that CONFIG SET applies to the next write, as in Redis.  In 7.0 mode the
two listpack limits are 0 and `newer` false: no listpack is ever made, and Redis 7.2's rules
(t_set.c's setTypeAddAux) then reduce to 7.0's, intset -> hashtable on the first non-integer
member or past the intset limit, never back.  From 7.2: an intset meeting a non-integer becomes a
listpack (its numbers ascending, then the new member) while it has fewer than the listpack limit
of members and neither the new member nor the text of its smallest or largest number is longer
than the value limit, else a hashtable; a listpack becomes a hashtable when a member past either
limit arrives.  Only SPOP with a large count and the commands that build a new set (`RSet.of`,
`RSet.built`) choose an encoding afresh.

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
from typing import TYPE_CHECKING, Any

from raxdb.storage import intset
from raxdb.storage.alloc import SIZERS, dict_table_bytes, sds_alloc_first, size_class
from raxdb.storage.hashscan import ScanIndex
from raxdb.storage.intset import canonical_int
from raxdb.storage.listpack import build, encode_entry, encoded_size, random_indexes

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython

    _COMPILED = cython.compiled
except ImportError:  # interpreted without Cython: the class decorators below do nothing
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False, cclass=lambda cls: cls, no_gc=lambda cls: cls)
    _COMPILED = False

if not _COMPILED:  # compiled, set_type.pxd cimports it: CPython's untrack
    from raxdb.storage.rax import untrack

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
# The limits of 7.0 mode (see the module's docstring): the intset's default, no listpacks.
LIMITS_70 = (512, 0, 0, False)
# The encoding limits, as `limits` (the module's docstring).
Limits = tuple[int, int, int, bool]


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


def _pick(s: set[bytes]) -> bytes:
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


def _slots(s: set[bytes]) -> int:
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

    def __init__(self, data: bytes | set[bytes] | list[bytes] = intset.EMPTY) -> None:
        self.data = data
        self._scan: ScanIndex | None = None

    @classmethod
    def of(cls, members: Iterable[bytes], limits: Limits) -> RSet:
        """A set holding `members`, encoded as Redis would after adding them one by one to a new
        intset (SUNION's and SDIFF's result, an RDB's plain set): an intset if they are all
        integers and no more than the limit (its width the widest any needs); in 7.0 mode a
        hashtable otherwise; from 7.2 a listpack of the integers before the first other member
        (ascending) and then the rest in order, when the conversion and every later add stay
        within the listpack limits, else a hashtable."""
        if not limits[1]:  # 7.0 mode: no listpacks, and the order does not matter
            return cls(_intset_or_table(table_of(members), limits[0]))
        table = dict.fromkeys(members)  # distinct, in order
        if len(table) <= limits[0]:
            d = _intset_or_table(table, limits[0])
            if type(d) is bytes:
                return cls(d)
        # the intset phase: the integers before the first other member (ints only, within limit)
        lead = []
        for m in table:
            v = canonical_int(m)
            if v is None:
                break
            lead.append(v)
        k = len(lead)
        if k > limits[0] or k >= len(table):  # past the intset limit first: a hashtable
            return cls(table_of(table))
        lead.sort()
        if k and max(len(b"%d" % lead[0]), len(b"%d" % lead[-1])) > limits[2]:
            return cls(table_of(table))
        members_lp = [b"%d" % v for v in lead]
        members_lp.extend(islice(table, k, None))
        return cls(_listpack_or_table(members_lp, limits))

    @classmethod
    def built(cls, members: list[bytes], limits: Limits, from_intset: bool) -> RSet:
        """SINTERSTORE's result, `members` distinct in the order the smallest source gives them:
        Redis adds them to an intset when that source is one (`from_intset`), else to a listpack
        (7.0: an intset), then makes an intset of the result when every member is an integer and
        they fit.  In 7.0 mode that is `of`'s choice."""
        if not limits[1] or from_intset:
            return cls.of(members, limits)
        d = _intset_or_table(members, limits[0])
        return cls(d if type(d) is bytes else _listpack_or_table(list(members), limits))

    @classmethod
    def create(cls, first: bytes, hint: int, limits: Limits) -> RSet:
        """An empty set of the encoding Redis 7.2's setTypeCreate chooses for `hint` members of
        which `first` is the first: an intset when it is an integer and the hint fits, a listpack
        when the hint fits that, else a hashtable.  (In 7.0 mode, an intset or a hashtable; either
        ends as 7.0's, whose SADD starts from an intset.)"""
        if hint <= limits[0] and canonical_int(first) is not None:
            return cls()
        if hint <= limits[1]:
            return cls([])
        return cls(table_of(()))

    # ---- contract ------------------------------------------------------------------------------
    def __len__(self) -> int:
        d = self.data
        if type(d) is bytes:
            return (len(d) - 8) // d[0]  # intset.length, inlined: SADD and SREM ask it
        return len(d)

    def encoding(self) -> str:
        d = self.data
        if type(d) is set:
            return "hashtable"
        return "intset" if type(d) is bytes else "listpack"

    def copy(self) -> RSet:
        d = self.data
        if type(d) is bytes:
            return RSet(d)  # an intset's bytes are immutable
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert not isinstance(d, bytes)
        return RSet(table_of(d) if type(d) is set else d.copy())

    def mem_usage(self, samples: int = 5) -> int:
        return set_usage(self, samples)

    def listpack_bytes(self) -> bytes:
        """A listpack set's listpack, as Redis 7.2 holds it (RDB type 20's body)."""
        d = self.data
        return build(b"".join([encode_entry(m) for m in d]), len(d))

    # ---- membership and updates ----------------------------------------------------------------
    def __contains__(self, m: bytes) -> bool:
        d = self.data
        if type(d) is not bytes:
            return m in d
        v = canonical_int(m)
        return v is not None and intset.contains(d, v)

    def add(self, m: bytes, limits: Limits) -> bool:
        d = self.data
        if type(d) is set:
            if m in d:
                return False
            d.add(m)
            self._scan = None
            return True
        if type(d) is list:
            if m in d:
                return False
            if len(d) < limits[1] and len(m) <= limits[2]:
                d.append(m)
            else:  # past a listpack limit: a hashtable
                d = self.data = table_of(d)
                d.add(m)
            return True
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(d, bytes)
        v = canonical_int(m)
        if v is None:  # not an integer: convert, then add
            n = (len(d) - 8) // d[0]
            if n < limits[1] and len(m) <= limits[2] and (
                    not n or max(len(b"%d" % intset.get(d, 0)), len(b"%d" % intset.get(d, n - 1))) <= limits[2]):
                lp = intset.members(d)
                lp.append(m)
                self.data = lp
                return True
            self.data = d = table_of(intset.members(d))
            d.add(m)
            self._scan = None
            return True
        new = intset.add(d, v)
        if new is None:
            return False
        if (len(new) - 8) // new[0] > limits[0]:
            self.data = table_of(intset.members(new))
        else:
            self.data = new
        return True

    def hint(self, count: int, limits: Limits) -> None:
        """Redis 7.2's setTypeMaybeConvert before SADD adds `count` members: a listpack or an
        intset whose limit the count passes becomes a hashtable at once (even if the members are
        already there)."""
        d = self.data
        if type(d) is list:
            if count > limits[1]:
                self.data = table_of(d)
        elif type(d) is bytes and count > limits[0]:
            self.data = table_of(intset.members(d))

    def remove(self, m: bytes) -> bool:
        d = self.data
        if type(d) is set:
            if m not in d:
                return False
            d.discard(m)
            self._scan = None
            self._shrink()
            return True
        if type(d) is list:
            try:
                d.remove(m)
            except ValueError:
                return False
            return True
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(d, bytes)
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
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(d, set)  # called for a hashtable only
        slots = _slots(d)
        if slots > 8 and len(d) * _MIN_FILL < slots:
            self.data = table_of(d)

    # ---- reading -------------------------------------------------------------------------------
    def members(self) -> list[bytes]:
        """Every member in this encoding's iteration order (ascending numbers for an intset, the
        listpack's order for a listpack), as a new list."""
        d = self.data
        if type(d) is bytes:
            return intset.members(d)
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert not isinstance(d, bytes)
        return list(d)

    def view(self) -> list[bytes] | set[bytes]:
        """Every member, for reading only while the set is not changed: a hashtable's own Python
        set or listpack list (no copy: SMEMBERS writes its reply straight from it), an intset's
        members as a new list."""
        d = self.data
        if type(d) is bytes:
            return intset.members(d)
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert not isinstance(d, bytes)
        return d

    def __iter__(self) -> Iterator[bytes]:
        d = self.data
        if type(d) is bytes:
            return iter(intset.members(d))
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert not isinstance(d, bytes)
        return iter(d)

    def is_intset(self) -> bool:
        return type(self.data) is bytes

    def stored(self) -> Any:
        """What the keyspace keeps for this set: an intset as an `Intset` of its bytes, a
        hashtable or a listpack as this RSet."""
        d = self.data
        return Intset(d) if type(d) is bytes else self

    # ---- randomness ----------------------------------------------------------------------------
    def random_member(self) -> bytes:
        d = self.data
        if type(d) is set:
            return _pick(d)
        if type(d) is list:
            return d[_below(len(d))]
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(d, bytes)
        return b"%d" % intset.get(d, _below((len(d) - 8) // d[0]))

    def pop_random(self) -> bytes:
        d = self.data
        if type(d) is set:
            m = _pick(d)
            d.discard(m)
            self._scan = None
            self._shrink()
            return m
        if type(d) is list:
            return d.pop(_below(len(d)))
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(d, bytes)
        v, self.data = intset.remove_at(d, _below((len(d) - 8) // d[0]))
        return b"%d" % v

    def sample(self, k: int) -> list[bytes]:
        """`k` distinct random members (k <= len)."""
        d = self.data
        if type(d) is bytes:  # only the picks read from the intset
            return [b"%d" % intset.get(d, i) for i in random.sample(range(intset.length(d)), k)]
        if type(d) is list:
            return random.sample(d, k)
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(d, set)
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
        if type(d) is bytes:  # only the picks read from the intset
            return [b"%d" % intset.get(d, i) for i in random_indexes(intset.length(d), k)]
        if type(d) is list:
            return random.choices(d, k=k)
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(d, set)
        if _COMPILED and k < len(d):
            return [_pick(d) for _ in range(k)]
        return random.choices(list(d), k=k)

    def spop_many(self, count: int, limits: Limits) -> tuple[list[bytes], RSet | None]:
        """Pop `count` (< len) distinct random members.  Returns (popped, replacement): when most of
        the set goes, Redis builds a new set from the few survivors (so its encoding is chosen
        afresh, possibly intset again) and the caller must store `replacement` under the key."""
        d = self.data
        n = len(self)
        remaining = n - count
        if type(d) is list:
            # Redis 7.2 walks a listpack once, forward: the members drawn (CASE 2) or kept (CASE 3)
            # come in the listpack's order, and the survivors stay a listpack in that order.
            if remaining * 5 > count:
                gone = set(random.sample(range(n), count))
                self.data = [m for i, m in enumerate(d) if i not in gone]
                return [d[i] for i in sorted(gone)], None
            kept = set(random.sample(range(n), remaining))
            return [m for i, m in enumerate(d) if i not in kept], RSet([d[i] for i in sorted(kept)])
        if remaining * 5 > count:  # SPOP's CASE 2: draw and remove `count` members
            if type(d) is bytes:
                vals = intset.values(d)
                drawn = random.sample(vals, count)
                out = set(drawn)
                self.data = intset.pack(d[0], [v for v in vals if v not in out])  # the width stays
                return [b"%d" % v for v in drawn], None
            if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
                assert isinstance(d, set)
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
        kept_members = set(keep)
        popped = [m for m in self.members() if m not in kept_members]
        if limits[3] and type(d) is set:  # 7.2 adds a hashtable's survivors to a new listpack
            return popped, RSet(_listpack_or_table(keep, limits))
        return popped, RSet.of(keep, limits)

    # ---- SSCAN ---------------------------------------------------------------------------------
    def scan(self, cursor: int, count: int) -> tuple[int, list[bytes]]:
        d = self.data
        if type(d) is bytes:
            return 0, intset.members(d)
        if type(d) is list:  # a compact encoding: all of it in one reply
            return 0, list(d)
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(d, set)
        idx = self._scan
        if idx is None:
            idx = self._scan = ScanIndex(d, len(d))
        return idx.scan(cursor, count)


def set_usage(s: RSet, samples: int = 5) -> int:
    """RSet.mem_usage, MEMORY USAGE's estimate: exact for an intset or a listpack (the robj and its
    blob's allocation), for a hashtable Redis's dict (its bucket array) plus the average of the
    first `samples` entries (sds + dictEntry) times the count.  A module function on the typed set
    (set_type.pxd, no method table added to the object): a write under a memory limit sizes its
    set again after every SADD or SREM (server/memory/usage.py), a C call."""
    d = s.data
    if type(d) is bytes:
        return 16 + size_class(len(d))
    if type(d) is list:
        return 16 + size_class(listpack_size(d))
    if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
        assert isinstance(d, set)
    n = len(d)
    size = 16 + 56 + dict_table_bytes(n)
    if n:
        k = min(samples, n) if samples > 0 else n
        size += int((sds_alloc_first(d, k) + 24 * k) / k * n)
    return size


def table_of(members: Iterable[bytes]) -> set[bytes]:
    """A hashtable's set of `members`, out of the cyclic collector (compiled: storage/rax.py's
    `untrack`): it holds bytes only, so no cycle passes through it.  Tracked, a big set stayed young
    from the row that grew it to the next collection, which walked every member (7 ms for 100,000,
    docs/speed-log.md, 2026-11-29, h-tail2), and walked it again in generation 1.  Every set an RSet
    holds is made here (storage/rdb.py's loads too); CPython's set operations never track a set again."""
    s = set(members)
    untrack(s)
    return s


def _intset_or_table(members: Any, max_ints: int) -> Any:
    """Distinct `members`: the intset of them when they are all integers and no more than
    `max_ints` (its width the widest any needs), else `members` as given."""
    if len(members) > max_ints:
        return members
    vals = []
    for m in members:
        v = canonical_int(m)
        if v is None:
            return members
        vals.append(v)
    vals.sort()
    return intset.from_values(vals)


def _listpack_or_table(members: list[bytes], limits: Limits) -> list[bytes] | set[bytes]:
    """Distinct `members` added in order to an empty listpack: the list when they stay within the
    listpack limits, else (converted on the way) a hashtable of them."""
    if len(members) > limits[1] or any(len(m) > limits[2] for m in members):
        return table_of(members)
    return members


def listpack_size(members: list[bytes]) -> int:
    """The bytes of a listpack of `members`: its header, their entries and its terminator."""
    return 7 + sum([encoded_size(m) for m in members])


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


SIZERS[RSet] = set_usage  # MEMORY USAGE's estimate by exact class (alloc.py)
