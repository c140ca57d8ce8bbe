"""Redis 7.4's hash field expiration commands: HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT, HTTL,
HPTTL, HEXPIRETIME, HPEXPIRETIME, HPERSIST (t_hash.c's hexpireGenericCommand, httlGenericCommand,
hpersistCommand).

Rule: argument checks and replies here, in Redis's order (the key's type, the time, the condition,
FIELDS, numfields, their count); deadlines are storage/hashfe.py's, what a passed one sets off
server/events/hashexpire.py's.  The rest of the hash family (server/commands/t_hash.py) honours
deadlines through hashexpire.lazy.

Replies per field: HEXPIRE family -2 no such field, 0 the NX/XX/GT/LT condition not met, 1 set,
2 deleted (the time is already past); HTTL family -2 no such field, -1 no deadline, else the
time; HPERSIST -2, -1, 1.  Propagation, as Redis 7.4: HEXPIRE, HPEXPIRE and HEXPIREAT travel as
HPEXPIREAT with the absolute deadline in ms and only the fields that got it (numfields
rewritten), a field deleted by a past time as HDEL, and nothing when no field got a deadline.
"""

from __future__ import annotations

from typing import cast

from raxdb.server.base.errors import WRONGTYPE, CommandError
from raxdb.server.events import hashexpire, propagate
from raxdb.server.events.keyaccess import (
    NOTIFY_GENERIC,
    NOTIFY_HASH,
    lookup_read,
    lookup_write,
    modified,
    notify,
)
from raxdb.server.table.args import option_word, to_int
from raxdb.server.table.registry import command
from raxdb.storage.hashfe import HashEx
from raxdb.storage.hashtype import Hash

HFE_MAX_ABS_TIME_MSEC = 0xFFFFFFFFFFFF >> 2  # EB_EXPIRE_TIME_MAX >> 2
_CONDITIONS = {b"nx": 1, b"xx": 2, b"gt": 3, b"lt": 4}
_NX, _XX, _GT, _LT = 1, 2, 3, 4
_NO_FIELDS = "ERR Mandatory argument FIELDS is missing or not at the right position"
_COUNT_MISMATCH = "ERR The `numfields` parameter must match the number of arguments"


def _hash(v) -> Hash | None:
    if v is not None and type(v) is not Hash and type(v) is not HashEx:
        raise CommandError(WRONGTYPE)
    return v


def _fields(argv: list[bytes], at: int, err: str) -> list[bytes]:
    """The fields of `FIELDS numfields field ...` with numfields at argv[at], checked as Redis
    does (FIELDS, then numfields in 1..LONG_MAX, then the count of what follows)."""
    if option_word(argv[at - 1]) != b"fields":
        raise CommandError(_NO_FIELDS)
    n = to_int(argv[at], err)
    if n < 1:
        raise CommandError(err)
    if n != len(argv) - at - 1:
        raise CommandError(_COUNT_MISMATCH)
    return argv[at + 1:]


def _no_fields(n: int, code: bytes) -> bytes:
    return b"*%d\r\n%s" % (n, code * n)


def _ints(out: list[bytes]) -> bytes:
    return b"*%d\r\n%s" % (len(out), b"".join(out))


def _read_fields(c, v, argv: list[bytes]) -> tuple[HashEx | None, list[bytes], bytes]:
    """HTTL's and HPERSIST's common part: the hash `v` (checked), the fields of argv[2:], and the
    reply already known when the key is missing (-2 each) or has no deadlines (-1 or -2 each)."""
    h = _hash(v)
    fields = _fields(argv, 3, "ERR Number of fields must be a positive integer")
    if h is None:
        return None, fields, _no_fields(len(fields), b":-2\r\n")
    if type(h) is Hash:
        return None, fields, _ints([b":-1\r\n" if f in h else b":-2\r\n" for f in fields])
    return cast(HashEx, h), fields, b""


