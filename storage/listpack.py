"""Listpack: Redis's compact sequence of strings and integers, byte for byte, in a bytearray.

Used for the compact encodings (list/hash/set/zset listpacks) and for the nodes of streams.  The
bytes are exactly what Redis 7.0 writes for the same operations, so RDB payloads can be produced and
loaded by copying the buffer, and memory use is Redis's (plus the bytearray header).

Layout (all integers little endian):

    <total-bytes u32> <num-elements u16> <entry> ... <entry> <0xFF>
    entry = <encoding + data> <backlen>

- num-elements saturates: 65535 means "unknown, count by scanning" (len() scans, and writes the count
  back when it fits again, as lpLength does).
- encodings: 0xxxxxxx 7-bit uint | 10xxxxxx 6-bit-length string | 110xxxxx yyyyyyyy 13-bit int |
  1110xxxx yyyyyyyy 12-bit-length string | F0 + u32 length string | F1/F2/F3/F4 16/24/32/64-bit int.
  Integers are two's complement.  A string that is a canonical int64 (string2ll rules) is stored as
  an integer, always in the smallest encoding that holds it (lpAppend / lpInsertString).
- backlen: the length of <encoding + data> in 7-bit groups, written so it can be read right to left
  from the entry's last byte (high bit set = more groups to the left); 1 to 5 bytes, with Redis's
  exact thresholds (<=127, <16383, <2097151, <268435455).

API.  Positions are byte offsets into the buffer (Redis's `unsigned char *p`); None is "no element".

    lp = Listpack()                       # empty;  Listpack.from_bytes(b) wraps a copy of b
    lp.append(b"x"); lp.append(42)        # bytes go through the int check; ints are stored as ints
    lp.prepend(v); lp.insert(p, v, after=False) -> position of the new element
    lp.replace(p, v) -> p;  lp.delete(p) -> position of the element that followed, or None
    lp.delete_range(index, count); lp.delete_range_at(p, count)
    lp.first() / lp.last() / lp.next(p) / lp.prev(p) / lp.seek(index)  (negative index from the tail)
    lp.get(p) -> int | bytes;  lp.get_bytes(p) -> bytes (ints in decimal);  lp.find(value, p, skip)
    len(lp), iter(lp) (values as get() returns them), lp.bytes(), lp.nbytes(), lp.validate()

Module-level helpers work on a bare bytearray, for callers that keep many listpacks and want no
wrapper object per buffer (stream nodes): `new_buffer()`, `encode_entry(v)`, `encode_int_entry(i)`,
`append_encoded(buf, chunk, n)`, `get_value(buf, p)`, `next_offset(buf, p)`, `prev_offset(buf, p)`,
`replace_at(buf, p, chunk)`, `num_elements(buf)`, `string_to_int(b)`.

Typed operations on a bare buffer, one call per step of a command (listpack.pxd types them, so
compiled they read the bytes through a C pointer; the list type's quicklist nodes are edited with
them): `count_of(buf)`, `offset_at(buf, index)`, `skip(buf, p, n)`, `value_at(buf, p)`,
`values(buf, p, n)`, `bulks(buf, p, n)` (the RESP bulk strings of n entries), `push_value(buf, v,
head)`, `pop_value(buf, head)`, `from_encoded(chunk, n)`, `delete_indexes(buf, indexes)`, and
`checked_count(buf)` (the deep integrity check, without decoding a value), and `canonical_pairs(buf)`
(the same for a loaded small hash, which also finds its elements canonical and its fields distinct).

Random picks of a small hash or sorted set (HRANDFIELD, ZRANDMEMBER; as lpRandomPairs): positions
drawn by `random_indexes(n, k)` or `distinct_indexes(n, k)`, found in one walk by
`group_offsets(buf, width, picks)`, and only those entries decoded (`group_values`).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from raxdb.protocol.reply import bulks_body

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

if TYPE_CHECKING:  # Listpack's `bytes` method shadows the class in its body's annotations
    import builtins

if not cython.compiled:  # compiled, listpack.pxd cimports them inline from reply.pxd
    from raxdb.protocol.reply import bulk_size, decimal, put_bulk, put_int_bulk

HEADER_SIZE = 6
EOF = 0xFF
NUMELE_UNKNOWN = 65535
_EMPTY = b"\x07\x00\x00\x00\x00\x00\xff"

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


def string_to_int(b: bytes | bytearray) -> int | None:
    """The int64 a string represents under string2ll/lpStringToInt64 rules, else None."""
    n = len(b)
    if n == 0 or n > 20:
        return None
    if type(b) is not bytes and type(b) is not bytearray:
        b = bytes(b)  # a memoryview: compiled, `s` below takes bytes or a bytearray
    s = b  # compiled, a pointer to its bytes (listpack.pxd)
    c = s[0]
    i = 0
    if c == 45:  # '-', then a digit 1-9
        if n == 1 or not 49 <= s[1] <= 57:
            return None
        i = 1
    elif not 49 <= c <= 57:
        return 0 if c == 48 and n == 1 else None
    if n - i > 18:  # 19 digits or more: int64's edge, checked in Python's integers
        if not b[i:].isdigit():
            return None
        v = int(b)
        return v if INT64_MIN <= v <= INT64_MAX else None
    # At most 18 digits: read in a C integer, compiled, which none of them can overflow (job
    # queues store 13-digit timestamps in hashes and sorted sets on every write).
    acc = 0
    while i < n:
        c = s[i]
        if c < 48 or c > 57:
            return None
        acc = acc * 10 + (c - 48)
        i += 1
    return -acc if s[0] == 45 else acc


def backlen_bytes(size: int) -> bytes:
    """The reverse-encoded length of an entry whose <encoding + data> is `size` bytes."""
    n = _backlen_size(size)
    if cython.compiled:
        out = PyBytes_FromStringAndSize(cython.NULL, n)  # noqa: F821 (listpack.pxd)
        _put_backlen(cython.cast(cython.p_uchar, cython.cast(cython.p_char, out)), 0, size)
        return out
    d = bytearray(n)
    _put_backlen(d, 0, size)
    return bytes(d)


def _backlen_size(size: int) -> int:
    if size <= 127:
        return 1
    if size < 16383:
        return 2
    if size < 2097151:
        return 3
    if size < 268435455:
        return 4
    return 5


def _int_entry(x: int) -> bytes:
    """The complete entry of the integer x (an int64), a new bytes object, as put_int writes it."""
    if cython.compiled:
        out = PyBytes_FromStringAndSize(cython.NULL, int_entry_size(x))  # noqa: F821 (listpack.pxd)
        put_int(cython.cast(cython.p_uchar, cython.cast(cython.p_char, out)), 0, x)
        return out
    d = bytearray(int_entry_size(x))
    put_int(d, 0, x)
    return bytes(d)


_INT16_ENTRY = struct.Struct("<BhB").pack  # encoding byte, the value, its back-length
_INT32_ENTRY = struct.Struct("<BiB").pack
_INT64_ENTRY = struct.Struct("<BqB").pack


# The entries (encoding + data + backlen) of -4096 .. 4095, the common stream fields, each made on
# its first use: making all 8,192 cost every start ~3.5 M instructions compiled (~7 ms interpreted).
SMALL_INT_ENTRIES: list[bytes | None] = [None] * 8192


def _small_int_entry(x: int) -> bytes:
    """The entry of x (-4096 <= x <= 4095): SMALL_INT_ENTRIES' one, made the first time."""
    e = SMALL_INT_ENTRIES[x + 4096]
    if e is None:
        e = SMALL_INT_ENTRIES[x + 4096] = _int_entry(x)
    return e


def encode_int_entry(v: int) -> bytes:
    """The complete entry for the integer v (lpAppendInteger); v must fit int64.  Compiled, the
    entry is written into a new bytes object; interpreted, the 16-, 32- and 64-bit ones are packed
    in one call (timestamps, the common large values, are 64-bit)."""
    if cython.compiled:
        x = v
        if -4096 <= x <= 4095:
            return _small_int_entry(x)
        return _int_entry(x)
    if -4096 <= v <= 4095:
        return _small_int_entry(v)
    if -32768 <= v <= 32767:
        return _INT16_ENTRY(0xF1, v, 3)
    if not -8388608 <= v <= 8388607:
        if -2147483648 <= v <= 2147483647:
            return _INT32_ENTRY(0xF3, v, 5)
        return _INT64_ENTRY(0xF4, v, 9)
    return _int_entry(v)


