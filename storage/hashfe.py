"""Hash field expiration (Redis 7.4's HFE): a hash whose fields may carry deadlines.

Rule: storage only (no server imports); what a deadline does when it passes (the deletion's
propagation, the keyspace events, the key's deletion when its last field goes) is the server's
(server/events/hashexpire.py), which asks `due` here.

`HashEx` is a `Hash` (storage/hashtype.py) with two more slots: `ttl`, field -> absolute deadline
in ms, and `next_ms`, a lower bound of those deadlines (NO_DEADLINE when none), so that a lookup
of a hash none of whose fields is due costs one comparison.  A plain hash becomes one (`of`, sharing
its listpack or table) on its first HEXPIRE-family write and stays one, as Redis's listpackex and
its dict with HFE metadata stay; a hash that never had a field TTL is a plain `Hash`, whose paths
are untouched (the commands test `type(v) is Hash` first).

Order.  While listpack-encoded (Redis's "listpackex") the fields keep Redis 7.4's order, which
HGETALL, HKEYS and HSCAN show: the fields with a deadline first, by deadline (a field given a
deadline goes before the first with one as late or later, or without one), then the fields without
one, in the order they got there (a field that loses its deadline, HPERSIST or an HSET of it, goes
to the end).  The listpack held stays the plain field, value, ... one; the RDB form (field, value,
deadline triples, RDB_TYPE_HASH_LISTPACK_EX) is built when saved (storage/rdb.py).

Invariants: every field of `ttl` is in the hash; `next_ms` <= every deadline of `ttl`.
"""

from __future__ import annotations

import heapq
from typing import Any

from raxdb.storage.hashtype import Hash, hash_set_pairs
from raxdb.storage.listpack import build, elements, encode_entry

NO_DEADLINE = 1 << 62  # next_ms when no field has a deadline


def _packed(pairs: list[tuple[bytes, bytes]]) -> bytes:
    chunks = []
    for f, v in pairs:
        chunks.append(encode_entry(f))
        chunks.append(encode_entry(v))
    return build(b"".join(chunks), len(chunks))


def track(db: Any, key: bytes, value: Any) -> None:
    """Put `key`'s hash on its database's heap of field deadlines (`Database.hfe`) when any of its
    fields has one: whatever stores such a hash under a key calls it (the HEXPIRE family, RENAME,
    MOVE, COPY, RESTORE, a load); server/events/hashexpire.py pops the heap."""
    if type(value) is HashEx and value.ttl:
        heapq.heappush(db.hfe, (value.next_ms, key))


