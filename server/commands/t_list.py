"""List commands (Redis's t_list.c) over `storage.quicklist.Quicklist`.

Argument checks run in Redis's order (some commands parse numbers before looking the key up, some
after), because that order decides which error a client sees.  Every write does Redis's
bookkeeping: signalModifiedKey + the list keyspace event, "del" when the list empties (the key is
deleted: Redis never keeps empty lists) and dirty += elements touched.  Clients blocked on a key are
woken by the Database when it creates the list (Redis's dbAdd), never by a push onto an existing
list, as in Redis.

The blocking forms (BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP) are here too, at the end, over the
same pop and move logic (`pop_for_client`, `move_for_client`), which serves them when a blocked
client's key is ready.

List options (list-max-listpack-size, list-compress-depth) are read from the config when a list is
created, as Redis's quicklistSetOptions does; CONFIG SET applies to lists created afterwards.
"""

from __future__ import annotations

from hiredis import pack_command

from raxdb.protocol import reply as R
from raxdb.server.base.errors import NO_SUCH_KEY, OUT_OF_RANGE, SYNTAX, WRONGTYPE, CommandError
from raxdb.server.events import propagate
from raxdb.server.events.keyaccess import (
    NOTIFY_GENERIC,
    NOTIFY_LIST,
    lookup_read,
    modified,
    notify,
)
from raxdb.server.net import blocking
from raxdb.server.table.args import option_word, positive_long, to_int
from raxdb.server.table.registry import command
from raxdb.storage.quicklist import Quicklist

LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)

def new_list(srv) -> Quicklist:
    """An empty list with the options the config has now."""
    return Quicklist(*srv.config.list_options)


def _list_for_write(c, key: bytes) -> Quicklist | None:
    """lookupKeyWrite + checkType: the list at key, None if missing, WRONGTYPE otherwise."""
    db = c.db
    v = db.get(key, c.server.now_ms)
    if v is not None and type(v) is not Quicklist:
        raise CommandError(WRONGTYPE)
    return v


def _list_for_read(c, key: bytes) -> Quicklist | None:
    v = lookup_read(c, key)
    if v is not None and type(v) is not Quicklist:
        raise CommandError(WRONGTYPE)
    return v


def _written(c, key: bytes, event: str, dirty: int = 1) -> None:
    """signalModifiedKey + keyspace event + dirty counter for one write to a list."""
    srv = c.server
    if c.db.signals or srv.notify_flags:
        modified(c, key)
        notify(c, NOTIFY_LIST, event, key)
        srv.dirty += dirty - 1
    else:
        srv.dirty += dirty


def _drop_if_empty(c, key: bytes, ql: Quicklist) -> None:
    if not ql.count:
        c.db.delete(key)
        notify(c, NOTIFY_GENERIC, "del", key)


def _where(arg: bytes) -> bool:
    """LEFT / RIGHT (getListPositionFromObjectOrReply): True for the head."""
    low = option_word(arg)
    if low == b"left":
        return True
    if low == b"right":
        return False
    raise CommandError(SYNTAX)


# ---- pushes ---------------------------------------------------------------------------------------
def push_generic(c, argv: list[bytes], head: bool, only_existing: bool) -> bytes:
    """[L|R]PUSH[X] (Redis's pushGenericCommand).  A module function the four handlers call, so
    that compiled (t_list.pxd) its client, server, database and list are typed: their fields are C
    struct reads and the list's push a C call."""
    key = argv[1]
    db = c.db
    srv = c.server
    v = db.get(key, srv.now_ms)
    if v is None:
        if only_existing:
            return R.ZERO
        ql = new_list(srv)
        db.add(key, ql)
    elif type(v) is not Quicklist:
        raise CommandError(WRONGTYPE)
    else:
        ql = v
    n = len(argv)
    if n == 3:
        if head:
            ql.push_head(argv[2])
        else:
            ql.push_tail(argv[2])
    else:
        ql.extend(argv, 2, head)
    if db.signals or srv.notify_flags:
        modified(c, key)
        notify(c, NOTIFY_LIST, "lpush" if head else "rpush", key)
        srv.dirty += n - 3
    else:
        srv.dirty += n - 2
    return R.length(ql.count)


def lpush(c, argv):
    return push_generic(c, argv, True, False)