def encode_str_entry(s: bytes) -> bytes:
    """The complete entry for s stored as a string (no int check)."""
    n = len(s)
    if n < 64:
        return b"%c%s%c" % (0x80 | n, s, n + 1)
    if n < 4096:
        return b"%c%c%s%s" % (0xE0 | (n >> 8), n & 0xFF, s, backlen_bytes(n + 2))
    return b"\xf0%s%s%s" % (n.to_bytes(4, "little"), s, backlen_bytes(n + 5))


def encode_entry(v: bytes | int) -> bytes:
    """The complete entry for v as lpAppend/lpAppendInteger store it: canonical int strings as ints."""
    if type(v) is int:
        return encode_int_entry(v)
    n = len(v)  # type: ignore[arg-type]
    if n and v[0] <= 57:  # type: ignore[index]
        i = string_to_int(v)  # type: ignore[arg-type]
        if i is not None:
            return encode_int_entry(i)
    if n < 64:
        if cython.compiled and type(v) is bytes:
            out = PyBytes_FromStringAndSize(cython.NULL, n + 2)  # noqa: F821 (listpack.pxd)
            put_str(cython.cast(cython.p_uchar, cython.cast(cython.p_char, out)), 0, v, n)
            return out
        return b"%c%s%c" % (0x80 | n, v, n + 1)
    return encode_str_entry(bytes(v))


# ---- entries written in place --------------------------------------------------------------------
# A caller sizes its buffer with encoded_size, then writes each entry with put_entry at an offset,
# which returns the offset after it: a hash's listpack rebuilt in one pass (replace_values), a
# list push (push_value) and a stream's entries appended to their node (stream.py's writers), the
# bytearrays lengthened first by `grown`.  Compiled, `d` is a pointer into the buffer (listpack.pxd);
# interpreted, the bytearray itself.

def grown(buf: bytearray, size: int) -> bytearray:
    """buf lengthened by `size` bytes, for the caller to write them (put_entry, put_int, put_str,
    at offsets from the old length on, or after moving what is there): what to write through.
    Compiled, one resize of the bytearray, its new bytes left unwritten, and a pointer to its
    bytes (good until the next change of its size); interpreted, the bytearray, zero-filled."""
    if cython.compiled:
        PyByteArray_Resize(buf, len(buf) + size)  # noqa: F821 (listpack.pxd)
        return cython.cast(cython.p_uchar, PyByteArray_AS_STRING(buf))  # noqa: F821
    buf.extend(bytes(size))
    return buf


def encoded_size(v: bytes) -> int:
    """The bytes of v's canonical entry, len(encode_entry(v)), without building it."""
    n = len(v)
    if n and v[0] <= 57:
        i = string_to_int(v)
        if i is not None:
            return int_entry_size(i)
    if n < 64:
        return n + 2
    if n < 4096:
        return n + 2 + _backlen_size(n + 2)
    return n + 5 + _backlen_size(n + 5)


def int_entry_size(x: int) -> int:
    """The bytes of the integer x's entry (x an int64)."""
    if 0 <= x <= 127:
        return 2
    if -4096 <= x <= 4095:
        return 3
    if -32768 <= x <= 32767:
        return 4
    if -8388608 <= x <= 8388607:
        return 5
    if -2147483647 - 1 <= x <= 2147483647:  # no literal of 2^31: compiled, a Python int
        return 6
    return 10


def put_entry(d: bytearray, k: int, v: bytes) -> int:
    """Write v's canonical entry (encode_entry's bytes) at d[k:], which has room for
    encoded_size(v) bytes; the offset after it."""
    n = len(v)
    if n and v[0] <= 57:
        i = string_to_int(v)
        if i is not None:
            return put_int(d, k, i)
    return put_str(d, k, v, n)


def put_int(d: bytearray, k: int, x: int) -> int:
    """Write the integer x's entry (lpEncodeIntegerGetType's smallest) at d[k:]."""
    if 0 <= x <= 127:
        d[k] = x
        d[k + 1] = 1
        return k + 2
    if -4096 <= x <= 4095:
        u = x & 0x1FFF  # 13-bit two's complement
        d[k] = 0xC0 | (u >> 8)
        d[k + 1] = u & 0xFF
        d[k + 2] = 2
        return k + 3
    size = int_entry_size(x) - 2  # the value's bytes: 2, 3, 4 or 8 (16, 24, 32 or 64 bits)
    d[k] = 0xF4 if size == 8 else 0xEF + size  # 0xF1, 0xF2, 0xF3: lpEncodeIntegerGetType's types
    u = x  # two's complement, little-endian (interpreted, >> keeps the sign and & 0xFF the byte)
    for j in range(size):
        d[k + 1 + j] = u & 0xFF
        u >>= 8
    d[k + 1 + size] = size + 1
    return k + size + 2


def put_str(d: bytearray, k: int, v: bytes, n: int) -> int:
    """Write v (n bytes) as a string entry at d[k:]: 6-, 12- or 32-bit length, then its back-length."""
    if n < 64:
        d[k] = 0x80 | n
        head = 1
    elif n < 4096:
        d[k] = 0xE0 | (n >> 8)
        d[k + 1] = n & 0xFF
        head = 2
    else:
        d[k] = 0xF0
        d[k + 1] = n & 0xFF
        d[k + 2] = (n >> 8) & 0xFF
        d[k + 3] = (n >> 16) & 0xFF
        d[k + 4] = n >> 24
        head = 5
    if cython.compiled:
        memcpy(d + k + head, cython.cast(cython.p_char, v), n)  # noqa: F821 (listpack.pxd)
    else:
        d[k + head:k + head + n] = v
    return _put_backlen(d, k + head + n, head + n)


def _put_backlen(d: bytearray, k: int, size: int) -> int:
    """Write the back-length of an entry whose <encoding + data> is `size` bytes (backlen_bytes's)."""
    if size <= 127:
        d[k] = size
        return k + 1
    n = _backlen_size(size)
    shift = 7 * (n - 1)
    d[k] = size >> shift
    for j in range(1, n):
        shift -= 7
        d[k + j] = ((size >> shift) & 127) | 128
    return k + n


def _body_size(buf: bytearray | bytes, p: int) -> int:
    """Bytes of <encoding + data> of the entry at p."""
    b = buf[p]
    if b < 0x80:
        return 1
    if b < 0xC0:
        return 1 + (b & 0x3F)
    if b < 0xE0:
        return 2
    if b < 0xF0:
        return 2 + (((b & 0x0F) << 8) | buf[p + 1])
    if b == 0xF0:
        return 5 + int.from_bytes(buf[p + 1 : p + 5], "little")
    if b == 0xF1:
        return 3
    if b == 0xF2:
        return 4
    if b == 0xF3:
        return 5
    if b == 0xF4:
        return 9
    raise ValueError("listpack: bad encoding byte 0x%02x at %d" % (b, p))


def entry_size(buf: bytearray | bytes, p: int) -> int:
    """Total bytes of the entry at p, backlen included."""
    n = _body_size(buf, p)
    return n + _backlen_size(n)


def next_offset(buf: bytearray | bytes, p: int) -> int | None:
    """The element after the one at p, or None."""
    b = buf[p]
    if b < 0x80:
        q = p + 2
    elif b < 0xC0:
        q = p + (b & 0x3F) + 2
    else:
        q = p + entry_size(buf, p)
    return None if buf[q] == EOF else q


def prev_offset(buf: bytearray | bytes, p: int) -> int | None:
    """The element before the one at p (p may be the EOF offset), or None."""
    if p <= HEADER_SIZE:
        return None
    q = p - 1
    b = buf[q]
    size = b & 127
    shift = 0
    while b & 128:
        q -= 1
        shift += 7
        b = buf[q]
        size |= (b & 127) << shift
    return q - size


