"""What Redis would free in the background: INFO's lazyfreed_objects.

raxdb frees everything at once (Python's reference counting), but Redis hands big values to a
background thread and counts them, and tools and tests read that count.  So the deletions Redis
makes asynchronous count here as Redis counts them (lazyfree.c): a value whose free effort is
over LAZYFREE_THRESHOLD (64) counts one when UNLINKed, or DELeted with lazyfree-lazy-user-del;
a database emptied asynchronously (FLUSHDB/FLUSHALL ASYNC, or lazyfree-lazy-user-flush) counts
its keys.  Nothing is ever pending (lazyfree_pending_objects stays 0): the work is already done.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from raxdb.storage.stream import Stream

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server

THRESHOLD = 64  # LAZYFREE_THRESHOLD


def free_effort(value: Any) -> int:
    """lazyfreeGetFreeEffort: roughly the allocations freeing `value` takes; 1 for the compact
    encodings (one allocation) and strings."""
    if value.__class__ is Stream:
        effort = value.rax.numnodes
        groups = value.cgroups
        if groups is not None and groups.numele:
            first = next(iter(groups.items()))[1]  # the first group's PEL stands for all of them
            effort += groups.numele * (1 + first.pel.numele)
        return effort
    encoding = getattr(value, "encoding", None)
    if encoding is None:
        return 1
    kind = encoding()
    if kind == "quicklist":
        return len(value.nodes)
    if kind in ("hashtable", "skiplist"):
        return len(value)
    return 1


def freed_async(srv: Server, value: Any) -> None:
    """`value` was deleted where Redis frees asynchronously (freeObjAsync)."""
    if value is not None and free_effort(value) > THRESHOLD:
        srv.stat_lazyfreed += 1


def flushed_async(srv: Server, keys: int) -> None:
    """A database of `keys` keys was emptied asynchronously (emptyDbAsync)."""
    srv.stat_lazyfreed += keys


def flush_is_async(srv: Server, argv: list[bytes], start: int) -> bool:
    """FLUSHDB/FLUSHALL [ASYNC|SYNC] (argv already checked): ASYNC, or no option and
    lazyfree-lazy-user-flush."""
    if len(argv) > start:
        return argv[start].lower() == b"async"
    return srv.config.values["lazyfree-lazy-user-flush"] == "yes"
