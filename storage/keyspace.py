"""One logical database: keys, their values, their expiry, and a SCAN-stable slot index.

Values: strings are `bytes` (Redis's int/embstr/raw encodings are inferred from content) or
`bytearray` (a string that was modified in place by APPEND/SETRANGE/SETBIT: Redis's `raw`).  Every
other type is an object with a `type_name` attribute.

Expiry: `expires` maps key -> absolute deadline in ms.  Keys expire lazily (any lookup with the
cached command time past the deadline deletes them) and actively: a heap of (deadline, key) lets the
cron reclaim expired keys in deadline order with bounded work per call.  The heap may hold stale
entries (TTL changed or key deleted); they are skipped by checking `expires` and rebuilt when the
heap grows past twice the live TTL count.

SCAN: `slots` is an append-mostly array in which each key keeps its position for as long as it
exists; deleted positions become holes reused by later keys.  A SCAN cursor is a slot position, so a
key present for the whole iteration is returned exactly once-or-more, as Redis guarantees, with O(1)
work per returned slot and no per-cursor server state.

Hooks: `watched` (key -> watchers, for WATCH) and `on_delete` are consulted only when non-empty, so
the bookkeeping costs nothing when unused.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Iterator
from typing import Any


class Database:
    __slots__ = ("id", "data", "expires", "_heap", "_slot_of", "slots", "_free", "watched", "blocking",
                 "access", "modified_hook", "expired_hook", "stat_expired")

    def __init__(self, dbid: int) -> None:
        self.id = dbid
        self.data: dict[bytes, Any] = {}
        self.expires: dict[bytes, int] = {}
        self._heap: list[tuple[int, bytes]] = []
        self._slot_of: dict[bytes, int] = {}
        self.slots: list[bytes | None] = []
        self._free: list[int] = []
        self.watched: dict[bytes, list[Any]] = {}
        self.blocking: dict[bytes, Any] = {}
        self.access: dict[bytes, int] = {}  # key -> last access time in ms (OBJECT IDLETIME)
        # modified_hook(db, key): WATCH invalidation / client tracking, installed by the server.
        self.modified_hook: Callable[[Database, bytes], None] | None = None
        # expired_hook(db, key): keyspace notification + replication of the DEL, installed by the server.
        self.expired_hook: Callable[[Database, bytes], None] | None = None
        self.stat_expired = 0

    # ---- lookups -------------------------------------------------------------------------------
    def get(self, key: bytes, now_ms: int) -> Any:
        """The live value of `key` or None, expiring it first if its deadline has passed."""
        if self.expires:
            when = self.expires.get(key)
            if when is not None and when <= now_ms:
                self._expire(key)
                return None
        return self.data.get(key)

    def exists(self, key: bytes, now_ms: int) -> bool:
        return self.get(key, now_ms) is not None

    def ttl_ms(self, key: bytes) -> int | None:
        return self.expires.get(key)

    def __len__(self) -> int:
        return len(self.data)

    # ---- writes --------------------------------------------------------------------------------
    def set(self, key: bytes, value: Any, keep_ttl: bool = False) -> None:
        """Create or overwrite `key`; an overwrite drops the TTL unless keep_ttl (SET's semantics)."""
        data = self.data
        if key not in data:
            self._add_slot(key)
        elif not keep_ttl and self.expires:
            self.expires.pop(key, None)
        data[key] = value

    def add(self, key: bytes, value: Any) -> None:
        """Create `key`, which must not exist."""
        self._add_slot(key)
        self.data[key] = value

    def replace(self, key: bytes, value: Any) -> None:
        """Swap the value object of an existing key in place, keeping its TTL."""
        self.data[key] = value

    def delete(self, key: bytes) -> bool:
        data = self.data
        if key not in data:
            return False
        del data[key]
        if self.expires:
            self.expires.pop(key, None)
        if self.access:
            self.access.pop(key, None)
        slot = self._slot_of.pop(key)
        self.slots[slot] = None
        self._free.append(slot)
        return True

    def pop(self, key: bytes) -> Any:
        value = self.data.get(key)
        if value is not None:
            self.delete(key)
        return value

    def set_expire(self, key: bytes, when_ms: int) -> None:
        self.expires[key] = when_ms
        heap = self._heap
        heapq.heappush(heap, (when_ms, key))
        if len(heap) > 2 * len(self.expires) + 1024:
            self._heap = [(w, k) for k, w in self.expires.items()]
            heapq.heapify(self._heap)

    def persist(self, key: bytes) -> bool:
        return self.expires.pop(key, None) is not None

    def flush(self) -> int:
        n = len(self.data)
        self.data = {}
        self.expires = {}
        self._heap = []
        self._slot_of = {}
        self.slots = []
        self._free = []
        self.access = {}
        return n

    def swap_contents(self, other: Database) -> None:
        """SWAPDB: exchange keyspaces; hooks, watchers and blocked clients stay with the db number."""
        for name in ("data", "expires", "_heap", "_slot_of", "slots", "_free", "access"):
            a, b = getattr(self, name), getattr(other, name)
            setattr(self, name, b)
            setattr(other, name, a)

    # ---- expiry --------------------------------------------------------------------------------
    def _expire(self, key: bytes) -> None:
        self.delete(key)
        self.stat_expired += 1
        if self.expired_hook is not None:
            self.expired_hook(self, key)

    def expire_if_needed(self, key: bytes, now_ms: int) -> bool:
        when = self.expires.get(key)
        if when is not None and when <= now_ms:
            self._expire(key)
            return True
        return False

    def active_expire(self, now_ms: int, budget: int) -> int:
        """Delete up to `budget` keys whose deadline has passed; returns how many were deleted."""
        heap, expires = self._heap, self.expires
        done = 0
        while heap and done < budget:
            when, key = heap[0]
            if when > now_ms:
                break
            heapq.heappop(heap)
            if expires.get(key) == when:
                self._expire(key)
                done += 1
        return done

    # ---- iteration -----------------------------------------------------------------------------
    def _add_slot(self, key: bytes) -> None:
        if self._free:
            slot = self._free.pop()
            self.slots[slot] = key
        else:
            slot = len(self.slots)
            self.slots.append(key)
        self._slot_of[key] = slot

    def scan(self, cursor: int, count: int) -> tuple[int, list[bytes]]:
        """Visit at least `count` slots from `cursor`; returns (next cursor or 0, keys seen)."""
        slots = self.slots
        n = len(slots)
        if cursor >= n:
            return 0, []
        end = min(n, cursor + max(count, 1))
        keys = [k for k in slots[cursor:end] if k is not None]
        return (0 if end >= n else end), keys

    def random_key(self) -> bytes | None:
        if not self.data:
            return None
        slots = self.slots
        if len(self.data) * 4 >= len(slots):
            while True:
                k = slots[random.randrange(len(slots))]
                if k is not None:
                    return k
        return random.choice(list(self.data))

    def keys(self) -> Iterator[bytes]:
        return iter(self.data)
