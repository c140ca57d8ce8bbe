"""The listpack facts the list and hash types need, as a thin adapter over storage.listpack:
exact entry sizes, and packing to / unpacking from Redis's listpack bytes.

Why an adapter: lists and hashes keep their hot representation Python-native (see
storage/quicklist.py and storage/hashtype.py), but Redis's encoding decisions depend on listpack
*byte sizes* (a quicklist node is full at 8 KB of listpack, merges subtract a header, ...), and the
bytes themselves are observable through DUMP / RDB and MEMORY USAGE.  Everything byte-level the two
types need goes through the functions here.

`entry_size` is listpack's `encoded_size`, computed arithmetically (no bytes built): quicklist
pushes and pops call it for every element, and listpack's in-place writers size their buffers
with it, so it must agree with `len(listpack.encode_entry(v))`, which the tests check.
Packing and unpacking are done by `storage.listpack`, the byte-exact implementation shared with
streams.
"""

from __future__ import annotations

from collections.abc import Iterable

from raxdb.storage import listpack

LP_EMPTY = 7  # 6-byte header + 0xFF terminator


# Exact bytes one element takes in a listpack (encoding, data and back-length), computed
# arithmetically: listpack's encoded_size, which its in-place writers size their buffers with.
entry_size = listpack.encoded_size


def pack(items: Iterable[bytes]) -> bytes:
    """A listpack holding `items`, in order."""
    return listpack.Listpack.from_values(list(items)).bytes()


def unpack(blob: bytes) -> list[bytes]:
    """The elements of a listpack as the bytes Redis replies with (integers in decimal).
    Raises ValueError if the bytes are not a well-formed listpack."""
    return listpack.checked_values(blob)
