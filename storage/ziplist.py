"""Read-only decoders for Redis's two legacy compact encodings: the ziplist and the zipmap.

Redis 2.6 - 6.2 wrote small lists, hashes and sorted sets to RDB files as ziplists (lists inside
quicklist nodes from 3.2 on), and Redis < 2.6 wrote small hashes as zipmaps.  Redis 7 no longer
creates either: it only accepts them when loading an RDB file (or a RESTORE payload) and converts
them to listpacks.  This module is the decoding half of that: bytes in, Python values out, nothing
is ever written in these formats.

Ziplist (ziplist.c), all header fields little-endian::

    <zlbytes:u32> <zltail:u32> <zllen:u16> <entry> ... <entry> <0xFF>

    entry    = <prevlen> <encoding> <data>
    prevlen  = 1 byte (< 254) | 0xFE + u32 LE      raw length of the previous entry (0 for the first)
    encoding = 00pppppp                    string of p (< 64) bytes
             | 01pppppp qqqqqqqq           string, 14-bit big-endian length
             | 10______ + u32 BE           string, 32-bit big-endian length
             | 0xC0 int16 | 0xD0 int32 | 0xE0 int64 | 0xF0 int24 | 0xFE int8   (little-endian)
             | 0xF1 .. 0xFD                immediate 0 .. 12, value = (encoding & 0x0F) - 1

Zipmap (zipmap.c)::

    <zmlen:u8> <len> field <len> <free:u8> value <free bytes> ... <0xFF>
    len = 1 byte (< 254) | 0xFE + u32 LE (host order; every Redis we load from is little-endian)

Invariants enforced (any violation raises ValueError, never another exception; work is linear in
the blob's size, so a hostile length cannot make it loop or allocate beyond the blob):

- ziplist, as ziplistValidateIntegrity(deep=1): zlbytes == len(blob); the last byte is 0xFF and the
  entries end exactly there; every entry header and payload lies inside the blob; each prevlen equals
  the previous entry's raw length (0 for the first); zltail is the offset of the last entry (10, the
  header's end, when empty - Redis itself only bounds it then); zllen equals the entry count unless it
  is 0xFFFF (saturated: "count unknown"); no entry uses an undefined encoding (0xC1-0xCF, 0xD1-0xDF,
  0xE1-0xEF).
- zipmap, as zipmapValidateIntegrity(deep=1): at least one pair; the last byte is 0xFF and the pairs
  end exactly there; every length, field, value and free area lies inside the blob; a field is always
  followed by its value; zmlen equals the pair count unless it is 254 (saturated).

What is accepted although Redis never writes it, because Redis's own loader accepts it too: a 5-byte
prevlen or zipmap length holding a value < 254 (Redis keeps the large prevlen form to stop cascading
updates), a string encoding longer than its length needs, and 0x81-0xBF as the 32-bit string
encoding (ziplist.c masks a string encoding to its top two bits).  Checks that depend on what the
data is for (an even number of entries for a hash, duplicate fields or members, an empty list) are
the caller's.
"""

from __future__ import annotations

__all__ = ["ziplist_entries", "zipmap_pairs"]

_ZL_HEADER = 10  # zlbytes, zltail, zllen
_ZL_END = 0xFF
_ZL_BIGLEN = 0xFE  # prevlen marker of the 5-byte form
_ZL_LEN_SATURATED = 0xFFFF
_ZM_BIGLEN = 254  # zipmap length marker of the 5-byte form, and the saturated zmlen
_ZM_END = 0xFF

# Integer encodings: payload size in bytes (little-endian, signed).
_INT_SIZE = {0xFE: 1, 0xC0: 2, 0xF0: 3, 0xD0: 4, 0xE0: 8}


def _u32(blob: bytes, pos: int) -> int:
    return int.from_bytes(blob[pos:pos + 4], "little")


