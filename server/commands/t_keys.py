"""The generic keyspace commands (Redis's db.c, expire.c and object.c user side): DEL, UNLINK,
EXISTS, TYPE, RENAME, RENAMENX, COPY, MOVE, KEYS, SCAN, RANDOMKEY, TOUCH, the EXPIRE family,
TTL/PTTL/EXPIRETIME/PEXPIRETIME, PERSIST and OBJECT.

Lookups follow Redis's flags exactly, because they show in INFO keyspace_hits/misses, keymiss
notifications and OBJECT IDLETIME: read lookups count hits and misses; TYPE, EXISTS, the TTL family
and OBJECT do not touch the key (`_peek_read`); write lookups neither count nor notify a miss.

Every write calls `modified` (WATCH, dirty counter) and `notify` with Redis's event names; a key
created by RENAME, COPY or MOVE may wake blocked clients (the Database signals what it creates).  Expire arguments
follow expireGenericCommand: options first, then the integer, then overflow checks on the unit
conversion and the base time; an absolute time already past deletes the key (a "del" event).
OBJECT IDLETIME and FREQ read the access times and LFU counters memory/lru.py keeps in step with
the maxmemory-policy.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from raxdb.protocol import reply as R
from raxdb.server.base.errors import DB_INDEX, NO_SUCH_KEY, NOT_INTEGER, SYNTAX, CommandError, c_str
from raxdb.server.commands.scanargs import parse_cursor, parse_scan_options
from raxdb.server.events import propagate
from raxdb.server.events.keyaccess import (
    NOTIFY_GENERIC,
    NOTIFY_KEY_MISS,
    is_string,
    lookup_read,
    lookup_write,
    modified,
    notify,
    string_encoding,
    type_name,
)
from raxdb.server.memory import lazyfree, lru
from raxdb.server.table.args import (
    INT64_MAX,
    INT64_MIN,
    REPLY_CHUNK,
    known_words,
    maybe_int,
    option_word,
    reply_in_chunks,
)
from raxdb.server.table.registry import command
from raxdb.storage.glob import compile_glob
from raxdb.storage.hashfe import track
from raxdb.storage.keyspace import RawStr

SAME_OBJECT = "ERR source and destination objects are the same"
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
SHARED_INTEGERS = 10000  # Redis shares the objects of the integers 0..9999 (OBJECT REFCOUNT)
SHARED_REFCOUNT = INT_MAX


def _peek_read(c, key: bytes, keymiss: bool = True) -> Any:
    """lookupKeyReadWithFlags(LOOKUP_NOTOUCH): counts the hit or miss, leaves the access time."""
    srv = c.server
    v = c.db.peek(key, srv.now_ms)
    if v is None:
        srv.stat_keyspace_misses += 1
        if keymiss and srv.notify_flags & NOTIFY_KEY_MISS:
            notify(c, NOTIFY_KEY_MISS, "keymiss", key)
    else:
        srv.stat_keyspace_hits += 1
    return v


def _db_index(c, arg: bytes):
    """getIntFromObjectOrReply + selectDb: the Database numbered `arg`."""
    n = maybe_int(arg)
    if n is None:
        raise CommandError(NOT_INTEGER)
    if not INT_MIN <= n <= INT_MAX:
        raise CommandError(f"ERR value is out of range, value must between {INT_MIN} and {INT_MAX}")
    dbs = c.server.dbs
    if n < 0 or n >= len(dbs):
        raise CommandError(DB_INDEX)
    return dbs[n]


def _written_twice(c, db1, key1, db2, key2) -> None:
    """Two keys modified by one change: both signalled, the dirty counter bumped once (as Redis)."""
    modified(c, key1, db1)
    modified(c, key2, db2)
    c.server.dirty -= 1


def _carry_lfu(src_db, src: bytes, dst_db, dst: bytes) -> None:
    """RENAME/MOVE keep the value object, so its LFU counter goes with it."""
    if src_db.freq:
        f = src_db.freq.get(src)
        if f is not None:
            dst_db.freq[dst] = f


# ---- DEL / UNLINK / EXISTS / TYPE / TOUCH --------------------------------------------------------
def _delete_keys(c, argv: list[bytes], lazy: bool) -> bytes:
    db = c.db
    now = c.server.now_ms
    deleted = 0
    for key in argv[1:]:
        if db.expires:
            db.expire_if_needed(key, now)
        if lazy:  # Redis frees a big value in the background and counts it
            lazyfree.freed_async(c.server, db.stored(key))
        if db.delete(key):
            modified(c, key)
            notify(c, NOTIFY_GENERIC, "del", key)
            deleted += 1
    return R.integer(deleted)


def del_(c, argv):
    return _delete_keys(c, argv, c.server.config.values["lazyfree-lazy-user-del"] == "yes")


command("del")(del_)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def unlink(c, argv):
    return _delete_keys(c, argv, True)


command("unlink")(unlink)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def exists(c, argv):
    n = 0
    for key in argv[1:]:
        if _peek_read(c, key) is not None:
            n += 1
    return R.integer(n)


command("exists")(exists)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def type_(c, argv):
    v = _peek_read(c, argv[1])
    return b"+none\r\n" if v is None else b"+%s\r\n" % type_name(v).encode()


command("type")(type_)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def touch(c, argv):
    n = 0
    for key in argv[1:]:
        if lookup_read(c, key) is not None:
            n += 1
    return R.integer(n)


command("touch")(touch)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


# ---- RENAME / RENAMENX / COPY / MOVE -------------------------------------------------------------
def _rename(c, argv: list[bytes], nx: bool) -> bytes:
    src, dst = argv[1], argv[2]
    db = c.db
    v = lookup_write(c, src)
    if v is None:
        raise CommandError(NO_SUCH_KEY)
    if src == dst:
        return R.ZERO if nx else R.OK
    when = db.expires.get(src)
    if lookup_write(c, dst) is not None:
        if nx:
            return R.ZERO
        db.delete(dst)
    db.add(dst, v)
    track(db, dst, v)
    _carry_lfu(db, src, db, dst)
    if when is not None:
        db.set_expire(dst, when)
    db.delete(src)
    _written_twice(c, db, src, db, dst)
    notify(c, NOTIFY_GENERIC, "rename_from", src)
    notify(c, NOTIFY_GENERIC, "rename_to", dst)
    return R.ONE if nx else R.OK


def rename(c, argv):
    return _rename(c, argv, False)


command("rename")(rename)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def renamenx(c, argv):
    return _rename(c, argv, True)


command("renamenx")(renamenx)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def copy_value(v: Any) -> Any:
    """An independent copy of a stored value (bytes are immutable and can be shared)."""
    cls = type(v)
    if cls is RawStr or cls is bytearray:
        return bytearray(v)  # dupStringObject: an exact copy
    if isinstance(v, bytes):  # EmbStr too
        return v
    return v.copy()


def copy(c, argv):
    src, dst = argv[1], argv[2]
    dst_db = c.db
    replace = False
    j, n = 3, len(argv)
    while j < n:
        opt = option_word(argv[j])
        if opt == b"replace":
            replace = True
        elif opt == b"db" and j + 1 < n:
            dst_db = _db_index(c, argv[j + 1])
            j += 1
        else:
            raise CommandError(SYNTAX)
        j += 1
    db = c.db
    if c.server.cluster is not None and dst_db is not db:
        raise CommandError("ERR Copying to another database is not allowed in cluster mode")
    if dst_db is db and src == dst:
        raise CommandError(SAME_OBJECT)
    v = lookup_read(c, src)
    if v is None:
        return R.ZERO
    when = db.expires.get(src)
    if dst_db.get(dst, c.server.now_ms) is not None:
        if not replace:
            return R.ZERO
        dst_db.delete(dst)
    v = copy_value(v)
    dst_db.add(dst, v)
    track(dst_db, dst, v)
    if when is not None:
        dst_db.set_expire(dst, when)
    modified(c, dst, dst_db)
    notify(c, NOTIFY_GENERIC, "copy_to", dst, dst_db.id)
    return R.ONE


command("copy")(copy)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def move(c, argv):
    if c.server.cluster is not None:
        raise CommandError("ERR MOVE is not allowed in cluster mode")
    key = argv[1]
    db = c.db
    dst_db = _db_index(c, argv[2])
    if dst_db is db:
        raise CommandError(SAME_OBJECT)
    v = lookup_write(c, key)
    if v is None:
        return R.ZERO
    when = db.expires.get(key)
    if dst_db.get(key, c.server.now_ms) is not None:
        return R.ZERO
    dst_db.add(key, v)
    track(dst_db, key, v)
    _carry_lfu(db, key, dst_db, key)
    if when is not None:
        dst_db.set_expire(key, when)
    db.delete(key)
    _written_twice(c, db, key, dst_db, key)
    notify(c, NOTIFY_GENERIC, "move_from", key, db.id)
    notify(c, NOTIFY_GENERIC, "move_to", key, dst_db.id)
    return R.ONE


command("move")(move)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


# ---- KEYS / SCAN / RANDOMKEY ---------------------------------------------------------------------
def _unexpired(db, keys: list[bytes], now: int) -> list[bytes]:
    expires = db.expires
    if not expires:
        return keys
    out = []
    for k in keys:
        when = expires.get(k)
        if when is None or when > now:
            out.append(k)
    return out


def _key_chunks(db, every: list[bytes], match, now: int) -> Iterator[tuple[int, bytes]]:
    """KEYS's reply a chunk of keys at a time, for reply_in_chunks: each chunk's count and body.
    Module level, not an inner generator: a cpdef handler takes no closure."""
    for i in range(0, len(every), REPLY_CHUNK):
        part = every[i:i + REPLY_CHUNK]
        found = _unexpired(db, part if match is None else [k for k in part if match(k)], now)
        yield len(found), R.bulks_body(found)


def keys(c, argv):
    pattern = argv[1]
    db = c.db
    now = c.server.now_ms
    match = None if pattern == b"*" else compile_glob(pattern)
    if c.obuf_watch and len(db) > REPLY_CHUNK:  # stopped at the output limit, as Redis's loop
        return reply_in_chunks(c, _key_chunks(db, db.key_list(), match, now))
    found = db.key_list() if match is None else [k for k in db.key_list() if match(k)]
    # Redis's KEYS skips expired keys without deleting them.
    return R.bulk_array(_unexpired(db, found, now))


command("keys")(keys)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def scan(c, argv):
    cursor = parse_cursor(argv[1])
    opts = parse_scan_options(argv, 2, allow_type=True)
    db = c.db
    now = c.server.now_ms
    cursor, found = db.scan(cursor, opts.count)
    if opts.match is not None:
        match = compile_glob(opts.match)
        found = [k for k in found if match(k)]
    if opts.type is not None:
        wanted = option_word(opts.type)
        kept = []
        for k in found:
            v = _peek_read(c, k)
            if v is not None and type_name(v).encode() == wanted:
                kept.append(k)
        found = kept
    elif db.expires:
        found = [k for k in found if not db.expire_if_needed(k, now)]
    return b"*2\r\n" + R.bulk(b"%d" % cursor) + R.bulk_array(found)


command("scan")(scan)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def randomkey(c, argv):
    db = c.db
    now = c.server.now_ms
    # While a CLIENT PAUSE holds expiry, keys past their deadline stay: if every key has a TTL
    # they may all be dead, so after 100 tries the key drawn is returned anyway (Redis 7.2's
    # guard; 7.0 would loop forever).
    tries = 100 if db.expire_paused and len(db.expires) == len(db) else -1
    while True:
        key = db.random_key()
        if key is None:
            return c.enc.null
        tries -= 1
        if tries == 0 or not (db.expires and db.expire_if_needed(key, now)):
            return R.bulk(key)


command("randomkey")(randomkey)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


# ---- EXPIRE family -------------------------------------------------------------------------------
_NX, _XX, _GT, _LT = 1, 2, 4, 8
_EXPIRE_FLAGS = {b"nx": _NX, b"xx": _XX, b"gt": _GT, b"lt": _LT}
known_words(*_EXPIRE_FLAGS)
_SECONDS_MIN = -(-INT64_MIN // 1000)  # LLONG_MIN / 1000 with C's truncation toward zero
_SECONDS_MAX = INT64_MAX // 1000


def _expire_flags(argv: list[bytes]) -> int:
    flags = 0
    for opt in argv[3:]:
        bit = _EXPIRE_FLAGS.get(option_word(opt))
        if bit is None:
            raise CommandError(b"ERR Unsupported option " + c_str(opt))  # CommandError turns CR/LF to spaces
        flags |= bit
    if flags & _NX and flags & (_XX | _GT | _LT):
        raise CommandError("ERR NX and XX, GT or LT options at the same time are not compatible")
    if flags & _GT and flags & _LT:
        raise CommandError("ERR GT and LT options at the same time are not compatible")
    return flags


def _expire(c, argv: list[bytes], relative: bool, seconds: bool, name: str) -> bytes:
    key = argv[1]
    flags = _expire_flags(argv) if len(argv) > 3 else 0
    when = maybe_int(argv[2])
    if when is None:
        raise CommandError(NOT_INTEGER)
    if seconds:
        if when > _SECONDS_MAX or when < _SECONDS_MIN:
            raise CommandError(f"ERR invalid expire time in '{name}' command")
        when *= 1000
    now = c.server.now_ms
    base = now if relative else 0
    if when > INT64_MAX - base:
        raise CommandError(f"ERR invalid expire time in '{name}' command")
    when += base
    if lookup_write(c, key) is None:
        return R.ZERO
    db = c.db
    if flags:
        current = db.expires.get(key)
        if flags & _NX and current is not None:
            return R.ZERO
        if flags & _XX and current is None:
            return R.ZERO
        if flags & _GT and (current is None or when <= current):
            return R.ZERO
        if flags & _LT and current is not None and when >= current:
            return R.ZERO
    if db.already_expired(when, now):
        db.delete(key)
        modified(c, key)
        notify(c, NOTIFY_GENERIC, "del", key)
        propagate.rewrite_expire_deletion(c, key)
        return R.ONE
    db.set_expire(key, when)
    modified(c, key)
    notify(c, NOTIFY_GENERIC, "expire", key)
    if name != "pexpireat":  # PEXPIREAT is already its own absolute form
        propagate.rewrite_pexpireat(c, argv, when)
    return R.ONE


def expire(c, argv):
    return _expire(c, argv, True, True, "expire")


command("expire")(expire)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def pexpire(c, argv):
    return _expire(c, argv, True, False, "pexpire")


command("pexpire")(pexpire)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def expireat(c, argv):
    return _expire(c, argv, False, True, "expireat")


command("expireat")(expireat)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def pexpireat(c, argv):
    return _expire(c, argv, False, False, "pexpireat")


command("pexpireat")(pexpireat)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def _ttl(c, argv: list[bytes], ms: bool, absolute: bool) -> bytes:
    key = argv[1]
    if _peek_read(c, key) is None:
        return R.integer(-2)
    when = c.db.expires.get(key)
    if when is None:
        return R.integer(-1)
    ttl = when if absolute else when - c.server.now_ms
    if ttl < 0:
        ttl = 0
    return R.integer(ttl if ms else (ttl + 500) // 1000)


def ttl(c, argv):
    return _ttl(c, argv, False, False)


command("ttl")(ttl)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def pttl(c, argv):
    return _ttl(c, argv, True, False)


command("pttl")(pttl)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def expiretime(c, argv):
    return _ttl(c, argv, False, True)


command("expiretime")(expiretime)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def pexpiretime(c, argv):
    return _ttl(c, argv, True, True)


command("pexpiretime")(pexpiretime)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def persist(c, argv):
    key = argv[1]
    if lookup_write(c, key) is not None and c.db.persist(key):
        modified(c, key)
        notify(c, NOTIFY_GENERIC, "persist", key)
        return R.ONE
    return R.ZERO


command("persist")(persist)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


# ---- OBJECT --------------------------------------------------------------------------------------
_NO_SHARED_INT_POLICIES = ("allkeys-lru", "volatile-lru", "allkeys-lfu", "volatile-lfu")
_ADJUST = ("Please note that when switching between policies at runtime LRU and LFU data will take some "
           "time to adjust.")
_HELP = R.array([R.status(line) for line in (
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
)])


def object_encoding(v: Any) -> str:
    return string_encoding(v) if is_string(v) else v.encoding()


def _policy(c) -> str:
    return c.server.config.values.get("maxmemory-policy", "noeviction")


def _lfu_selected(c) -> bool:
    lfu = _policy(c) in lru.LFU_POLICIES
    lru.attach(c.server)
    return lfu


def object_value(c, key: bytes) -> Any:
    """objectCommandLookup: no touch, no keymiss event."""
    return _peek_read(c, key, keymiss=False)


def object_help(c, argv):
    return _HELP


command("object|help")(object_help)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def object_encoding_cmd(c, argv):
    v = object_value(c, argv[2])
    if v is None:
        return c.enc.null
    return R.bulk_str(object_encoding(v))


command("object|encoding")(object_encoding_cmd)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def object_refcount(c, argv):
    v = object_value(c, argv[2])
    if v is None:
        return c.enc.null
    if type(v) is bytes and len(v) <= 20:
        n = maybe_int(v)
        if (n is not None and 0 <= n < SHARED_INTEGERS
                and (c.server.config.values.get("maxmemory", "0") == "0"
                     or _policy(c) not in _NO_SHARED_INT_POLICIES)):
            return R.integer(SHARED_REFCOUNT)
    return R.ONE


command("object|refcount")(object_refcount)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def object_idletime(c, argv):
    key = argv[2]
    v = object_value(c, key)
    if v is None:
        return c.enc.null
    if _lfu_selected(c):
        raise CommandError("ERR An LFU maxmemory policy is selected, idle time not tracked. " + _ADJUST)
    # Whole seconds, like Redis's LRU clock (whose readings are themselves up to a cron tick old).
    return R.integer(c.db.idle_ms(key, c.server.now_ms) // 1000)


command("object|idletime")(object_idletime)  # not a decorator: compiled, a cpdef function (t_keys.pxd)


def object_freq(c, argv):
    key = argv[2]
    v = object_value(c, key)
    if v is None:
        return c.enc.null
    if not _lfu_selected(c):
        raise CommandError("ERR An LFU maxmemory policy is not selected, access frequency not tracked. "
                           + _ADJUST)
    return R.integer(c.db.lfu_counter(key, c.server.now_ms))


command("object|freq")(object_freq)  # not a decorator: compiled, a cpdef function (t_keys.pxd)
