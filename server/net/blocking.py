"""Blocking operations: the registry of blocked clients, the ready-keys queue, serving, timeouts.

One mechanism serves every blocking command (BLPOP, BLMOVE, BZPOPMIN, XREAD BLOCK, ...):

- A blocking command first tries to run as its non-blocking form.  When there is nothing to
  return it calls `block(c, keys, deadline_ms, serve, timeout_reply)` and returns BLOCKED.  The
  client then sits in `db.blocking[key]` (a FIFO per key) for each key, and its later pipelined
  commands wait in its input buffer (Client.process does nothing while `c.blocked`).
- Keys are signalled where Redis 7.0 signals them, which decides who is served and in which order:
  the Database signals every key it creates (dbAdd) and a stream it deletes or overwrites; XADD,
  XGROUP DESTROY and SWAPDB/FLUSH* signal through `keyaccess.signal_ready`.  Nothing else does: a
  push onto an existing list, a ZADD to an existing zset or ZUNIONSTORE over a set wakes no one,
  as in Redis.  A signalled key is queued in `server.ready_keys` (an ordered dict, so each key
  once, in signal order) if anyone waits on it and some client waits for its value's type.
- After each top-level command — never inside EXEC or a script, which only signal — the client
  loop calls `handle_ready_keys`: for each ready key, waiters are offered the key in the order
  they blocked (first-block-first-serve).  `serve(c, key)` runs the non-blocking form for that
  client (the pop, the move, the stream read) and returns its reply, or None if the key has
  nothing for it; a CommandError becomes an error reply (e.g. BLMOVE onto a key of another type).
  Serving can signal more keys (BLMOVE's destination); the loop runs until the queue is empty.
- While propagating, a served client's operations (its pop, its XCLAIMs, added by its serve
  function) go out right after it is served, wrapped in MULTI/EXEC when several, as Redis's
  afterCommand does for each receiver: after the write that woke it, before the next receiver's.
- A served, timed-out or CLIENT UNBLOCKed client resumes its pipeline on the next loop turn
  (`call_soon`), as Redis reprocesses unblocked clients in beforeSleep.

Timeouts are absolute deadlines (ms) on the server's clock (server/base/clock.py), set from the
clock's cached reading when the command blocked, and they fire as Redis's checkBlockedClientTimeout
fires them: on the first check whose time is past the deadline (`now > deadline`, in whole ms),
never at it or before it.  Each blocked client with a deadline has a loop timer armed for the
moment the clock passes its deadline; the timer reads the clock again and, when the loop's
monotonic timer fired before the clock got there, re-arms for the rest.  While the clock is frozen
no timer is armed: `clock_moved` (a test control moved the clock) times out whoever is past the
deadline now and re-arms the rest.  Disconnecting leaves no trace: the disconnect hook removes the
client from every key's queue.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from raxdb.server.base import clock
from raxdb.server.base.errors import CommandError
from raxdb.server.base.numparse import strtod
from raxdb.server.conn import lifecycle
from raxdb.server.events import propagate, tracking
from raxdb.server.events.keyaccess import install_hooks
from raxdb.server.memory import evict
from raxdb.server.table.args import to_int
from raxdb.server.table.registry import BLOCKED
from raxdb.storage.stream import Stream

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Client, Server
    from raxdb.storage.keyspace import Database

Serve = Callable[["Client", bytes], "bytes | None"]


# What a client blocks for (Redis's BLOCKED_LIST / _ZSET / _STREAM), by the class of value that can
# serve it; a key is queued as ready only when a client somewhere blocks for its value's type.
# The list and sorted-set classes join once their modules are imported (their families', on first
# use, not a start's: #56): a value of theirs exists only then, so `_btype_of` takes them from
# sys.modules rather than importing them.
_BTYPE_OF: dict[type, str] = {Stream: "stream"}
_LATER_BTYPES = (("raxdb.storage.quicklist", "Quicklist", "list"), ("raxdb.storage.zset", "ZSet", "zset"))


def _btype_of(cls: type) -> str | None:
    btype = _BTYPE_OF.get(cls)
    if btype is None and len(_BTYPE_OF) <= len(_LATER_BTYPES):
        for module_name, class_name, name in _LATER_BTYPES:
            module = sys.modules.get(module_name)
            if module is not None:
                _BTYPE_OF[getattr(module, class_name)] = name
        btype = _BTYPE_OF.get(cls)
    return btype


class BlockState:
    __slots__ = ("db", "keys", "deadline_ms", "serve", "timeout_reply", "timer", "since_ms", "btype")

    def __init__(self, db: Database, keys: list[bytes], deadline_ms: int, serve: Serve,
                 timeout_reply: Callable[[Client], bytes], btype: str | None) -> None:
        self.btype = btype
        self.db = db
        self.keys = keys
        self.deadline_ms = deadline_ms
        self.serve = serve
        self.timeout_reply = timeout_reply
        self.timer: Any = None
        self.since_ms = 0


# ---- timeouts ------------------------------------------------------------------------------------
def parse_timeout(arg: bytes, now_ms: int) -> int:
    """A blocking command's timeout in seconds (a double, as Redis 6+): the absolute deadline in
    ms, or 0 for "block forever".  Sub-millisecond values truncate to 0 ms, as Redis's
    (long long)(seconds * 1000) does."""
    v = strtod(arg)
    if v is None or v != v:
        raise CommandError("ERR timeout is not a float or out of range")
    ms = int(v * 1000) if abs(v) < 9.3e15 else (2**63 if v > 0 else -(2**63))
    return _deadline(ms, now_ms)


def parse_timeout_ms(arg: bytes, now_ms: int) -> int:
    """XREAD/XREADGROUP BLOCK milliseconds (an integer)."""
    ms = to_int(arg, "ERR timeout is not an integer or out of range")
    return _deadline(ms, now_ms)


def _deadline(ms: int, now_ms: int) -> int:
    if ms < 0:
        raise CommandError("ERR timeout is negative")
    if ms == 0:
        return 0
    if ms > 2**63 - 1 - now_ms:
        raise CommandError("ERR timeout is out of range")
    return ms + now_ms


def null_array(c: Client) -> bytes:
    return c.enc.null_array


# ---- blocking and unblocking ---------------------------------------------------------------------
def must_not_block(c: Client) -> bool:
    """Inside MULTI/EXEC and scripts a blocking command behaves as if its timeout expired."""
    return c.in_exec


def propagate_as(c: Client, argv: list[bytes], served: bool) -> None:
    """Propagate a blocking command as `argv` (its non-blocking form, blocked.c's and
    t_list.c/t_zset.c's rewrites): its rewrite when it ran at once (the command's own call
    propagates it), one more op when it was served later (flushed by handle_ready_keys)."""
    if served:
        propagate.also(c.server, c.dbid, argv)
    else:
        propagate.rewrite(c, argv)


def block(c: Client, keys: list[bytes], deadline_ms: int, serve: Serve,
          timeout_reply: Callable[[Client], bytes] = null_array, btype: str | None = None) -> object:
    """Block `c` on `keys` for values of `btype` ("list", "zset", "stream"; None for WAIT)."""
    srv = c.server
    seen: list[bytes] = []
    for k in keys:
        if k not in seen:
            seen.append(k)
    state = BlockState(c.db, seen, deadline_ms, serve, timeout_reply, btype)
    if btype is not None:
        srv.blocked_by_type[btype] += 1
    state.since_ms = srv.now_ms
    blocking = c.db.blocking
    for k in seen:
        q = blocking.get(k)
        if q is None:
            blocking[k] = q = deque()
        q.append(c)
    c.blocked = True
    c.block_state = state
    srv.blocked_on_keys += 1
    if deadline_ms:
        _arm(c, state)
    return BLOCKED


def _arm(c: Client, state: BlockState) -> None:
    loop = c.server.loop
    if loop is None:
        return
    wait = clock.wait_s(c.server, state.deadline_ms)
    if wait != _FOREVER:  # frozen: clock_moved re-arms it
        state.timer = loop.call_later(wait, _on_timer, c, state)


_FOREVER = float("inf")


def _on_timer(c: Client, state: BlockState) -> None:
    state.timer = None
    if c.block_state is not state:
        return
    if c.server.update_clock() <= state.deadline_ms:
        _arm(c, state)  # the loop's timer fired before the clock passed the deadline: never time out early
        return
    finish(c, state.timeout_reply(c))


def clock_moved(srv: Server) -> None:
    """The clock moved (advanced, frozen, unfrozen or reset by a test control): every blocked
    client past its deadline times out now, in the order of their deadlines; the others' timers
    are armed again for the new time (none while frozen)."""
    now = srv.now_ms
    waiting = [c for c in srv.clients.values()
               if c.blocked and isinstance(c.block_state, BlockState) and c.block_state.deadline_ms]
    waiting.sort(key=lambda c: c.block_state.deadline_ms)
    for c in waiting:
        state = c.block_state
        if state.timer is not None:
            state.timer.cancel()
            state.timer = None
        if now > state.deadline_ms:
            finish(c, state.timeout_reply(c))
        else:
            _arm(c, state)


def unblock(c: Client) -> BlockState | None:
    """Remove a client blocked on keys from the registry (no reply)."""
    state = c.block_state
    if not isinstance(state, BlockState):
        return None
    blocking = state.db.blocking
    for k in state.keys:
        q = blocking.get(k)
        if q is not None:
            try:
                q.remove(c)
            except ValueError:
                pass
            if not q:
                del blocking[k]
    if state.timer is not None:
        state.timer.cancel()
    if state.btype is not None:
        c.server.blocked_by_type[state.btype] -= 1
    c.blocked = False
    c.block_state = None
    c.server.blocked_on_keys -= 1
    return state


def finish(c: Client, reply: bytes) -> None:
    """Unblock with a reply, then let the client's pipelined commands run on the next turn (only
    scheduled when something is waiting in its input buffer: serving thousands of waiters should
    not cost thousands of empty loop callbacks)."""
    unblock(c)
    c.write(reply)
    loop = c.server.loop
    if loop is not None and not c.closed and c.has_pending_input():
        loop.call_soon(c.process)


# ---- ready keys ----------------------------------------------------------------------------------
def signal_ready(db: Database, key: bytes, value: object) -> None:
    """signalKeyAsReady: queue `key` (once, in signal order) if clients wait on it and some client
    anywhere waits for `value`'s type.  The type filter is not only a shortcut: which keys are
    queued, and so in which order a waiter on several keys is offered them, is Redis's."""
    if key in db.blocking:
        btype = _btype_of(value.__class__)
        srv = db_server(db)
        if btype is not None and srv.blocked_by_type[btype]:
            srv.ready_keys[(db.id, key)] = None


