"""Blocking commands: BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP, and WAIT.

Each runs its non-blocking form first (the list family's `pop_for_client` / `move_for_client`)
and blocks through server/blocking.py only when there is nothing to return; the same functions
serve it later, so a served client gets exactly what the non-blocking command would have given
it at that moment.  The sorted-set and stream forms live with their families.
"""

from __future__ import annotations

from protocol import reply as R
from server import blocking
from server.commands.args import to_int
from server.commands.t_list import _list_for_write, move_for_client, parse_mpop, pop_for_client
from server.commands.table import command
from server.errors import SYNTAX, CommandError


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
    return blocking.block(c, keys, deadline, lambda cl, key: pop_for_client(cl, key, head, None))


@command("blpop")
def blpop(c, argv):
    return _bpop(c, argv, True)


@command("brpop")
def brpop(c, argv):
    return _bpop(c, argv, False)


def _where(arg: bytes) -> bool:
    w = arg.lower()
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
    return blocking.block(c, [src], deadline, lambda cl, key: move_for_client(cl, src, dst, from_head, to_head),
                          blocking.null_bulk)


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
    return blocking.block(c, keys, deadline, lambda cl, key: pop_for_client(cl, key, head, n))


@command("wait")
def wait(c, argv):
    """raxdb has no replicas: WAIT n>0 blocks until its timeout (forever with 0) and reports 0
    acknowledgements, as a Redis master without replicas does; WAIT 0 answers at once."""
    numreplicas = to_int(argv[1])
    deadline = blocking.parse_timeout_ms(argv[2], c.server.now_ms)
    if numreplicas <= 0 or c.in_exec:
        return R.ZERO
    return blocking.block(c, [], deadline, lambda cl, key: None, lambda cl: R.ZERO)