def get_value(buf: bytearray | bytes, p: int) -> int | bytes:
    """The element at p: int for integer encodings, bytes for strings (lpGet)."""
    b = buf[p]
    if b < 0x80:
        return b
    if b < 0xC0:
        return bytes(buf[p + 1 : p + 1 + (b & 0x3F)])
    if b < 0xE0:
        v = ((b & 0x1F) << 8) | buf[p + 1]
        return v - 8192 if v >= 4096 else v
    if b < 0xF0:
        n = ((b & 0x0F) << 8) | buf[p + 1]
        return bytes(buf[p + 2 : p + 2 + n])
    if b == 0xF0:
        n = int.from_bytes(buf[p + 1 : p + 5], "little")
        return bytes(buf[p + 5 : p + 5 + n])
    if b == 0xF1:
        return int.from_bytes(buf[p + 1 : p + 3], "little", signed=True)
    if b == 0xF2:
        return int.from_bytes(buf[p + 1 : p + 4], "little", signed=True)
    if b == 0xF3:
        return int.from_bytes(buf[p + 1 : p + 5], "little", signed=True)
    if b == 0xF4:
        return int.from_bytes(buf[p + 1 : p + 9], "little", signed=True)
    raise ValueError("listpack: bad encoding byte 0x%02x at %d" % (b, p))


def get_bytes(buf: bytearray | bytes, p: int) -> bytes:
    v = get_value(buf, p)
    return b"%d" % v if type(v) is int else v  # type: ignore[return-value]


def checked_values(buf: bytes | bytearray) -> list[bytes]:
    """Every element as bytes (integers in decimal), checking the layout as `Listpack.validate`
    does (total bytes, terminator, each entry's encoding, bounds and back-length, the header's
    count).  Raises ValueError for a malformed listpack.  Interpreted, the check and the decoding
    are one pass; compiled, they are checked_count's walk and then `values`', both through a
    pointer, which is faster than one pass of Python objects (the same verdict: the tests hold
    the two checks to it)."""
    if cython.compiled:
        return values(buf, HEADER_SIZE, checked_count(buf))
    n = len(buf)
    if n < HEADER_SIZE + 1 or int.from_bytes(buf[0:4], "little") != n or buf[n - 1] != EOF:
        raise ValueError("listpack: bad header or terminator")
    end = n - 1
    p = HEADER_SIZE
    out: list[bytes] = []
    append = out.append
    while p < end:
        b = buf[p]
        if b < 0x80:  # 7-bit integer: body 1 byte, back-length 1
            if buf[p + 1] != 1:
                raise ValueError("listpack: bad backlen at %d" % p)
            append(b"%d" % b)
            p += 2
            continue
        if b < 0xC0:  # 6-bit string
            q = p + 1 + (b & 0x3F)
            if q >= end or buf[q] != q - p:
                raise ValueError("listpack: bad entry at %d" % p)
            append(bytes(buf[p + 1:q]))
            p = q + 1
            continue
        size = _body_size(buf, p)
        bl = backlen_bytes(size)
        q = p + size
        if q + len(bl) > end or buf[q:q + len(bl)] != bl:
            raise ValueError("listpack: bad entry at %d" % p)
        append(get_bytes(buf, p))
        p = q + len(bl)
    if p != end:
        raise ValueError("listpack: entries overrun the terminator")
    header = num_elements(buf)
    if header != NUMELE_UNKNOWN and header != len(out):
        raise ValueError("listpack: element count %d, header says %d" % (len(out), header))
    return out


def new_buffer() -> bytearray:
    return bytearray(_EMPTY)


def num_elements(buf: bytearray | bytes) -> int:
    """The header's element count (NUMELE_UNKNOWN when saturated)."""
    return buf[4] | (buf[5] << 8)


_pack_header = struct.Struct("<IH").pack_into


def _set_header(buf: bytearray, count: int) -> None:
    _pack_header(buf, 0, len(buf), count)


def _add_count(buf: bytearray, delta: int) -> int:
    n = buf[4] | (buf[5] << 8)
    if n == NUMELE_UNKNOWN:
        return n
    n += delta
    return NUMELE_UNKNOWN if n > NUMELE_UNKNOWN else n


def append_encoded(buf: bytearray, chunk: bytes, nelems: int) -> None:
    """Append `nelems` complete entries already encoded back to back in `chunk`."""
    count = _add_count(buf, nelems)
    buf[-1:] = chunk
    buf.append(EOF)
    _set_header(buf, count)


def insert_encoded(buf: bytearray, p: int, chunk: bytes, nelems: int) -> None:
    """Insert `nelems` encoded entries at offset p (before the element at p, or at EOF)."""
    count = _add_count(buf, nelems)
    buf[p:p] = chunk
    _set_header(buf, count)


def replace_at(buf: bytearray, p: int, entry: bytes) -> None:
    """Replace the element at p by one complete encoded entry."""
    b = buf[p]
    old = 2 if b < 0x80 else entry_size(buf, p)
    if old == len(entry):
        buf[p : p + old] = entry
        return
    buf[p : p + old] = entry
    _set_header(buf, num_elements(buf))


def delete_at(buf: bytearray, p: int, count: int = 1) -> None:
    """Delete up to `count` consecutive elements starting at p (compiled, a C walk: listpack.pxd)."""
    s = buf
    q = p
    n = 0
    while n < count and s[q] != EOF:
        q += entry_span(s, q)
        n += 1
    del buf[p:q]  # `s` is not read past this: the bytearray may move
    total = buf[4] | (buf[5] << 8)
    if total != NUMELE_UNKNOWN:
        total -= n
    put_header(buf, total)


class Listpack:
    """A listpack owning one bytearray (`buf`).  See the module docstring for the API."""

    __slots__ = ("buf",)

    def __init__(self, buf: bytearray | None = None) -> None:
        self.buf = bytearray(_EMPTY) if buf is None else buf

    @classmethod
    def from_bytes(cls, data: bytes | bytearray) -> Listpack:
        lp = cls(bytearray(data))
        lp.validate()
        return lp

    @classmethod
    def from_values(cls, values: Sequence[bytes | int]) -> Listpack:
        lp = cls()
        append_encoded(lp.buf, b"".join(encode_entry(v) for v in values), len(values))
        return lp

    def bytes(self) -> bytes:
        return bytes(self.buf)

    def nbytes(self) -> int:
        return len(self.buf)

    def copy(self) -> Listpack:
        return Listpack(bytearray(self.buf))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Listpack) and self.buf == other.buf

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "Listpack(%r)" % (list(self),)

    # ---- navigation ----------------------------------------------------------------------------
    def first(self) -> int | None:
        return None if self.buf[HEADER_SIZE] == EOF else HEADER_SIZE

    def last(self) -> int | None:
        return prev_offset(self.buf, len(self.buf) - 1)

    def next(self, p: int) -> int | None:
        return next_offset(self.buf, p)

    def prev(self, p: int) -> int | None:
        return prev_offset(self.buf, p)

    def seek(self, index: int) -> int | None:
        """Offset of the element at `index` (negative counts from the tail), or None (lpSeek)."""
        n = len(self)
        if index < 0:
            index += n
        if index < 0 or index >= n:
            return None
        buf = self.buf
        if index <= n // 2:
            p: int | None = HEADER_SIZE
            for _ in range(index):
                p = next_offset(buf, p)  # type: ignore[arg-type]  # index < n: never past the tail
            return p
        q: int | None = len(buf) - 1
        for _ in range(n - index):
            q = prev_offset(buf, q)  # type: ignore[arg-type]  # n - index <= n: never before the head
        return q

    def __len__(self) -> int:
        buf = self.buf
        n = buf[4] | (buf[5] << 8)
        if n != NUMELE_UNKNOWN:
            return n
        n = 0
        p = HEADER_SIZE
        while buf[p] != EOF:
            p += entry_size(buf, p)
            n += 1
        if n < NUMELE_UNKNOWN:
            _set_header(buf, n)
        return n

    def __iter__(self) -> Iterator[int | builtins.bytes]:
        buf = self.buf
        p = HEADER_SIZE
        while buf[p] != EOF:
            yield get_value(buf, p)
            p += entry_size(buf, p)

    # ---- reading -------------------------------------------------------------------------------
    def get(self, p: int) -> int | builtins.bytes:
        return get_value(self.buf, p)

    def get_bytes(self, p: int) -> builtins.bytes:
        return get_bytes(self.buf, p)

    def find(self, value: builtins.bytes, p: int | None = None, skip: int = 0) -> int | None:
        """First element equal to `value` from p (default: first), comparing every (skip+1)th
        element, as lpFind does for field lookups in hashes (skip=1)."""
        buf = self.buf
        if p is None:
            p = HEADER_SIZE
        as_int = string_to_int(value)
        while buf[p] != EOF:
            v = get_value(buf, p)
            if v == value if type(v) is bytes else (as_int is not None and v == as_int):
                return p
            p += entry_size(buf, p)
            for _ in range(skip):
                if buf[p] == EOF:
                    return None
                p += entry_size(buf, p)
        return None

    # ---- writing -------------------------------------------------------------------------------
    def append(self, v: builtins.bytes | int) -> None:
        append_encoded(self.buf, encode_entry(v), 1)

    def prepend(self, v: builtins.bytes | int) -> None:
        insert_encoded(self.buf, HEADER_SIZE, encode_entry(v), 1)

    def insert(self, p: int, v: builtins.bytes | int, after: bool = False) -> int:
        """Insert v before (or after) the element at p; returns the new element's offset."""
        if after:
            p += entry_size(self.buf, p)
        insert_encoded(self.buf, p, encode_entry(v), 1)
        return p

    def replace(self, p: int, v: builtins.bytes | int) -> int:
        replace_at(self.buf, p, encode_entry(v))
        return p

    def delete(self, p: int) -> int | None:
        """Delete the element at p; returns the offset of the element that followed it, or None."""
        delete_at(self.buf, p, 1)
        return None if self.buf[p] == EOF else p

    def delete_range_at(self, p: int, count: int) -> None:
        delete_at(self.buf, p, count)

    def delete_range(self, index: int, count: int) -> None:
        """Delete `count` elements from `index` (negative from the tail), as lpDeleteRange."""
        p = self.seek(index)
        if p is not None and count > 0:
            delete_at(self.buf, p, count)

    # ---- checking ------------------------------------------------------------------------------
    def validate(self) -> None:
        """Raise ValueError unless the buffer is a well-formed listpack (lpValidateIntegrity deep)."""
        buf = self.buf
        if len(buf) < HEADER_SIZE + 1:
            raise ValueError("listpack: too short")
        if int.from_bytes(buf[0:4], "little") != len(buf):
            raise ValueError("listpack: total bytes mismatch")
        if buf[-1] != EOF:
            raise ValueError("listpack: no terminator")
        p = HEADER_SIZE
        n = 0
        end = len(buf) - 1
        while p < end:
            size = _body_size(buf, p)
            bl = backlen_bytes(size)
            if buf[p + size : p + size + len(bl)] != bl:
                raise ValueError("listpack: bad backlen at %d" % p)
            p += size + len(bl)
            n += 1
        if p != end:
            raise ValueError("listpack: entries overrun the terminator")
        header = num_elements(buf)
        if header != NUMELE_UNKNOWN and header != n:
            raise ValueError("listpack: element count %d, header says %d" % (n, header))


