"""Faults on demand: the state of the faults a test armed (raxdb's `DEBUG FAULT` test control) and
what each does to commands and connections.  docs/testing-your-code.md#faults says what each lets a test try.

Rule: the faults themselves live here, beside the dispatcher and the connections they act on;
parsing DEBUG FAULT is server/commands/t_testfaults.py's, choosing the clients to drop is CLIENT
KILL's filter (server/commands/t_client.py), and the listening sockets are the Server's
(`stop_listening` / `listen_again`).  No fault is ever armed on a server without
`raxdb-test-controls yes`: only the test control arms them.

The four faults, each ending by itself (after its seconds, or its count of commands) or at CLEAR:
- errors: commands answered with -LOADING, -BUSY, -MASTERDOWN or -TRYAGAIN, each worded as Redis
  7.0.15 words it, where Redis would refuse them in that state.  While one is armed,
  `srv.fault_error` holds it and no client is plain (Client.update_plain), so every command goes
  through execute(), which asks `hits` after the ACL check; the fast loop never looks.
- delay: every connection's output waits `ms` before it is written.  Each client's transport is
  swapped for a `DelayedTransport` while the delay is armed (and until what it holds is written),
  so the write path is untouched; a connection accepted meanwhile gets one in connection_made
  (`accepted`, asked only while `srv.faults` is set).  Output keeps its order per connection, and
  none leaves sooner than its delay by the monotonic clock (the loop's own clock is read once an
  iteration and in whole milliseconds, so its timers can fire a little early by that clock: a
  timer that does is armed again for the rest, as a blocked client's is).
- refusal: the TCP listeners are closed, so a connection attempt is refused (ECONNREFUSED, what a
  server being restarted gives), and opened again on the same port when it ends.  Connections
  already open go on; the unix socket and tls-port keep accepting.
- drop: not a state, an act (`drop`): the chosen connections are aborted at once, their unsent
  output discarded, as when a server dies: the client reads EOF.

Invariants: `srv.faults` is None unless a delay or a refusal is armed, `srv.fault_error` is None
unless an error fault is; a fault's timer is cancelled when it is cleared or replaced; the
connection that armed a refusal is spared by `drop` (so it can lift the refusal).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from raxdb.server.base.errors import BUSY_SCRIPT, MASTERDOWN, TRYAGAIN
from raxdb.server.base.loading import LOADING_ERR
from raxdb.server.base.log import LOG
from raxdb.server.conn.obuf import is_replica
from raxdb.server.table.getkeys import key_positions
from raxdb.storage.glob import compile_glob

if TYPE_CHECKING:
    import asyncio

    from raxdb.server.base.interfaces import Client, Server
    from raxdb.server.table.registry import Command

# The error replies, as Redis 7.0.15 words them: LOADING while a dataset loads, BUSY while a script
# runs past busy-reply-threshold, MASTERDOWN on a replica whose link is down with
# replica-serve-stale-data no, TRYAGAIN for a multi-key command on a slot being migrated.
REPLIES = {
    "LOADING": LOADING_ERR,
    "BUSY": BUSY_SCRIPT.encode(),
    "MASTERDOWN": MASTERDOWN,
    "TRYAGAIN": TRYAGAIN,
}


def _spared(kind: str, cmd: Command, argv: list[bytes]) -> bool:
    """Does Redis serve `cmd` in the state the error stands for?  Then the fault spares it too, so a
    client's handshake (AUTH, HELLO, INFO, CLUSTER SLOTS, ...) sees what it would see for real."""
    if kind == "LOADING":
        return cmd.ok_loading
    if kind == "BUSY":
        return "allow_busy" in cmd.flags
    if kind == "MASTERDOWN":
        return "stale" in cmd.flags
    return not key_positions(cmd, argv)  # TRYAGAIN: only a command with keys meets a migrating slot


class ErrorFault:
    """An armed error fault: its reply, the commands left (None: no count), the command names it is
    limited to (None: all), its timer."""

    __slots__ = ("kind", "reply", "left", "matchers", "timer")

    def __init__(self, kind: str, count: int | None, patterns: list[bytes] | None) -> None:
        self.kind = kind
        self.reply = REPLIES[kind]
        self.left = count
        self.matchers = None if patterns is None else [compile_glob(p.lower(), True) for p in patterns]
        self.timer: Any = None

    def hits(self, cmd: Command, argv: list[bytes]) -> bool:
        if cmd.fullname == "debug" or _spared(self.kind, cmd, argv):  # the controls are never refused
            return False
        if self.matchers is None:
            return True
        name = cmd.fullname.encode()
        return any(m(name) for m in self.matchers)