def rpush(c, argv):
    return push_generic(c, argv, False, False)


def lpushx(c, argv):
    return push_generic(c, argv, True, True)


def rpushx(c, argv):
    return push_generic(c, argv, False, True)


# not decorators: compiled, cpdef functions (t_list.pxd)
command("lpush")(lpush)
command("rpush")(rpush)
command("lpushx")(lpushx)
command("rpushx")(rpushx)


# ---- pops -----------------------------------------------------------------------------------------
def _popped(c, key: bytes, ql: Quicklist, head: bool, n: int) -> None:
    """listElementsRemoved: event, delete when empty, modified, dirty += n."""
    notify(c, NOTIFY_LIST, "lpop" if head else "rpop", key)
    _drop_if_empty(c, key, ql)
    modified(c, key)
    c.server.dirty += n - 1


def pop_generic(c, argv: list[bytes], head: bool) -> bytes | tuple[bytes, ...]:
    """[L|R]POP (popGenericCommand), typed when compiled as push_generic is."""
    n = len(argv)
    if n > 3:
        raise CommandError(f"ERR wrong number of arguments for '{'lpop' if head else 'rpop'}' command")
    key = argv[1]
    if n == 2:
        db = c.db
        srv = c.server
        v = db.get(key, srv.now_ms)
        if v is None:
            return c.enc.null
        if type(v) is not Quicklist:
            raise CommandError(WRONGTYPE)
        ql = v
        item = ql.pop_head() if head else ql.pop_tail()
        if ql.count and not db.signals and not srv.notify_flags:
            srv.dirty += 1  # what _popped amounts to here, without its calls (benchmarked path)
        else:
            _popped(c, key, ql, head, 1)
        return R.value(item)
    count = positive_long(argv[2], "ERR value is out of range, must be positive")
    found = _list_for_write(c, key)
    if found is None:
        return c.enc.null_array
    ql = found
    if count == 0:
        return R.EMPTY_ARRAY
    items = ql.pop_many(count, head)
    _popped(c, key, ql, head, len(items))
    return R.values(items)


def lpop(c, argv):
    return pop_generic(c, argv, True)


def rpop(c, argv):
    return pop_generic(c, argv, False)


command("lpop")(lpop)
command("rpop")(rpop)


def pop_for_client(c, key: bytes, head: bool, count: int | None, with_key: bool = True) -> bytes | None:
    """Pop for a (blocked) client from the list at `key`: None if there is no list there.
    The reply is [key, element] for count None (BLPOP/BRPOP), [key, [elements]] otherwise
    (LMPOP/BLMPOP); without the key it is the element or the array of elements."""
    v = c.db.get(key, c.server.now_ms)
    if v is None or type(v) is not Quicklist or not v.count:
        return None
    if count is None:
        item = v.pop_head() if head else v.pop_tail()
        _popped(c, key, v, head, 1)
        if not with_key:
            return R.bulk(item)
        return pack_command((key, item))  # type: ignore[arg-type]  # hiredis's stub types a 1-tuple
    items = v.pop_many(count, head)
    _popped(c, key, v, head, len(items))
    if not with_key:
        return R.bulk_strings(items)
    return b"*2\r\n" + R.bulk(key) + R.bulk_strings(items)


def parse_mpop(argv: list[bytes], numkeys_at: int) -> tuple[list[bytes], bool, int]:
    """[B]LMPOP's numkeys key... LEFT|RIGHT [COUNT n] grammar: (keys, from_head, count)."""
    try:
        numkeys = to_int(argv[numkeys_at])
    except CommandError:
        numkeys = 0
    if numkeys <= 0:
        raise CommandError("ERR numkeys should be greater than 0")
    where_at = numkeys_at + numkeys + 1
    if where_at >= len(argv):
        raise CommandError(SYNTAX)
    head = _where(argv[where_at])
    count = -1
    j = where_at + 1
    n = len(argv)
    while j < n:
        if count == -1 and option_word(argv[j]) == b"count" and j + 1 < n:
            try:
                count = to_int(argv[j + 1])
            except CommandError:
                count = 0
            if count <= 0:
                raise CommandError("ERR count should be greater than 0")
            j += 2
        else:
            raise CommandError(SYNTAX)
    return argv[numkeys_at + 1:where_at], head, (1 if count == -1 else count)