# ---- typed operations on a bare buffer ---------------------------------------------------------
# One call per step of a command (a push, a pop, a range, a seek), for callers that keep many
# listpacks as bare bytearrays (a quicklist's nodes).  listpack.pxd types them: compiled, `s` is a
# pointer into the buffer and every byte read is a C load, so these are the fast paths; the
# functions above stay the general codec they fall back on for the rare encodings.  A pointer is
# only valid until the buffer is resized: each function takes it again after it edits.

# Whether this module runs compiled: `bulks` writes byte by byte when it does, and slices when it
# does not (a Python step per byte would be slower than the interpreter's slicing).
_COMPILED = not __file__.endswith(".py")
_DECIMALS = [b"%d" % i for i in range(128)]  # the 7-bit integers as replies spell them
_BYTE = [bytes((i,)) for i in range(256)]  # one-byte pieces of the entries and headers joined below
_random = random.random  # random_indexes' draws (the random module's: a seed repeats them)
_sample = random.sample


def entry_span(s: bytes | bytearray, p: int) -> int:
    """Total bytes of the entry at p, back-length included (entry_size, typed)."""
    b = s[p]
    if b < 0x80:
        return 2
    if b < 0xC0:
        return (b & 0x3F) + 2
    if b < 0xE0:
        return 3
    if b < 0xF0:
        n = (((b & 0x0F) << 8) | s[p + 1]) + 2
        return n + 1 if n <= 127 else n + 2
    if b == 0xF0:
        n = (s[p + 1] | (s[p + 2] << 8) | (s[p + 3] << 16) | (s[p + 4] << 24)) + 5
        return n + _backlen_size(n)
    if b == 0xF1:
        return 4
    if b == 0xF2:
        return 5
    if b == 0xF3:
        return 6
    if b == 0xF4:
        return 10
    raise ValueError("listpack: bad encoding byte 0x%02x at %d" % (b, p))


def _prev(s: bytes | bytearray, q: int) -> int:
    """The entry that ends at q (q past the header): its back-length read right to left."""
    q -= 1
    b = s[q]
    size = b & 127
    shift = 0
    while b & 128:
        q -= 1
        shift += 7
        b = s[q]
        size |= (b & 127) << shift
    return q - size


def _value(s: bytes | bytearray, buf: bytes | bytearray, p: int) -> bytes:
    """The entry at p as bytes (get_bytes), the strings under 4 KB and the integers inline."""
    b = s[p]
    if b < 0x80:
        return _DECIMALS[b]
    if b < 0xC0:
        v = s[p + 1:p + 1 + (b & 0x3F)]
    elif b < 0xE0:  # 13-bit integer
        x = ((b & 0x1F) << 8) | s[p + 1]
        return decimal(x - 8192 if x >= 4096 else x)
    elif b < 0xF0:
        v = s[p + 2:p + 2 + (((b & 0x0F) << 8) | s[p + 1])]
    elif b == 0xF1:  # 16-, 24- and 32-bit integers, little-endian two's complement
        x = s[p + 1] | (s[p + 2] << 8)
        return decimal(x - 0x10000 if x >= 0x8000 else x)
    elif b == 0xF2:
        x = s[p + 1] | (s[p + 2] << 8) | (s[p + 3] << 16)
        return decimal(x - 0x1000000 if x >= 0x800000 else x)
    elif b == 0xF3 or b == 0xF4:  # 32- and 64-bit: from the signed top byte down, no literal of
        # 2^31 or more (compiled, Cython would make it a Python int, and the arithmetic Python's)
        i = 4 if b == 0xF3 else 8
        x = s[p + i]
        if x >= 128:
            x -= 256
        while i > 1:
            i -= 1
            x = x * 256 + s[p + i]
        return decimal(x)
    else:
        return get_bytes(buf, p)
    # compiled, s is a pointer (listpack.pxd) and its slice bytes already
    return v if _COMPILED else bytes(v)  # type: ignore[return-value]


def put_header(buf: bytearray, count: int) -> None:
    """Store the header of `buf` after an edit: its byte length and element count."""
    _put_header_at(buf, len(buf), count)


def _put_header_at(d: bytearray, total: int, count: int) -> None:
    """Write a listpack header (total bytes, element count) at d[0:6]."""
    d[0] = total & 0xFF
    d[1] = (total >> 8) & 0xFF
    d[2] = (total >> 16) & 0xFF
    d[3] = total >> 24
    d[4] = count & 0xFF
    d[5] = count >> 8


def count_of(buf: bytes | bytearray) -> int:
    """The number of elements (lpLength): the header's count, or a scan when it is saturated."""
    s = buf
    n = s[4] | (s[5] << 8)
    if n != NUMELE_UNKNOWN:
        return n
    n = 0
    p = HEADER_SIZE
    while s[p] != EOF:
        p += entry_span(s, p)
        n += 1
    return n


def offset_at(buf: bytes | bytearray, index: int) -> int:
    """Offset of element `index`, 0 <= index < count_of(buf), walking from the nearer end (lpSeek)."""
    s = buf
    n = count_of(buf)
    if index <= n >> 1:
        p = HEADER_SIZE
        for _i in range(index):
            p += entry_span(s, p)
        return p
    p = len(buf) - 1
    for _i in range(n - index):
        p = _prev(s, p)
    return p


def skip(buf: bytes | bytearray, p: int, n: int) -> int:
    """The offset n entries after p (the terminator's offset when they run to the end)."""
    s = buf
    for _i in range(n):
        p += entry_span(s, p)
    return p


def value_at(buf: bytes | bytearray, p: int) -> bytes:
    """The element at p as bytes, integers in decimal (get_bytes, typed)."""
    s = buf
    return _value(s, buf, p)


