"""Intset: Redis's compact encoding for small sets of integers (OBJECT ENCODING "intset"), held as
the very bytes Redis's intset.c keeps.

An intset is one `bytes` object:

    <encoding: uint32 LE> <length: uint32 LE> <length elements of `encoding` bytes each, LE, signed>

`encoding` is 2, 4 or 8 (INTSET_ENC_INT16/32/64): the width the widest member ever added needed.
The elements are sorted ascending without repeats, and the length field equals their count.
Every function here takes such a blob and returns a new one (`bytes` is immutable: an insert or
removal copies the blob once, the memmove Redis's realloc does), or None when nothing changed, so
a caller keeps the old blob for free.  What is observable follows from the bytes and is Redis's:
- members are the canonical decimal text of an int64 (`canonical_int`: "01", "+1", " 1" are not);
- iteration is in ascending numeric order (SMEMBERS, SSCAN, SINTER over intsets, ...);
- the width widens on an insert that needs it (the new member goes first if negative, last if
  positive: it is out of the old range) and never narrows;
- DUMP / RDB write the blob as it is, and MEMORY USAGE counts its allocation.

Two implementations of the hot functions (`canonical_int`, `_search`, `add`, `remove`, `get`,
`remove_at`) share this module.  Compiled (setup.py, with intset.pxd) on a little-endian host,
they work on the blob's memory as C: string2ll's digit loop, intsetSearch's binary search over
int16/32/64 elements, and a new bytes object filled by two memcpy's.  Interpreted (or on a
big-endian host) they read the blob through a typed view (`memoryview.cast` to int16/32/64, or an
array with the bytes swapped) in which the 8-byte header is the first 8 // width items, so
element i is at index `8 // width + i`, and `bisect` over it is the binary search.  Both give the
same bytes; the tests run both.

`validate` checks a blob from outside (RESTORE, RDB) as Redis's intsetValidateIntegrity does with
deep sanitization: a known encoding, a size that matches the count, strictly ascending elements.
"""

from __future__ import annotations

import struct
import sys
from array import array
from bisect import bisect_left
from typing import Any, Literal

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython

    _COMPILED = cython.compiled
except ImportError:
    _COMPILED = False

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
_INT_FIRST = frozenset(b"-0123456789")
_HEADER = struct.Struct("<II")
_LITTLE = sys.byteorder == "little"
# The C paths read the elements as native integers: only where native is Redis's little-endian.
_FAST = _COMPILED and _LITTLE

EMPTY = _HEADER.pack(2, 0)  # what intsetNew() makes: int16, no elements

# width -> typecode of a signed integer of that many bytes (memoryview.cast / array)
_CODE: dict[int, Literal["h", "i", "q"]] = {2: "h", 4: "i", 8: "q"}


def canonical_int(m: bytes) -> int | None:
    """The int64 `m` spells in canonical form (Redis's string2ll / isSdsRepresentableAsLongLong):
    optional "-", then digits without a leading zero ("0" alone is 0, "-0" is not a number)."""
    if _FAST and type(m) is bytes:
        n = len(m)
        if n == 0 or n > 20:
            return None
        p = cython.cast(cython.p_uchar, cython.cast(cython.p_char, m))
        if n == 1 and p[0] == 48:  # "0"
            return 0
        neg = p[0] == 45  # "-"
        i = 1 if neg else 0
        if i == n or p[i] < 49 or p[i] > 57:  # the first digit is 1-9
            return None
        u = p[i] - 48
        i += 1
        while i < n:
            d = p[i] - 48
            if d > 9:  # (unsigned: below "0" wraps above 9)
                return None
            if u > (ULLONG_MAX - d) // 10:  # noqa: F821 (declared in intset.pxd)
                return None
            u = u * 10 + d
            i += 1
        if neg:
            if u > cython.cast(cython.ulonglong, LLONG_MAX) + 1:  # noqa: F821
                return None
            return -cython.cast(cython.longlong, u - 1) - 1
        if u > cython.cast(cython.ulonglong, LLONG_MAX):  # noqa: F821
            return None
        return cython.cast(cython.longlong, u)
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
    """Bytes per element the intset needs to hold `v` (_intsetValueEncoding)."""
    if -32768 <= v <= 32767:
        return 2
    if -2147483648 <= v <= 2147483647:
        return 4
    return 8


def _view(blob: bytes) -> memoryview[int] | array[int]:  # indexable ints, the header first
    w = blob[0]
    if _LITTLE:
        return memoryview(blob).cast(_CODE[w])
    a = array(_CODE[w], blob)
    a.byteswap()
    return a


def _get(base: Any, w: int, i: int) -> int:
    """Compiled only: element `i` of the elements at C pointer `base`, `w` bytes each."""
    if w == 2:
        return cython.cast(cython.pointer(cython.short), base)[i]
    if w == 4:
        return cython.cast(cython.pointer(cython.int), base)[i]
    return cython.cast(cython.pointer(cython.longlong), base)[i]


