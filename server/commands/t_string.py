"""String commands (Redis's t_string.c): GET/SET and their variants, counters, ranges,
INCRBYFLOAT and LCS.

Values are `bytes`, or `bytearray` once modified in place (APPEND, SETRANGE, and the bitmap
commands in t_bitops): that is Redis's raw encoding, which OBJECT ENCODING infers from the type.
Commands that store an argument store its bytes as they are (Redis's int/embstr/raw follow from the
content).  A bytearray is never shared between two keys.

Hot paths (GET, SET without options, the INCR family, MGET, MSET) are written out flat: no option
parsing, and the WATCH / keyspace-notification bookkeeping sits behind one cheap test that is false
unless somebody WATCHes or notifications are on.

Redis compares option words with strcasecmp on C strings, so a NUL byte ends the word ("NX\\0junk" is
NX); `option_word` reproduces that.  Expire arguments follow getExpireMillisecondsOrReply:
integers only, > 0, and no overflow once converted to an absolute time in ms.  INCRBYFLOAT is exact
x86-64 long double arithmetic (see longdouble.py).
"""

from __future__ import annotations

from raxdb.protocol import reply as R
from raxdb.server.base.errors import NOT_FLOAT, NOT_INTEGER, OVERFLOW, SYNTAX, WRONGTYPE, CommandError
from raxdb.server.base.numparse import canonical_digits_value
from raxdb.server.commands import longdouble
from raxdb.server.events import propagate
from raxdb.server.events.keyaccess import (
    NOTIFY_GENERIC,
    NOTIFY_KEY_MISS,
    NOTIFY_STRING,
    is_string,
    lookup_read,
    lookup_string,
    lookup_write,
    modified,
    notify,
    set_key,
    writable_string,
    written,
)
from raxdb.server.table.args import INT64_MAX, INT64_MIN, known_words, maybe_int, option_word, to_int
from raxdb.server.table.registry import command
from raxdb.storage.keyspace import EmbStr
from raxdb.storage.lcs import lcs_length, lcs_walk

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

if not cython.compiled:  # compiled, t_string.pxd cimports them from reply.pxd (C calls)
    from raxdb.protocol.reply import decimal, integer

_OK = R.OK
_bulk = R.bulk
_value = R.value  # a whole reply of a stored value: a big one in pieces, uncopied
_BULK_HEADERS = R.bulk_headers()  # made here if not yet (reply.py): GET reads it inline
_join = b"".join
_EMPTY = R.EMPTY_BULK
STRING_TOO_LONG = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"


def check_string_length(c, total: int) -> None:
    """Redis's checkStringLength: a string may not grow past proto-max-bulk-len."""
    if total > c.server.config.proto_max_bulk_len:
        raise CommandError(STRING_TOO_LONG)


def _delete(c, key: bytes) -> None:
    """Delete an existing key as a command does it: WATCH, dirty, `del` notification."""
    c.db.delete(key)
    modified(c, key)
    notify(c, NOTIFY_GENERIC, "del", key)


# ---- GET / SET ----------------------------------------------------------------------------------
def get(c, argv):
    srv = c.server
    db = c.db
    v = db.get(argv[1], srv.now_ms)
    if v is None:
        srv.stat_keyspace_misses += 1
        if srv.notify_flags & NOTIFY_KEY_MISS:
            notify(c, NOTIFY_KEY_MISS, "keymiss", argv[1])
        return c.enc.null
    srv.stat_keyspace_hits += 1
    cls = type(v)
    if cls is bytes or cls is bytearray:
        n = len(v)  # R.bulk inlined: the call is a twentieth of GET's cost
        return _join((_BULK_HEADERS[n], v, b"\r\n")) if n < 4096 else _value(v)
    if is_string(v):  # EmbStr
        return _bulk(v)
    raise CommandError(WRONGTYPE)


command("get")(get)  # not a decorator: compiled, a cpdef function (t_string.pxd)