def lmpop(c, argv):
    keys, head, count = parse_mpop(argv, 1)
    for key in keys:
        ql = _list_for_write(c, key)
        if ql is not None:
            propagate.rewrite_count_pop(c, b"LPOP" if head else b"RPOP", key, min(count, ql.count))
            return pop_for_client(c, key, head, count)
    return c.enc.null_array


command("lmpop")(lmpop)  # not a decorator: compiled, a cpdef function (t_list.pxd)


# ---- reads ----------------------------------------------------------------------------------------
def llen(c, argv):
    ql = _list_for_read(c, argv[1])
    return R.ZERO if ql is None else R.integer(ql.count)


command("llen")(llen)  # not a decorator: compiled, a cpdef function (t_list.pxd)


def lindex(c, argv):
    ql = _list_for_read(c, argv[1])
    if ql is None:
        return c.enc.null
    v = ql.index(to_int(argv[2]))
    return c.enc.null if v is None else R.value(v)


command("lindex")(lindex)  # not a decorator: compiled, a cpdef function (t_list.pxd)


def _clamp_range(start: int, end: int, n: int) -> tuple[int, int]:
    """Redis's LRANGE/LTRIM index arithmetic: [start, stop) within [0, n), possibly empty."""
    if start < 0:
        start += n
    if end < 0:
        end += n
    if start < 0:
        start = 0
    if start > end or start >= n:
        return 0, 0
    if end >= n:
        end = n - 1
    return start, end + 1


def lrange(c, argv):
    start, end = to_int(argv[2]), to_int(argv[3])
    ql = _list_for_read(c, argv[1])
    if ql is None:
        return R.EMPTY_ARRAY
    a, b = _clamp_range(start, end, ql.count)
    return R.array_header(b - a) + ql.bulks(a, b)


command("lrange")(lrange)  # not a decorator: compiled, a cpdef function (t_list.pxd)


def lpos(c, argv):
    elem = argv[2]
    rank, count, maxlen = 1, -1, 0
    j, n = 3, len(argv)
    while j < n:
        opt = option_word(argv[j])
        if j + 1 >= n:
            raise CommandError(SYNTAX)
        if opt == b"rank":
            rank = to_int(argv[j + 1])
            if rank == 0:
                raise CommandError("ERR RANK can't be zero: use 1 to start from the first match, 2 from the "
                                   "second ... or use negative to start from the end of the list")
        elif opt == b"count":
            count = positive_long(argv[j + 1], "ERR COUNT can't be negative")
        elif opt == b"maxlen":
            maxlen = positive_long(argv[j + 1], "ERR MAXLEN can't be negative")
        else:
            raise CommandError(SYNTAX)
        j += 2
    ql = _list_for_read(c, argv[1])
    if ql is None:
        return R.EMPTY_ARRAY if count != -1 else c.enc.null
    from_tail = rank < 0
    # Redis negates the rank in a C long: LONG_MIN stays negative, so every match qualifies and
    # "matches - rank + 1 >= count" never holds (all matches are returned).
    unbounded = rank == LONG_MIN
    skip = 0 if unbounded else abs(rank) - 1
    llen = ql.count
    found: list[int] = []
    want = 1 if count == -1 else count
    it = ql.iter_reversed() if from_tail else iter(ql)
    for i, x in enumerate(it):
        if maxlen and i >= maxlen:
            break
        if x == elem:
            if skip:
                skip -= 1
                continue
            found.append(llen - 1 - i if from_tail else i)
            if want and len(found) >= want and not (unbounded and count != -1):
                break
    if count == -1:
        return R.integer(found[0]) if found else c.enc.null
    return b"*%d\r\n%s" % (len(found), b"".join([R.integer(i) for i in found]))


command("lpos")(lpos)  # not a decorator: compiled, a cpdef function (t_list.pxd)


# ---- in-place writes ------------------------------------------------------------------------------
def lset(c, argv):
    key = argv[1]
    ql = _list_for_write(c, key)
    if ql is None:
        raise CommandError(NO_SUCH_KEY)
    index = to_int(argv[2])
    if not ql.set(index, argv[3]):
        raise CommandError(OUT_OF_RANGE)
    _written(c, key, "lset")
    return R.OK


command("lset")(lset)  # not a decorator: compiled, a cpdef function (t_list.pxd)


