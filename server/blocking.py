"""Blocking operations: the registry of blocked clients, the ready-keys queue, serving, timeouts.

One mechanism serves every blocking command (BLPOP, BLMOVE, BZPOPMIN, XREAD BLOCK, ...):

- A blocking command first tries to run as its non-blocking form.  When there is nothing to
  return it calls `block(c, keys, deadline_ms, serve, timeout_reply)` and returns BLOCKED.  The
  client then sits in `db.blocking[key]` (a FIFO per key) for each key, and its later pipelined
  commands wait in its input buffer (Client.process does nothing while `c.blocked`).
- A write that may serve a waiter calls `keyaccess.signal_ready(db, key)`; if anyone waits on the
  key it is queued in `server.ready_keys` (an ordered dict, so each key once, in signal order).
- After each top-level command — never inside EXEC or a script, which only signal — the client
  loop calls `handle_ready_keys`: for each ready key, waiters are offered the key in the order
  they blocked (first-block-first-serve).  `serve(c, key)` runs the non-blocking form for that
  client (the pop, the move, the stream read) and returns its reply, or None if the key has
  nothing for it; a CommandError becomes an error reply (e.g. BLMOVE onto a key of another type).
  Serving can signal more keys (BLMOVE's destination); the loop runs until the queue is empty.
- A served, timed-out or CLIENT UNBLOCKed client resumes its pipeline on the next loop turn
  (`call_soon`), as Redis reprocesses unblocked clients in beforeSleep.

Timeouts are absolute wall-clock deadlines (ms) set when the command blocked.  Each blocked client
with a deadline has a loop timer; when it fires early (the loop's monotonic clock against the wall
clock) it re-arms for the rest, so a timeout never fires before its deadline.  Disconnecting
leaves no trace: the disconnect hook removes the client from every key's queue.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from server import lifecycle
from server.commands.args import strtod, to_int
from server.commands.table import BLOCKED
from server.errors import CommandError
from server.keyaccess import _ready_signaller

if TYPE_CHECKING:
    from server.client import Client
    from server.core import Server
    from storage.keyspace import Database

Serve = Callable[["Client", bytes], "bytes | None"]


class BlockState:
    __slots__ = ("db", "keys", "deadline_ms", "serve", "timeout_reply", "timer", "since_ms")

    def __init__(self, db: Database, keys: list[bytes], deadline_ms: int, serve: Serve,
                 timeout_reply: Callable[[Client], bytes]) -> None:
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


def block(c: Client, keys: list[bytes], deadline_ms: int, serve: Serve,
          timeout_reply: Callable[[Client], bytes] = null_array) -> object:
    srv = c.server
    seen: list[bytes] = []
    for k in keys:
        if k not in seen:
            seen.append(k)
    state = BlockState(c.db, seen, deadline_ms, serve, timeout_reply)
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
    delay = max(0.0, (state.deadline_ms - time.time() * 1000) / 1000)
    state.timer = loop.call_later(delay, _on_timer, c, state)


def _on_timer(c: Client, state: BlockState) -> None:
    if c.block_state is not state:
        return
    now = c.server.update_clock()
    if now < state.deadline_ms:
        _arm(c, state)  # the loop's clock ran ahead of the wall clock: never time out early
        return
    finish(c, state.timeout_reply(c))


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
def signal_ready(db: Database, key: bytes) -> None:
    if key in db.blocking:
        db_server(db).ready_keys[(db.id, key)] = None


_SERVER: list[Server | None] = [None]


def db_server(db: Database) -> Server:
    srv = _SERVER[0]
    assert srv is not None
    return srv


def handle_ready_keys(srv: Server) -> None:
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
                try:
                    reply = state.serve(c, key)
                except CommandError as e:
                    reply = c.error_reply(e.msg)
                if reply is None:
                    continue
                finish(c, reply)


def unblock_by_request(c: Client, error: bool) -> bool:
    """CLIENT UNBLOCK id [TIMEOUT|ERROR]: only clients blocked on keys can be unblocked."""
    state = c.block_state
    if not isinstance(state, BlockState):
        return False
    if error:
        finish(c, c.error_reply(b"UNBLOCKED client unblocked via CLIENT UNBLOCK"))
    else:
        finish(c, state.timeout_reply(c))
    return True


def wake_with_error(db: Database, key: bytes, msg: bytes, only: Callable[[Client], bool] | None = None) -> None:
    """Unblock the waiters on `key` with an error (e.g. XREADGROUP's stream deleted)."""
    queue = db.blocking.get(key)
    if not queue:
        return
    for c in list(queue):
        if only is None or only(c):
            finish(c, c.error_reply(msg))


def attach(srv: Server) -> None:
    _SERVER[0] = srv
    srv.ready_keys = {}
    srv.blocked_on_keys = 0
    _ready_signaller[0] = signal_ready
    for db in srv.dbs:
        db.ready_hook = signal_ready
    lifecycle.UNBLOCK_HOOK[0] = unblock_by_request
    if _on_disconnect not in lifecycle.DISCONNECT_HOOKS:
        lifecycle.DISCONNECT_HOOKS.append(_on_disconnect)


def _on_disconnect(c: Client) -> None:
    if c.blocked:
        unblock(c)