def fire(srv: Server, fault: ErrorFault) -> bytes:
    """The reply of a command the fault hits (execute()'s call); the fault's count goes down and at
    zero the fault ends."""
    if fault.left is not None:
        fault.left -= 1
        if fault.left <= 0:
            clear_error(srv)
    return fault.reply


def arm_error(srv: Server, kind: str, count: int | None, seconds: float | None,
              patterns: list[bytes] | None) -> None:
    """Arm an error fault, replacing the one armed before."""
    clear_error(srv)
    fault = ErrorFault(kind, count, patterns)
    if seconds is not None:
        fault.timer = _later(srv, seconds, lambda: clear_error(srv) if srv.fault_error is fault else None)
    srv.fault_error = fault
    srv.update_plain_all()


def clear_error(srv: Server) -> bool:
    fault = srv.fault_error
    if fault is None:
        return False
    _cancel(fault.timer)
    srv.fault_error = None
    srv.update_plain_all()
    return True


# ---- delay and refusal: srv.faults ---------------------------------------------------------------
class Faults:
    """The connection faults armed on a server (`srv.faults`): the reply delay in seconds (0: none)
    and its timer; whether the listeners are closed, its timer, and the connection that closed them."""

    __slots__ = ("delay", "delay_timer", "refusing", "refuse_timer", "refuser")

    def __init__(self) -> None:
        self.delay = 0.0
        self.delay_timer: Any = None
        self.refusing = False
        self.refuse_timer: Any = None
        self.refuser: int | None = None  # the id of the client that armed the refusal


def _state(srv: Server) -> Faults:
    if srv.faults is None:
        srv.faults = Faults()
    return srv.faults


def _tidy(srv: Server) -> None:
    f = srv.faults
    if f is not None and not f.delay and not f.refusing:
        srv.faults = None


def _later(srv: Server, seconds: float, fn: Callable[[], Any]) -> Any:
    assert srv.loop is not None
    return srv.loop.call_later(seconds, fn)


def _cancel(timer: Any) -> None:
    """Cancel a fault's timer, if it has one."""
    if timer is not None:
        timer.cancel()


def _delayable(c: Client) -> bool:
    return c.transport is not None and not c.closed and not is_replica(c)


def arm_delay(srv: Server, ms: int, seconds: float | None) -> None:
    """Delay every connection's output by `ms` (for `seconds`, or until cleared)."""
    clear_delay(srv)
    f = _state(srv)
    f.delay = ms / 1000
    if seconds is not None:
        f.delay_timer = _later(srv, seconds, lambda: clear_delay(srv))
    for c in srv.clients.values():
        accepted(c)


def clear_delay(srv: Server) -> bool:
    """End the delay: what the connections' DelayedTransports hold is still written when due (in
    order), then each gives its client back its own transport."""
    f = srv.faults
    if f is None or not f.delay:
        return False
    _cancel(f.delay_timer)
    f.delay_timer = None
    f.delay = 0.0
    _tidy(srv)
    return True


def accepted(c: Client) -> None:
    """A connection under an armed delay (Client.connection_made asks while `srv.faults` is set)."""
    f = c.server.faults
    if f is not None and f.delay and _delayable(c) and not isinstance(c.transport, DelayedTransport):
        c.transport = cast("asyncio.Transport", DelayedTransport(c, c.transport))  # stands in for it
        c.transport_changed()  # so flush_output does not write the socket past it


