"""Keyspace notifications: notify-keyspace-events and the __keyspace@N__ / __keyevent@N__ messages.

Writers call `keyaccess.notify(c, NOTIFY_xxx, "event", key)`, which costs one AND while the option
is empty; when the class is enabled it lands in `_publish` here, which sends
`__keyspace@<db>__:<key>` -> event (K) and `__keyevent@<db>__:<event>` -> key (E) through the Pub/Sub
fan-out.  Nothing is encoded when nobody is subscribed at all.

The option is stored in Redis's normal form (CONFIG SET notify-keyspace-events KEA reads back as
AKE): the validator registered in `config.KINDS` parses and re-prints it, and an `on_change` hook keeps
`server.notify_flags` (the bitmask keyaccess tests) in step.

"new" events (class 'n', which 'A' leaves out) fire where Redis's dbAdd fires them: whenever a key
comes into being, before the event of the command that created it.  Every creation goes through the
Database, so its `new_hook` (installed only while 'n' is set) covers them all; RENAME, COPY and MOVE
create their destination anew (Redis deletes it first), so they fire it even over an existing key.
CONFIG GET cannot show 'n' next to 'A' (Redis prints "KEAn" as "AKE"), so the stored value is an
`EventFlags`: that text plus the mask it came from.

`attach(server)` is called once by the Server: it installs the above.  The "expired" event of a key
reclaimed past its deadline (lazily or by the cron) is sent by the databases' expired hook,
keyaccess.expired, with the rest of Redis's deleteExpiredKeyAndPropagate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raxdb.server.config import options as config_mod
from raxdb.server.events import keyaccess, pubsub
from raxdb.server.events.keyaccess import (
    NOTIFY_EVICTED,
    NOTIFY_EXPIRED,
    NOTIFY_GENERIC,
    NOTIFY_HASH,
    NOTIFY_KEY_MISS,
    NOTIFY_KEYEVENT,
    NOTIFY_KEYSPACE,
    NOTIFY_LIST,
    NOTIFY_MODULE,
    NOTIFY_NEW,
    NOTIFY_SET,
    NOTIFY_STREAM,
    NOTIFY_STRING,
    NOTIFY_ZSET,
)

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server
    from raxdb.storage.keyspace import Database

# The class letters in the order Redis prints them (A stands for all of them but n).
_CLASS_LETTERS = [("g", NOTIFY_GENERIC), ("$", NOTIFY_STRING), ("l", NOTIFY_LIST), ("s", NOTIFY_SET),
                  ("h", NOTIFY_HASH), ("z", NOTIFY_ZSET), ("x", NOTIFY_EXPIRED), ("e", NOTIFY_EVICTED),
                  ("t", NOTIFY_STREAM), ("d", NOTIFY_MODULE), ("n", NOTIFY_NEW)]
NOTIFY_ALL = (NOTIFY_GENERIC | NOTIFY_STRING | NOTIFY_LIST | NOTIFY_SET | NOTIFY_HASH | NOTIFY_ZSET
              | NOTIFY_EXPIRED | NOTIFY_EVICTED | NOTIFY_STREAM | NOTIFY_MODULE)
_LETTER = dict(_CLASS_LETTERS)
_LETTER.update({"A": NOTIFY_ALL, "K": NOTIFY_KEYSPACE, "E": NOTIFY_KEYEVENT, "m": NOTIFY_KEY_MISS})
INVALID = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."


def parse_flags(text: str) -> int | None:
    """The bitmask for a notify-keyspace-events string; None if a character is not a class."""
    flags = 0
    for ch in text:
        bit = _LETTER.get(ch)
        if bit is None:
            return None
        flags |= bit
    return flags


def format_flags(flags: int) -> str:
    if flags & NOTIFY_ALL == NOTIFY_ALL:
        out = ["A"]
    else:
        out = [ch for ch, bit in _CLASS_LETTERS if flags & bit]
    if flags & NOTIFY_KEYSPACE:
        out.append("K")
    if flags & NOTIFY_KEYEVENT:
        out.append("E")
    if flags & NOTIFY_KEY_MISS:
        out.append("m")
    return "".join(out)


class EventFlags(str):
    """The option's CONFIG GET text that also carries the bitmask it was parsed from.

    Redis prints the classes of a flag set with 'A' in it as "A" and drops 'n' (which 'A' does not
    include) from the text, yet keeps it in the mask: "KEAn" reads back as "AKE" and still sends
    "new" events.  The text alone cannot say that, so the mask travels with it, and two values that
    print alike but differ in 'n' compare unequal (the config's on-change hooks run on a change)."""

    bits: int

    def __new__(cls, bits: int) -> EventFlags:
        self = super().__new__(cls, format_flags(bits))
        self.bits = bits
        return self

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EventFlags):
            return self.bits == other.bits
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = str.__hash__


def flags_of(value: str) -> int:
    """The bitmask of a stored option value (an EventFlags, or a plain text read as letters)."""
    bits = getattr(value, "bits", None)
    return bits if bits is not None else parse_flags(value) or 0


def _validate(value: bytes) -> str:
    flags = parse_flags(value.decode(errors="replace"))
    if flags is None:
        raise config_mod.ConfigError(INVALID)
    return EventFlags(flags)


config_mod.KINDS["notify-keyspace-events"] = _validate

_event_names: dict[str, bytes] = {}


def _publish(server: Server, dbid: int, cls: int, event: str, key: bytes) -> None:
    if not pubsub.has_subscribers(server):
        return
    ev = _event_names.get(event)
    if ev is None:
        ev = _event_names[event] = event.encode()
    flags = server.notify_flags
    if flags & NOTIFY_KEYSPACE:
        pubsub.publish(server, b"__keyspace@%d__:%s" % (dbid, key), ev)
    if flags & NOTIFY_KEYEVENT:
        pubsub.publish(server, b"__keyevent@%d__:%s" % (dbid, ev), key)


def notify_db(server: Server, dbid: int, cls: int, event: str, key: bytes) -> None:
    """notifyKeyspaceEvent without a client (expiry, eviction): `dbid` is the key's database."""
    if server.notify_flags & cls:
        _publish(server, dbid, cls, event, key)


def attach(server: Server) -> None:
    pubsub.attach(server)
    keyaccess.install_hooks(notifier=_publish)
    cfg = server.config

    def on_change(value: str) -> None:
        server.notify_flags = flags_of(value)
        install_new_hook(server)

    on_change(cfg.values.get("notify-keyspace-events", ""))
    cfg.values["notify-keyspace-events"] = EventFlags(server.notify_flags)
    cfg.on_change.setdefault("notify-keyspace-events", []).append(on_change)


def install_new_hook(server: Server) -> None:
    """Give the databases the `new_hook` that the server's state asks for: Redis's dbAdd side
    effects, the "new" event while notify-keyspace-events has 'n', and the note of a created key
    while maxmemory is set (server/memory/evict.py counts it after the command); None if neither."""
    created = server.mem_created
    publish_new = bool(server.notify_flags & NOTIFY_NEW)

    def created_key(db: Database, key: bytes) -> None:
        if created is not None:
            created.append((db, key))
        if publish_new:
            _publish(server, db.id, NOTIFY_NEW, "new", key)

    hook = created_key if publish_new or created is not None else None
    for db in server.dbs:
        db.new_hook = hook