def expire_ms(c, arg: bytes, unit_seconds: bool, relative: bool, cmdname: str) -> int:
    """An absolute expire time in ms from an EX/PX/EXAT/PXAT-style argument.  Compiled, in C
    integers (t_string.pxd): the bounds keep every step within 64 bits."""
    v = maybe_int(arg)
    if v is None:
        raise CommandError(NOT_INTEGER)
    n = v
    if n <= 0 or (unit_seconds and n > _MAX_SECONDS):
        raise CommandError(f"ERR invalid expire time in '{cmdname}' command")
    if unit_seconds:
        n *= 1000
    if relative:
        now = c.server.now_ms
        if n > _MAX_MS - now:
            raise CommandError(f"ERR invalid expire time in '{cmdname}' command")
        n += now
    return n


_MAX_MS = INT64_MAX  # (compiled, C constants: t_string.pxd)
_MAX_SECONDS = INT64_MAX // 1000  # the largest EX / EXAT whose ms fit in 64 bits
_NX, _XX, _GET, _KEEPTTL, _EX, _PX, _EXAT, _PXAT, _PERSIST = 1, 2, 4, 8, 16, 32, 64, 128, 256
_ANY_EXPIRE = _EX | _PX | _EXAT | _PXAT
_EXPIRE_BITS = {b"ex": _EX, b"px": _PX, b"exat": _EXAT, b"pxat": _PXAT}
known_words(b"nx", b"xx", b"get", b"keepttl", b"persist", *_EXPIRE_BITS)


def parse_string_options(argv: list[bytes], start: int, getex: bool = False) -> tuple[int, bytes | None]:
    """SET's (or, with `getex`, GETEX's) option grammar: Redis's parseExtendedStringArgumentsOrReply.

    Repeating an option is accepted (EX 1 EX 2: the last wins); conflicting ones are a syntax error.
    """
    flags = 0
    expire: bytes | None = None
    j = start
    n = len(argv)
    while j < n:
        opt = option_word(argv[j])
        bit = _EXPIRE_BITS.get(opt)
        if bit is not None:
            if j + 1 >= n or flags & (_KEEPTTL | _PERSIST | (_ANY_EXPIRE & ~bit)):
                raise CommandError(SYNTAX)
            flags |= bit
            j += 1
            expire = argv[j]
        elif getex:
            if opt == b"persist" and not flags & _ANY_EXPIRE:
                flags |= _PERSIST
            else:
                raise CommandError(SYNTAX)
        elif opt == b"nx" and not flags & _XX:
            flags |= _NX
        elif opt == b"xx" and not flags & _NX:
            flags |= _XX
        elif opt == b"get":
            flags |= _GET
        elif opt == b"keepttl" and not flags & _ANY_EXPIRE:
            flags |= _KEEPTTL
        else:
            raise CommandError(SYNTAX)
        j += 1
    return flags, expire


def _expire_of(c, flags: int, expire: bytes, cmdname: str) -> int:
    return expire_ms(c, expire, (flags & (_EX | _EXAT)) != 0, (flags & (_EX | _PX)) != 0, cmdname)


def set_(c, argv):
    key, value = argv[1], argv[2]
    db = c.db
    srv = c.server
    if len(argv) == 3:
        if db.nexpires or db.blocking or db.lfu:
            db.get(key, srv.now_ms)  # a stale key expires first (stats, event), as lookupKeyWrite
        db.set(key, value)
        written(c, key, NOTIFY_STRING, "set")
        return _OK
    flags, expire = parse_string_options(argv, 3)
    when = -1 if expire is None else _expire_of(c, flags, expire, "set")
    old_reply = None
    if flags & _GET:
        old = lookup_string(c, key)
        old_reply = c.enc.null if old is None else R.bulk(old)
    found = lookup_write(c, key) is not None
    if (flags & _NX and found) or (flags & _XX and not found):
        return old_reply if old_reply is not None else c.enc.null
    db.set(key, value, bool(flags & _KEEPTTL), when)  # the deadline in the same probe
    if when >= 0:
        if db.signals or srv.notify_flags:
            modified(c, key)
            notify(c, NOTIFY_STRING, "set", key)
            notify(c, NOTIFY_GENERIC, "expire", key)
        else:
            srv.dirty += 1
        if srv.also_propagate is not None:
            propagate.rewrite_set_pxat(c, key, value, when)
    else:
        written(c, key, NOTIFY_STRING, "set")
        if flags & _GET and srv.also_propagate is not None:
            # replayed without its GETs: every argument from 3 on that reads "get" in any case up
            # to a NUL, as Redis's C-string test skips them
            propagate.rewrite(c, argv[:3] + [a for a in argv[3:] if option_word(a) != b"get"])
    return old_reply if old_reply is not None else _OK


