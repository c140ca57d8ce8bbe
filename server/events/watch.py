"""WATCH bookkeeping: which clients watch which keys, and invalidating them (CAS for MULTI/EXEC);
and the end of a transaction, which releases them.

Two indexes point at the same `WatchedKey` records: `db.watched[key]` (who watches this key, so a
write finds its watchers in O(watchers)) and `client.watched` (what this client watches, so EXEC,
UNWATCH and disconnect release everything in O(keys)).  A client whose watch is invalidated gets
`dirty_cas` and drops all its watches at once: nothing it still watches can make EXEC succeed.

Expiry follows Redis 7.0: a key watched while alive makes EXEC fail once its deadline passes,
whether or not it has been reclaimed yet (`expired_since_watch`, checked by EXEC).  A key that was
already logically expired (dead but not yet reclaimed) when WATCHed is flagged `expired`: deleting it
later is no logical change, so reclaiming it leaves the watch alone; a real write still dirties.

Writers reach `touch` through keyaccess.signal_modified, behind the `db.signals` guard that
WATCH sets (and the last UNWATCH of a db clears, unless client tracking needs it), so databases
nobody watches pay one test.  Whole-database changes call `touch_flushed(db)` (FLUSHDB,
FLUSHALL: before emptying) and `touch_swapped(db1, db2, now_ms)` (SWAPDB: before swapping).

A transaction ends (`discard_transaction`) after EXEC, DISCARD, an EXECABORT and RESET: the client
leaves MULTI state (its queue, its queueing error, `dirty_cas`) and its WATCHes go.  An EXEC the
dispatcher rejects before it runs (arity, NOAUTH, a RESP2 subscribed context) ends it the same way,
and `exec_abort` gives the EXECABORT error that replaces the rejection (net/client.py calls it;
the MULTI/EXEC commands are commands/t_multi.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raxdb.server.conn import lifecycle

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Client
    from raxdb.storage.keyspace import Database


class WatchedKey:
    __slots__ = ("client", "db", "key", "expired")

    def __init__(self, client: Client, db: Database, key: bytes, expired: bool) -> None:
        self.client = client
        self.db = db
        self.key = key
        self.expired = expired  # the key was logically expired (still stored) when WATCHed


def _is_expired(db: Database, key: bytes, now_ms: int) -> bool:
    """Stored but past its deadline (the same test Database.get applies)."""
    when = db.expires.get(key)
    return when is not None and when <= now_ms and key in db


def watch_key(c: Client, key: bytes) -> None:
    db = c.db
    watchers = db.watched.get(key)
    if watchers is None:
        watchers = db.watched[key] = []
    else:
        for w in watchers:
            if w.client is c:
                return
    w = WatchedKey(c, db, key, _is_expired(db, key, c.server.now_ms))
    watchers.append(w)
    if not c.watched:
        c.server.watchers += 1
    c.watched.append(w)
    db.signals = True


def unwatch_all(c: Client) -> None:
    if not c.watched:
        return
    for w in c.watched:
        watchers = w.db.watched.get(w.key)
        if watchers is not None:
            try:
                watchers.remove(w)
            except ValueError:
                pass
            if not watchers:
                del w.db.watched[w.key]
                w.db.signals = bool(w.db.watched) or c.server.tracking is not None
    c.watched = []
    c.server.watchers -= 1


def _invalidate(c: Client) -> None:
    c.dirty_cas = True
    unwatch_all(c)


def touch(db: Database, key: bytes) -> None:
    """signalModifiedKey for WATCH: `key` in `db` was written (or deleted, or reclaimed by expiry)."""
    watchers = db.watched.get(key)
    if not watchers:
        return
    for w in list(watchers):
        if w.expired and key not in db:
            # The dead key it watched is now gone: logically nothing changed.
            w.expired = False
            continue
        _invalidate(w.client)


def touch_flushed(db: Database) -> None:
    """FLUSHDB / FLUSHALL, called before `db` is emptied: watched keys that exist are modified."""
    _touch_all(db, None, 0)


def touch_swapped(db1: Database, db2: Database, now_ms: int) -> None:
    """SWAPDB, called before the swap: each side's watched keys see the other side's contents."""
    _touch_all(db1, db2, now_ms)
    _touch_all(db2, db1, now_ms)


def _touch_all(emptied: Database, replaced_with: Database | None, now: int) -> None:
    if not emptied.watched:
        return
    for key, watchers in list(emptied.watched.items()):
        in_emptied = key in emptied
        in_new = replaced_with is not None and key in replaced_with
        if not (in_emptied or in_new):
            continue
        new_expired = in_new and _is_expired(replaced_with, key, now)  # type: ignore[arg-type]
        for w in list(watchers):
            if w.expired:
                if not in_new:
                    w.expired = False  # a dead key deleted: no logical change
                    continue
                if new_expired:
                    continue  # dead before, dead after
            elif not in_emptied and new_expired:
                w.expired = True  # nothing replaced by something already dead
                continue
            _invalidate(w.client)


def expired_since_watch(c: Client) -> bool:
    """EXEC: did a key that was alive at WATCH time reach its deadline (reclaimed or not)?"""
    now = c.server.now_ms
    for w in c.watched:
        if not w.expired and _is_expired(w.db, w.key, now):
            return True
    return False


# ---- the end of a transaction ---------------------------------------------------------------------
def discard_transaction(c: Client) -> None:
    """Leave MULTI state and release WATCHes (after EXEC, DISCARD, EXECABORT)."""
    c.multi = None
    c.multi_error = False
    c.dirty_cas = False
    unwatch_all(c)
    c.update_plain()


def exec_abort(c: Client, msg: bytes) -> bytes:
    """EXEC rejected before running (arity, NOAUTH, RESP2 subscribed context): Redis discards the
    transaction and reports why.  `msg` is the rejection; the EXECABORT text is returned."""
    discard_transaction(c)
    if msg.startswith(b"ERR "):
        msg = msg[4:]
    return b"EXECABORT Transaction discarded because of: " + msg


def _reset(c: Client) -> None:
    """RESET: the transaction ends, as DISCARD ends it."""
    if c.multi is not None or c.watched or c.dirty_cas:
        discard_transaction(c)


# Registered here, with the state they clear, rather than by the MULTI family (commands/t_multi.py),
# which so loads on first use like any other: a client can be in MULTI or WATCH only once it has.
lifecycle.RESET_HOOKS.append(_reset)
lifecycle.DISCONNECT_HOOKS.append(unwatch_all)
