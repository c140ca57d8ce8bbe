"""Hash commands (Redis's t_hash.c) over `storage.hashtype.Hash`.

Encoding thresholds (hash-max-listpack-entries / hash-max-listpack-value) are read from the config
at every write that could cross them, so CONFIG SET applies to the next write, as in Redis.  A
write checks lengths before inserting (hashTypeTryConversion) and the entry count after; a hash
never converts back to a listpack.

Argument checks run in Redis's order, because that decides which error a client sees (HINCRBY
parses its increment before looking the key up; HSCAN parses options only once the key exists).
The RESP3 shapes follow Redis: HGETALL is a map, HRANDFIELD ... WITHVALUES is an array of pairs.

The handlers reach a hash only through Hash's methods (a small hash is listpack bytes, see
storage/hashtype.py).  The module is compiled (setup.py's HOT_MODULES): HSET / HGET / HMGET /
HGETALL / HINCRBY on many small hashes are what job queues (BullMQ, RQ, Celery) send.
"""

from __future__ import annotations

from raxdb.protocol import reply as R
from raxdb.server.base.errors import NOT_FLOAT, OVERFLOW, SYNTAX, WRONGTYPE, CommandError, wrong_arity
from raxdb.server.commands import longdouble
from raxdb.server.commands.scanargs import parse_cursor, parse_scan_options
from raxdb.server.events import hashexpire, propagate
from raxdb.server.events.keyaccess import (
    NOTIFY_GENERIC,
    NOTIFY_HASH,
    lookup_read,
    modified,
    notify,
)
from raxdb.server.table.args import (
    INT64_MAX,
    INT64_MIN,
    maybe_int,
    option_word,
    random_picks_reply,
    to_int,
)
from raxdb.server.table.registry import command
from raxdb.storage.glob import glob_match
from raxdb.storage.hashfe import HashEx
from raxdb.storage.hashtype import Hash, hash_get, hash_set_pairs, new_hash

_NO_LIMITS = (0, 0)  # for a hashtable-encoded hash: set_pairs checks the limits only for a listpack


def _limits(srv) -> tuple[int, int]:
    """(hash-max-listpack-entries, hash-max-listpack-value) as the config has them now."""
    return srv.config.hash_max_listpack


def _with_deadlines(c, key: bytes, v) -> Hash | None:
    """A value that is not a plain Hash: a hash with field deadlines, its due fields deleted first
    (None when that deleted the key), or WRONGTYPE.  Off the plain hashes' path: they never get
    here."""
    if type(v) is not HashEx:
        raise CommandError(WRONGTYPE)
    return hashexpire.lazy(c.server, c.db, key, v)


def _hash_for_read(c, key: bytes) -> Hash | None:
    v = lookup_read(c, key)
    if v is not None and type(v) is not Hash:
        return _with_deadlines(c, key, v)
    return v


def _hash_for_write(c, key: bytes) -> Hash | None:
    db = c.db
    srv = c.server
    v = db.get(key, srv.now_ms)
    if v is not None and type(v) is not Hash:
        return _with_deadlines(c, key, v)
    return v


def _hash_for_create(c, key: bytes) -> Hash:
    """lookup_or_create for a hash: the hash at `key` (its due fields gone), else a new one."""
    h = _hash_for_write(c, key)
    if h is None:
        h = new_hash()
        c.db.add(key, h, c.server.now_ms)
    return h


def _written(c, key: bytes, event: str, dirty: int = 1) -> None:
    srv = c.server
    db = c.db
    if db.signals or srv.notify_flags:
        modified(c, key)
        notify(c, NOTIFY_HASH, event, key)
        srv.dirty += dirty - 1
    else:
        srv.dirty += dirty


def _set_fields(c, h: Hash, argv: list[bytes], start: int) -> int:
    """Set the field/value pairs argv[start:] under the current thresholds; new-field count."""
    max_entries, max_value = _limits(c.server)
    return hash_set_pairs(h, argv, start, max_entries, max_value)


# ---- writes ---------------------------------------------------------------------------------------
def hset(c, argv, name: str = "hset"):
    """HSET, and HMSET's body (which replies +OK instead): the reply is the number of new fields.
    One function for both, so HSET, the benchmarked hash write, costs one Python call (and
    _written is inlined for the same reason)."""
    n = len(argv)
    if n % 2:
        raise wrong_arity(name)
    key = argv[1]
    db = c.db
    srv = c.server
    now = srv.now_ms
    v = db.get(key, now)  # lookup_or_create, inline
    if v is None:
        h = new_hash()
        db.add(key, h, now)
    elif type(v) is not Hash:
        return _hset_deadlines(c, argv, _with_deadlines(c, key, v))
    else:
        h = v
    # the limits only matter while the hash is a listpack (a hashtable never converts back)
    max_entries, max_value = _limits(srv) if h.lp is not None else _NO_LIMITS
    created = hash_set_pairs(h, argv, 2, max_entries, max_value)
    if db.signals or srv.notify_flags:
        modified(c, key)
        notify(c, NOTIFY_HASH, "hset", key)
        srv.dirty += (n - 2) // 2 - 1
    else:
        srv.dirty += (n - 2) // 2
    return R.integer(created)


