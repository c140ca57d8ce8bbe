"""The C heap's policy for a server process: glibc malloc's thresholds, set once at start-up.

Rule: process-wide, so only `server/main.py`'s `main` calls it (a server in its own process), never
an embedded server in its caller's process.  Nothing else here: no allocation of its own.

Why: a reply or an argument of 128 KiB or more (a 1 MB GET's `$len\\r\\n` + value + `\\r\\n`, a
joined batch of big replies) was a fresh allocation each time.  glibc's adaptive rule gave it new
pages (mmap, or a heap grown with brk and trimmed back at its free), and every page was faulted in
again: 227 minor page faults a 1 MB GET (redis-server, on jemalloc, 6.5).  With the thresholds
fixed, big blocks come from the heap and a freed block's pages stay for the next one, as
jemalloc keeps them.  The cost: up to TRIM_THRESHOLD of freed heap stays resident, and a block
under MMAP_THRESHOLD that grows leaves its old place in the heap as a hole when realloc moves it;
from MMAP_THRESHOLD up, realloc is mremap and a free gives the pages back.  So both stay a few MiB:
a 1 MB value or reply (SET_1M, GET_1M) is under them, a big table's arrays over them (at 32 MiB
each, a hash or set of 1M members paid ~25-30 more bytes a member of RSS).  The growing arrays
themselves (lists' items and array.array's buffers: the keyspace's `_keys`, `_values` and `_meta`,
which grew side by side past one another) leave the heap sooner, at server/memory/bigarrays.py's
BIG, through CPython's allocator hook, which main installs beside these thresholds, and so do
the keyspace's index and tags (made by a realloc from nothing); what still grows here is what is
allocated anew at each step (a dict's table, a big hash's or set's index).

`purge` is MEMORY PURGE's work: Redis asks jemalloc to give back its dirty pages; here glibc's
malloc_trim gives back the free pages of the heap, its holes included (not only the top past
TRIM_THRESHOLD).

Invariants: a no-op where the C library has no mallopt / malloc_trim (musl, macOS) or says no.
"""

from __future__ import annotations

import ctypes
from typing import Any

_M_TRIM_THRESHOLD = -1  # glibc's malloc.h
_M_MMAP_THRESHOLD = -3
# Blocks under MMAP_THRESHOLD come from the heap; a freed heap top under TRIM_THRESHOLD is kept.
# (docs/speed-log.md, 2026-11-28, "malloc's thresholds": 32 MiB each, glibc's own ceiling for its
# adaptive threshold, cost the big collections' rows their RSS; 512 KiB put SET_1M's arguments in
# fresh mappings, 0.78 -> 0.30 of redis-server's CPU)
MMAP_THRESHOLD = 4 * 1024 * 1024
TRIM_THRESHOLD = 8 * 1024 * 1024


def _libc_function(name: str, argtypes: tuple[type, ...], restype: type) -> Any:
    """The C library's function `name` typed for ctypes, or None where it has none."""
    try:
        function = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    function.argtypes = argtypes
    function.restype = restype
    return function


def keep_big_blocks() -> bool:
    """Fix malloc's thresholds (see the module's docstring); whether the C library took them."""
    mallopt = _libc_function("mallopt", (ctypes.c_int, ctypes.c_int), ctypes.c_int)
    if mallopt is None:
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


def purge() -> bool:
    """Give the heap's free pages back to the system (malloc_trim(0)); whether any went."""
    trim = _libc_function("malloc_trim", (ctypes.c_size_t,), ctypes.c_int)
    return trim is not None and bool(trim(0))