command("set")(set_)  # not a decorator: compiled, a cpdef function (t_string.pxd)


def setnx(c, argv):
    key = argv[1]
    if lookup_write(c, key) is not None:
        return R.ZERO
    c.db.add(key, argv[2])
    modified(c, key)
    notify(c, NOTIFY_STRING, "set", key)
    return R.ONE


command("setnx")(setnx)  # not a decorator: compiled, a cpdef function (t_string.pxd)


def _setex(c, argv, unit_seconds: bool, name: str) -> bytes:
    when = expire_ms(c, argv[2], unit_seconds, True, name)
    key = argv[1]
    lookup_write(c, key)
    c.db.set(key, argv[3], False, when)
    modified(c, key)
    notify(c, NOTIFY_STRING, "set", key)
    notify(c, NOTIFY_GENERIC, "expire", key)
    propagate.rewrite_set_pxat(c, key, argv[3], when)
    return _OK


def setex(c, argv):
    return _setex(c, argv, True, "setex")


command("setex")(setex)  # not a decorator: compiled, a cpdef function (t_string.pxd)


def psetex(c, argv):
    return _setex(c, argv, False, "psetex")


command("psetex")(psetex)  # not a decorator: compiled, a cpdef function (t_string.pxd)


def getset(c, argv):
    key = argv[1]
    old = lookup_string(c, key)
    set_key(c, key, argv[2])  # setKey's own lookup too, which an LFU counter sees as a second access
    modified(c, key)
    notify(c, NOTIFY_STRING, "set", key)
    if c.server.also_propagate is not None:
        propagate.rewrite(c, [b"SET", *argv[1:]])
    return c.enc.null if old is None else _value(old)


command("getset")(getset)  # not a decorator: compiled, a cpdef function (t_string.pxd)


def getex(c, argv):
    flags, expire = parse_string_options(argv, 2, getex=True)
    key = argv[1]
    v = lookup_string(c, key)
    if v is None:
        return c.enc.null
    when = None if expire is None else _expire_of(c, flags, expire, "getex")
    reply = _value(v)
    db = c.db
    if when is not None:
        if db.already_expired(when, c.server.now_ms):  # EXAT / PXAT in the past: the key goes now
            _delete(c, key)
            propagate.rewrite_expire_deletion(c, key)
        else:
            db.set_expire(key, when)
            modified(c, key)
            notify(c, NOTIFY_GENERIC, "expire", key)
            if c.server.also_propagate is not None:
                propagate.rewrite(c, [b"PEXPIREAT", key, b"%d" % when])
    elif flags & _PERSIST and db.persist(key):
        modified(c, key)
        notify(c, NOTIFY_GENERIC, "persist", key)
        if c.server.also_propagate is not None:
            propagate.rewrite(c, [b"PERSIST", key])
    return reply


command("getex")(getex)  # not a decorator: compiled, a cpdef function (t_string.pxd)


def getdel(c, argv):
    key = argv[1]
    v = lookup_string(c, key)
    if v is None:
        return c.enc.null
    _delete(c, key)
    propagate.rewrite_deletion(c, key)
    return _value(v)


command("getdel")(getdel)  # not a decorator: compiled, a cpdef function (t_string.pxd)