command("hset")(hset)  # not a decorator: compiled, a cpdef function (t_hash.pxd)


def _hset_deadlines(c, argv, h):
    """HSET's write of a hash with field deadlines (`h`, None when its last field just expired):
    a field set loses its deadline, as in Redis 7.4."""
    key = argv[1]
    if h is None:
        h = new_hash()
        c.db.add(key, h, c.server.now_ms)
        created = _set_fields(c, h, argv, 2)
    else:
        max_entries, max_value = _limits(c.server)
        created = h.set_pairs(argv, 2, max_entries, max_value)
    _written(c, key, "hset", (len(argv) - 2) // 2)
    return R.integer(created)


def hmset(c, argv):
    hset(c, argv, "hmset")
    return R.OK


command("hmset")(hmset)  # not a decorator: compiled, a cpdef function (t_hash.pxd)


def hsetnx(c, argv):
    key = argv[1]
    h = _hash_for_create(c, key)
    if argv[2] in h:
        return R.ZERO
    _set_fields(c, h, argv, 2)
    _written(c, key, "hset")
    return R.ONE


command("hsetnx")(hsetnx)  # not a decorator: compiled, a cpdef function (t_hash.pxd)


def _set_one(c, h: Hash, field: bytes, value: bytes) -> None:
    _set_fields(c, h, [field, value], 0)


def hdel(c, argv):
    key = argv[1]
    h = _hash_for_write(c, key)
    if h is None:
        return R.ZERO
    deleted = 0
    emptied = False
    for i in range(2, len(argv)):
        if h.delete(argv[i]):
            deleted += 1
            if not len(h):
                c.db.delete(key)
                emptied = True
                break
    if deleted:
        modified(c, key)
        notify(c, NOTIFY_HASH, "hdel", key)
        if emptied:
            notify(c, NOTIFY_GENERIC, "del", key)
        c.server.dirty += deleted - 1
    return R.integer(deleted)


command("hdel")(hdel)  # not a decorator: compiled, a cpdef function (t_hash.pxd)


def hincrby(c, argv):
    incr = to_int(argv[3])
    key, field = argv[1], argv[2]
    h = _hash_for_create(c, key)
    cur = hash_get(h, field)
    if cur is None:
        value = 0
    else:
        value = maybe_int(cur)
        if value is None:
            raise CommandError("ERR hash value is not an integer")
    new = value + incr
    if new > INT64_MAX or new < INT64_MIN:
        raise CommandError(OVERFLOW)
    _set_one(c, h, field, b"%d" % new)
    _written(c, key, "hincrby")
    return R.integer(new)


command("hincrby")(hincrby)  # not a decorator: compiled, a cpdef function (t_hash.pxd)


def hincrbyfloat(c, argv):
    incr = longdouble.parse(argv[3])
    if incr is None:
        raise CommandError(NOT_FLOAT)
    if incr == longdouble.INF or incr == longdouble.NEG_INF:
        raise CommandError("ERR value is NaN or Infinity")
    key, field = argv[1], argv[2]
    h = _hash_for_create(c, key)
    cur = hash_get(h, field)
    if cur is None:
        value = (0, 0)
    else:
        value = longdouble.parse(cur)
        if value is None:
            raise CommandError("ERR hash value is not a float")
    total = longdouble.add(value, incr)
    if total is None:
        raise CommandError("ERR increment would produce NaN or Infinity")
    out = longdouble.format_human(total)
    _set_one(c, h, field, out)
    _written(c, key, "hincrbyfloat")
    if c.server.also_propagate is not None:  # the result, so a replay rounds nothing differently
        propagate.rewrite(c, [b"HSET", key, field, bytes(out)])
    return R.bulk(out)


command("hincrbyfloat")(hincrbyfloat)  # not a decorator: compiled, a cpdef function (t_hash.pxd)


# ---- reads ----------------------------------------------------------------------------------------
def hget(c, argv):
    h = _hash_for_read(c, argv[1])
    if h is None:
        return c.enc.null
    v = hash_get(h, argv[2])
    return c.enc.null if v is None else R.value(v)


command("hget")(hget)  # not a decorator: compiled, a cpdef function (t_hash.pxd)


def hmget(c, argv):
    h = _hash_for_read(c, argv[1])
    null = c.enc.null
    if h is None:
        return R.array([null] * (len(argv) - 2))
    parts = []
    for i in range(2, len(argv)):
        v = hash_get(h, argv[i])
        parts.append(null if v is None else R.value(v))
    return R.value_array(parts)


command("hmget")(hmget)  # not a decorator: compiled, a cpdef function (t_hash.pxd)


def _as_map(c, flat_array: bytes, pairs: int) -> bytes:
    """Re-head a flat array of 2n bulks as a RESP3 map of n pairs (unchanged in RESP2)."""
    if c.resp == 2:
        return flat_array
    return b"%%%d\r\n" % pairs + flat_array[flat_array.index(b"\n") + 1:]


def hgetall(c, argv):
    h = _hash_for_read(c, argv[1])
    if h is None:
        return c.enc.map([])
    got = h.flat_bulks()
    if got is not None:  # a listpack: its entries written as the reply's bulks
        n, body = got
        return _as_map(c, R.array_header(n) + body, n >> 1)
    flat = h.flat()
    return R.values(flat) if c.resp == 2 else R.values(flat, 37, len(flat) >> 1)  # '%': a RESP3 map


command("hgetall")(hgetall)  # not a decorator: compiled, a cpdef function (t_hash.pxd)


def hkeys(c, argv):
    h = _hash_for_read(c, argv[1])
    return R.EMPTY_ARRAY if h is None else R.values(h.fields())


command("hkeys")(hkeys)  # not a decorator: compiled, a cpdef function (t_hash.pxd)


def hvals(c, argv):
    h = _hash_for_read(c, argv[1])
    return R.EMPTY_ARRAY if h is None else R.values(h.values())


command("hvals")(hvals)  # not a decorator: compiled, a cpdef function (t_hash.pxd)


def hlen(c, argv):
    h = _hash_for_read(c, argv[1])
    return R.ZERO if h is None else R.integer(len(h))


command("hlen")(hlen)  # not a decorator: compiled, a cpdef function (t_hash.pxd)


def hexists(c, argv):
    h = _hash_for_read(c, argv[1])
    return R.ONE if h is not None and argv[2] in h else R.ZERO


command("hexists")(hexists)  # not a decorator: compiled, a cpdef function (t_hash.pxd)


def hstrlen(c, argv):
    h = _hash_for_read(c, argv[1])
    v = None if h is None else hash_get(h, argv[2])
    return R.ZERO if v is None else R.integer(len(v))


command("hstrlen")(hstrlen)  # not a decorator: compiled, a cpdef function (t_hash.pxd)


# ---- random fields --------------------------------------------------------------------------------
def _random_fields_reply(picked: list[bytes], pairs3: bool) -> bytes:
    """HRANDFIELD's reply to what was picked: fields, or fields with values (field, value, ...),
    flat, or as [field, value] pairs when `pairs3` (WITHVALUES in RESP3).  Module level, not an
    inner function: a cpdef handler takes no closure (random_picks_reply passes it `pairs3`)."""
    if not pairs3:
        return R.bulk_strings(picked)
    parts = []
    for i in range(0, len(picked), 2):
        f = picked[i]
        v = picked[i + 1]
        parts.append(b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(f), f, len(v), v))
    return b"*%d\r\n%s" % (len(parts), b"".join(parts))


