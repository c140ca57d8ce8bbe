"""Cursor iteration over hash-table encodings (SSCAN / ZSCAN of "hashtable" / "skiplist" values)
with the guarantee Redis's dictScan gives and no per-cursor server state.

Redis guarantees that an element present from the start to the end of a full iteration is returned
at least once, even if the table is resized in between.  It gets that by walking buckets in
reverse-binary order of the cursor: growing or shrinking the power-of-two table then never skips a
bucket range.  We do the same over a *virtual* table: a member's bucket is `hash(member) & mask`
with the mask of the smallest power of two (>= 4) holding the members.  Python's dict/set do not
expose buckets, so `ScanIndex` groups the members by virtual bucket once; the owner caches it and
drops it on every mutation, so a full scan of an unchanging value costs O(n) in total and a scan
interleaved with writes O(n) per call.

Cursors are only meaningful within one server process (Python salts bytes hashes per process),
which is what Redis promises too: a cursor is not valid across a restart or a rehash of the world.
"""

from __future__ import annotations

from collections.abc import Iterable


def _mask_for(n: int) -> int:
    size = 4
    while size < n:
        size <<= 1
    return size - 1


def _reverse(v: int, bits: int) -> int:
    return int(format(v, "0%db" % bits)[::-1], 2)


class ScanIndex:
    __slots__ = ("mask", "bits", "buckets")

    def __init__(self, members: Iterable[bytes], n: int) -> None:
        self.mask = mask = _mask_for(n)
        self.bits = mask.bit_length()
        buckets: dict[int, list[bytes]] = {}
        for m in members:
            h = hash(m) & mask
            b = buckets.get(h)
            if b is None:
                buckets[h] = [m]
            else:
                b.append(m)
        self.buckets = buckets

    def scan(self, cursor: int, count: int) -> tuple[int, list[bytes]]:
        """Visit buckets from `cursor` until `count` members are gathered (or 10*count buckets
        seen, as Redis bounds the work); returns (next cursor or 0 when done, members)."""
        mask, bits, buckets = self.mask, self.bits, self.buckets
        out: list[bytes] = []
        budget = count * 10
        v = cursor
        while True:
            b = buckets.get(v & mask)
            if b:
                out.extend(b)
            r = _reverse(v & mask, bits) + 1
            if r > mask:
                return 0, out
            v = _reverse(r, bits)
            budget -= 1
            if budget <= 0 or len(out) >= count:
                return v, out
