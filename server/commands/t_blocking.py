"""Blocking commands: BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP,
the BLOCK of XREAD / XREADGROUP, and WAIT.

Each runs its non-blocking form first (the families' own pop, move and read functions) and blocks
through server/blocking.py only when there is nothing to return; the same functions serve it
later, so a served client gets exactly what the non-blocking command would have given it then.
"""

from __future__ import annotations

import copy

from protocol import reply as R
from server import blocking
from server.commands.args import option_word, to_int
from server.commands.t_list import _list_for_write, move_for_client, parse_mpop, pop_for_client
from server.commands.t_zset import ZSet, bzpop_reply, first_nonempty, zmpop_reply, zpop_pairs
from server.commands.t_zset import parse_mpop as parse_zmpop
from server.commands.table import command
from server.errors import SYNTAX, CommandError
from storage.quicklist import Quicklist


def _first_ready(c, keys: list[bytes], head: bool, count: int | None) -> bytes | None:
    """The non-blocking attempt: keys in order, WRONGTYPE for the first non-list met before a
    non-empty list, else the pop from that list."""
    for key in keys:
        if _list_for_write(c, key) is not None:
            return pop_for_client(c, key, head, count)
    return None


def _bpop(c, argv, head: bool):
    keys = argv[1:-1]
    deadline = blocking.parse_timeout(argv[-1], c.server.now_ms)
    r = _first_ready(c, keys, head, None)
    if r is not None:
        return r
    if blocking.must_not_block(c):
        return c.enc.null_array
    return blocking.block(c, keys, deadline, lambda cl, key: pop_for_client(cl, key, head, None), btype="list")


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


def _bmove(c, src: bytes, dst: bytes, from_head: bool, to_head: bool, timeout: bytes):
    deadline = blocking.parse_timeout(timeout, c.server.now_ms)
    r = move_for_client(c, src, dst, from_head, to_head)
    if r is not None:
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
        return move_for_client(cl, src, dst, from_head, to_head)

    return blocking.block(c, [src], deadline, serve, btype="list")


@command("brpoplpush")
def brpoplpush(c, argv):
    return _bmove(c, argv[1], argv[2], False, True, argv[3])


@command("blmove")
def blmove(c, argv):
    from_head, to_head = _where(argv[3]), _where(argv[4])
    return _bmove(c, argv[1], argv[2], from_head, to_head, argv[5])


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
    return blocking.block(c, keys, deadline, lambda cl, key: pop_for_client(cl, key, head, n), btype="list")


# ---- sorted sets ---------------------------------------------------------------------------------
def _zpop_for(c, key: bytes, from_max: bool, count: int | None) -> bytes | None:
    zs = c.db.get(key, c.server.now_ms)
    if zs is None or zs.__class__ is not ZSet or not len(zs):
        return None
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
    return blocking.block(c, keys, deadline, lambda cl, key: _zpop_for(cl, key, from_max, None), btype="zset")


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
    return blocking.block(c, keys, deadline, lambda cl, key: _zpop_for(cl, key, from_max, count), btype="zset")


# ---- streams -------------------------------------------------------------------------------------
def block_xread(c, req) -> object:
    """XREAD / XREADGROUP with BLOCK and nothing to deliver now: wait for one of the keys.
    Served later with only the key that became ready, as Redis replies; a blocked XREADGROUP fails
    when its key is deleted or replaced (UNBLOCKED) or its group destroyed (NOGROUP)."""
    from server.commands.t_stream import Stream, serve_xread

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


@command("wait")
def wait(c, argv):
    """raxdb has no replicas: WAIT n>0 blocks until its timeout (forever with 0) and reports 0
    acknowledgements, as a Redis master without replicas does; WAIT 0 answers at once."""
    numreplicas = to_int(argv[1])
    deadline = blocking.parse_timeout_ms(argv[2], c.server.now_ms)
    if numreplicas <= 0 or c.in_exec:
        return R.ZERO
    return blocking.block(c, [], deadline, lambda cl, key: None, lambda cl: R.ZERO)
