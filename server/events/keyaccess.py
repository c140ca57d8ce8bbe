"""How commands read and write keys: Redis's lookupKeyRead/Write, setKey, signalModifiedKey and
notifyKeyspaceEvent, in one place so every family gets hits/misses, WATCH invalidation,
keyspace notifications and blocked-client wake-ups the same way.

The guards are cheap on purpose: nobody WATCHing this db's keys and client tracking off means
`db.signals` is False, notifications off means `server.notify_flags == 0`, no blocked clients
means `db.blocking` is empty.  Hot handlers inline the first two guards themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from raxdb.protocol.request import string2ll
from raxdb.server.base.errors import WRONGTYPE, CommandError
from raxdb.server.events import propagate, tracking, watch
from raxdb.storage.keyspace import EmbStr, RawStr, is_string

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Client, Server
    from raxdb.storage.keyspace import Database

# Keyspace notification classes (notify-keyspace-events letters), as Redis's NOTIFY_* bits.
NOTIFY_KEYSPACE = 1 << 0  # K
NOTIFY_KEYEVENT = 1 << 1  # E
NOTIFY_GENERIC = 1 << 2  # g
NOTIFY_STRING = 1 << 3  # $
NOTIFY_LIST = 1 << 4  # l
NOTIFY_SET = 1 << 5  # s
NOTIFY_HASH = 1 << 6  # h
NOTIFY_ZSET = 1 << 7  # z
NOTIFY_EXPIRED = 1 << 8  # x
NOTIFY_EVICTED = 1 << 9  # e
NOTIFY_STREAM = 1 << 10  # t
NOTIFY_KEY_MISS = 1 << 11  # m
NOTIFY_LOADED = 1 << 12
NOTIFY_MODULE = 1 << 13  # d
NOTIFY_NEW = 1 << 14  # n

# Installed by the pub/sub family: publish(server, dbid, cls, event, key).
_notifier: list[Any] = [None]
# Installed by the blocking family: signal_ready(db, key, value).
_ready_signaller: list[Any] = [None]


def install_hooks(notifier: Any = None, ready_signaller: Any = None) -> None:
    """The hooks higher floors install here: pub/sub's notifier(server, dbid, cls, event, key),
    blocking's signal_ready(db, key, value)."""
    if notifier is not None:
        _notifier[0] = notifier
    if ready_signaller is not None:
        _ready_signaller[0] = ready_signaller


def type_name(value: Any) -> str:
    return "string" if is_string(value) else value.type_name


def string_encoding(v: bytes | bytearray) -> str:
    """Redis's encoding of a string value: raw once modified in place (bytearray), embstr when
    Redis skipped the int attempt (EmbStr), else int (a string2ll integer), embstr (at most 44
    bytes) or raw, as tryObjectEncoding leaves a value SET stored."""
    cls = type(v)
    if cls is RawStr or cls is bytearray:
        return "raw"
    if cls is EmbStr:
        return "embstr"
    if len(v) <= 20 and string2ll(v) is not None:
        return "int"
    return "embstr" if len(v) <= 44 else "raw"


def writable_string(c: Client, key: bytes, v: bytes | bytearray) -> RawStr:
    """The key's string value as a RawStr (Redis's dbUnshareStringValue): the stored value itself
    when it already is one, else a raw copy that replaces it.  Callers that lengthen it call its
    `make_room` first, so that its allocation follows sds's."""
    if type(v) is RawStr:
        return v
    buf = RawStr.of(v)
    c.db.replace(key, buf)
    return buf


def lookup_read(c: Client, key: bytes) -> Any:
    """The value for a read command, counting keyspace hits and misses."""
    srv = c.server
    db = c.db
    v = db.get(key, srv.now_ms)
    if v is None:
        srv.stat_keyspace_misses += 1
        if srv.notify_flags & NOTIFY_KEY_MISS:
            notify(c, NOTIFY_KEY_MISS, "keymiss", key)
    else:
        srv.stat_keyspace_hits += 1
    return v


def lookup_write(c: Client, key: bytes) -> Any:
    srv = c.server
    db = c.db
    return db.get(key, srv.now_ms)


