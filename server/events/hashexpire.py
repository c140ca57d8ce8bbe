"""What a hash field's deadline sets off when it passes (Redis 7.4's hash field expiration).

Rule: the storage of deadlines is storage/hashfe.py's; this module deletes the due fields of a
hash and does what Redis does for each: the deletion travels as `HDEL key field` to the AOF and
replicas (propagateHashFieldDeletion), the key gets one `hexpired` event (and `del` when its
last field went, the key deleted with it), WATCH and tracking hear of it.  Two callers:

- lazily, a hash command that finds a hash with a field due (`lazy`): the fields go before the
  command reads, so no reply shows an expired field.  (Redis 7.4 deletes only the field a
  command looks up and skips the others as it iterates; raxdb deletes all the due ones, so HLEN
  never counts an expired field, where Redis's may until the field is reclaimed.)
- actively, the cron (`active_cycle`) and a moved test clock (`clock_moved`): each database keeps
  a heap of (earliest deadline, key) (`Database.hfe`); due entries are popped and checked against
  the key's value as it is now (stale ones, of a renamed or persisted hash, are dropped or
  pushed again at the hash's own time).

Nothing expires on a replica (its master's HDELs delete the fields) nor while a dataset loads, as
for keys.  `track` puts a hash on its database's heap: the HEXPIRE family calls it, and so does
whatever stores such a hash under a new name (RENAME, MOVE, COPY, RESTORE, a load).
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from raxdb.server.events import notify, propagate
from raxdb.server.events.keyaccess import NOTIFY_GENERIC, NOTIFY_HASH, signal_modified
from raxdb.storage.hashfe import NO_DEADLINE, HashEx, track

__all__ = ["active_cycle", "expire_due", "lazy", "may_expire", "track"]

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server
    from raxdb.storage.keyspace import Database

FIELDS_PER_TICK = 10000  # the active cycle's quota of fields per cron tick (a moved clock has none)


def may_expire(srv: Server, db: Database) -> bool:
    """Do deadlines delete fields now (not on a replica, nor while loading or paused)?"""
    return srv.repl.masterhost is None and not db.loading and not db.expire_paused


def expire_due(srv: Server, db: Database, key: bytes, h: HashEx, now: int, limit: int = -1) -> int:
    """Delete `h`'s fields due at `now` (at most `limit` of them, -1: all), as the module docstring
    says; returns how many went."""
    due = h.due(now)
    if not due:
        return 0
    if 0 <= limit < len(due):
        due = due[:limit]
        h.next_ms = now  # some are left: the hash is due again
    for f in due:
        propagate.also(srv, db.id, [b"HDEL", key, f])
        h.delete(f)
    if db.signals:
        signal_modified(srv, None, db, key)
    notify.notify_db(srv, db.id, NOTIFY_HASH, "hexpired", key)
    if not len(h):
        db.delete(key)
        notify.notify_db(srv, db.id, NOTIFY_GENERIC, "del", key)
    return len(due)


def lazy(srv: Server, db: Database, key: bytes, h: HashEx) -> HashEx | None:
    """`h`, the hash at `key` a command found, with its due fields deleted first; None when that
    deleted the key."""
    if h.next_ms > srv.now_ms or not may_expire(srv, db):
        return h
    expire_due(srv, db, key, h, srv.now_ms)
    return h if len(h) else None


def active_cycle(srv: Server, now: int, quota: int = FIELDS_PER_TICK) -> None:
    """Expire the due fields of every database's hashes, up to `quota` fields (-1: no limit)."""
    for db in srv.dbs:
        heap = db.hfe
        if not heap or not may_expire(srv, db):
            continue
        while heap and heap[0][0] <= now and quota != 0:
            _, key = heapq.heappop(heap)
            h = db.stored(key)
            if type(h) is not HashEx or not h.ttl:
                continue
            quota -= expire_due(srv, db, key, h, now, quota)
            if h.ttl and db.stored(key) is h and h.next_ms < NO_DEADLINE:
                heapq.heappush(heap, (h.next_ms, key))
    propagate.flush_alone(srv)
