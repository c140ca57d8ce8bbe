"""Hash field expiration (Redis 7.4's HFE): a hash whose fields may carry deadlines.

Rule: storage only (no server imports); what a deadline does when it passes (the deletion's
propagation, the keyspace events, the key's deletion when its last field goes) is the server's
(server/events/hashexpire.py), which asks `due` here.

`HashEx` is a `Hash` (storage/hashtype.py) with two more slots: `ttl`, field -> absolute deadline
in ms, and `next_ms`, a lower bound of those deadlines (NO_DEADLINE when none), so that a lookup
of a hash none of whose fields is due costs one comparison.  `ttl` is a dict while the hash is a
listpack (a few fields) and a `TableDeadlines` once it is a hashtable: the deadlines in an int64
array by the table's stable positions (0: none), 8 bytes a field where a dict entry, the field's
own bytes object and an int cost ~117 (docs/speed-log.md); its due fields are found from
`soon`, the sorted head of its deadlines, rebuilt by one pass over the array when spent.  A plain hash becomes one (`of`, sharing
its listpack or table) on its first HEXPIRE-family write and stays one, as Redis's listpackex and
its dict with HFE metadata stay; a hash that never had a field TTL is a plain `Hash`, whose paths
are untouched (the commands test `type(v) is Hash` first).

Order.  While listpack-encoded (Redis's "listpackex") the fields keep Redis 7.4's order, which
HGETALL, HKEYS and HSCAN show: the fields with a deadline first, by deadline (a field given a
deadline goes before the first with one as late or later, or without one), then the fields without
one, in the order they got there (a field that loses its deadline, HPERSIST or an HSET of it, goes
to the end).  The listpack held stays the plain field, value, ... one; the RDB form (field, value,
deadline triples, RDB_TYPE_HASH_LISTPACK_EX) is built when saved (storage/rdb.py).

Invariants: every field of `ttl` is in the hash; `next_ms` <= every deadline of `ttl`; a
TableDeadlines has 0 at every position that holds no field (a field's deadline goes before the
field does: HashEx.delete), so a reused position starts without one.
"""

from __future__ import annotations

import heapq
from array import array
from bisect import bisect_left
from typing import Any

from raxdb.storage.hashtype import Hash, HashTable, hash_set_pairs
from raxdb.storage.listpack import build, elements, encode_entry

NO_DEADLINE = 1 << 62  # next_ms when no field has a deadline
_U32 = 0xFFFFFFFF
_SOON_MIN = 64  # soon's least length (see TableDeadlines)


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


