"""Blocking commands: BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP,
the BLOCK of XREAD / XREADGROUP (WAIT is server/commands/t_replication.py's).

Each runs its non-blocking form first (the families' own pop, move and read functions) and blocks
through server/blocking.py only when there is nothing to return; the same functions serve it
later, so a served client gets exactly what the non-blocking command would have given it then.

Propagation (server/propagate.py) follows blocked.c and t_list.c/t_zset.c: a command that did not
block travels as its non-blocking form (BLPOP as LPOP, BLMPOP and BZMPOP as a pop with the count it
took, BLMOVE as LMOVE with the client's LEFT/RIGHT, BRPOPLPUSH as RPOPLPUSH); a served one travels
the same way (BLMOVE's LEFT/RIGHT then spelled lower-case, as Redis's shared objects are), added by
`_as` and flushed by blocking.handle_ready_keys after each client, as Redis's afterCommand.
A served XREADGROUP propagates its XCLAIMs from t_stream's serve path; XREAD nothing.
"""

from __future__ import annotations

import copy

from raxdb.server.base.errors import SYNTAX, CommandError
from raxdb.server.commands.t_list import _list_for_write, move_for_client, parse_mpop, pop_for_client
from raxdb.server.commands.t_zset import ZSet, bzpop_reply, first_nonempty, zmpop_reply, zpop_pairs
from raxdb.server.commands.t_zset import parse_mpop as parse_zmpop
from raxdb.server.events import propagate
from raxdb.server.net import blocking
from raxdb.server.table.args import option_word
from raxdb.server.table.registry import command
from raxdb.storage.quicklist import Quicklist
from raxdb.storage.stream import Stream

_LPOP, _RPOP, _ZPOPMIN, _ZPOPMAX = b"LPOP", b"RPOP", b"ZPOPMIN", b"ZPOPMAX"


def _as(c, argv: list[bytes], served: bool) -> None:
    """Propagate a blocking command as `argv`: its rewrite when it ran at once (the command's own
    call propagates it), one more op when it was served later (flushed by handle_ready_keys)."""
    if served:
        propagate.also(c.server, c.dbid, argv)
    else:
        propagate.rewrite(c, argv)


def _list_pop(c, key: bytes, head: bool, count: int | None, served: bool) -> bytes | None:
    """pop_for_client, propagated as LPOP/RPOP (with the count it took for BLMPOP)."""
    if c.server.also_propagate is None:
        return pop_for_client(c, key, head, count)
    ql = c.db.get(key, c.server.now_ms)
    llen = ql.count if ql.__class__ is Quicklist else 0
    r = pop_for_client(c, key, head, count)
    if r is not None:
        op = [_LPOP if head else _RPOP, key]
        if count is not None:
            op.append(b"%d" % min(count, llen))
        _as(c, op, served)
    return r


def _first_ready(c, keys: list[bytes], head: bool, count: int | None) -> bytes | None:
    """The non-blocking attempt: keys in order, WRONGTYPE for the first non-list met before a
    non-empty list, else the pop from that list."""
    for key in keys:
        if _list_for_write(c, key) is not None:
            return _list_pop(c, key, head, count, False)
    return None


def _bpop(c, argv, head: bool):
    keys = argv[1:-1]
    deadline = blocking.parse_timeout(argv[-1], c.server.now_ms)
    r = _first_ready(c, keys, head, None)
    if r is not None:
        return r
    if blocking.must_not_block(c):
        return c.enc.null_array
    return blocking.block(c, keys, deadline, lambda cl, key: _list_pop(cl, key, head, None, True), btype="list")


@command("blpop")
def blpop(c, argv):
    return _bpop(c, argv, True)


@command("brpop")
def brpop(c, argv):
    return _bpop(c, argv, False)


def _where(arg: bytes) -> bool:
    w = option_word(arg)
    if w == b"left":
        return True
    if w == b"right":
        return False
    raise CommandError(SYNTAX)


def _move_op(src: bytes, dst: bytes, wheres: list[bytes] | None) -> list[bytes]:
    return [b"RPOPLPUSH", src, dst] if wheres is None else [b"LMOVE", src, dst, *wheres]


