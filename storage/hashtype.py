"""The hash type, with Redis 7.0's two encodings: "listpack" while small, "hashtable" beyond
hash-max-listpack-entries fields or once a field or value is longer than hash-max-listpack-value
bytes.  As in Redis, conversion is one way (a hashtable never goes back to a listpack).

Representation: both encodings keep the fields in one insertion-ordered dict, because that *is*
the listpack's observable behaviour: a new field goes at the end, an updated field keeps its
place, a deleted one closes the gap, so HGETALL / HKEYS / HSCAN of a small hash reply in exactly
Redis's order.  The encoding is a flag that decides thresholds, OBJECT ENCODING, MEMORY USAGE,
HSCAN's shape (a listpack hash is returned whole with cursor 0) and the serialised form
(`listpack()` gives the bytes Redis would keep).  Keeping the data Python-native means HSET/HGET
are dict operations; the listpack bytes are produced only when observed.

MEMORY USAGE of a listpack hash is its listpack's allocation.  Packing it to learn its length would
cost a write under `maxmemory` (which sizes every key a command wrote) the whole hash, so the
length of its entries is kept (`lp_bytes`) from the first time it is asked for: from then on each
change adds and subtracts the entry sizes it touches, as lpInsert/lpDelete move Redis's lpBytes.

A hashtable-encoded hash gets a `SlotIndex` (storage/slotindex.py) the first time it is scanned
or sampled, for SCAN-stable cursors and O(1) random fields; from then on every field insertion
and deletion keeps it current.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from itertools import islice

from raxdb.storage import lpcodec
from raxdb.storage.alloc import dict_table_bytes, sds_alloc_sum, size_class
from raxdb.storage.lpcodec import entry_size
from raxdb.storage.slotindex import SlotIndex


class Hash:
    type_name = "hash"
    __slots__ = ("d", "lp", "index", "lp_bytes")

    def __init__(self) -> None:
        self.d: dict[bytes, bytes] = {}
        self.lp = True  # listpack encoding
        self.index: SlotIndex | None = None
        # the listpack's entries' bytes (its length less header and terminator) while it is one
        # and someone asked for its size; None otherwise
        self.lp_bytes: int | None = None

    # ---- the value contract -------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.d)

    def encoding(self) -> str:
        return "listpack" if self.lp else "hashtable"

    def copy(self) -> Hash:
        h = Hash()
        h.d = self.d.copy()
        h.lp = self.lp
        return h

    def mem_usage(self, samples: int = 5) -> int:
        """Redis's estimate: the listpack's allocation, or the dict's tables plus the average of
        the first `samples` entries (two sds strings and a dictEntry) times the field count."""
        d = self.d
        if self.lp:
            size = self.lp_bytes
            if size is None:
                size = self.lp_bytes = sum(map(entry_size, d)) + sum(map(entry_size, d.values()))
            return 16 + size_class(lpcodec.LP_EMPTY + size)
        n = len(d)
        size = 16 + 56 + dict_table_bytes(n)
        if n:
            k = min(samples, n) if samples > 0 else n  # SAMPLES 0: every field
            total = (sds_alloc_sum(map(len, islice(d, k))) + sds_alloc_sum(map(len, islice(d.values(), k)))
                     + 24 * k)
            size += int(total / k * n)
        return size

    # ---- encoding ------------------------------------------------------------------------------
    def to_hashtable(self) -> None:
        self.lp = False
        self.lp_bytes = None

    def listpack(self) -> bytes:
        """The listpack Redis keeps for this hash (field, value, field, value, ...)."""
        return lpcodec.pack(_flatten(self.d))

    @classmethod
    def from_listpack(cls, blob: bytes) -> Hash:
        items = lpcodec.unpack(blob)
        h = cls()
        it = iter(items)
        h.d = dict(zip(it, it, strict=True))
        return h

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[bytes, bytes]], listpack: bool = True) -> Hash:
        h = cls()
        h.d = dict(pairs)
        h.lp = listpack
        return h

    # ---- fields --------------------------------------------------------------------------------
    def set_pairs(self, args: list[bytes], start: int, max_entries: int, max_value: int) -> int:
        """Set the field/value pairs args[start:] as HSET does, converting to a hashtable when a
        field or value is longer than max_value (checked before inserting, as Redis's
        hashTypeTryConversion) or the hash ends up with more than max_entries fields.
        Returns how many fields are new."""
        n = len(args)
        d = self.d
        if n - start == 2:  # the common single-pair write, without the loops
            f, v = args[start], args[start + 1]
            if self.lp and (len(f) > max_value or len(v) > max_value):
                self.to_hashtable()
            if self.lp_bytes is not None:
                new = self.set(f, v)
            else:  # set(), inlined
                new = f not in d
                d[f] = v
                if new and self.index is not None:
                    self.index.add(f)
            if self.lp and len(d) > max_entries:  # checked on updates too, as Redis does
                self.to_hashtable()
            return new
        if self.lp:
            for i in range(start, n):
                if len(args[i]) > max_value:
                    self.to_hashtable()
                    break
        created = 0
        if self.index is None and self.lp_bytes is None:
            for i in range(start, n, 2):
                f = args[i]
                if f not in d:
                    created += 1
                d[f] = args[i + 1]
        else:
            for i in range(start, n, 2):
                created += self.set(args[i], args[i + 1])
        if self.lp and len(d) > max_entries:
            self.to_hashtable()
        return created

    def set(self, field: bytes, value: bytes) -> bool:
        """Set a field; True if it is new."""
        d = self.d
        old = d.get(field)
        d[field] = value
        if self.lp_bytes is not None:
            self.lp_bytes += entry_size(value) + (entry_size(field) if old is None else -entry_size(old))
        if old is None and self.index is not None:
            self.index.add(field)
        return old is None

    def delete(self, field: bytes) -> bool:
        d = self.d
        old = d.pop(field, None)
        if old is None:
            return False
        if self.lp_bytes is not None:
            self.lp_bytes -= entry_size(field) + entry_size(old)
        if self.index is not None:
            self.index.discard(field)
        return True

    def _index(self) -> SlotIndex:
        idx = self.index
        if idx is None:
            idx = self.index = SlotIndex(self.d)
        return idx

    def scan(self, cursor: int, count: int) -> tuple[int, list[bytes]]:
        """Fields for one HSCAN step: a listpack hash returns all of them and cursor 0."""
        if self.lp:
            return 0, list(self.d)
        return self._index().scan(cursor, count)

    def random_field(self) -> bytes:
        if self.lp:
            return random.choice(list(self.d))
        return self._index().random_member()

    def random_fields(self, count: int) -> list[bytes]:
        """`count` fields chosen independently (repetitions allowed)."""
        if self.lp:
            return random.choices(list(self.d), k=count)
        pick = self._index().random_member
        return [pick() for _ in range(count)]

    def sample_fields(self, count: int) -> list[bytes]:
        """`count` distinct random fields (count < len)."""
        d = self.d
        if self.lp or count * 3 > len(d):
            return random.sample(list(d), count)
        pick = self._index().random_member
        chosen: dict[bytes, None] = {}
        while len(chosen) < count:
            chosen[pick()] = None
        return list(chosen)


def _flatten(d: dict[bytes, bytes]) -> list[bytes]:
    out: list[bytes] = []
    for f, v in d.items():
        out.append(f)
        out.append(v)
    return out