class TableDeadlines:
    """The deadlines of a hashtable-encoded HashEx by the positions of its table (`table`, shared
    with the hash): `at[p]` is the deadline of the field at position p, 0 for none (and for
    positions past the array's end); `count` of them are set.  It answers the dict calls HashEx
    and its readers make (get, pop, [], in, len, items, values), by field.

    `soon` lists (deadline << 32 | position), ascending, holding every deadline up to `upto`
    (and stale entries, of deadlines since changed or dropped, skipped as found: an entry counts
    while at[position] still equals its deadline).  `due` reads the head of `soon`; when `upto`
    is passed it is rebuilt by one pass over `at` with the due ones and the max(64, count/16)
    soonest after them, so a field's expiry costs O(16 log n) amortized, and a hash none of whose
    fields was ever due keeps `soon` empty.  Deadlines given at or before `upto` go into `soon`
    as they are set; when that makes it four times the length a refill gives, it is cut in half.
    """

    __slots__ = ("table", "at", "count", "soon", "upto")

    def __init__(self, table: HashTable) -> None:
        self.table = table
        self.at = array("q")
        self.count = 0
        self.soon: list[int] = []
        self.upto = -1  # every deadline <= upto is in soon

    @classmethod
    def of(cls, table: HashTable, ttl: dict[bytes, int]) -> TableDeadlines:
        x = cls(table)
        for f, w in ttl.items():
            x[f] = w
        return x

    def copy(self, table: HashTable) -> TableDeadlines:
        """The same deadlines for `table`, a copy of this one's table (same positions)."""
        x = TableDeadlines(table)
        x.at = self.at[:]
        x.count = self.count
        x.soon = self.soon[:]
        x.upto = self.upto
        return x

    def __len__(self) -> int:
        return self.count

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TableDeadlines):
            other = dict(other.items())
        return dict(self.items()) == other

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dict it stands for

    def __repr__(self) -> str:
        return f"TableDeadlines({dict(self.items())!r})"

    def get(self, field: bytes, default: int | None = None) -> int | None:
        p = self.table.find(field)
        if 0 <= p < len(self.at):
            w = self.at[p]
            if w:
                return w
        return default

    def __getitem__(self, field: bytes) -> int:
        w = self.get(field)
        if w is None:
            raise KeyError(field)
        return w

    def __contains__(self, field: object) -> bool:
        return self.get(field) is not None  # type: ignore[arg-type]

    def __setitem__(self, field: bytes, when: int) -> None:
        """Give `field`, in the table, the deadline `when` (> 0)."""
        p = self.table.find(field)
        at = self.at
        if p >= len(at):
            at.frombytes(bytes(8 * (len(self.table.items) - len(at))))
        if not at[p]:
            self.count += 1
        at[p] = when
        if when <= self.upto:
            e = (when << 32) | p
            soon = self.soon
            soon.insert(bisect_left(soon, e), e)
            if len(soon) > 4 * max(_SOON_MIN, self.count // 16):
                self._cut()

    def pop(self, field: bytes, default: int | None = None) -> int | None:
        p = self.table.find(field)
        at = self.at
        if 0 <= p < len(at):
            w = at[p]
            if w:
                at[p] = 0
                self.count -= 1
                return w
        return default

    def positions(self) -> list[int]:
        at = self.at
        return [p for p in range(len(at)) if at[p]]

    def items(self) -> list[tuple[bytes, int]]:
        at = self.at
        field_at = self.table.field_at
        return [(field_at(p), at[p]) for p in self.positions()]

    def values(self) -> list[int]:
        return [w for w in self.at if w]

    def due(self, now_ms: int) -> tuple[list[bytes], int]:
        """The fields whose deadline is `now_ms` or earlier, soonest first, and a lower bound of
        the other deadlines (NO_DEADLINE when none)."""
        if now_ms > self.upto:
            self._refill(now_ms)
        soon = self.soon
        at = self.at
        live: list[int] = []  # soon's entries up to now_ms that still count, once each
        i = 0
        n = len(soon)
        while i < n:
            e = soon[i]
            w = e >> 32
            if w > now_ms:
                break
            if at[e & _U32] == w and (not live or live[-1] != e):
                live.append(e)
            i += 1
        while i < n and at[soon[i] & _U32] != soon[i] >> 32:  # stale: the next bound is a live one
            i += 1
        soon[:i] = live
        later = self.count - len(live)
        if not later:
            nxt = NO_DEADLINE
        elif i < n:
            nxt = soon[len(live)] >> 32
        else:
            nxt = self.upto + 1
        field_at = self.table.field_at
        return [field_at(e & _U32) for e in live], nxt

    def _refill(self, now_ms: int) -> None:
        """soon: the deadlines up to `now_ms` and the max(64, count/16) soonest after it (all of
        those as late as the last one taken, or none of them), from one pass over `at`."""
        entries = [(w << 32) | p for p, w in enumerate(self.at) if w]
        entries.sort()  # in C: faster than a partial selection in Python
        j = bisect_left(entries, (now_ms + 1) << 32)  # the first deadline after now_ms
        k = max(_SOON_MIN, self.count // 16)
        if len(entries) - j <= k:  # all of them: soon holds every deadline up to the last
            self.soon = entries
            self.upto = entries[-1] >> 32 if len(entries) > j else now_ms
            return
        last = entries[j + k] >> 32
        del entries[bisect_left(entries, last << 32, j, j + k):]
        self.soon = entries
        self.upto = last - 1

    def _cut(self) -> None:
        """Halve `soon` (deadlines given since it was filled, each up to `upto`, went in), keeping
        its invariant: the entries as late as the first one dropped go too."""
        soon = self.soon
        last = soon[len(soon) // 2] >> 32
        del soon[bisect_left(soon, last << 32):]
        self.upto = last - 1


class HashEx(Hash):
    """A hash with field deadlines (see the module docstring)."""

    __slots__ = ("ttl", "next_ms")

    def __init__(self) -> None:
        super().__init__()
        self.ttl: dict[bytes, int] | TableDeadlines = {}
        self.next_ms = NO_DEADLINE

    @classmethod
    def of(cls, h: Hash) -> HashEx:
        """A HashEx holding `h`'s fields (its listpack or table, shared: `h` is dropped)."""
        x = cls()
        x.lp = h.lp
        x.d = h.d
        if h.lp is None:
            x.ttl = TableDeadlines(h.d)  # type: ignore[arg-type]
        return x

    def to_hashtable(self) -> None:
        """Hash's conversion (HSET's, through hash_set_pairs, too), the deadlines moved to the
        table's positions."""
        if self.lp is None:
            return
        Hash.to_hashtable(self)
        self.ttl = TableDeadlines.of(self.d, self.ttl)  # type: ignore[arg-type]

    def encoding(self) -> str:
        return "hashtable" if self.lp is None else "listpackex"

    def copy(self) -> HashEx:
        x = HashEx.of(Hash.copy(self))
        ttl = self.ttl
        x.ttl = dict(ttl) if isinstance(ttl, dict) else ttl.copy(x.d)  # type: ignore[arg-type]
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
        if type(ttl) is not dict:
            fields, self.next_ms = ttl.due(now_ms)  # type: ignore[union-attr]
            return fields
        out = sorted((w, f) for f, w in ttl.items() if w <= now_ms)
        later = [w for w in ttl.values() if w > now_ms]
        self.next_ms = min(later) if later else NO_DEADLINE
        return [f for _, f in out]

    # ---- writes that know about deadlines ------------------------------------------------------
    def delete(self, field: bytes) -> bool:
        if self.ttl:  # first: a TableDeadlines finds the field's position through the table
            self.ttl.pop(field, None)
        return Hash.delete(self, field)

    def set_pairs(self, args: list[bytes], start: int, max_entries: int, max_value: int) -> int:
        """HSET's write: a field set loses its deadline (and, in a listpack, goes to the end, as
        Redis re-inserts it); returns how many fields are new."""
        ttl = self.ttl
        again: set[bytes] = set()
        if ttl:
            for i in range(start, len(args), 2):
                f = args[i]
                if ttl.pop(f, None) is not None:
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
            chunks.append(encode_entry(ttl.get(f) or 0))
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