def mget(c, argv):
    db, srv = c.db, c.server
    now = srv.now_ms
    null = c.enc.null
    parts = []
    hits = 0
    for key in argv[1:]:
        v = db.get(key, now)
        if v is None:
            srv.stat_keyspace_misses += 1
            if srv.notify_flags & NOTIFY_KEY_MISS:
                notify(c, NOTIFY_KEY_MISS, "keymiss", key)
            parts.append(null)
            continue
        hits += 1
        if is_string(v):
            parts.append(_value(v))
        else:
            parts.append(null)
    srv.stat_keyspace_hits += hits
    return R.value_array(parts)


command("mget")(mget)  # not a decorator: compiled, a cpdef function (t_string.pxd)


def _mset(c, argv) -> None:
    db = c.db
    srv = c.server
    dset = db.set
    if db.signals or srv.notify_flags or db.nexpires or db.lfu:  # LFU: each key looked up, as setKey does
        for i in range(1, len(argv), 2):
            key = argv[i]
            lookup_write(c, key)
            dset(key, argv[i + 1])
            modified(c, key)
            notify(c, NOTIFY_STRING, "set", key)
    else:
        db.set_pairs(argv, 1)
        srv.dirty += len(argv) >> 1


def mset(c, argv):
    if not len(argv) & 1:
        raise CommandError("ERR wrong number of arguments for 'mset' command")
    _mset(c, argv)
    return _OK


command("mset")(mset)  # not a decorator: compiled, a cpdef function (t_string.pxd)


def msetnx(c, argv):
    if not len(argv) & 1:
        raise CommandError("ERR wrong number of arguments for 'msetnx' command")
    for i in range(1, len(argv), 2):
        if lookup_write(c, argv[i]) is not None:
            return R.ZERO
    _mset(c, argv)
    return R.ONE


command("msetnx")(msetnx)  # not a decorator: compiled, a cpdef function (t_string.pxd)


# ---- counters -----------------------------------------------------------------------------------
def _int_value(v: bytes | bytearray) -> int:
    """A stored value as Redis's string2ll reads it.  string2ll accepts exactly the canonical
    decimal spellings of int64 values, so parse and compare with the re-spelling."""
    n = len(v)
    if 0 < n <= 18 and v.isdigit() and (v[0] != 48 or n == 1):
        return int(v)  # the common case: a canonical non-negative number that fits
    if n <= 20:
        try:
            n = int(v)
        except ValueError:
            pass
        else:
            if b"%d" % n == v and INT64_MIN <= n <= INT64_MAX:
                return n
    raise CommandError(NOT_INTEGER)


# Redis's shared integers (OBJ_SHARED_INTEGERS): the values 0..9999 kept as one bytes object each.
# Counters in that range share their value, and INCR writes them and its reply by lookup instead
# of formatting digits (~0.25 us of an INCR).
SHARED_INTS = [b"%d" % i for i in range(10000)]
_SHARED_INT_REPLIES = R.small_ints()[1:10001]  # INCR's replies for them: reply.py's cached objects, by value


def incr(c, argv, delta: int = 1) -> bytes:
    """INCR, and through `delta` DECR, INCRBY and DECRBY: one body, entered without a second call
    by INCR, the one redis-benchmark (and most counters) send."""
    key = argv[1]
    db = c.db
    srv = c.server
    if not (db.nexpires or db.lfu or db.signals or srv.notify_flags):
        # The common case inlined (one lookup for Database.get and replace, _int_value's fast
        # branch): no TTL, not LFU mode, no WATCH or notification to feed.
        p = db.find(key)
        v = None if p < 0 else db.value_at(p)
        if type(v) is bytes:
            # the value's digits read in C when compiled (1 to 15 of them, no leading zero), so a
            # shared value is read as any other; past 15 digits the general path below
            d = canonical_digits_value(v)
            # d >= 0, so only the upper bound can overflow (tested before the C sum is made)
            if d >= 0 and delta <= INT64_MAX - d:
                n = d + delta
                if 0 <= n < 10000:
                    db.put_at(p, SHARED_INTS[n], srv.now_ms)
                    reply = _SHARED_INT_REPLIES[n]
                else:  # written in C when compiled (reply.pxd), not %-formatted twice
                    db.put_at(p, decimal(n), srv.now_ms)
                    reply = integer(n)
                srv.dirty += 1
                return reply
    v = db.get(key, srv.now_ms)
    if v is None:
        new = delta
    else:
        if not is_string(v):
            raise CommandError(WRONGTYPE)
        new = _int_value(v) + delta
        if new > INT64_MAX or new < INT64_MIN:
            raise CommandError(OVERFLOW)
    small = 0 <= new < 10000
    out = SHARED_INTS[new] if small else b"%d" % new
    if v is None:
        db.add(key, out)
    else:
        db.replace(key, out)
    written(c, key, NOTIFY_STRING, "incrby")
    return _SHARED_INT_REPLIES[new] if small else b":%s\r\n" % out