def _bmove(c, src: bytes, dst: bytes, from_head: bool, to_head: bool, timeout: bytes,
           wheres: list[bytes] | None = None):
    """BLMOVE (`wheres`: its LEFT/RIGHT arguments as sent) or BRPOPLPUSH (None)."""
    deadline = blocking.parse_timeout(timeout, c.server.now_ms)
    r = move_for_client(c, src, dst, from_head, to_head)
    if r is not None:
        if c.server.also_propagate is not None:
            _as(c, _move_op(src, dst, wheres), False)
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
        if v is None or v.__class__ is not Quicklist:
            return None
        r = move_for_client(cl, src, dst, from_head, to_head)
        if r is not None and cl.server.also_propagate is not None:
            words = None if wheres is None else [b"left" if from_head else b"right", b"left" if to_head else b"right"]
            _as(cl, _move_op(src, dst, words), True)
        return r

    return blocking.block(c, [src], deadline, serve, btype="list")


@command("brpoplpush")
def brpoplpush(c, argv):
    return _bmove(c, argv[1], argv[2], False, True, argv[3])


@command("blmove")
def blmove(c, argv):
    from_head, to_head = _where(argv[3]), _where(argv[4])
    return _bmove(c, argv[1], argv[2], from_head, to_head, argv[5], argv[3:5])


@command("blmpop")
def blmpop(c, argv):
    deadline = blocking.parse_timeout(argv[1], c.server.now_ms)
    keys, head, count = parse_mpop(argv, 2)
    n = 1 if count == -1 else count
    r = _first_ready(c, keys, head, n)
    if r is not None:
        return r
    if blocking.must_not_block(c):
        return c.enc.null_array
    return blocking.block(c, keys, deadline, lambda cl, key: _list_pop(cl, key, head, n, True), btype="list")


# ---- sorted sets ---------------------------------------------------------------------------------
def _zpop_for(c, key: bytes, from_max: bool, count: int | None, served: bool = False) -> bytes | None:
    """Pop for BZPOPMIN/BZPOPMAX (count None) or BZMPOP, propagated as ZPOPMIN/ZPOPMAX (with the
    count it took)."""
    zs = c.db.get(key, c.server.now_ms)
    if zs is None or zs.__class__ is not ZSet or not len(zs):
        return None
    if c.server.also_propagate is not None:
        op = [_ZPOPMAX if from_max else _ZPOPMIN, key]
        if count is not None:
            op.append(b"%d" % min(count, len(zs)))
        _as(c, op, served)
    pairs = zpop_pairs(c, key, zs, from_max, 1 if count is None else count)
    return bzpop_reply(c, key, pairs[0]) if count is None else zmpop_reply(c, key, pairs)


def _bzpop(c, argv, from_max: bool):
    keys = argv[1:-1]
    deadline = blocking.parse_timeout(argv[-1], c.server.now_ms)
    found = first_nonempty(c, keys)
    if found is not None:
        return _zpop_for(c, found[0], from_max, None)
    if blocking.must_not_block(c):
        return c.enc.null_array
    return blocking.block(c, keys, deadline, lambda cl, key: _zpop_for(cl, key, from_max, None, True),
                          btype="zset")


@command("bzpopmin")
def bzpopmin(c, argv):
    return _bzpop(c, argv, False)


@command("bzpopmax")
def bzpopmax(c, argv):
    return _bzpop(c, argv, True)


@command("bzmpop")
def bzmpop(c, argv):
    deadline = blocking.parse_timeout(argv[1], c.server.now_ms)
    keys, from_max, count = parse_zmpop(argv, 2)
    found = first_nonempty(c, keys)
    if found is not None:
        return _zpop_for(c, found[0], from_max, count)
    if blocking.must_not_block(c):
        return c.enc.null_array
    return blocking.block(c, keys, deadline, lambda cl, key: _zpop_for(cl, key, from_max, count, True),
                          btype="zset")


# ---- streams -------------------------------------------------------------------------------------
def block_xread(c, req) -> object:
    """XREAD / XREADGROUP with BLOCK and nothing to deliver now: wait for one of the keys.
    Served later with only the key that became ready, as Redis replies; a blocked XREADGROUP fails
    when its key is deleted or replaced (UNBLOCKED) or its group destroyed (NOGROUP)."""
    from raxdb.server.commands.t_stream import serve_xread

    if req.timeout_ms is None or blocking.must_not_block(c):
        return c.enc.null_array

    def serve(cl, key: bytes) -> bytes | None:
        if req.group is not None:
            s = cl.db.get(key, cl.server.now_ms)
            if s is None or s.__class__ is not Stream:
                raise CommandError("UNBLOCKED the stream key no longer exists")
            if s.group(req.group) is None:
                raise CommandError("NOGROUP the consumer group this client was blocked on no longer exists")
        one = copy.copy(req)
        idx = req.keys.index(key)
        one.keys, one.ids = [key], [req.ids[idx]]
        return serve_xread(cl, one, blocked=True)

    return blocking.block(c, list(req.keys), req.timeout_ms, serve, btype="stream")