_SERVER: list[Server | None] = [None]


def db_server(db: Database) -> Server:
    srv = _SERVER[0]
    assert srv is not None
    return srv


def handle_ready_keys(srv: Server) -> None:
    if srv.busy_script is not None:
        # a script past its time limit serves a few commands meanwhile: the keys it signalled are
        # served when it ends, or a waiter would see its writes half done (isInsideYieldingLongCommand)
        return
    ready = srv.ready_keys
    while ready:
        batch = list(ready)
        ready.clear()
        for dbid, key in batch:
            db = srv.dbs[dbid]
            queue = db.blocking.get(key)
            if not queue:
                continue
            srv.update_clock()
            for c in list(queue):
                state = c.block_state
                if not c.blocked or not isinstance(state, BlockState) or state.db is not db:
                    continue
                saved = tracking.serve_begin(srv, c) if srv.tracking is not None else None
                t0 = time.perf_counter_ns()
                try:
                    reply = state.serve(c, key)
                except CommandError as e:  # counted in the command's failed_calls (updateStatsOnUnblock)
                    reply = c.error_reply(e.msg, c.last_cmd, e.counted)
                if srv.also_propagate:  # afterCommand(receiver): its ops, on their own
                    propagate.flush(srv)
                if reply is None:
                    tracking.serve_end(srv, c, saved)
                    continue
                if srv.maxmemory:
                    evict.account(c, c.last_cmd, c.last_argv)
                finish(c, reply)
                _served_stats(c, time.perf_counter_ns() - t0)
                if saved is not None:
                    tracking.serve_end(srv, c, saved)


