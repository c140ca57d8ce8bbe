"""The set value type (TYPE "set") with Redis 7.0's two encodings.

- "intset" while every member is the canonical text of an int64 and there are at most
  set-max-intset-entries of them (`storage.intset.IntSet`, iterated in ascending order);
- "hashtable" otherwise.  Redis 7.0 converts intset -> hashtable on the first non-integer member or
  when the count passes the limit, and never back (only SPOP with a large count rebuilds the set and
  may land on an intset again; see `spop_many`).

Hashtable layout: `items` (a list) plus `pos` (member -> index in `items`).  Membership, add and
remove are O(1) (removal moves the last item into the hole), and a uniformly random member is one
`random.choice` away, which SPOP / SRANDMEMBER need and a Python `set` cannot give.  SSCAN walks a
virtual hash table (`storage.hashscan`) whose index is cached in `_scan` and dropped by every
mutation, so cursors keep Redis's guarantees while members move inside `items`.

The limit is passed in by the caller (read from the config at write time) so that CONFIG SET applies
to the next write, as in Redis.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator

from raxdb.storage.alloc import dict_table_bytes, sds_alloc_sum, size_class
from raxdb.storage.hashscan import ScanIndex
from raxdb.storage.intset import IntSet, canonical_int


class RSet:
    type_name = "set"
    __slots__ = ("ints", "items", "pos", "_scan")

    def __init__(self) -> None:
        self.ints: IntSet | None = IntSet()
        self.items: list[bytes] = []
        self.pos: dict[bytes, int] = {}
        self._scan: ScanIndex | None = None

    @classmethod
    def of(cls, members: Iterable[bytes], max_ints: int) -> RSet:
        """A set holding `members`, encoded as Redis would after adding them one by one."""
        s = cls()
        add = s.add
        for m in members:
            add(m, max_ints)
        return s

    # ---- contract ------------------------------------------------------------------------------
    def __len__(self) -> int:
        ints = self.ints
        return len(ints.values) if ints is not None else len(self.items)

    def encoding(self) -> str:
        return "intset" if self.ints is not None else "hashtable"

    def copy(self) -> RSet:
        s = RSet()
        if self.ints is not None:
            s.ints = self.ints.copy()
        else:
            s.ints = None
            s.items = self.items.copy()
            s.pos = self.pos.copy()
        return s

    def mem_usage(self, samples: int = 5) -> int:
        """MEMORY USAGE's estimate: exact for an intset (its allocation), for a hashtable the
        dict's tables plus the average of `samples` entries (sds + dictEntry) times the count."""
        if self.ints is not None:
            return 16 + size_class(self.ints.blob_len())
        items = self.items
        n = len(items)
        size = 16 + 56 + dict_table_bytes(n)
        if n:
            some = items[:max(1, samples)]
            k = len(some)
            size += int((sds_alloc_sum(map(len, some)) + 24 * k) / k * n)
        return size

    # ---- membership and updates ----------------------------------------------------------------
    def __contains__(self, m: bytes) -> bool:
        ints = self.ints
        if ints is None:
            return m in self.pos
        v = canonical_int(m)
        return v is not None and v in ints

    def add(self, m: bytes, max_ints: int) -> bool:
        ints = self.ints
        if ints is not None:
            v = canonical_int(m)
            if v is not None:
                if not ints.add(v):
                    return False
                if len(ints.values) > max_ints:
                    self._to_table()
                return True
            self._to_table()
        pos = self.pos
        if m in pos:
            return False
        pos[m] = len(self.items)
        self.items.append(m)
        self._scan = None
        return True

    def remove(self, m: bytes) -> bool:
        ints = self.ints
        if ints is not None:
            v = canonical_int(m)
            return v is not None and ints.remove(v)
        i = self.pos.pop(m, None)
        if i is None:
            return False
        items = self.items
        last = items.pop()
        if i < len(items):
            items[i] = last
            self.pos[last] = i
        self._scan = None
        return True

    def _to_table(self) -> None:
        ints = self.ints
        assert ints is not None
        self.items = items = [b"%d" % v for v in ints.values]
        self.pos = {m: i for i, m in enumerate(items)}
        self.ints = None
        self._scan = None

    # ---- reading -------------------------------------------------------------------------------
    def members(self) -> list[bytes]:
        """Every member in this encoding's iteration order (ascending numbers for an intset).
        The list may be internal: callers must not mutate it."""
        ints = self.ints
        if ints is not None:
            return [b"%d" % v for v in ints.values]
        return self.items

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.members())

    def is_intset(self) -> bool:
        return self.ints is not None

    # ---- randomness ----------------------------------------------------------------------------
    def random_member(self) -> bytes:
        ints = self.ints
        if ints is not None:
            return b"%d" % random.choice(ints.values)
        return random.choice(self.items)

    def pop_random(self) -> bytes:
        ints = self.ints
        if ints is not None:
            vals = ints.values
            return b"%d" % ints.pop_at(random.randrange(len(vals)))
        m = random.choice(self.items)
        self.remove(m)
        return m

    def sample(self, k: int) -> list[bytes]:
        """`k` distinct random members (k <= len)."""
        ints = self.ints
        if ints is not None:
            return [b"%d" % v for v in random.sample(ints.values, k)]
        return random.sample(self.items, k)

    def choices(self, k: int) -> list[bytes]:
        """`k` random members, with repetition."""
        ints = self.ints
        if ints is not None:
            return [b"%d" % v for v in random.choices(ints.values, k=k)]
        return random.choices(self.items, k=k)

    def spop_many(self, count: int, max_ints: int) -> tuple[list[bytes], RSet | None]:
        """Pop `count` (< len) distinct random members.  Returns (popped, replacement): when most of
        the set goes, Redis builds a new set from the few survivors (so its encoding is chosen
        afresh, possibly intset again) and the caller must store `replacement` under the key."""
        n = len(self)
        remaining = n - count
        if remaining * 5 > count:
            popped = self.sample(count)
            for m in popped:
                self.remove(m)
            return popped, None
        keep = self.sample(remaining)
        kept = set(keep)
        popped = [m for m in self.members() if m not in kept]
        return popped, RSet.of(keep, max_ints)

    # ---- SSCAN ---------------------------------------------------------------------------------
    def scan(self, cursor: int, count: int) -> tuple[int, list[bytes]]:
        if self.ints is not None:
            return 0, self.members()
        idx = self._scan
        if idx is None:
            idx = self._scan = ScanIndex(self.items, len(self.items))
        return idx.scan(cursor, count)
