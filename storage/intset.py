"""Intset: Redis's compact encoding for small sets of integers (OBJECT ENCODING "intset").

Redis keeps such a set as one sorted array of fixed-width little-endian integers: 16, 32 or 64 bits,
the width needed by the widest member ever added (it widens on insert and never narrows).  What of
that is observable is kept exactly:
- members are the canonical decimal text of an int64 (`canonical_int`: "01", "+1", " 1" are not);
- iteration is in ascending numeric order (SMEMBERS, SSCAN, SINTER over intsets, ...);
- the width and the serialized bytes (`to_bytes`, for DUMP-style consumers and MEMORY USAGE).

The hot representation is a sorted Python list of ints: bisect gives O(log n) membership, and
`list.insert` / `del` are the same O(n) memmove Redis does.  The bytes are produced only on demand.
"""

from __future__ import annotations

import struct
from bisect import bisect_left

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
_INT_FIRST = frozenset(b"-0123456789")
_HEADER = struct.Struct("<II")


def canonical_int(m: bytes) -> int | None:
    """The int64 `m` spells in canonical form (Redis's string2ll / isSdsRepresentableAsLongLong)."""
    if not m or len(m) > 20 or m[0] not in _INT_FIRST:
        return None
    try:
        v = int(m)
    except ValueError:
        return None
    if b"%d" % v != m or v < INT64_MIN or v > INT64_MAX:
        return None
    return v


def width_of(v: int) -> int:
    """Bytes per element the intset needs to hold `v` (INTSET_ENC_INT16/32/64)."""
    if -32768 <= v <= 32767:
        return 2
    if -2147483648 <= v <= 2147483647:
        return 4
    return 8


class IntSet:
    """A sorted set of int64 values with Redis's intset width bookkeeping."""

    __slots__ = ("values", "width")

    def __init__(self, values: list[int] | None = None, width: int = 2) -> None:
        self.values: list[int] = values if values is not None else []
        self.width = width

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self):
        return iter(self.values)

    def __contains__(self, v: int) -> bool:
        vals = self.values
        i = bisect_left(vals, v)
        return i < len(vals) and vals[i] == v

    def add(self, v: int) -> bool:
        vals = self.values
        i = bisect_left(vals, v)
        if i < len(vals) and vals[i] == v:
            return False
        vals.insert(i, v)
        if (v > 32767 or v < -32768) and self.width < 8:
            w = width_of(v)
            if w > self.width:
                self.width = w
        return True

    def remove(self, v: int) -> bool:
        vals = self.values
        i = bisect_left(vals, v)
        if i < len(vals) and vals[i] == v:
            del vals[i]
            return True
        return False

    def pop_at(self, i: int) -> int:
        return self.values.pop(i)

    def copy(self) -> IntSet:
        return IntSet(self.values.copy(), self.width)

    def blob_len(self) -> int:
        return 8 + self.width * len(self.values)

    def to_bytes(self) -> bytes:
        """The intset exactly as Redis lays it out: encoding, length, then the sorted elements."""
        w = self.width
        return _HEADER.pack(w, len(self.values)) + b"".join(
            v.to_bytes(w, "little", signed=True) for v in self.values)

    @classmethod
    def from_bytes(cls, blob: bytes) -> IntSet:
        w, n = _HEADER.unpack_from(blob)
        if w not in (2, 4, 8) or len(blob) != 8 + w * n:
            raise ValueError("bad intset")
        vals = [int.from_bytes(blob[8 + i * w: 8 + (i + 1) * w], "little", signed=True) for i in range(n)]
        if any(a >= b for a, b in zip(vals, vals[1:], strict=False)):
            raise ValueError("bad intset")
        return cls(vals, w)
