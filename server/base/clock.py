"""The server's clock: Redis's mstime()/ustime(), and the test controls that move it.

What it is.  Every deadline and every time the server keeps (key expiry, blocking timeouts, WAIT,
CLIENT PAUSE, the client `timeout`, the cluster's and replication's timeouts, the crons, OBJECT
IDLETIME, TIME, the `*` IDs of streams, LASTSAVE, the latency monitor's stamps) reads this clock,
in whole milliseconds as Redis's mstime() (`ms`), in microseconds as ustime() (`us`, TIME) or in
seconds (`seconds`, where Redis reads time(NULL)).  The server caches the millisecond reading in
`now_ms` (`tick` refreshes it; the read event's path stamps it inline, server/net/client.py's
read_event, the one copy of `tick`'s arithmetic, kept there for a clock_gettime without a call).

The clock is the wall clock plus a shift, or frozen: two fields of the server
(`clock_shift_us`, `clock_frozen`, C fields of base/fields.py's ServerFields).  Only the test
controls (DEBUG CLOCK, server/commands/t_testclock.py) change them:

- `advance(srv, us)` moves the clock forward (frozen or not); it never moves backwards.
- `freeze(srv)` stops it where it stands: `now_ms` no longer moves, so no key expires and no
  blocked client times out until the clock is advanced or unfrozen.
- `unfreeze(srv)` lets it run again and keeps what was advanced: the reading becomes the wall clock
  plus the advances, so the time spent frozen is caught up at once (a jump forward, never back).
- `reset(srv)` puts it back on the wall clock (shift 0, running): the one move that can go back.

Rule: the clock's state and its arithmetic live here and nowhere else; what the server does when
its clock moves (time out clients, expire keys) is the caller's (Server.clock_moved).  Durations of
the server's own work (a command's latency, a script's run time against its time limit, a fork,
an fsync) stay on the monotonic clock, as Redis measures them with getMonotonicUs(): moving time
in a test must not make a running script busy, and a frozen clock must not make one unkillable.

The fields: `clock_frozen`; `clock_shift_us`, the shift from the wall clock while running, the
reading itself while frozen; `clock_advanced_us`, the advances since the last reset (what
unfreezing keeps).

Invariants: `ms(srv)` is never below a reading that `tick` cached while the clock stood still or
ran forward; while frozen, `ms`, `us` and `seconds` are constant but for `advance`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server

_time_ns = time.time_ns

# Server.pause's deadline for a pause with none (FAILOVER's, a shutdown's: LLONG_MAX in Redis), on
# this clock's milliseconds.  Here rather than in interfaces.py, which run time does not import.
PAUSE_FOREVER = 1 << 62


def us(srv: Server) -> int:
    """ustime(): the server's time in microseconds."""
    if srv.clock_frozen:
        return srv.clock_shift_us  # frozen, the shift holds the reading itself
    return _time_ns() // 1000 + srv.clock_shift_us


def ms(srv: Server) -> int:
    """mstime(): the server's time in whole milliseconds (not cached: `tick` caches it)."""
    return us(srv) // 1000


def seconds(srv: Server) -> float:
    """The server's time in seconds, a float (where Redis reads time(NULL), callers take int())."""
    return us(srv) / 1e6


def tick(srv: Server) -> int:
    """Refresh the server's cached `now_ms` from the clock and return it."""
    srv.now_ms = now = us(srv) // 1000
    return now


def wait_s(srv: Server, when_ms: int) -> float:
    """Seconds of real time until the clock passes `when_ms` (reads more than it): how long a loop
    timer waits for a deadline.  Infinity while frozen (only a control moves a frozen clock)."""
    if srv.clock_frozen:
        return float("inf")
    return max(0.0, ((when_ms + 1) * 1000 - us(srv)) / 1e6)


# ---- the test controls' moves ----------------------------------------------------------------------
def frozen(srv: Server) -> bool:
    return bool(srv.clock_frozen)


def shift_us(srv: Server) -> int:
    """How far the clock is from the wall clock, in microseconds (ahead when positive)."""
    return us(srv) - _time_ns() // 1000


def freeze(srv: Server) -> None:
    if not srv.clock_frozen:
        srv.clock_shift_us = us(srv)
        srv.clock_frozen = True
    tick(srv)


def unfreeze(srv: Server) -> None:
    """Run again, as far ahead of the wall clock as the advances since the last reset took it;
    never behind the frozen reading."""
    if srv.clock_frozen:
        held = srv.clock_shift_us
        srv.clock_frozen = False
        srv.clock_shift_us = max(srv.clock_advanced_us, held - _time_ns() // 1000)
    tick(srv)


def advance(srv: Server, by_us: int) -> None:
    if by_us < 0:
        raise ValueError("the clock only moves forward")
    srv.clock_shift_us += by_us  # frozen, that is the reading; running, the shift
    srv.clock_advanced_us += by_us
    tick(srv)


def reset(srv: Server) -> None:
    srv.clock_frozen = False
    srv.clock_shift_us = srv.clock_advanced_us = 0
    tick(srv)