def ziplist_entries(blob: bytes) -> list[bytes]:
    """The entries of a Redis ziplist, in order; integers as their decimal text (b"-12").
    Raises ValueError if `blob` is not a well-formed ziplist (see the module docstring)."""
    size = len(blob)
    if size < _ZL_HEADER + 1:
        raise ValueError("ziplist shorter than its header and terminator")
    if _u32(blob, 0) != size:
        raise ValueError("ziplist zlbytes %d does not match its size %d" % (_u32(blob, 0), size))
    end = size - 1
    if blob[end] != _ZL_END:
        raise ValueError("ziplist does not end with 0xFF")
    zltail = _u32(blob, 4)
    zllen = int.from_bytes(blob[8:10], "little")

    out: list[bytes] = []
    append = out.append
    p = _ZL_HEADER
    prev_raw = 0
    last = -1
    # Every read below is bounded by `end` (the terminator's offset): an entry may end at it but not
    # cross it, so an index past the blob is never formed.
    while blob[p] != _ZL_END:
        # prevlen
        if blob[p] < _ZL_BIGLEN:
            prevlen, q = blob[p], p + 1
        else:  # 0xFE: 5-byte form (0xFF here would have been the terminator)
            if p + 5 > end:
                raise ValueError("ziplist entry at %d: prevlen runs past the end" % p)
            prevlen, q = _u32(blob, p + 1), p + 5
        if prevlen != prev_raw:
            raise ValueError("ziplist entry at %d: prevlen %d, previous entry is %d bytes"
                             % (p, prevlen, prev_raw))
        if q >= end:
            raise ValueError("ziplist entry at %d: encoding runs past the end" % p)
        enc = blob[q]
        kind = enc >> 6
        if kind != 3:  # string
            if kind == 0:
                n, q = enc & 0x3F, q + 1
            elif kind == 1:
                if q + 2 > end:
                    raise ValueError("ziplist entry at %d: length runs past the end" % p)
                n, q = ((enc & 0x3F) << 8) | blob[q + 1], q + 2
            else:
                if q + 5 > end:
                    raise ValueError("ziplist entry at %d: length runs past the end" % p)
                n, q = int.from_bytes(blob[q + 1:q + 5], "big"), q + 5
            nxt = q + n
            if nxt > end:
                raise ValueError("ziplist entry at %d: %d-byte string runs past the end" % (p, n))
            append(blob[q:nxt])
        elif 0xF1 <= enc <= 0xFD:  # immediate 0..12
            nxt = q + 1
            append(b"%d" % ((enc & 0x0F) - 1))
        else:
            width = _INT_SIZE.get(enc)
            if width is None:
                raise ValueError("ziplist entry at %d: invalid encoding 0x%02X" % (p, enc))
            q += 1
            nxt = q + width
            if nxt > end:
                raise ValueError("ziplist entry at %d: integer runs past the end" % p)
            append(b"%d" % int.from_bytes(blob[q:nxt], "little", signed=True))
        prev_raw = nxt - p
        last = p
        p = nxt
    if p != end:
        raise ValueError("ziplist terminator at %d, before the end of the blob" % p)
    expected_tail = _ZL_HEADER if last < 0 else last
    if zltail != expected_tail:
        raise ValueError("ziplist zltail %d, last entry at %d" % (zltail, expected_tail))
    if zllen != _ZL_LEN_SATURATED and zllen != len(out):
        raise ValueError("ziplist zllen %d, %d entries" % (zllen, len(out)))
    return out


def _zm_len(blob: bytes, p: int, end: int, what: str) -> tuple[int, int]:
    """(length, offset after it) of the zipmap length at `p`; the result lies at or before `end`."""
    if p >= end:
        raise ValueError("zipmap %s length at %d runs past the end" % (what, p))
    b = blob[p]
    if b < _ZM_BIGLEN:
        return b, p + 1
    if b != _ZM_BIGLEN:
        raise ValueError("zipmap %s length at %d is the 0xFF terminator" % (what, p))
    if p + 5 > end:
        raise ValueError("zipmap %s length at %d runs past the end" % (what, p))
    return _u32(blob, p + 1), p + 5


def zipmap_pairs(blob: bytes) -> list[tuple[bytes, bytes]]:
    """The (field, value) pairs of a Redis zipmap, in order (duplicates included, for the caller to
    judge).  Raises ValueError if `blob` is not a well-formed, non-empty zipmap."""
    size = len(blob)
    if size < 2:
        raise ValueError("zipmap shorter than its header and terminator")
    end = size - 1
    if blob[end] != _ZM_END:
        raise ValueError("zipmap does not end with 0xFF")
    zmlen = blob[0]
    out: list[tuple[bytes, bytes]] = []
    p = 1
    while blob[p] != _ZM_END:
        n, p = _zm_len(blob, p, end, "field")
        if p + n > end:
            raise ValueError("zipmap %d-byte field at %d runs past the end" % (n, p))
        field = blob[p:p + n]
        p += n
        n, p = _zm_len(blob, p, end, "value")
        if p >= end:
            raise ValueError("zipmap free-space byte at %d runs past the end" % p)
        free = blob[p]
        p += 1
        if p + n + free > end:
            raise ValueError("zipmap %d-byte value (+%d free) at %d runs past the end" % (n, free, p))
        out.append((field, blob[p:p + n]))
        p += n + free
    if p != end:
        raise ValueError("zipmap terminator at %d, before the end of the blob" % p)
    if not out:
        raise ValueError("zipmap is empty")
    if zmlen != _ZM_BIGLEN and zmlen != len(out):
        raise ValueError("zipmap zmlen %d, %d pairs" % (zmlen, len(out)))
    return out
