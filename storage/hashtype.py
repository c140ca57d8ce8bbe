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
- hashtable encoding: `d` is a `_Table`, a dict of field -> value with one extra slot, `index`,
  the `SlotIndex` (storage/slotindex.py) built the first time the hash is scanned or sampled, for
  SCAN-stable cursors and O(1) random fields; from then on every field insertion and deletion
  keeps it current.

Compiled (hashtype.pxd), Hash is an extension type of the same size, and the listpack functions
are C calls.  Callers outside this module use the methods (get, items, flat, set_pairs, delete,
listpack, ...), never the slots' contents, except for `lp is not None` as the test of the
encoding.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from itertools import islice

from raxdb.storage.alloc import dict_table_bytes, sds_alloc_sum, size_class
from raxdb.storage.listpack import (
    EMPTY,
    NUMELE_UNKNOWN,
    append_pair,
    build,
    checked_values,
    count_of,
    elements,
    encode_entry,
    entry_end,
    find_key,
    pair_value,
    replace_value,
    replace_values,
    splice,
)
from raxdb.storage.lpcodec import LP_EMPTY, entry_size
from raxdb.storage.slotindex import SlotIndex

_UNKNOWN = NUMELE_UNKNOWN


class _Table(dict):
    """The hashtable encoding: field -> value, and the SCAN / random-pick index once built."""

    __slots__ = ("index",)


def _table(pairs: Iterable[tuple[bytes, bytes]]) -> _Table:
    t = _Table(pairs)
    t.index = None
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