def unblock_by_request(c: Client, error: bool) -> bool:
    """CLIENT UNBLOCK id [TIMEOUT|ERROR]: only clients blocked on keys can be unblocked."""
    state = c.block_state
    if not isinstance(state, BlockState):
        return False
    if error:
        finish(c, c.error_reply(b"UNBLOCKED client unblocked via CLIENT UNBLOCK"))
    else:
        finish(c, state.timeout_reply(c))
    if c.last_cmd is not None:  # Redis 7.0 counts either form as a failed call of the blocked command
        c.last_cmd.failed_calls += 1
        _served_stats(c, 0, [])  # Redis has reset the client's arguments by then: logged without them
    return True


def _served_stats(c: Client, ns: int, argv: list[bytes] | None = None) -> None:
    """updateStatsOnUnblock's slow-log part: the blocked command, with its original arguments,
    goes to the slow log now, when it is answered (it was not logged when it blocked)."""
    cmd = c.last_cmd
    if cmd is not None and ns >= c.server.slowlog_ns:
        args = c.last_argv if argv is None else argv
        assert args is not None  # kept when it blocked
        c.note_slow(cmd, args, ns)


def signal_deleted_streams(db: Database, replaced_with: Database | None = None) -> None:
    """Before FLUSHDB/FLUSHALL empty `db` (replaced_with None) or SWAPDB gives it another
    database's keys: signal each key that waiters block on and that holds a stream now but will
    not afterwards, so that blocked XREADGROUP readers fail (UNBLOCKED) as Redis's
    scanDatabaseForDeletedStreams makes them; list, zset and XREAD waiters find nothing and stay."""
    if not db.blocking:
        return
    for key in list(db.blocking):
        value = db.stored(key)
        if value.__class__ is not Stream:
            continue
        if replaced_with is not None and replaced_with.stored(key).__class__ is Stream:
            continue
        signal_ready(db, key, value)


def attach(srv: Server) -> None:
    _SERVER[0] = srv
    srv.ready_keys = {}
    srv.blocked_on_keys = 0
    srv.blocked_by_type = {"list": 0, "zset": 0, "stream": 0}
    install_hooks(ready_signaller=signal_ready)
    for db in srv.dbs:
        db.ready_hook = signal_ready
    lifecycle.UNBLOCK_HOOK[0] = unblock_by_request
    if _on_disconnect not in lifecycle.DISCONNECT_HOOKS:
        lifecycle.DISCONNECT_HOOKS.append(_on_disconnect)


def _on_disconnect(c: Client) -> None:
    if c.blocked:
        unblock(c)
