"""What Redis's allocator hands out, for MEMORY USAGE: jemalloc's size classes (zmalloc_size) and
the allocation of an sds string.

Redis reports the usable size of each allocation, not the bytes it asked for, so every estimate
of a value's memory goes through `size_class`.  jemalloc rounds a request up to 8, then to
multiples of 16 up to 128, then to four classes per doubling (160, 192, 224, 256, 320, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

# Each value type's MEMORY USAGE estimate by its exact class, `sizer(value, samples)`: the type's
# module adds its own when imported (quicklist, set_type, hashtype, zset, stream), so a value is
# never without its entry and no module imports a type it does not hold (the list, set and sorted
# set modules come with their first command).  server/memory/usage.py sizes a value through it
# after every write under a memory limit: a dict probe and a call of a compiled function, where
# the value's method costs an attribute lookup and a method call.  A subclass (the hash with
# field deadlines) has no entry and answers through its method.
SIZERS: dict[type, Callable[[Any, int], int]] = {}


def size_class(n: int) -> int:
    """jemalloc's size class for an n-byte request (what zmalloc_size reports on Linux)."""
    if n <= 8:
        return 8
    if n <= 128:
        return (n + 15) & ~15
    # a quarter of the power of two below n - 1's top bit: 32 up to 256, 64 up to 512, ... (a
    # loop, not bit_length, so that it compiles to C arithmetic: alloc.pxd)
    top = 256
    spacing = 32
    while n > top:
        top <<= 1
        spacing <<= 1
    return (n + spacing - 1) & ~(spacing - 1)


def sds_header(n: int) -> int:
    """The header of an sds string of length n, the type sdsnewlen picks for it (sdshdr5 below 32
    bytes, then 8, 16, 32, 64-bit lengths)."""
    if n < 32:
        return 1
    if n < 256:
        return 3
    if n < 65536:
        return 5
    if n < 1 << 32:
        return 9
    return 17


def sds_alloc(n: int) -> int:
    """The allocation of an sds string of length n: header, bytes, NUL, rounded to its class."""
    if n < _SDS_TABLE_LEN:
        return _SDS_TABLE[n]
    return size_class(sds_header(n) + n + 1)


def dict_table_bytes(n: int) -> int:
    """The bucket array of a dict holding n entries: 8-byte buckets, a power of two at least n,
    never under 4 (DICT_HT_INITIAL_SIZE)."""
    return 8 * dict_slots(n)


def dict_slots(n: int) -> int:
    """The buckets of a dict sized for n entries (_dictNextExp): a power of two at least n, never
    under 4 (DICT_HT_INITIAL_SIZE)."""
    size = 4
    while size < n:
        size <<= 1
    return size


def sds_alloc_first(strings: Iterable[bytes], k: int) -> int:
    """sds_alloc summed over the first k of `strings` (a sampled estimate's elements; one C loop
    compiled, where a write under a memory limit sizes its set or sorted set again)."""
    total = 0
    for s in strings:
        if not k:
            break
        total += sds_alloc(len(s))
        k -= 1
    return total


# Memory accounting sizes every key a write command touches (server/memory/evict.py): keys and short
# values are looked up rather than computed.
_SDS_TABLE_LEN = 1024


def _sds_table(stop: int) -> tuple[int, ...]:
    """`sds_alloc` of the lengths 0 .. stop - 1, made a run of lengths at a time (one size class
    and one header: ~50 runs, not 1,024 size_class calls at every start): the lengths n .. of a
    run need hdr + n + 1 bytes up to the class's own size."""
    out: list[int] = []
    while len(out) < stop:
        n = len(out)
        hdr = sds_header(n)
        cls = size_class(hdr + n + 1)
        same_header = next(b for b in (32, 256, 65536, 1 << 32, 1 << 64) if n < b)  # where sds_header changes
        out += [cls] * min(cls - hdr - n, same_header - n, stop - n)
    return tuple(out)


_SDS_TABLE = _sds_table(_SDS_TABLE_LEN)


def embstr_alloc(n: int) -> int:
    """An embstr: the 16-byte object and an sdshdr8 string in one allocation."""
    return size_class(16 + 3 + n + 1)


SDS_MAX_PREALLOC = 1024 * 1024
_SDS_TYPE_MAX = {1: 31, 3: 255, 5: 65535, 9: 2**32 - 1, 17: 2**64 - 1}  # by header size


def sds_new_room(n: int) -> tuple[int, int]:
    """(allocation, capacity) of sdsnewlen(n): the request rounded to its class, and what the
    string may hold before growing (none to spare for an sdshdr5, which keeps no capacity)."""
    hdr = sds_header(n) if n else 3  # an empty sds is never an sdshdr5
    size = size_class(hdr + n + 1)
    return size, n if hdr == 1 else min(size - hdr - 1, _SDS_TYPE_MAX[hdr])


def sds_grown_room(length: int, addlen: int) -> tuple[int, int]:
    """(allocation, capacity) after sdsMakeRoomFor(addlen) on a full string of `length` bytes:
    greedy, twice the needed length below 1 MiB and 1 MiB more above, never an sdshdr5."""
    need = length + addlen
    n = need * 2 if need < SDS_MAX_PREALLOC else need + SDS_MAX_PREALLOC
    hdr = max(3, sds_header(n))
    size = size_class(hdr + n + 1)
    return size, min(size - hdr - 1, _SDS_TYPE_MAX[hdr])