class DelayedTransport:
    """A client's transport while its output is delayed: each write waits its delay in a queue and
    goes out in order from a timer; the rest is the real transport's.  The event loop never waits."""

    def __init__(self, client: Client, real: Any) -> None:
        self.client = client
        self.real = real
        self.queue: deque[tuple[float, bytes]] = deque()
        self.held = 0  # bytes in the queue
        self.timer: Any = None
        self.closing = False  # close() was called: the real transport closes once the queue is out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def write(self, data: bytes) -> None:
        srv = self.client.server
        loop = srv.loop
        assert loop is not None
        delay = srv.faults.delay if srv.faults is not None else 0.0
        if not delay and not self.queue:
            self.real.write(data)
            self._restore()
            return
        due = time.monotonic() + delay
        self.queue.append((due, data))
        self.held += len(data)
        if self.timer is None:
            self.timer = loop.call_later(delay, self._due)

    def writelines(self, parts: list[bytes]) -> None:
        """Output in pieces (client.flush_output's big replies): delayed as one write."""
        self.write(b"".join(parts))

    def _due(self) -> None:
        self.timer = None
        loop = self.client.server.loop
        assert loop is not None
        now = time.monotonic()
        q = self.queue
        while q and q[0][0] <= now:
            data = q.popleft()[1]
            self.held -= len(data)
            if not self.real.is_closing():
                self.real.write(data)
        if q:  # the next one's due, or this one's if the loop's timer fired early
            self.timer = loop.call_later(q[0][0] - now, self._due)
            return
        if self.closing:
            self.real.close()
        srv = self.client.server
        if srv.faults is None or not srv.faults.delay:
            self._restore()

    def _restore(self) -> None:
        if self.client.transport is self:
            self.client.transport = self.real
            self.client.transport_changed()

    def get_write_buffer_size(self) -> int:
        return self.real.get_write_buffer_size() + self.held

    def is_closing(self) -> bool:
        return self.closing or self.real.is_closing()

    def close(self) -> None:
        """After what is queued (QUIT's +OK, a killed client's last replies) has gone out."""
        if self.queue:
            self.closing = True
        else:
            self.real.close()

    def abort(self) -> None:
        _cancel(self.timer)
        self.timer = None
        self.queue.clear()
        self.held = 0
        self.real.abort()


def arm_refusal(srv: Server, c: Client, seconds: float | None) -> None:
    """Close the TCP listeners (for `seconds`, or until cleared); `c` asked, and drops spare it."""
    f = _state(srv)
    _cancel(f.refuse_timer)
    f.refuse_timer = None
    f.refuser = c.id
    if not f.refusing:
        f.refusing = True
        srv.stop_listening()
    if seconds is not None:
        f.refuse_timer = _later(srv, seconds, lambda: clear_refusal(srv))


def clear_refusal(srv: Server) -> bool:
    f = srv.faults
    if f is None or not f.refusing:
        return False
    _cancel(f.refuse_timer)
    f.refuse_timer = None
    f.refusing = False
    f.refuser = None
    _tidy(srv)
    _listen_again(srv, 0)
    return True


def _listen_again(srv: Server, attempt: int) -> None:
    """Listen on the port again; another process may hold it for a moment (it was free to take
    while closed): retried every 100 ms, ten times, then given up with a warning."""
    try:
        srv.listen_again()
    except Exception as exc:
        if attempt >= 10:
            LOG.warning(f"DEBUG FAULT: could not listen again after refusing connections: {exc}")
            return
        _later(srv, 0.1, lambda: _listen_again(srv, attempt + 1))


# ---- drop ------------------------------------------------------------------------------------------
def drop(srv: Server, chosen: Callable[[Client], bool]) -> int:
    """Abort every connection `chosen` picks (CLIENT KILL's filter) but the refusal's keeper, at
    once and without its unsent output; the number dropped."""
    f = srv.faults
    keeper = f.refuser if f is not None else None
    dropped = 0
    for x in list(srv.clients.values()):
        if x.id == keeper or x.closed or not chosen(x):
            continue
        x.kill_reason = "dropped by DEBUG FAULT"
        x.abort()
        dropped += 1
    return dropped


def clear(srv: Server) -> int:
    """End every armed fault: the number that were armed."""
    return clear_error(srv) + clear_delay(srv) + clear_refusal(srv)


def status(srv: Server) -> list[tuple[str, str]]:
    """What is armed, as (fault, detail) pairs (DEBUG FAULT STATUS)."""
    out: list[tuple[str, str]] = []
    e = srv.fault_error
    if e is not None:
        out.append(("error", e.kind + ("" if e.left is None else f" count={e.left}")))
    f = srv.faults
    if f is not None and f.delay:
        out.append(("delay", f"{round(f.delay * 1000)}ms"))
    if f is not None and f.refusing:
        out.append(("refuse", "listeners closed"))
    return out