def set_key(c: Client, key: bytes, value: Any) -> None:
    """setKey: store `value` at `key` (its TTL dropped), looking the key up for writing first, so
    that one past its deadline expires (its DEL propagated, its event sent) before the store."""
    lookup_write(c, key)
    c.db.set(key, value)


def lookup_string(c: Client, key: bytes, write: bool = False) -> bytes | bytearray | None:
    v = lookup_write(c, key) if write else lookup_read(c, key)
    if v is not None and not is_string(v):
        raise CommandError(WRONGTYPE)
    return v


def lookup_typed(c: Client, key: bytes, cls: type, write: bool = False) -> Any:
    """The value if it is an instance of `cls`, None if missing, WRONGTYPE otherwise."""
    v = lookup_write(c, key) if write else lookup_read(c, key)
    if v is not None and type(v) is not cls:
        raise CommandError(WRONGTYPE)
    return v


def lookup_or_create(c: Client, key: bytes, cls: type) -> Any:
    """lookupKeyWrite for a write that creates its key (hashTypeLookupWriteOrCreate and kin): the
    value if it is an instance of `cls`, a new empty `cls()` added under `key` if missing,
    WRONGTYPE otherwise."""
    db = c.db
    srv = c.server
    now = srv.now_ms
    v = db.get(key, now)
    if v is None:
        v = cls()
        db.add(key, v, now)
    elif type(v) is not cls:
        raise CommandError(WRONGTYPE)
    return v


def modified(c: Client, key: bytes, db: Database | None = None) -> None:
    """signalModifiedKey for a command's write: WATCHes and client tracking hear of the key."""
    d = c.db if db is None else db
    srv = c.server
    if d.signals:
        signal_modified(srv, c, d, key)
    srv.dirty += 1


def written(c: Client, key: bytes, cls: int, event: str) -> None:
    """A command's write of `key` in its database, signalled: signalModifiedKey and the keyspace
    event when anyone listens (watches, tracking, notifications), else only the dirty count that
    `modified` keeps (the one test the hot writes make)."""
    srv = c.server
    db = c.db
    if db.signals or srv.notify_flags:
        modified(c, key)
        notify(c, cls, event, key)
    else:
        srv.dirty += 1


def signal_modified(srv: Server, c: Client | None, db: Database, key: bytes) -> None:
    """The listeners of signalModifiedKey, for a write by `c` or (None) an expiry or eviction."""
    if db.watched:
        watch.touch(db, key)
    tr = srv.tracking
    if tr is not None:  # the server's is tracking.py's Tracking (its state() makes it)
        tracking.invalidate(tr, c, key)  # type: ignore[arg-type]


def expired(srv: Server, db: Database, key: bytes) -> None:
    """A key past its deadline that `db` has just deleted, lazily or in the active expire cycle:
    Redis's deleteExpiredKeyAndPropagate's side effects.  Counted in expired_keys; its DEL (or
    UNLINK) propagated, not counted in dirty (a command that found its key expired and changed
    nothing propagates the DEL alone); the "expired" event; WATCH and tracking told.  The server
    installs it, bound to itself, as every db's `expired_hook`: one compiled call per expired key."""
    srv.stat_expired_keys += 1
    if srv.also_propagate is not None:
        propagate.deleted(srv, db.id, key, "lazyfree-lazy-expire")
    if srv.notify_flags & NOTIFY_EXPIRED and _notifier[0] is not None:
        _notifier[0](srv, db.id, NOTIFY_EXPIRED, "expired", key)
    if db.signals:
        signal_modified(srv, None, db, key)


def notify(c: Client, cls: int, event: str, key: bytes, dbid: int | None = None) -> None:
    srv = c.server
    if srv.notify_flags & cls and _notifier[0] is not None:
        _notifier[0](srv, c.dbid if dbid is None else dbid, cls, event, key)


def signal_ready(db: Database, key: bytes, value: Any) -> None:
    """Redis's signalKeyAsReady for the signals the Database does not give itself (it signals
    every key it creates, and a stream it deletes or overwrites): XADD to an existing stream,
    XGROUP DESTROY, SWAPDB.  `value`'s type says which waiters may care."""
    if db.blocking and _ready_signaller[0] is not None:
        _ready_signaller[0](db, key, value)
