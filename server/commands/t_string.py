"""String commands (Redis's t_string.c).

Values are `bytes` (or `bytearray` once modified in place: Redis's raw encoding).  Replies are built
directly; the common SET/GET shapes avoid any option parsing.  Expire arguments follow
getExpireMillisecondsOrReply: integers only, > 0, no overflow once converted to an absolute ms.
"""

from __future__ import annotations

from protocol import reply as R
from server.commands.args import INT64_MAX, INT64_MIN, maybe_int, to_int
from server.commands.table import command
from server.errors import NOT_INTEGER, OVERFLOW, SYNTAX, WRONGTYPE, CommandError
from server.keyaccess import (
    NOTIFY_GENERIC,
    NOTIFY_STRING,
    lookup_read,
    lookup_string,
    lookup_write,
    modified,
    notify,
)

_OK = R.OK


def _null(c) -> bytes:
    return c.enc.null


# ---- GET / SET ----------------------------------------------------------------------------------
@command("get")
def get(c, argv):
    srv = c.server
    v = c.db.get(argv[1], srv.now_ms)
    if v is None:
        srv.stat_keyspace_misses += 1
        if srv.notify_flags:
            lookup_read(c, argv[1])  # emits keymiss
            srv.stat_keyspace_misses -= 1
        return c.enc.null
    srv.stat_keyspace_hits += 1
    cls = v.__class__
    if cls is bytes or cls is bytearray:
        return b"$%d\r\n%s\r\n" % (len(v), v)
    raise CommandError(WRONGTYPE)