def values(buf: bytes | bytearray, p: int, n: int) -> list[bytes]:
    """The n elements from offset p as bytes, integers in decimal."""
    s = buf
    out = []
    for _i in range(n):
        out.append(_value(s, buf, p))
        p += entry_span(s, p)
    return out


# ---- random picks ------------------------------------------------------------------------------
# Redis picks positions in a small hash's or sorted set's listpack and decodes only what it picked
# (lpRandomPair, lpRandomPairs, lpRandomPairsUnique); so do these.  A pick is a group index: group
# i is the `width` entries from element i * width (width 2: a pair, a field and its value or a
# member and its score).  random_indexes / distinct_indexes draw the picks, group_offsets finds
# them in one walk that decodes nothing, and the owner of the encoding decodes the entries picked
# (group_values as bytes; the sorted set reads its scores itself).
def random_indexes(n: int, k: int) -> list[int]:
    """`k` indexes drawn uniformly and independently from [0, n), n > 0 (a negative count's picks;
    random() * n, below 1 by a ulp at most, stays below n for any n under 2**53)."""
    rnd = _random
    out = []
    for _i in range(k):
        x = rnd() * n
        out.append(cython.cast(cython.Py_ssize_t, x) if cython.compiled else int(x))
    return out


def distinct_indexes(n: int, k: int) -> list[int]:
    """`k` distinct indexes of [0, n) (k <= n), chosen uniformly, ascending: the order in which
    lpRandomPairsUnique returns its picks, the listpack's."""
    out = _sample(range(n), k)
    out.sort()
    return out


def group_offsets(buf: bytes, width: int, picks: list[int]) -> list[int]:
    """The offset of each group `picks` names (any order, repeats allowed), in the picks' order.
    One walk notes the offsets of the groups up to the furthest pick (compiled, in a scratch C
    array), then each pick reads its own: nothing is decoded, and no sort (lpRandomPairs sorts
    its picks to walk once).  IndexError for a pick outside the listpack's groups."""
    s = buf
    top = 0
    for i in picks:
        if i < 0:
            raise IndexError("listpack group out of range")
        if i >= top:
            top = i + 1
    p = HEADER_SIZE
    end = len(buf) - 1  # the terminator's offset (a C integer compiled: no lookup of EOF per group)
    if cython.compiled:
        scratch = PyBytes_FromStringAndSize(cython.NULL, top * cython.sizeof(cython.Py_ssize_t))  # noqa: F821
        t = cython.cast(cython.pointer(cython.Py_ssize_t), cython.cast(cython.p_char, scratch))
        for g in range(top):
            if p >= end:
                raise IndexError("listpack group out of range")
            t[g] = p
            for _j in range(width):
                b = s[p]
                if b < 0xC0:  # a 7-bit integer or a 6-bit string, the usual fields: inline
                    p += 2 if b < 0x80 else (b & 0x3F) + 2
                else:
                    p += entry_span(s, p)
        return [t[i] for i in picks]
    offsets = []
    for _g in range(top):
        if p >= end:
            raise IndexError("listpack group out of range")
        offsets.append(p)
        p = skip(buf, p, width)
    return [offsets[i] for i in picks]


def group_values(buf: bytes, width: int, picks: list[int], take: int) -> list[bytes]:
    """The first `take` entries (1 or 2) of each group `picks` names (group_offsets), flat, as
    bytes, integers in decimal: a small hash's random fields, or fields and their values."""
    s = buf
    out = []
    for p in group_offsets(buf, width, picks):
        out.append(_value(s, buf, p))
        if take > 1:
            out.append(_value(s, buf, p + entry_span(s, p)))
    return out


def equal_indexes(buf: bytes | bytearray, p: int, n: int, v: bytes, iv: int, is_int: bool) -> list[int]:
    """The indexes among the n elements from offset p that equal v as lpCompare compares them: a
    string entry by its bytes, an integer entry by value against iv (v as an int64; is_int false
    when v spells none canonically).  Nothing is decoded to bytes (LREM's and LPOS's scan)."""
    s = buf
    lv = len(v)
    out = []
    for i in range(n):
        b = s[p]
        if b < 0x80:
            if is_int and iv == b:
                out.append(i)
            p += 2
            continue
        if b < 0xC0:
            ln = b & 0x3F
            if ln == lv and buf.startswith(v, p + 1):
                out.append(i)
            p += ln + 2
            continue
        if b < 0xE0:
            if is_int:
                x = ((b & 0x1F) << 8) | s[p + 1]
                if iv == (x - 8192 if x >= 4096 else x):
                    out.append(i)
            p += 3
            continue
        if b <= 0xF0:  # strings of 12- and 32-bit lengths
            if b < 0xF0:
                ln = ((b & 0x0F) << 8) | s[p + 1]
                start = p + 2
            else:
                ln = s[p + 1] | (s[p + 2] << 8) | (s[p + 3] << 16) | (s[p + 4] << 24)
                start = p + 5
            if ln == lv and buf.startswith(v, start):
                out.append(i)
            p += entry_span(s, p)
            continue
        if is_int:
            if b == 0xF1:
                x = s[p + 1] | (s[p + 2] << 8)
                x = x - 0x10000 if x >= 0x8000 else x
            elif b == 0xF2:
                x = s[p + 1] | (s[p + 2] << 8) | (s[p + 3] << 16)
                x = x - 0x1000000 if x >= 0x800000 else x
            elif b == 0xF3:
                x = s[p + 1] | (s[p + 2] << 8) | (s[p + 3] << 16) | (s[p + 4] << 24)
                x = x - 0x100000000 if x >= 0x80000000 else x
            else:
                x = int.from_bytes(buf[p + 1:p + 9], "little", signed=True)
            if iv == x:
                out.append(i)
        p += entry_span(s, p)
    return out


def from_encoded(chunk: bytes, n: int) -> bytearray:
    """A new listpack of the `n` entries encoded back to back in `chunk`, allocated at its exact
    size (a buffer grown entry by entry keeps the slack of its last growth)."""
    size = HEADER_SIZE + len(chunk) + 1
    buf = bytearray(size)
    buf[HEADER_SIZE:size - 1] = chunk
    buf[size - 1] = EOF
    put_header(buf, n)
    return buf


def push_value(buf: bytearray, v: bytes, head: bool) -> None:
    """lpPrepend (head) or lpAppend of one element, stored as Redis stores it (a canonical int64
    string as an integer)."""
    s = v
    n = len(v)
    count = buf[4] | (buf[5] << 8)
    unknown = NUMELE_UNKNOWN  # compiled, a C integer (listpack.pxd): a C compare, not a boxed count's
    if count < unknown:
        count += 1
    if 0 < n < 64 and s[0] > 57:  # a short string that cannot be an integer (starts past '9')
        if cython.compiled:  # one resize, the entry written in place (no temporary bytes, no slice)
            size = len(buf)
            d = grown(buf, n + 2)
            if head:  # the entries move up, as lpPrepend's memmove
                end = HEADER_SIZE
                memmove(d + end + n + 2, d + end, size - end)  # noqa: F821
            else:
                end = size - 1  # over the terminator, written again after the entry
                d[size + n + 1] = EOF
            d[end] = 0x80 | n
            memcpy(d + end + 1, s, n)  # noqa: F821
            d[end + n + 1] = n + 1
        elif head:
            buf[HEADER_SIZE:HEADER_SIZE] = _BYTE[0x80 | n] + v + _BYTE[n + 1]  # concatenation: cheaper than %
        else:
            buf[len(buf) - 1] = 0x80 | n  # over the terminator
            buf += v
            buf.append(n + 1)
            buf.append(EOF)
    elif head:
        buf[HEADER_SIZE:HEADER_SIZE] = encode_entry(v)
    else:
        end = len(buf) - 1
        buf[end:end + 1] = encode_entry(v)
        buf.append(EOF)
    put_header(buf, count)


def pop_value(buf: bytearray, head: bool) -> bytes:
    """Remove the first (head) or last element and return it as bytes (lpGet + lpDelete)."""
    s = buf
    count = s[4] | (s[5] << 8)
    unknown = NUMELE_UNKNOWN  # (as push_value's)
    if count < unknown:
        count -= 1
    if head:
        q = HEADER_SIZE + entry_span(s, HEADER_SIZE)
        v = _value(s, buf, HEADER_SIZE)
        # The header moves up over the popped entry and the bytes before it are dropped: a
        # bytearray advances its start for that instead of moving the rest of the node (it
        # copies once half its allocation is unused), so a queue's pops do not shift the node.
        k = q - HEADER_SIZE
        n = len(buf) - k
        buf[k] = n & 0xFF
        buf[k + 1] = (n >> 8) & 0xFF
        buf[k + 2] = (n >> 16) & 0xFF
        buf[k + 3] = (n >> 24) & 0xFF
        buf[k + 4] = count & 0xFF
        buf[k + 5] = count >> 8
        del buf[:k]
        return v
    q = len(buf) - 1
    p = _prev(s, q)
    v = _value(s, buf, p)
    del buf[p:q]
    put_header(buf, count)
    return v