def ltrim(c, argv):
    key = argv[1]
    start, end = to_int(argv[2]), to_int(argv[3])
    ql = _list_for_write(c, key)
    if ql is None:
        return R.OK
    n = ql.count
    a, b = _clamp_range(start, end, n)
    ql.trim(a, b)
    notify(c, NOTIFY_LIST, "ltrim", key)
    _drop_if_empty(c, key, ql)
    modified(c, key)
    c.server.dirty += n - (b - a) - 1
    return R.OK


command("ltrim")(ltrim)  # not a decorator: compiled, a cpdef function (t_list.pxd)


def lrem(c, argv):
    key = argv[1]
    limit = to_int(argv[2])
    ql = _list_for_write(c, key)
    if ql is None:
        return R.ZERO
    removed = ql.remove(argv[3], limit)
    if removed:
        notify(c, NOTIFY_LIST, "lrem", key)
        _drop_if_empty(c, key, ql)
        modified(c, key)
        c.server.dirty += removed - 1
    return R.integer(removed)


command("lrem")(lrem)  # not a decorator: compiled, a cpdef function (t_list.pxd)


def linsert(c, argv):
    where = option_word(argv[2])
    if where == b"after":
        after = True
    elif where == b"before":
        after = False
    else:
        raise CommandError(SYNTAX)
    key = argv[1]
    ql = _list_for_write(c, key)
    if ql is None:
        return R.ZERO
    pos = ql.find(argv[3])
    if pos < 0:
        return R.integer(-1)
    ql.insert(pos, argv[4], after)
    _written(c, key, "linsert")
    return R.integer(ql.count)


command("linsert")(linsert)  # not a decorator: compiled, a cpdef function (t_list.pxd)


# ---- moves ----------------------------------------------------------------------------------------
def move_for_client(c, src: bytes, dst: bytes, from_head: bool, to_head: bool) -> bytes | None:
    """LMOVE's work: pop from src, push to dst, reply with the element; None when src has no list
    (a missing src); WRONGTYPE when src or dst holds another type."""
    sql = _list_for_write(c, src)
    if sql is None:
        return None
    db = c.db
    dql = _list_for_write(c, dst)
    v = sql.pop_head() if from_head else sql.pop_tail()
    if dql is None:
        dql = new_list(c.server)
        db.add(dst, dql)
    modified(c, dst)
    if to_head:
        dql.push_head(v)
    else:
        dql.push_tail(v)
    notify(c, NOTIFY_LIST, "lpush" if to_head else "rpush", dst)
    notify(c, NOTIFY_LIST, "lpop" if from_head else "rpop", src)
    _drop_if_empty(c, src, sql)
    modified(c, src)
    c.server.dirty -= 1
    return R.bulk(v)


def lmove(c, argv):
    from_head, to_head = _where(argv[3]), _where(argv[4])
    r = move_for_client(c, argv[1], argv[2], from_head, to_head)
    return c.enc.null if r is None else r


command("lmove")(lmove)  # not a decorator: compiled, a cpdef function (t_list.pxd)


def rpoplpush(c, argv):
    r = move_for_client(c, argv[1], argv[2], False, True)
    return c.enc.null if r is None else r


command("rpoplpush")(rpoplpush)  # not a decorator: compiled, a cpdef function (t_list.pxd)


# ---- blocking forms -------------------------------------------------------------------------------
# BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP run as their non-blocking form first and block through
# server/net/blocking.py only when there is nothing to return; the same pop_for_client /
# move_for_client serve them later.  A command that did not block travels as its non-blocking form
# (BLPOP as LPOP, BLMPOP as a pop with the count it took, BLMOVE as LMOVE with the client's
# LEFT/RIGHT, BRPOPLPUSH as RPOPLPUSH); a served one travels the same way, BLMOVE's LEFT/RIGHT then
# spelled lower-case, as Redis's shared objects are.
_LPOP, _RPOP = b"LPOP", b"RPOP"


def _list_pop(c, key: bytes, head: bool, count: int | None, served: bool) -> bytes | None:
    """pop_for_client, propagated as LPOP/RPOP (with the count it took for BLMPOP)."""
    if c.server.also_propagate is None:
        return pop_for_client(c, key, head, count)
    ql = c.db.get(key, c.server.now_ms)
    llen = ql.count if type(ql) is Quicklist else 0
    r = pop_for_client(c, key, head, count)
    if r is not None:
        op = [_LPOP if head else _RPOP, key]
        if count is not None:
            op.append(b"%d" % min(count, llen))
        blocking.propagate_as(c, op, served)
    return r