command("incr")(incr)  # not a decorator: compiled, a cpdef function (t_string.pxd)


def decr(c, argv):
    return incr(c, argv, -1)


command("decr")(decr)  # not a decorator: compiled, a cpdef function (t_string.pxd)


def incrby(c, argv):
    return incr(c, argv, to_int(argv[2]))


command("incrby")(incrby)  # not a decorator: compiled, a cpdef function (t_string.pxd)


def decrby(c, argv):
    delta = to_int(argv[2])
    if delta == INT64_MIN:
        raise CommandError("ERR decrement would overflow")
    return incr(c, argv, -delta)


command("decrby")(decrby)  # not a decorator: compiled, a cpdef function (t_string.pxd)


def incrbyfloat(c, argv):
    key = argv[1]
    v = lookup_string(c, key, write=True)
    cur = (0, 0) if v is None else longdouble.parse(v)
    if cur is None:
        raise CommandError(NOT_FLOAT)
    incr = longdouble.parse(argv[2])
    if incr is None:
        raise CommandError(NOT_FLOAT)
    total = longdouble.add(cur, incr)
    if total is None:
        raise CommandError("ERR increment would produce NaN or Infinity")
    out = longdouble.format_human(total)
    if maybe_int(out) is not None:
        out = EmbStr(out)  # Redis stores the result without trying the int encoding
    if v is None:
        c.db.add(key, out)
    else:
        c.db.replace(key, out)
    modified(c, key)
    notify(c, NOTIFY_STRING, "incrbyfloat", key)
    if c.server.also_propagate is not None:  # the result, so a replay rounds nothing differently
        propagate.rewrite(c, [b"SET", key, bytes(out), b"KEEPTTL"])
    return R.bulk(out)


command("incrbyfloat")(incrbyfloat)  # not a decorator: compiled, a cpdef function (t_string.pxd)


# ---- lengths and ranges -------------------------------------------------------------------------
def strlen(c, argv):
    v = lookup_string(c, argv[1])
    return R.integer(0 if v is None else len(v))


command("strlen")(strlen)  # not a decorator: compiled, a cpdef function (t_string.pxd)


def append(c, argv):
    key, tail = argv[1], argv[2]
    v = lookup_string(c, key, write=True)
    if v is None:
        c.db.add(key, tail)
        n = len(tail)
    else:
        check_string_length(c, len(v) + len(tail))
        v = writable_string(c, key, v)
        v.make_room(len(tail))
        v += tail
        n = len(v)
    modified(c, key)
    notify(c, NOTIFY_STRING, "append", key)
    return R.integer(n)


command("append")(append)  # not a decorator: compiled, a cpdef function (t_string.pxd)


def getrange(c, argv):
    start = to_int(argv[2])
    end = to_int(argv[3])
    v = lookup_string(c, argv[1])
    if v is None:
        return _EMPTY
    n = len(v)
    if start < 0 and end < 0 and start > end:
        return _EMPTY
    if start < 0:
        start = max(n + start, 0)
    if end < 0:
        end = max(n + end, 0)
    if end >= n:
        end = n - 1
    if start > end:
        return _EMPTY
    return _value(v[start:end + 1])


command("getrange")(getrange)  # not a decorator: compiled, a cpdef function (t_string.pxd)


def substr(c, argv):
    return getrange(c, argv)


