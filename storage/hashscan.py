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


# Bit-reversal of a byte, for _reverse.
_REV8 = [int(format(b, "08b")[::-1], 2) for b in range(256)]


def _reverse(v: int, bits: int) -> int:
    """The low `bits` bits of `v` (bits <= 64), reversed."""
    r = 0
    for _ in range((bits + 7) >> 3):
        r = (r << 8) | _REV8[v & 255]
        v >>= 8
    return r >> (((bits + 7) & ~7) - bits)


def _reversal_table(bits: int) -> list[int]:
    """_reverse(i, bits) for every i below 2**bits, built by doubling: reversed in k + 1 bits, the
    numbers below 2**k are their k-bit reversal shifted left, the rest that plus one."""
    table = [0]
    for _ in range(bits):
        table = [r << 1 for r in table] + [(r << 1) | 1 for r in table]
    return table


class ScanIndex:
    """The members by virtual bucket, laid out in the order a full scan visits the buckets:
    `slots[i]` holds bucket reverse(i)'s members (None for an empty one).  A cursor names the next
    bucket; a call turns it into a position once, walks positions, and turns the position it stops
    at back into a cursor, so a step costs a list read (the reverse-binary increment per bucket
    made a ZSCAN ... COUNT 100 of a 10,000-member sorted set cost 280 us against Redis's 56)."""

    __slots__ = ("mask", "bits", "slots")

    def __init__(self, members: Iterable[bytes], n: int) -> None:
        self.mask = mask = _mask_for(n)
        self.bits = bits = mask.bit_length()
        slots: list[list[bytes] | None] = [None] * (mask + 1)
        position = _reversal_table(bits)
        for m in members:
            i = position[hash(m) & mask]
            b = slots[i]
            if b is None:
                slots[i] = [m]
            else:
                b.append(m)
        self.slots = slots

    def scan(self, cursor: int, count: int) -> tuple[int, list[bytes]]:
        """Visit buckets from `cursor` until `count` members are gathered (or 10*count buckets
        seen, as Redis bounds the work); returns (next cursor or 0 when done, members)."""
        mask, bits, slots = self.mask, self.bits, self.slots
        out: list[bytes] = []
        budget = count * 10 if count < 1 << 58 else count  # (COUNT may be any positive long)
        c = cursor & mask  # (a Python int first: a cursor may be any unsigned 64-bit number)
        i = _reverse(c, bits)
        while True:
            b = slots[i]
            if b is not None:
                out.extend(b)
            i += 1
            if i > mask:
                return 0, out
            budget -= 1
            if budget <= 0 or len(out) >= count:
                return _reverse(i, bits), out