def hrandfield(c, argv):
    n = len(argv)
    if n == 2:
        h = _hash_for_read(c, argv[1])
        if h is None:
            return c.enc.null
        f = h.random_field()
        return R.value(f)
    count = to_int(argv[2])
    if count < -INT64_MAX:
        raise CommandError(f"ERR value is out of range, value must between {-INT64_MAX} and {INT64_MAX}")
    withvalues = False
    if n > 4 or (n == 4 and option_word(argv[3]) != b"withvalues"):
        raise CommandError(SYNTAX)
    if n == 4:
        withvalues = True
        if count < -(INT64_MAX // 2) or count > INT64_MAX // 2:
            raise CommandError("ERR value is out of range")
    h = _hash_for_read(c, argv[1])
    if h is None or count == 0:
        return R.EMPTY_ARRAY
    pairs3 = withvalues and c.resp > 2
    if count < 0:
        return random_picks_reply(c, count, 2 if withvalues and not pairs3 else 1,
                                  h.random_pairs if withvalues else h.random_fields,
                                  _random_fields_reply, pairs3)
    if count >= len(h):
        picked = h.flat() if withvalues else h.fields()
    elif withvalues:
        picked = h.sample_pairs(count)
    else:
        picked = h.sample_fields(count)
    return _random_fields_reply(picked, pairs3)


command("hrandfield")(hrandfield)  # not a decorator: compiled, a cpdef function (t_hash.pxd)


# ---- HSCAN ----------------------------------------------------------------------------------------
_EMPTY_SCAN = b"*2\r\n$1\r\n0\r\n*0\r\n"


def hscan(c, argv):
    cursor = parse_cursor(argv[2])
    h = _hash_for_read(c, argv[1])
    if h is None:
        return _EMPTY_SCAN
    opts = parse_scan_options(argv, 3)
    nxt, flat = h.scan(cursor, opts.count, True)  # field, value, ...: each pair read once
    pat = opts.match
    if pat is not None:
        kept: list[bytes] = []
        for i in range(0, len(flat), 2):
            if glob_match(pat, flat[i]):
                kept.append(flat[i])
                kept.append(flat[i + 1])
        flat = kept
    cur = b"%d" % nxt
    return b"*2\r\n$%d\r\n%s\r\n%s" % (len(cur), cur, R.bulk_strings(flat))


command("hscan")(hscan)  # not a decorator: compiled, a cpdef function (t_hash.pxd)
