"""Bit-level primitives over Redis string values (bytes or bytearray), for the bitmap commands.

Bit numbering is Redis's: bit 0 is the most significant bit of byte 0, so a string reads as one
big-endian bit array.  Every function works through `int.from_bytes` / `int.to_bytes`, which run at
C speed; ranges longer than `_CHUNK` bytes are processed in chunks so that a BITCOUNT or BITPOS over a
512 MB value never materialises a 512 MB integer.

Callers validate and clamp ranges first: these functions assume in-range, non-empty bit ranges,
except `get_field`, which reads zeros past the end of the string as Redis's BITFIELD GET does.
"""

from __future__ import annotations

_CHUNK = 1 << 16

# Byte-wise NOT for BITOP NOT.
_INVERT = bytes(255 - i for i in range(256))


def count_bits(buf: bytes | bytearray, lo: int, hi: int) -> int:
    """Number of set bits at positions lo..hi (inclusive), 0 <= lo <= hi < 8 * len(buf)."""
    b0, b1 = lo >> 3, hi >> 3
    first_mask = 0xFF >> (lo & 7)
    last_mask = (0xFF << (7 - (hi & 7))) & 0xFF
    if b0 == b1:
        return (buf[b0] & first_mask & last_mask).bit_count()
    total = (buf[b0] & first_mask).bit_count() + (buf[b1] & last_mask).bit_count()
    mv = memoryview(buf)
    for start in range(b0 + 1, b1, _CHUNK):
        total += int.from_bytes(mv[start:min(start + _CHUNK, b1)], "little").bit_count()
    return total


def first_bit(buf: bytes | bytearray, bit: int, lo: int, hi: int) -> int:
    """Position of the first bit equal to `bit` (0 or 1) at positions lo..hi, or -1."""
    b0, b1 = lo >> 3, hi >> 3
    mv = memoryview(buf)
    for start in range(b0, b1 + 1, _CHUNK):
        end = min(start + _CHUNK, b1 + 1)
        nbits = (end - start) << 3
        x = int.from_bytes(mv[start:end], "big")
        if not bit:
            x ^= (1 << nbits) - 1
        if start == b0:
            x &= (1 << (nbits - (lo & 7))) - 1
        if end == b1 + 1:
            x &= ~((1 << (7 - (hi & 7))) - 1)
        if x:
            return (start << 3) + nbits - x.bit_length()
    return -1


def get_field(buf: bytes | bytearray | None, offset: int, bits: int) -> int:
    """The unsigned `bits`-wide field at bit `offset`; bits past the end of `buf` read as 0."""
    b0 = offset >> 3
    n = ((offset + bits - 1) >> 3) - b0 + 1
    if n == 1:  # within one byte (u8 at a multiple of 8, any narrower field): no slice, no int.from_bytes
        x = buf[b0] if buf is not None and b0 < len(buf) else 0
        return (x >> (8 - (offset & 7) - bits)) & ((1 << bits) - 1)
    chunk = buf[b0:b0 + n] if buf is not None else b""
    x = int.from_bytes(chunk, "big") << ((n - len(chunk)) << 3)
    return (x >> ((n << 3) - (offset & 7) - bits)) & ((1 << bits) - 1)


def set_field(buf: bytearray, offset: int, bits: int, value: int) -> None:
    """Store the low `bits` bits of `value` at bit `offset`; `buf` must already be long enough."""
    b0 = offset >> 3
    n = ((offset + bits - 1) >> 3) - b0 + 1
    shift = (n << 3) - (offset & 7) - bits
    ones = (1 << bits) - 1
    if n == 1:
        buf[b0] = (buf[b0] & ~(ones << shift)) | ((value & ones) << shift)
        return
    x = int.from_bytes(buf[b0:b0 + n], "big")
    x = (x & ~(ones << shift)) | ((value & ones) << shift)
    buf[b0:b0 + n] = x.to_bytes(n, "big")


def bitwise(op: bytes, sources: list[bytes | bytearray], length: int) -> bytearray:
    """BITOP: `op` is b"and", b"or", b"xor" or b"not"; shorter sources are zero-padded to `length`."""
    if op == b"not":
        return bytearray(sources[0].translate(_INVERT))
    acc = None
    for src in sources:
        x = int.from_bytes(src, "big") << ((length - len(src)) << 3)
        if acc is None:
            acc = x
        elif op == b"and":
            acc &= x
        elif op == b"or":
            acc |= x
        else:
            acc ^= x
    return bytearray((acc or 0).to_bytes(length, "big"))