command("substr")(substr)  # not a decorator: compiled, a cpdef function (t_string.pxd)


def setrange(c, argv):
    key, patch = argv[1], argv[3]
    offset = to_int(argv[2])
    if offset < 0:
        raise CommandError("ERR offset is out of range")
    v = lookup_string(c, key, write=True)
    end = offset + len(patch)
    if v is None:
        if not patch:
            return R.ZERO
        check_string_length(c, end)
        v = bytearray(end)
        v[offset:] = patch
        c.db.add(key, v)
    else:
        if not patch:
            return R.integer(len(v))
        check_string_length(c, end)
        v = writable_string(c, key, v)
        if len(v) < end:
            v.make_room(end - len(v))
            v.extend(bytes(end - len(v)))
        v[offset:end] = patch
    modified(c, key)
    notify(c, NOTIFY_STRING, "setrange", key)
    return R.integer(len(v))


command("setrange")(setrange)  # not a decorator: compiled, a cpdef function (t_string.pxd)


# ---- LCS ----------------------------------------------------------------------------------------
def _lcs_match(r: list[int], min_len: int, with_len: bool, items: list[bytes]) -> None:
    """LCS IDX's entry for the match run `r` ([a_start, a_end, b_start, b_end]) into `items`,
    unless shorter than MINMATCHLEN.  Module level, not an inner function: a cpdef handler takes no
    closure."""
    mlen = r[1] - r[0] + 1
    if min_len == 0 or mlen >= min_len:
        pair = b"*2\r\n:%d\r\n:%d\r\n*2\r\n:%d\r\n:%d\r\n" % (r[0], r[1], r[2], r[3])
        items.append(b"*3\r\n%s:%d\r\n" % (pair, mlen) if with_len else b"*2\r\n" + pair)


def lcs(c, argv):
    va = lookup_read(c, argv[1])
    vb = lookup_read(c, argv[2])
    if (va is not None and not is_string(va)) or (vb is not None and not is_string(vb)):
        raise CommandError("ERR The specified keys must contain string values")
    a = b"" if va is None else va
    b = b"" if vb is None else vb
    want_idx = want_len = with_len = False
    min_len = 0
    j, n = 3, len(argv)
    while j < n:
        opt = option_word(argv[j])
        if opt == b"idx":
            want_idx = True
        elif opt == b"len":
            want_len = True
        elif opt == b"withmatchlen":
            with_len = True
        elif opt == b"minmatchlen" and j + 1 < n:
            min_len = max(to_int(argv[j + 1]), 0)
            j += 1
        else:
            raise CommandError(SYNTAX)
        j += 1
    if want_idx and want_len:
        raise CommandError("ERR If you want both the length and indexes, please just use IDX.")
    if len(a) >= 0xFFFFFFFE or len(b) >= 0xFFFFFFFE:
        raise CommandError("ERR String too long for LCS")
    # Redis refuses when its DP table of uint32 cells would exceed proto-max-bulk-len.
    if (len(a) + 1) * (len(b) + 1) * 4 > c.server.config.proto_max_bulk_len:
        raise CommandError("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
    if want_len:
        return R.integer(lcs_length(a, b))
    length, matches = lcs_walk(a, b)
    if not want_idx:
        out = bytearray([a[i] for i, _ in matches])
        out.reverse()
        return R.bulk(out)
    items: list[bytes] = []
    run: list[int] | None = None  # [a_start, a_end, b_start, b_end] of the current diagonal run
    for i, jb in matches:
        if run is not None and run[0] == i + 1 and run[2] == jb + 1:
            run[0] = i
            run[2] = jb
        else:
            if run is not None:
                _lcs_match(run, min_len, with_len, items)
            run = [i, i, jb, jb]
    if run is not None:
        _lcs_match(run, min_len, with_len, items)
    return c.enc.map([b"$7\r\nmatches\r\n", R.array(items), b"$3\r\nlen\r\n", R.integer(length)])


command("lcs")(lcs)  # not a decorator: compiled, a cpdef function (t_string.pxd)