def bulks(buf: bytes | bytearray, p: int, n: int) -> bytes:
    """The n elements from offset p as RESP bulk strings, back to back (integers in decimal):
    what LRANGE sends.  Compiled, it is written straight from the entries into one buffer by
    protocol/reply.pxd's inline writers, with no object per element; interpreted, the decoded
    values go to protocol/reply.py's bulks_body (a Python step per byte would cost more than that).
    The RESP is protocol/'s either way: this walks the entries and hands over their pieces."""
    if not _COMPILED:
        return bulks_body(values(buf, p, n))
    s = buf
    # Pass 1, the reply's size: each element's bulk_size, of a string's bytes or an integer's
    # decimal digits.  The common entries (7-bit integers, strings under 4 KB) are measured
    # inline, the others through _value, whose results pass 2 takes from `rare`.
    rare = []
    total = 0
    q = p
    for _e in range(n):
        b = s[q]
        if b < 0x80:
            ln = 1 if b < 10 else (2 if b < 100 else 3)
            q += 2
        elif b < 0xC0:
            ln = b & 0x3F
            q += ln + 2
        elif 0xE0 <= b < 0xF0:
            ln = ((b & 0x0F) << 8) | s[q + 1]
            q += ln + 3 if ln <= 125 else ln + 4
        else:
            v = _value(s, buf, q)
            rare.append(v)
            ln = len(v)
            q += entry_span(s, q)
        total += bulk_size(ln)
    out = bytearray(total)
    d = out
    k = 0
    r = 0
    for _e in range(n):
        b = s[p]
        x = 0
        t = s
        if b < 0x80:
            x = b
            start = -1
            p += 2
        elif b < 0xC0:
            ln = b & 0x3F
            start = p + 1
            p += ln + 2
        elif 0xE0 <= b < 0xF0:
            ln = ((b & 0x0F) << 8) | s[p + 1]
            start = p + 2
            p += ln + 3 if ln <= 125 else ln + 4
        else:
            v = rare[r]
            r += 1
            t = v
            ln = len(v)
            start = 0
            p += entry_span(s, p)
        if start < 0:  # a 7-bit integer: its digits
            k = put_int_bulk(d, k, x)
        else:
            k = put_bulk(d, k, t, start, ln)
    return bytes(out)


def delete_indexes(buf: bytearray, indexes: list[int]) -> None:
    """Delete the elements at `indexes` (ascending), keeping every other entry's bytes as they are
    (lpDelete, one pass)."""
    if not indexes:
        return
    s = buf
    kept = [bytes(buf[:HEADER_SIZE])]
    p = HEADER_SIZE
    i = 0
    start = p
    for idx in indexes:
        while i < idx:
            p += entry_span(s, p)
            i += 1
        kept.append(bytes(buf[start:p]))
        p += entry_span(s, p)
        i += 1
        start = p
    kept.append(bytes(buf[start:]))
    count = s[4] | (s[5] << 8)
    buf[:] = b"".join(kept)
    put_header(buf, count - len(indexes) if count != NUMELE_UNKNOWN else count)


def checked_count(buf: bytes | bytearray) -> int:
    """The element count of a well-formed listpack, checking its layout as `checked_values` does
    (total bytes, terminator, each entry's encoding, bounds and back-length, the header's count)
    without decoding a value: loading an RDB file or a RESTORE payload keeps the bytes.  Raises
    ValueError for a malformed listpack."""
    s = buf
    n = len(buf)
    if n < HEADER_SIZE + 1 or (s[0] | (s[1] << 8) | (s[2] << 16) | (s[3] << 24)) != n or s[n - 1] != EOF:
        raise ValueError("listpack: bad header or terminator")
    end = n - 1
    p = HEADER_SIZE
    count = 0
    while p < end:
        b = s[p]
        if b < 0x80:
            size = 1
        elif b < 0xC0:
            size = 1 + (b & 0x3F)
        elif b < 0xE0:
            size = 2
        elif b < 0xF0:
            if p + 1 >= end:
                raise ValueError("listpack: bad entry at %d" % p)
            size = 2 + (((b & 0x0F) << 8) | s[p + 1])
        elif b == 0xF0:
            if p + 5 > end:
                raise ValueError("listpack: bad entry at %d" % p)
            size = 5 + (s[p + 1] | (s[p + 2] << 8) | (s[p + 3] << 16) | (s[p + 4] << 24))
            if size < 5:
                # compiled, the top byte's shift is a C int's: a length of 2 GiB or more wraps
                # negative, and the back-length check below would read before the entry (a
                # segfault in RESTORE, found by the restore fuzz target)
                raise ValueError("listpack: bad entry at %d" % p)
        elif b == 0xF1:
            size = 3
        elif b == 0xF2:
            size = 4
        elif b == 0xF3:
            size = 5
        elif b == 0xF4:
            size = 9
        else:
            raise ValueError("listpack: bad encoding byte 0x%02x at %d" % (b, p))
        width = 1 if size <= 127 else (2 if size < 16383 else (3 if size < 2097151 else (4 if size < 268435455 else 5)))
        q = p + size
        if q + width > end:
            raise ValueError("listpack: bad entry at %d" % p)
        # the back-length: 7-bit groups, most significant first, every byte but the first flagged
        for j in range(width):
            want = (size >> (7 * (width - 1 - j))) & 127
            if j:
                want |= 128
            if s[q + j] != want:
                raise ValueError("listpack: bad backlen at %d" % p)
        p = q + width
        count += 1
    if p != end:
        raise ValueError("listpack: entries overrun the terminator")
    header = s[4] | (s[5] << 8)
    if header != NUMELE_UNKNOWN and header != count:
        raise ValueError("listpack: element count %d, header says %d" % (count, header))
    return count



# ---- listpacks held as immutable bytes ----------------------------------------------------------
# A value that keeps its listpack as one `bytes` object (a small hash) pays neither a bytearray's
# header nor its over-allocation, and its DUMP / RDB payload is that object itself.  An edit builds
# the next bytes from the old ones (Redis's lpInsert / lpDelete realloc and memmove the same bytes).
# These functions read such a buffer (bytes only: their compiled form indexes it as bytes) and build
# the next one.  They rely on the rule lpAppend keeps, that each element is in its canonical
# encoding (a canonical int64 string as the smallest integer encoding, any other string in the
# smallest string encoding): an element is then equal to a string exactly when their encoded bytes
# are equal, which is what lets `find_key` compare bytes where lpFind decodes.  A listpack loaded
# from elsewhere is checked for that rule, and re-encoded if it breaks it, by its owner.

EMPTY = _EMPTY
_pack_header_bytes = struct.Struct("<IH").pack


def _plain(v: bytes) -> bool:
    """Whether v is stored as a 6-bit string (shorter than 64 bytes and no canonical int64): its
    entry is then 0x80 | len, v, len + 1."""
    n = len(v)
    return n < 64 and not (n and v[0] <= 57 and string_to_int(v) is not None)


def entry_end(buf: bytes, p: int) -> int:
    """The offset just past the entry at p (lpSkip): the next element's, or the terminator's."""
    s = buf
    return p + entry_span(s, p)


def find_key(buf: bytes, key: bytes) -> int:
    """The offset of the first element at an even index (a hash's field, a sorted set's member)
    equal to `key`, or -1: lpFind(lp, lpFirst(lp), key, skip=1).  A string shorter than 64 bytes
    that is no integer, the usual field, is matched on its encoding byte, its last byte and then
    the whole, without building its entry."""
    s = buf
    n = len(key)
    p = HEADER_SIZE
    end = len(buf) - 1
    if _plain(key):
        head = 0x80 | n
        tail = key[n - 1] if n else 0
        last = end - n - 2  # the entry (head, n bytes, back-length) ends before the terminator
        while p <= last:
            if s[p] == head and (n == 0 or (s[p + n] == tail and buf.startswith(key, p + 1))):
                return p
            p += entry_span(s, p)
            if p < end:  # the value (a listpack of pairs always has one)
                p += entry_span(s, p)
        return -1
    entry = encode_entry(key)
    head = entry[0]
    last = end - len(entry)
    while p <= last:
        if s[p] == head and buf.startswith(entry, p):
            return p
        p += entry_span(s, p)
        if p < end:
            p += entry_span(s, p)
    return -1