def expire_ms(c, arg: bytes, unit_seconds: bool, relative: bool, cmdname: str) -> int:
    """An absolute expire time in ms from an EX/PX/EXAT/PXAT-style argument."""
    n = maybe_int(arg)
    if n is None:
        raise CommandError(NOT_INTEGER)
    if n <= 0 or (unit_seconds and n > INT64_MAX // 1000):
        raise CommandError(f"ERR invalid expire time in '{cmdname}' command")
    if unit_seconds:
        n *= 1000
    if relative:
        n += c.server.now_ms
        if n > INT64_MAX:
            raise CommandError(f"ERR invalid expire time in '{cmdname}' command")
    return n


_NX, _XX, _GET, _KEEPTTL, _EX, _PX, _EXAT, _PXAT = 1, 2, 4, 8, 16, 32, 64, 128
_ANY_EXPIRE = _EX | _PX | _EXAT | _PXAT


def parse_set_options(argv: list[bytes], start: int) -> tuple[int, bytes | None]:
    """SET's option grammar (parseExtendedStringArgumentsOrReply, COMMAND_SET)."""
    flags = 0
    expire: bytes | None = None
    j = start
    n = len(argv)
    while j < n:
        opt = argv[j].lower()
        nxt = argv[j + 1] if j + 1 < n else None
        if opt == b"nx" and not flags & _XX:
            flags |= _NX
        elif opt == b"xx" and not flags & _NX:
            flags |= _XX
        elif opt == b"get":
            flags |= _GET
        elif opt == b"keepttl" and not flags & _ANY_EXPIRE:
            flags |= _KEEPTTL
        elif opt in (b"ex", b"px", b"exat", b"pxat") and nxt is not None:
            bit = {b"ex": _EX, b"px": _PX, b"exat": _EXAT, b"pxat": _PXAT}[opt]
            if flags & (_KEEPTTL | (_ANY_EXPIRE & ~bit)):
                raise CommandError(SYNTAX)
            flags |= bit
            expire = nxt
            j += 1
        else:
            raise CommandError(SYNTAX)
        j += 1
    return flags, expire


@command("set")
def set_(c, argv):
    key, value = argv[1], argv[2]
    db = c.db
    srv = c.server
    if len(argv) == 3:
        db.set(key, value)
        if db.watched or srv.notify_flags:
            modified(c, key)
            notify(c, NOTIFY_STRING, "set", key)
        else:
            srv.dirty += 1
        return _OK
    flags, expire = parse_set_options(argv, 3)
    when = None
    if expire is not None:
        when = expire_ms(c, expire, bool(flags & (_EX | _EXAT)), bool(flags & (_EX | _PX)), "set")
    old_reply = None
    if flags & _GET:
        old = lookup_string(c, key)
        old_reply = c.enc.null if old is None else R.bulk(bytes(old))
    found = lookup_write(c, key) is not None
    if (flags & _NX and found) or (flags & _XX and not found):
        return old_reply if old_reply is not None else c.enc.null
    db.set(key, value, keep_ttl=bool(flags & _KEEPTTL))
    modified(c, key)
    notify(c, NOTIFY_STRING, "set", key)
    if when is not None:
        db.set_expire(key, when)
        notify(c, NOTIFY_GENERIC, "expire", key)
    return old_reply if old_reply is not None else _OK


@command("setnx")
def setnx(c, argv):
    key = argv[1]
    if lookup_write(c, key) is not None:
        return R.ZERO
    c.db.set(key, argv[2])
    modified(c, key)
    notify(c, NOTIFY_STRING, "set", key)
    return R.ONE


def _setex(c, argv, unit_seconds: bool, name: str) -> bytes:
    when = expire_ms(c, argv[2], unit_seconds, True, name)
    key = argv[1]
    c.db.set(key, argv[3])
    c.db.set_expire(key, when)
    modified(c, key)
    notify(c, NOTIFY_STRING, "set", key)
    notify(c, NOTIFY_GENERIC, "expire", key)
    return _OK


@command("setex")
def setex(c, argv):
    return _setex(c, argv, True, "setex")


@command("psetex")
def psetex(c, argv):
    return _setex(c, argv, False, "psetex")


@command("getset")
def getset(c, argv):
    key = argv[1]
    old = lookup_string(c, key)
    c.db.set(key, argv[2])
    modified(c, key)
    notify(c, NOTIFY_STRING, "set", key)
    return c.enc.null if old is None else R.bulk(bytes(old))


@command("mget")
def mget(c, argv):
    db, now = c.db, c.server.now_ms
    null = c.enc.null
    parts = []
    for key in argv[1:]:
        v = db.get(key, now)
        if v is None or (v.__class__ is not bytes and v.__class__ is not bytearray):
            if v is None:
                c.server.stat_keyspace_misses += 1
            parts.append(null)
        else:
            c.server.stat_keyspace_hits += 1
            parts.append(b"$%d\r\n%s\r\n" % (len(v), v))
    return b"*%d\r\n%s" % (len(parts), b"".join(parts))


def _mset_args(argv: list[bytes], name: str) -> None:
    if len(argv) % 2 == 0:
        raise CommandError(f"ERR wrong number of arguments for '{name}' command")


@command("mset")
def mset(c, argv):
    _mset_args(argv, "mset")
    db = c.db
    for i in range(1, len(argv), 2):
        key = argv[i]
        db.set(key, argv[i + 1])
        modified(c, key)
        notify(c, NOTIFY_STRING, "set", key)
    return _OK


@command("msetnx")
def msetnx(c, argv):
    _mset_args(argv, "msetnx")
    for i in range(1, len(argv), 2):
        if lookup_write(c, argv[i]) is not None:
            return R.ZERO
    return mset_all(c, argv)


def mset_all(c, argv) -> bytes:
    mset(c, [b"mset", *argv[1:]])
    return R.ONE


# ---- counters -----------------------------------------------------------------------------------
def incr_by(c, key: bytes, delta: int) -> bytes:
    db = c.db
    v = db.get(key, c.server.now_ms)
    if v is None:
        cur = 0
    else:
        cls = v.__class__
        if cls is not bytes and cls is not bytearray:
            raise CommandError(WRONGTYPE)
        cur = maybe_int(v)
        if cur is None:
            raise CommandError(NOT_INTEGER)
    new = cur + delta
    if new > INT64_MAX or new < INT64_MIN:
        raise CommandError(OVERFLOW)
    out = b"%d" % new
    if v is None:
        db.add(key, out)
    else:
        db.replace(key, out)
    if db.watched or c.server.notify_flags:
        modified(c, key)
        notify(c, NOTIFY_STRING, "incrby", key)
    else:
        c.server.dirty += 1
    return R.integer(new)


@command("incr")
def incr(c, argv):
    return incr_by(c, argv[1], 1)


@command("decr")
def decr(c, argv):
    return incr_by(c, argv[1], -1)


@command("incrby")
def incrby(c, argv):
    return incr_by(c, argv[1], to_int(argv[2]))


@command("decrby")
def decrby(c, argv):
    delta = to_int(argv[2])
    if delta == INT64_MIN:
        raise CommandError("ERR decrement would overflow")
    return incr_by(c, argv[1], -delta)


@command("strlen")
def strlen(c, argv):
    v = lookup_string(c, argv[1])
    return R.integer(0 if v is None else len(v))


@command("append")
def append(c, argv):
    key = argv[1]
    v = lookup_string(c, key, write=True)
    if v is None:
        c.db.add(key, argv[2])
        n = len(argv[2])
    else:
        if v.__class__ is bytes:
            v = bytearray(v)
            c.db.replace(key, v)
        v += argv[2]
        n = len(v)
    modified(c, key)
    notify(c, NOTIFY_STRING, "append", key)
    return R.integer(n)
