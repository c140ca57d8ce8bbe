"""Emptying the dataset: Redis's emptyData(-1), every database flushed with the signals a flush
gives, before a load replaces the data or when FLUSHALL asks.

Callers: FLUSHALL and DEBUG RELOAD (commands/t_server.py), DEBUG LOADAOF (persistence/aofload.py)
and a replica's full sync or failed load (replication/replica.py); all but FLUSHALL empty the
function libraries too, as EMPTYDB_NO_FLAGS does.  FLUSHDB empties its one database itself, with
the same signals.

Rule: imports only the layers below it (scripting and everything under it), as persistence/ does.

Invariants: every WATCH of a key that existed is dirtied and blocked stream readers are failed
before their database empties (touchAllWatchedKeysInDb, scanDatabaseForDeletedStreams); tracking
clients are told everything changed once, after; the replica's own expires are forgotten
(flushSlaveKeysWithExpireList).  Nothing here propagates, counts `dirty`, or touches persistence
(a saving child, the AOF): each caller does what its command needs of those.
"""

from __future__ import annotations

from raxdb.server.events import tracking, watch
from raxdb.server.memory import lazyfree
from raxdb.server.net import blocking
from raxdb.server.scripting import functions


def empty_data(srv, lazy: bool, with_functions: bool = False) -> int:
    """emptyData(-1): every database emptied, with the signals a flush gives (WATCH, tracking,
    blocked stream readers); returns how many keys went.  `with_functions`: the function libraries
    too (EMPTYDB_NO_FLAGS: DEBUG RELOAD and LOADAOF; FLUSHALL keeps them)."""
    removed = 0
    for db in srv.dbs:
        if db.watched:
            watch.touch_flushed(db)
        blocking.signal_deleted_streams(db)
        n = db.flush()
        if lazy:
            lazyfree.flushed_async(srv, n)
        removed += n
    tracking.flushed(srv)
    srv.repl.own_expires.clear()  # flushSlaveKeysWithExpireList
    if with_functions:
        functions.registry(srv).flush()
    return removed