class Hash:
    type_name = "hash"
    __slots__ = ("lp", "d")

    def __init__(self) -> None:
        self.lp: bytes | None = EMPTY  # the listpack while listpack-encoded, else None
        self.d: _Table | None = None  # the hashtable once converted

    # ---- the value contract -------------------------------------------------------------------
    def __len__(self) -> int:
        lp = self.lp
        if lp is None:
            return len(self.d)  # type: ignore[arg-type]
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
            h.d = _table(self.d)  # type: ignore[arg-type]
        else:
            h.lp = self.lp  # immutable: the copy shares it until either changes
        return h

    def mem_usage(self, samples: int = 5) -> int:
        """Redis's estimate: the robj and the listpack's allocation, or the dict's tables plus the
        average of the first `samples` entries (two sds strings and a dictEntry) times the field
        count."""
        lp = self.lp
        if lp is not None:
            return 16 + size_class(len(lp))
        d = self.d
        n = len(d)  # type: ignore[arg-type]
        size = 16 + 56 + dict_table_bytes(n)
        if n:
            k = min(samples, n) if samples > 0 else n  # SAMPLES 0: every field
            total = (sds_alloc_sum(map(len, islice(d, k))) + sds_alloc_sum(map(len, islice(d.values(), k)))  # type: ignore[union-attr]
                     + 24 * k)
            size += int(total / k * n)
        return size

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
        d = _table(pairs)
        if listpack:
            h.lp = _pack(d.items())
        else:
            h.lp = None
            h.d = d
        return h

    # ---- reading -------------------------------------------------------------------------------
    def get(self, field: bytes) -> bytes | None:
        lp = self.lp
        if lp is None:
            return self.d.get(field)  # type: ignore[union-attr]
        return pair_value(lp, field)

    def __contains__(self, field: bytes) -> bool:
        lp = self.lp
        if lp is None:
            return field in self.d  # type: ignore[operator]
        return find_key(lp, field) >= 0

    def flat(self) -> list[bytes]:
        """field, value, field, value, ... in the hash's order."""
        lp = self.lp
        if lp is not None:
            return elements(lp)
        out: list[bytes] = []
        append = out.append
        for f, v in self.d.items():  # type: ignore[union-attr]
            append(f)
            append(v)
        return out

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        lp = self.lp
        if lp is None:
            return iter(self.d.items())  # type: ignore[union-attr]
        return _pairs_of(elements(lp))

    def fields(self) -> list[bytes]:
        lp = self.lp
        if lp is None:
            return list(self.d)  # type: ignore[arg-type]
        return elements(lp)[::2]

    def values(self) -> list[bytes]:
        lp = self.lp
        if lp is None:
            return list(self.d.values())  # type: ignore[union-attr]
        return elements(lp)[1::2]

    def as_dict(self) -> dict[bytes, bytes]:
        """field -> value, in the hash's order; the hashtable itself for that encoding (read it,
        do not change it)."""
        lp = self.lp
        if lp is None:
            return self.d  # type: ignore[return-value]
        return dict(_pairs_of(elements(lp)))

    # ---- writing -------------------------------------------------------------------------------
    def set_pairs(self, args: list[bytes], start: int, max_entries: int, max_value: int) -> int:
        """Set the field/value pairs args[start:] as HSET does, converting to a hashtable when a
        field or value is longer than max_value (checked before inserting, as Redis's
        hashTypeTryConversion) or the hash ends up with more than max_entries fields (checked
        after each pair, updates too, as hashTypeSet does).  Returns how many fields are new."""
        return _set_pairs(self, args, start, max_entries, max_value)

    def _table_set(self, args: list[bytes], start: int) -> int:
        d = self.d
        idx = d.index  # type: ignore[union-attr]
        created = 0
        for i in range(start, len(args), 2):
            f = args[i]
            if f not in d:  # type: ignore[operator]
                created += 1
                if idx is not None:
                    idx.add(f)
            d[f] = args[i + 1]  # type: ignore[index]
        return created

    def delete(self, field: bytes) -> bool:
        lp = self.lp
        if lp is not None:
            p = find_key(lp, field)
            if p < 0:
                return False
            self.lp = splice(lp, p, entry_end(lp, entry_end(lp, p)), b"", -2)
            return True
        d = self.d
        if d.pop(field, None) is None:  # type: ignore[union-attr]
            return False
        if d.index is not None:  # type: ignore[union-attr]
            d.index.discard(field)  # type: ignore[union-attr]
        return True

    # ---- scanning and sampling -----------------------------------------------------------------
    def _index(self) -> SlotIndex:
        d = self.d
        idx = d.index  # type: ignore[union-attr]
        if idx is None:
            idx = d.index = SlotIndex(d)  # type: ignore[union-attr,arg-type]
        return idx

    def scan(self, cursor: int, count: int) -> tuple[int, list[bytes]]:
        """Fields for one HSCAN step: a listpack hash returns all of them and cursor 0."""
        if self.lp is not None:
            return 0, self.fields()
        return self._index().scan(cursor, count)

    def random_field(self) -> bytes:
        if self.lp is not None:
            return random.choice(self.fields())
        return self._index().random_member()

    def random_fields(self, count: int) -> list[bytes]:
        """`count` fields chosen independently (repetitions allowed)."""
        if self.lp is not None:
            return random.choices(self.fields(), k=count)
        pick = self._index().random_member
        return [pick() for _ in range(count)]

    def sample_fields(self, count: int) -> list[bytes]:
        """`count` distinct random fields (count < len)."""
        if self.lp is not None or count * 3 > len(self):
            return random.sample(self.fields(), count)
        pick = self._index().random_member
        chosen: dict[bytes, None] = {}
        while len(chosen) < count:
            chosen[pick()] = None
        return list(chosen)


def _set_pairs(h: Hash, args: list[bytes], start: int, max_entries: int, max_value: int) -> int:
    """Hash.set_pairs (a module function so that, compiled, its locals are C integers)."""
    n = len(args)
    lp = h.lp
    if lp is not None:
        for i in range(start, n):
            if len(args[i]) > max_value:
                h.to_hashtable()
                lp = None
                break
    if lp is None:
        return h._table_set(args, start)
    if n - start == 2:  # the common single-pair write
        f = args[start]
        p = find_key(lp, f)
        if p < 0:
            lp = append_pair(lp, f, args[start + 1])
            created = 1
        else:
            lp = replace_value(lp, entry_end(lp, p), args[start + 1])
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