def _first_ready(c, keys: list[bytes], head: bool, count: int | None) -> bytes | None:
    """The non-blocking attempt: keys in order, WRONGTYPE for the first non-list met before a
    non-empty list, else the pop from that list."""
    for key in keys:
        if _list_for_write(c, key) is not None:
            return _list_pop(c, key, head, count, False)
    return None


def _pop_or_block(c, keys: list[bytes], deadline: int, head: bool, count: int | None):
    """BLPOP / BRPOP (count None) and BLMPOP: pop from the first non-empty list now, or block
    on all of `keys` until `deadline`."""
    r = _first_ready(c, keys, head, count)
    if r is not None:
        return r
    if blocking.must_not_block(c):
        return c.enc.null_array
    return blocking.block(c, keys, deadline, lambda cl, key: _list_pop(cl, key, head, count, True), btype="list")


def _bpop(c, argv, head: bool):
    deadline = blocking.parse_timeout(argv[-1], c.server.now_ms)
    return _pop_or_block(c, argv[1:-1], deadline, head, None)


def blpop(c, argv):
    return _bpop(c, argv, True)


command("blpop")(blpop)  # not a decorator: compiled, a cpdef function (t_list.pxd)


def brpop(c, argv):
    return _bpop(c, argv, False)


command("brpop")(brpop)  # not a decorator: compiled, a cpdef function (t_list.pxd)


def _move_op(src: bytes, dst: bytes, wheres: list[bytes] | None) -> list[bytes]:
    return [b"RPOPLPUSH", src, dst] if wheres is None else [b"LMOVE", src, dst, *wheres]


def _bmove(c, src: bytes, dst: bytes, from_head: bool, to_head: bool, timeout: bytes,
           wheres: list[bytes] | None = None):
    """BLMOVE (`wheres`: its LEFT/RIGHT arguments as sent) or BRPOPLPUSH (None)."""
    deadline = blocking.parse_timeout(timeout, c.server.now_ms)
    r = move_for_client(c, src, dst, from_head, to_head)
    if r is not None:
        if c.server.also_propagate is not None:
            blocking.propagate_as(c, _move_op(src, dst, wheres), False)
        return r
    if blocking.must_not_block(c):
        return c.enc.null
    # Redis 7.0 answers a timed-out (or CLIENT UNBLOCKed) move with a null array, like the pops, even
    # though the non-blocking path above gives a null bulk: RESP2 *-1 versus $-1

    def serve(cl, key: bytes) -> bytes | None:
        # A source that now holds another type has nothing for a list waiter, who stays blocked
        # (Redis serves list waiters only from a list); a destination of another type is the
        # waiter's WRONGTYPE error.
        v = cl.db.get(src, cl.server.now_ms)
        if v is None or type(v) is not Quicklist:
            return None
        r = move_for_client(cl, src, dst, from_head, to_head)
        if r is not None and cl.server.also_propagate is not None:
            words = None if wheres is None else [b"left" if from_head else b"right", b"left" if to_head else b"right"]
            blocking.propagate_as(cl, _move_op(src, dst, words), True)
        return r

    return blocking.block(c, [src], deadline, serve, btype="list")


def brpoplpush(c, argv):
    return _bmove(c, argv[1], argv[2], False, True, argv[3])


command("brpoplpush")(brpoplpush)  # not a decorator: compiled, a cpdef function (t_list.pxd)


def blmove(c, argv):
    from_head, to_head = _where(argv[3]), _where(argv[4])
    return _bmove(c, argv[1], argv[2], from_head, to_head, argv[5], argv[3:5])


command("blmove")(blmove)  # not a decorator: compiled, a cpdef function (t_list.pxd)


def blmpop(c, argv):
    deadline = blocking.parse_timeout(argv[1], c.server.now_ms)
    keys, head, count = parse_mpop(argv, 2)
    return _pop_or_block(c, keys, deadline, head, 1 if count == -1 else count)


command("blmpop")(blmpop)  # not a decorator: compiled, a cpdef function (t_list.pxd)