# ---- HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT ------------------------------------------------------
def _expire(c, argv: list[bytes], name: str, relative: bool, seconds: bool) -> bytes:
    srv = c.server
    db = c.db
    key = argv[1]
    h = _hash(lookup_write(c, key))
    when = to_int(argv[2])
    if when < 0:
        raise CommandError("ERR invalid expire time, must be >= 0")
    expire_time = f"ERR invalid expire time in '{name}' command"
    if seconds:
        if when > HFE_MAX_ABS_TIME_MSEC // 1000:
            raise CommandError(expire_time)
        when *= 1000
    base = srv.now_ms if relative else 0
    if when > HFE_MAX_ABS_TIME_MSEC - base:
        raise CommandError(expire_time)
    when += base
    cond = _CONDITIONS.get(option_word(argv[3]), 0)
    at = 5 if cond else 4
    fields = _fields(argv, at, "ERR Parameter `numFields` should be greater than 0")
    if h is None:
        return _no_fields(len(fields), b":-2\r\n")
    hx: HashEx | None
    if type(h) is Hash:  # Redis converts the hash (listpack to listpackex) whatever follows
        hx = HashEx.of(h)
        db.replace(key, hx)
    else:
        hx = hashexpire.lazy(srv, db, key, cast(HashEx, h))
        if hx is None:
            return _no_fields(len(fields), b":-2\r\n")
    past = when <= srv.now_ms and hashexpire.may_expire(srv, db)
    out = []
    set_fields: list[bytes] = []
    deleted = 0
    for f in fields:
        if f not in hx:
            out.append(b":-2\r\n")
            continue
        prev = hx.deadline(f)
        if prev is None:
            if cond == _XX or cond == _GT:
                out.append(b":0\r\n")
                continue
        elif (cond == _NX or (cond == _GT and prev >= when) or (cond == _LT and prev <= when)):
            out.append(b":0\r\n")
            continue
        if past:
            propagate.also(srv, db.id, [b"HDEL", key, f])
            hx.delete(f)
            deleted += 1
            out.append(b":2\r\n")
            continue
        hx.set_deadline(f, when)
        set_fields.append(f)
        out.append(b":1\r\n")
    if deleted or set_fields:
        srv.dirty += deleted + len(set_fields) - 1
        if deleted and not len(hx):
            db.delete(key)
            modified(c, key)
            notify(c, NOTIFY_HASH, "hdel", key)
            notify(c, NOTIFY_GENERIC, "del", key)
        else:
            modified(c, key)
            notify(c, NOTIFY_HASH, "hdel" if deleted else "hexpire", key)
            hashexpire.track(db, key, hx)
    if not set_fields:
        propagate.prevent(c)
    elif srv.also_propagate is not None:
        head = [b"HPEXPIREAT", key, b"%d" % when]
        if cond:
            head.append(argv[3])
        propagate.rewrite(c, [*head, argv[at - 1], b"%d" % len(set_fields), *set_fields])
    return _ints(out)


@command("hexpire")
def hexpire(c, argv):
    return _expire(c, argv, "hexpire", True, True)


@command("hpexpire")
def hpexpire(c, argv):
    return _expire(c, argv, "hpexpire", True, False)


@command("hexpireat")
def hexpireat(c, argv):
    return _expire(c, argv, "hexpireat", False, True)


@command("hpexpireat")
def hpexpireat(c, argv):
    return _expire(c, argv, "hpexpireat", False, False)


# ---- HTTL, HPTTL, HEXPIRETIME, HPEXPIRETIME ----------------------------------------------------
def _ttl(c, argv: list[bytes], relative: bool, seconds: bool) -> bytes:
    h, fields, known = _read_fields(c, lookup_read(c, argv[1]), argv)
    if h is None:
        return known
    now = c.server.now_ms
    base = now if relative else 0
    out = []
    for f in fields:
        if f not in h:
            out.append(b":-2\r\n")
            continue
        when = h.deadline(f)
        if when is None:
            out.append(b":-1\r\n")
        elif when <= now:  # past, not yet reclaimed (a replica's): as if gone
            out.append(b":-2\r\n")
        else:
            out.append(b":%d\r\n" % ((when + 999 - base) // 1000 if seconds else when - base))
    return _ints(out)


@command("httl")
def httl(c, argv):
    return _ttl(c, argv, True, True)


@command("hpttl")
def hpttl(c, argv):
    return _ttl(c, argv, True, False)


@command("hexpiretime")
def hexpiretime(c, argv):
    return _ttl(c, argv, False, True)


@command("hpexpiretime")
def hpexpiretime(c, argv):
    return _ttl(c, argv, False, False)


# ---- HPERSIST ---------------------------------------------------------------------------------------
@command("hpersist")
def hpersist(c, argv):
    key = argv[1]
    h, fields, known = _read_fields(c, lookup_write(c, key), argv)
    if h is None:
        return known
    now = c.server.now_ms
    out = []
    changed = False
    for f in fields:
        if f not in h:
            out.append(b":-2\r\n")
            continue
        when = h.deadline(f)
        if when is None:
            out.append(b":-1\r\n")
        elif when < now:
            out.append(b":-2\r\n")
        else:
            h.persist(f)
            changed = True
            out.append(b":1\r\n")
    if changed:
        notify(c, NOTIFY_HASH, "hpersist", key)
        modified(c, key)
    return _ints(out)