def pair_value(buf: bytes, key: bytes) -> bytes | None:
    """The element after the even-indexed element equal to `key` (a hash field's value), or None."""
    p = find_key(buf, key)
    if p < 0:
        return None
    s = buf
    return value_at(buf, p + entry_span(s, p))


def canonical_pairs(buf: bytes) -> int:
    """The element count of `buf` if it is a well-formed listpack (checked_count's checks) of an
    even number of elements, each in its canonical encoding, with no field (even index) twice and
    the count in its header; else -1, and the caller checks it the long way, which finds what is
    wrong or re-encodes what is not canonical.  A loaded small hash is checked with it: each entry's
    layout once and no element decoded.  Canonical entries are equal exactly when their bytes are
    (see above), so fields are compared as bytes."""
    s = buf
    n = len(buf)
    if n < HEADER_SIZE + 1 or (s[0] | (s[1] << 8) | (s[2] << 16) | (s[3] << 24)) != n or s[n - 1] != EOF:
        return -1
    end = n - 1
    p = HEADER_SIZE
    count = 0
    seen = None  # the fields from the 9th on, as a set
    while p < end:
        b = s[p]
        if b < 0x80:  # 7-bit uint: 0..127, always canonical
            size = 1
        elif b < 0xC0:  # 6-bit string: canonical unless it spells an integer
            size = 1 + (b & 0x3F)
            if p + size > end or _int_text(s, p + 1, size - 1):
                return -1
        elif b < 0xE0:  # 13-bit int, not one the 7-bit encoding holds
            if p + 2 > end:
                return -1
            x = ((b & 0x1F) << 8) | s[p + 1]
            if x < 128:
                return -1
            size = 2
        elif b < 0xF0:  # 12-bit string: 64 bytes or more (no integer is that long)
            if p + 2 > end:
                return -1
            size = ((b & 0x0F) << 8) | s[p + 1]
            if size < 64:
                return -1
            size += 2
        elif b == 0xF0:  # 32-bit string: 4096 bytes or more
            if p + 5 > end:
                return -1
            size = s[p + 1] | (s[p + 2] << 8) | (s[p + 3] << 16) | (s[p + 4] << 24)
            if size < 4096:
                return -1
            size += 5
        elif b == 0xF1 or b == 0xF2 or b == 0xF3 or b == 0xF4:
            # 16-, 24-, 32-, 64-bit ints: each past the range of the encoding below it, so the
            # value's top bytes are not all a sign extension of the smaller encoding's top bit
            width = 2 if b == 0xF1 else (3 if b == 0xF2 else (4 if b == 0xF3 else 8))
            if p + 1 + width > end or _fits_below(s, p + 1, width):
                return -1
            size = 1 + width
        else:
            return -1
        width = 1 if size <= 127 else (2 if size < 16383 else (3 if size < 2097151 else (4 if size < 268435455 else 5)))
        q = p + size
        if q + width > end:
            return -1
        for j in range(width):
            want = (size >> (7 * (width - 1 - j))) & 127
            if j:
                want |= 128
            if s[q + j] != want:
                return -1
        if not count & 1 and count < 16:  # one of the first 8 fields: compared in place with those
            f = HEADER_SIZE  # before it, nothing allocated (the usual small hash ends here)
            k = 0
            while k < count:
                fsize = entry_span(s, f)
                if fsize == size + width and _same_bytes(s, buf, f, p, size):
                    return -1
                f += fsize
                f += entry_span(s, f)  # its value
                k += 2
        elif not count & 1:  # a later field: looked up among the earlier ones, whole entries (a
            if seen is None:  # scan of them all per field is quadratic: 5*10^8 for 32K fields)
                seen = set()
                f = HEADER_SIZE
                k = 0
                while k < count:
                    fsize = entry_span(s, f)
                    seen.add(buf[f : f + fsize])
                    f += fsize
                    f += entry_span(s, f)
                    k += 2
            field = buf[p : q + width]
            if field in seen:
                return -1
            seen.add(field)
        p = q + width
        count += 1
    if p != end or count & 1 or (s[4] | (s[5] << 8)) != count:
        return -1
    return count


def _int_text(s: bytes, p: int, n: int) -> bool:
    """Whether the n bytes at p spell an int64 as string2ll reads one (lpStringToInt64): a
    string a listpack would store as an integer.  Only 19 or more digits are left to
    string_to_int."""
    if n == 0 or n > 20:
        return False
    c = s[p]
    i = 0
    if c == 45:  # '-', then a digit 1-9
        if n == 1 or not 49 <= s[p + 1] <= 57:
            return False
        i = 1
    elif not 49 <= c <= 57:
        return c == 48 and n == 1
    if n - i > 18:
        return string_to_int(bytes(s[p:p + n])) is not None
    while i < n:
        c = s[p + i]
        if c < 48 or c > 57:
            return False
        i += 1
    return True


def _fits_below(s: bytes, p: int, width: int) -> bool:
    """Whether the little-endian two's complement integer of `width` bytes at p (2, 3, 4 or 8)
    fits the next smaller listpack integer encoding (13-bit for 2 bytes, 16-bit for 3, 24-bit for
    4, 32-bit for 8): an integer entry that is not canonical."""
    top = s[p + width - 1]
    neg = top >= 128
    if width == 2:  # 13-bit: -4096..4095
        x = s[p] | (top << 8)
        if neg:
            x -= 0x10000
        return -4096 <= x <= 4095
    keep = width - 1 if width < 8 else 4  # the bytes of the smaller encoding
    fill = 0xFF if neg else 0
    for j in range(keep, width):
        if s[p + j] != fill:
            return False
    return (s[p + keep - 1] >= 128) == neg  # its own top bit is the sign


def _same_bytes(s: bytes, buf: bytes, p: int, q: int, n: int) -> bool:
    """Whether the n bytes at p and at q are equal."""
    if cython.compiled:
        return memcmp(s + p, s + q, n) == 0  # noqa: F821 (listpack.pxd cimports it)
    return buf[p:p + n] == buf[q:q + n]


def elements(buf: bytes) -> list[bytes]:
    """Every element as bytes, integers in decimal, in order (no checks: a buffer this process
    built or validated)."""
    s = buf
    out = []
    p = HEADER_SIZE
    end = len(buf) - 1
    while p < end:
        b = s[p]
        if 0x80 <= b < 0xC0:
            q = p + 1 + (b & 0x3F)
            out.append(s[p + 1 : q])
            p = q + 1
        elif b < 0x80:
            out.append(b"%d" % b)
            p += 2
        else:
            out.append(get_bytes(buf, p))
            p += entry_span(s, p)
    return out


def replace_value(buf: bytes, p: int, value: bytes, refs: int = 0) -> bytes:
    """`buf` with the element at p replaced by `value` in its canonical encoding (lpReplace).
    A value of the same 6-bit string length as the old one changes only its bytes.

    Compiled, the new listpack is written in one pass into one new bytes object, or into `buf`
    itself, as lpReplace writes an entry of the same size in place, when nothing but its caller
    holds it: `refs` is the number of references to `buf` the caller owns (0: it may be shared),
    and a bytes object no other code refers to can change without anyone seeing it (its cached
    hash, if one was taken, is dropped)."""
    s = buf
    q = p + entry_span(s, p)
    if cython.compiled:
        m = encoded_size(value)
        if m == q - p and refs and Py_REFCNT(buf) <= refs:  # noqa: F821 (listpack.pxd)
            put_entry(cython.cast(cython.p_uchar, cython.cast(cython.p_char, buf)), p, value)
            _forget_hash(buf)  # noqa: F821 (listpack.pxd)
            return buf
        out = with_gap(buf, p, q, m, s[4] | (s[5] << 8))
        put_entry(cython.cast(cython.p_uchar, cython.cast(cython.p_char, out)), p, value)
        return out
    if _plain(value):
        n = len(value)
        if s[p] == 0x80 | n:
            return b"".join((s[0 : p + 1], value, s[q - 1 : len(buf)]))
        t = len(buf) - (q - p) + n + 2
        return b"".join((_BYTE[t & 255], _BYTE[(t >> 8) & 255], _BYTE[(t >> 16) & 255], _BYTE[t >> 24],
                         s[4:p], _BYTE[0x80 | n], value, _BYTE[n + 1], s[q : len(buf)]))
    entry = encode_entry(value)
    t = len(buf) - (q - p) + len(entry)
    return b"".join((_BYTE[t & 255], _BYTE[(t >> 8) & 255], _BYTE[(t >> 16) & 255], _BYTE[t >> 24],
                     s[4:p], entry, s[q : len(buf)]))