class HashEx(Hash):
    """A hash with field deadlines (see the module docstring)."""

    __slots__ = ("ttl", "next_ms")

    def __init__(self) -> None:
        super().__init__()
        self.ttl: dict[bytes, int] = {}
        self.next_ms = NO_DEADLINE

    @classmethod
    def of(cls, h: Hash) -> HashEx:
        """A HashEx holding `h`'s fields (its listpack or table, shared: `h` is dropped)."""
        x = cls()
        x.lp = h.lp
        x.d = h.d
        return x

    def encoding(self) -> str:
        return "hashtable" if self.lp is None else "listpackex"

    def copy(self) -> HashEx:
        x = HashEx.of(Hash.copy(self))
        x.ttl = dict(self.ttl)
        x.next_ms = self.next_ms
        return x

    def mem_usage(self, samples: int = 5) -> int:
        """Hash's estimate plus Redis's cost of a deadline: 8 bytes per field (the listpack's
        integer entry or the field's expire metadata) and the hash's own metadata."""
        return Hash.mem_usage(self, samples) + 8 * len(self.ttl) + 24

    def __repr__(self) -> str:
        return f"HashEx({self.encoding()}, {dict(self.items())!r}, ttl={self.ttl!r})"

    # ---- deadlines -------------------------------------------------------------------------------
    def deadline(self, field: bytes) -> int | None:
        return self.ttl.get(field)

    def set_deadline(self, field: bytes, when: int) -> None:
        """Give `field` (in the hash) the deadline `when`."""
        self.ttl.pop(field, None)
        if self.lp is not None:
            self._place(field, when)
        self.ttl[field] = when
        if when < self.next_ms:
            self.next_ms = when

    def persist(self, field: bytes) -> bool:
        """Drop `field`'s deadline; False if it had none."""
        if self.ttl.pop(field, None) is None:
            return False
        if self.lp is not None:
            self._place(field, None)
        return True

    def _place(self, field: bytes, when: int | None) -> None:
        """Move `field` where Redis's listpackex keeps a field with deadline `when` (None: none),
        `field` not in `ttl` (see the module docstring)."""
        items = elements(self.lp)  # type: ignore[arg-type]
        pairs = [(items[i], items[i + 1]) for i in range(0, len(items), 2)]
        moved = next(p for p in pairs if p[0] == field)
        pairs.remove(moved)
        at = len(pairs)
        if when is not None:
            ttl = self.ttl
            for i, (f, _) in enumerate(pairs):
                w = ttl.get(f)
                if w is None or w >= when:
                    at = i
                    break
        pairs.insert(at, moved)
        self.lp = _packed(pairs)

    def due(self, now_ms: int) -> list[bytes]:
        """The fields whose deadline is `now_ms` or earlier, soonest first (not deleted here);
        `next_ms` is brought up to date."""
        if self.next_ms > now_ms:
            return []
        ttl = self.ttl
        out = sorted((w, f) for f, w in ttl.items() if w <= now_ms)
        later = [w for w in ttl.values() if w > now_ms]
        self.next_ms = min(later) if later else NO_DEADLINE
        return [f for _, f in out]

    # ---- writes that know about deadlines ------------------------------------------------------
    def delete(self, field: bytes) -> bool:
        if Hash.delete(self, field):
            if self.ttl:
                self.ttl.pop(field, None)
            return True
        return False

    def set_pairs(self, args: list[bytes], start: int, max_entries: int, max_value: int) -> int:
        """HSET's write: a field set loses its deadline (and, in a listpack, goes to the end, as
        Redis re-inserts it); returns how many fields are new."""
        ttl = self.ttl
        again: set[bytes] = set()
        if ttl:
            for i in range(start, len(args), 2):
                f = args[i]
                if f in ttl:
                    del ttl[f]
                    if self.lp is not None:
                        Hash.delete(self, f)
                        again.add(f)
        return hash_set_pairs(self, args, start, max_entries, max_value) - len(again)

    def set_keep_ttl(self, field: bytes, value: bytes, max_entries: int, max_value: int) -> None:
        """HINCRBY's write: the value changes where it stands, the deadline stays."""
        hash_set_pairs(self, [field, value], 0, max_entries, max_value)

    # ---- the RDB forms (storage/rdb.py writes and reads them) ----------------------------------
    def min_deadline(self) -> int | None:
        return min(self.ttl.values()) if self.ttl else None

    def listpack_ex(self) -> bytes:
        """The listpack of field, value, deadline (0: none) triples in the hash's order: the body
        of RDB_TYPE_HASH_LISTPACK_EX (listpack-encoded only)."""
        items = elements(self.lp)  # type: ignore[arg-type]
        ttl = self.ttl
        chunks = []
        for i in range(0, len(items), 2):
            f = items[i]
            chunks.append(encode_entry(f))
            chunks.append(encode_entry(items[i + 1]))
            chunks.append(encode_entry(ttl.get(f, 0)))
        return build(b"".join(chunks), len(chunks))

    @classmethod
    def from_triples(cls, triples: list[tuple[bytes, bytes, int]], listpack: bool) -> HashEx:
        """A hash of (field, value, deadline or 0) triples in the order given (a loaded one)."""
        x = cls.of(Hash.from_pairs([(f, v) for f, v, _ in triples], listpack))
        for f, _, w in triples:
            if w:
                x.ttl[f] = w
                if w < x.next_ms:
                    x.next_ms = w
        return x