def _search(blob: bytes, v: int) -> int:
    """intsetSearch for `v` (within the blob's width): 2 * its position + 1 if it is there, else
    2 * the position it would be inserted at."""
    if _FAST:
        w = blob[0]
        n = (len(blob) - 8) // w
        base = cython.cast(cython.p_char, blob) + 8
        lo = 0
        hi = n
        while lo < hi:
            mid = (lo + hi) >> 1
            if _get(base, w, mid) < v:
                lo = mid + 1
            else:
                hi = mid
        return 2 * lo + (lo < n and _get(base, w, lo) == v)
    view = _view(blob)
    head = 8 // blob[0]
    i = bisect_left(view, v, head)
    return 2 * (i - head) + (i < len(view) and view[i] == v)


def pack(width: int, values: list[int]) -> bytes:
    """An intset of `width` holding `values` (sorted, distinct, each fitting the width)."""
    a = array(_CODE[width], values)
    if not _LITTLE:
        a.byteswap()
    return _HEADER.pack(width, len(values)) + a.tobytes()


# ---- reading -------------------------------------------------------------------------------------
def width(blob: bytes) -> int:
    return blob[0]


def length(blob: bytes) -> int:
    """intsetLen: the element count (equal to the header's length field)."""
    return (len(blob) - 8) // blob[0]


def contains(blob: bytes, v: int) -> bool:
    """intsetFind: a value wider than the encoding cannot be in it; otherwise binary search."""
    return width_of(v) <= blob[0] and bool(_search(blob, v) & 1)


def get(blob: bytes, i: int) -> int:
    """intsetGet: the element at position `i` (0 <= i < length)."""
    if _FAST:
        return _get(cython.cast(cython.p_char, blob) + 8, blob[0], i)
    return _view(blob)[8 // blob[0] + i]


def values(blob: bytes) -> list[int]:
    """Every element, ascending."""
    return _view(blob).tolist()[8 // blob[0]:]


def members(blob: bytes) -> list[bytes]:
    """Every element as the member text a set replies with, ascending."""
    return [b"%d" % v for v in _view(blob).tolist()[8 // blob[0]:]]


# ---- writing -------------------------------------------------------------------------------------
def _splice(blob: bytes, at: int, cut: int, insert: bytes, count: int) -> bytes:
    """`blob` with `cut` bytes at offset `at` replaced by `insert`, and `count` as its length."""
    if _FAST:
        size = len(blob) - cut + len(insert)
        new = PyBytes_FromStringAndSize(cython.NULL, size)  # noqa: F821 (intset.pxd)
        dst = cython.cast(cython.p_char, new)
        src = cython.cast(cython.p_char, blob)
        memcpy(dst, src, at)  # noqa: F821
        memcpy(dst + at, cython.cast(cython.p_char, insert), len(insert))  # noqa: F821
        memcpy(dst + at + len(insert), src + at + cut, len(blob) - at - cut)  # noqa: F821
        cython.cast(cython.pointer(cython.uint), dst + 4)[0] = count
        return new
    return b"".join((_HEADER.pack(blob[0], count), blob[8:at], insert, blob[at + cut:]))


def add(blob: bytes, v: int) -> bytes | None:
    """intsetAdd: the blob with `v` inserted in order (upgrading the width if `v` needs it), or
    None if `v` was already there."""
    w = blob[0]
    if width_of(v) > w:
        # intsetUpgradeAndAdd: out of the current range, so smaller or larger than every element
        old = values(blob)
        return pack(width_of(v), [v, *old] if v < 0 else [*old, v])
    r = _search(blob, v)
    if r & 1:
        return None
    return _splice(blob, 8 + (r >> 1) * w, 0, v.to_bytes(w, "little", signed=True), (len(blob) - 8) // w + 1)


def remove(blob: bytes, v: int) -> bytes | None:
    """intsetRemove: the blob without `v`, or None if `v` was not there.  The width stays."""
    w = blob[0]
    if width_of(v) > w:
        return None
    r = _search(blob, v)
    if not r & 1:
        return None
    return _splice(blob, 8 + (r >> 1) * w, w, b"", (len(blob) - 8) // w - 1)


def remove_at(blob: bytes, i: int) -> tuple[int, bytes]:
    """The element at position `i` and the blob without it."""
    w = blob[0]
    return get(blob, i), _splice(blob, 8 + i * w, w, b"", (len(blob) - 8) // w - 1)


def from_values(vals: list[int]) -> bytes:
    """The intset Redis builds by adding `vals` (distinct, ascending) one by one to an empty one:
    the width is the widest any of them needs."""
    return pack(max(width_of(vals[0]), width_of(vals[-1])) if vals else 2, vals)


# ---- checking a blob from outside ------------------------------------------------------------------
def validate(blob: bytes) -> None:
    """Raise ValueError unless `blob` is a well-formed intset (intsetValidateIntegrity, deep): a
    header, a known encoding, a size that matches the length field, elements strictly ascending.
    An intset of no elements passes here; the loaders treat it as an empty key."""
    if len(blob) < 8:
        raise ValueError("bad intset")
    w, n = _HEADER.unpack_from(blob)
    if w not in _CODE or len(blob) != 8 + w * n:
        raise ValueError("bad intset")
    vals = values(blob)
    if any(a >= b for a, b in zip(vals, vals[1:], strict=False)):
        raise ValueError("bad intset")
