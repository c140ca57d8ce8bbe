"""A key's memory: MEMORY USAGE's figure, Redis's objectComputeSize plus the key's dict entry and
string.

MEMORY USAGE (commands/t_server.py) answers `key_usage`; used_memory (memory/evict.py) counts every
key by the same figure, after each write under a memory limit and sampled when INFO asks without
one, so a limit set from INFO means what MEMORY USAGE says.

Rule: imports only the layers below memory/ (events, config, security, conn, table, base).

Invariants: Redis 7.0's figure to the byte for strings (by their encoding: int, embstr, raw),
listpacks, intsets and streams; for hashtable and skiplist encodings the estimate from `samples`
elements that objectComputeSize makes.  A figure depends on the key and the value alone, never on
the database or the server, so eviction's per-key counts (memory/evict.py) stay right between writes.
"""

from __future__ import annotations

from raxdb.protocol.request import string2ll
from raxdb.server.events.keyaccess import is_string, string_encoding
from raxdb.storage.alloc import SIZERS, embstr_alloc, sds_alloc
from raxdb.storage.keyspace import RawStr


def value_usage(v, samples: int = 5) -> int:
    """Bytes the value object occupies, estimated like Redis's objectComputeSize from the first
    `samples` elements or nodes of an aggregate (0: all of them)."""
    t = v.__class__
    if t is bytes:
        # string_encoding's rule for a value as SET leaves it, inlined: memory accounting sizes
        # every key a write command touches (memory/evict.py)
        n = len(v)
        if n > 44:
            return 16 + sds_alloc(n)
        return 16 if n <= 20 and string2ll(v) is not None else embstr_alloc(n)
    # a list, set, hash, sorted set or stream: its type's estimate by its exact class (alloc.py's
    # SIZERS), before the string tests; a subclass (HashEx) and the other values (an intset)
    # answer through their method
    sizer = SIZERS.get(t)
    if sizer is not None:
        return sizer(v, samples)
    if is_string(v):
        enc = string_encoding(v)
        if enc == "int":
            return 16
        if enc == "embstr":
            return embstr_alloc(len(v))
        if v.__class__ is RawStr:  # its allocation, or its bytes' if rewritten past it (HLL)
            return 16 + max(v.size, sds_alloc(len(v)))
        return 16 + sds_alloc(len(v))
    return int(v.mem_usage(samples))


def key_usage(key: bytes, value, samples: int = 5) -> int:
    """MEMORY USAGE: the dict entry, the key string and the value."""
    return 24 + sds_alloc(len(key)) + value_usage(value, samples)