def append_pair(buf: bytes, key: bytes, value: bytes) -> bytes:
    """`buf` with `key` and `value` appended at the tail (two lpAppend)."""
    s = buf
    count = (s[4] | (s[5] << 8)) + 2
    if count >= NUMELE_UNKNOWN:  # saturating (or saturated): splice keeps the rule
        end = len(buf) - 1
        return splice(buf, end, end, encode_entry(key) + encode_entry(value), 2)
    if cython.compiled:  # written into one new bytes object
        n = len(buf)
        out = with_gap(buf, n - 1, n - 1, encoded_size(key) + encoded_size(value), count)
        d = cython.cast(cython.p_uchar, cython.cast(cython.p_char, out))
        put_entry(d, put_entry(d, n - 1, key), value)
        return out
    if _plain(key) and _plain(value):
        n = len(key)
        m = len(value)
        t = len(buf) + n + m + 4
        return b"".join((_BYTE[t & 255], _BYTE[(t >> 8) & 255], _BYTE[(t >> 16) & 255], _BYTE[t >> 24],
                         _BYTE[count & 255], _BYTE[count >> 8], s[HEADER_SIZE : len(buf) - 1],
                         _BYTE[0x80 | n], key, _BYTE[n + 1], _BYTE[0x80 | m], value, _BYTE[m + 1], b"\xff"))
    chunk = encode_entry(key) + encode_entry(value)
    t = len(buf) + len(chunk)
    return b"".join((_BYTE[t & 255], _BYTE[(t >> 8) & 255], _BYTE[(t >> 16) & 255], _BYTE[t >> 24],
                     _BYTE[count & 255], _BYTE[count >> 8], s[HEADER_SIZE : len(buf) - 1], chunk, b"\xff"))


def replace_values(buf: bytes, changes: dict[int, bytes], appended: list[bytes]) -> bytes:
    """`buf` with the element at each offset of `changes` replaced by the value given for it and
    the elements of `appended` added at the tail, each in its canonical encoding: several
    lpReplace and lpAppend calls, building the new buffer once.  Compiled, it is sized first and
    written in one pass into a new bytes object."""
    s = buf
    if cython.compiled:
        offs = sorted(changes)
        total = len(buf)
        for p in offs:
            total += encoded_size(changes[p]) - entry_span(s, p)
        for v in appended:
            total += encoded_size(v)
        out = PyBytes_FromStringAndSize(cython.NULL, total)  # noqa: F821 (listpack.pxd)
        d = cython.cast(cython.p_uchar, cython.cast(cython.p_char, out))
        k = prev = HEADER_SIZE
        for p in offs:
            memcpy(d + k, s + prev, p - prev)  # noqa: F821
            k = put_entry(d, k + p - prev, changes[p])
            prev = p + entry_span(s, p)
        memcpy(d + k, s + prev, len(buf) - 1 - prev)  # noqa: F821
        k += len(buf) - 1 - prev
        for v in appended:
            k = put_entry(d, k, v)
        d[k] = EOF
        count = grown_count(buf, len(appended))
        _put_header_at(d, total, count)
        return _recounted(out) if count == NUMELE_UNKNOWN else out
    pieces: list[bytes] = []
    add = pieces.append
    prev = HEADER_SIZE
    for p in sorted(changes):
        add(s[prev:p])
        _add_entry(pieces, changes[p])
        prev = p + entry_span(s, p)
    add(s[prev : len(buf) - 1])
    for v in appended:
        _add_entry(pieces, v)
    add(b"\xff")
    body = b"".join(pieces)
    count = grown_count(buf, len(appended))
    out = _pack_header_bytes(len(body) + HEADER_SIZE, count) + body
    return _recounted(out) if count == NUMELE_UNKNOWN else out


def grown_count(buf: bytes, added: int) -> int:
    """The header's element count of listpack `buf` with `added` more elements (fewer when
    negative), saturating at 65535 ("unknown"), which it then stays, as lpInsert and lpDelete keep
    it."""
    count = buf[4] | (buf[5] << 8)
    if count != NUMELE_UNKNOWN:
        count += added
        if count > NUMELE_UNKNOWN:
            count = NUMELE_UNKNOWN
    return count


def _recounted(out: bytes) -> bytes:
    """`out`, a listpack just built whose header's count saturated: its entries counted again,
    and the count written back when it fits, as the lpLength that every hash or sorted set write
    makes would (the rare path: a listpack past 65,534 entries)."""
    n = count_of(out)
    if n < NUMELE_UNKNOWN:
        return out[:4] + bytes((n & 0xFF, n >> 8)) + out[HEADER_SIZE:]
    return out


def _add_entry(pieces: list[bytes], v: bytes) -> None:
    """Add v's canonical entry to pieces to be joined (encode_entry's): a 6-bit string as its
    length byte, itself and its back-length byte (no entry built)."""
    n = len(v)
    # a string that may be an integer is parsed once here, not again by encode_entry
    i = string_to_int(v) if n and v[0] <= 57 else None
    if i is not None:
        pieces.append(encode_int_entry(i))
    elif n < 64:
        pieces.append(_BYTE[0x80 | n])
        pieces.append(v)
        pieces.append(_BYTE[n + 1])
    else:
        pieces.append(encode_str_entry(v))


def build(chunk: bytes, count: int) -> bytes:
    """A listpack of the `count` complete entries encoded back to back in `chunk`."""
    return _pack_header_bytes(len(chunk) + 7, count if count < NUMELE_UNKNOWN else NUMELE_UNKNOWN) + chunk + b"\xff"


def spliced(buf: bytes, p: int, q: int, chunk: bytes, delta: int) -> bytes:
    """`buf` with the entries in buf[p:q] replaced by the complete entries in `chunk`, whose count
    differs from theirs by `delta`: the header's total and count follow, the count saturating at
    65535 ("unknown") as lpInsert leaves it, and left so (a sorted set counts again when asked)."""
    count = grown_count(buf, delta)
    if cython.compiled:
        n = len(chunk)
        out = with_gap(buf, p, q, n, count)
        memcpy(cython.cast(cython.p_char, out) + p, cython.cast(cython.p_char, chunk), n)  # noqa: F821
        return out
    return b"".join((_pack_header_bytes(len(buf) - (q - p) + len(chunk), count), buf[HEADER_SIZE:p], chunk, buf[q:]))


def splice(buf: bytes, p: int, q: int, chunk: bytes, delta: int) -> bytes:
    """`spliced`, and a saturated count counted again and written back when it fits, as the
    lpLength that every hash write makes would."""
    out = spliced(buf, p, q, chunk, delta)
    return _recounted(out) if (out[4] | (out[5] << 8)) == NUMELE_UNKNOWN else out


def with_gap(buf: bytes, p: int, q: int, size: int, count: int) -> bytes:
    """Compiled only: a new listpack, `buf` with buf[p:q] replaced by `size` bytes left for the
    caller to write complete entries into (through the new object's pointer: nothing else holds
    it yet), the header written for the new total and `count`."""
    n = len(buf)
    t = n - (q - p) + size
    out = PyBytes_FromStringAndSize(cython.NULL, t)  # noqa: F821 (listpack.pxd)
    d = cython.cast(cython.p_uchar, cython.cast(cython.p_char, out))
    s = buf
    h = HEADER_SIZE
    # s is a pointer (listpack.pxd's locals): pointer arithmetic, which the interpreter never runs
    memcpy(d + h, s + h, p - h)  # type: ignore[operator]  # noqa: F821
    memcpy(d + p + size, s + q, n - q)  # type: ignore[operator]  # noqa: F821
    _put_header_at(d, t, count)
    return out
