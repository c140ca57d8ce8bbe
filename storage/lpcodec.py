"""The listpack facts the list and hash types need, as a thin adapter over storage.listpack:
exact entry sizes, and packing to / unpacking from Redis's listpack bytes.

Why an adapter: lists and hashes keep their hot representation Python-native (see
storage/quicklist.py and storage/hashtype.py), but Redis's encoding decisions depend on listpack
*byte sizes* (a quicklist node is full at 8 KB of listpack, merges subtract a header, ...), and the
bytes themselves are observable through DUMP / RDB and MEMORY USAGE.  Everything byte-level the two
types need goes through the functions here.

`entry_size` is computed arithmetically (no bytes built) because quicklist pushes and pops call it
for every element; it must agree with `len(listpack.encode_entry(v))`, which the tests check.
Packing and unpacking are done by `storage.listpack`, the byte-exact implementation shared with
streams.
"""

from __future__ import annotations

from collections.abc import Iterable

from raxdb.storage import listpack
from raxdb.storage.listpack import string_to_int

LP_EMPTY = 7  # 6-byte header + 0xFF terminator


def backlen_size(n: int) -> int:
    """Bytes taken by the back-length of an entry whose encoding+data is `n` bytes."""
    if n <= 127:
        return 1
    if n < 16383:
        return 2
    if n < 2097151:
        return 3
    if n < 268435455:
        return 4
    return 5


def entry_size(v: bytes) -> int:
    """Exact bytes one element takes in a listpack (encoding, data and back-length)."""
    n = len(v)
    if n <= 20 and n and v[0] <= 57:
        iv = string_to_int(v)
        if iv is not None:
            if 0 <= iv <= 127:
                return 2
            if -4096 <= iv <= 4095:
                return 3
            if -32768 <= iv <= 32767:
                return 4
            if -8388608 <= iv <= 8388607:
                return 5
            if -2147483648 <= iv <= 2147483647:
                return 6
            return 10
    if n < 64:
        return n + 2
    if n < 4096:
        return n + 2 + backlen_size(n + 2)
    return n + 5 + backlen_size(n + 5)


def pack(items: Iterable[bytes]) -> bytes:
    """A listpack holding `items`, in order."""
    return listpack.Listpack.from_values(list(items)).bytes()


def unpack(blob: bytes) -> list[bytes]:
    """The elements of a listpack as the bytes Redis replies with (integers in decimal).
    Raises ValueError if the bytes are not a well-formed listpack."""
    return listpack.checked_values(blob)
