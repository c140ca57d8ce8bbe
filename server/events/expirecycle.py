"""The active expire cycle: keys past their deadline deleted by the server itself, not only when a
command finds them (Redis 7.0's activeExpireCycle, src/expire.c).

What it is.  Two kinds of cycle share one state (`ExpireCycle`, the server's `expire_cycle`):
- the slow cycle, from the cron (`hz` times a second), bounded by time alone: a share of the
  tick's period (`slow_time_perc`% of it, 25 ms at hz 10 and effort 1);
- the fast cycle, from the loop's before-sleep step (Server.flush_writes), `fast_duration` us long
  (1000 at effort 1), run only while the last cycle stopped at its time limit (or the stale
  estimate is high, see `fast`), and not again before twice its duration has passed since the
  last one started.
Each visits up to CRON_DBS_PER_CALL databases (all of them after a cycle that hit its time limit),
resuming at the db after the one the last cycle was in (`current_db`).  In a db it runs sampling
loops (Database.active_expire: `keys_per_loop` keys with a deadline, visiting at most
SLOTS_PER_KEY deadline slots per key, so holes cost a bounded walk as Redis bounds its empty
buckets) for as long as more than `acceptable_stale`% of a loop's sample had expired, looking at
the time every 16 loops.

active-expire-effort (1..10) scales the four parameters as Redis does (`params`): more keys per
loop, a longer fast cycle, a larger share of the tick, a lower acceptable stale share.

INFO's figures kept here: `stale_perc`, the running average (5% weight to each cycle) of the share
of sampled keys found expired (expired_stale_perc shows it times 100);
`time_cap_count`, the cycles that stopped at their time limit (expired_time_cap_reached_count);
`time_used_us` (expire_cycle_cpu_milliseconds).  CONFIG RESETSTAT zeroes the three (`reset_stats`).
Each cycle's duration is offered to the latency monitor as the "expire-cycle" event.

Rules: a CLIENT PAUSE stops both cycles (the dataset stays as it is); a replica leaves expiry to its
master (its writable keys are the cron's `expire_own_keys`); nothing expires while a db loads; the
DELs the cycle makes are propagated once at its end.  Durations are the server's own work, so they
are read from `ExpireCycle.timer` (the monotonic clock in microseconds), which a test or the
benchmark replaces with a simulated one.  The hot path pays one test per loop iteration: the
server's `expire_fast` flag, set only while a fast cycle may be due.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from raxdb.server.base import clock, latency
from raxdb.server.events import propagate

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server

# Redis's ACTIVE_EXPIRE_CYCLE_* at effort 1, and CRON_DBS_PER_CALL
KEYS_PER_LOOP = 20
FAST_DURATION = 1000  # us
SLOW_TIME_PERC = 25
ACCEPTABLE_STALE = 10  # %
CRON_DBS_PER_CALL = 16
# Deadline slots a sampling loop may visit per key it wants: Redis's bound on the buckets it checks
# (num * 20), here on the slots of the deadline arrays, where deleted deadlines leave holes.
SLOTS_PER_KEY = 20
# The time is looked at once every this many sampling loops (a mask: every 16th).
TIME_CHECK_MASK = 0xF
# The lowest acceptable stale share (effort 10): what the hot flag's filter compares with.
_MIN_ACCEPTABLE = ACCEPTABLE_STALE - 9


def _monotonic_us() -> int:
    return time.monotonic_ns() // 1000


def params(effort: int) -> tuple[int, int, int, int]:
    """(keys per loop, fast cycle duration in us, slow cycle time share in %, acceptable stale
    share in %) for active-expire-effort `effort` (1..10), as Redis rescales them (effort 0..9)."""
    e = effort - 1
    return (KEYS_PER_LOOP + KEYS_PER_LOOP // 4 * e, FAST_DURATION + FAST_DURATION // 4 * e,
            SLOW_TIME_PERC + 2 * e, ACCEPTABLE_STALE - e)


def slow_time_limit(effort: int, hz: int) -> int:
    """The slow cycle's time limit in us: its share of a cron period (at least 1)."""
    return max(1, params(effort)[2] * 1_000_000 // hz // 100)


class ExpireCycle:
    """The state the cycles carry from one call to the next (Redis's statics and stats)."""

    def __init__(self) -> None:
        self.current_db = 0  # the next db to visit
        self.timelimit_exit = False  # did the last cycle stop at its time limit?
        self.last_fast = -(1 << 62)  # when the last fast cycle started (us, on `timer`)
        self.stale_perc = 0.0  # the running average of the stale share (a fraction)
        self.time_cap_count = 0
        self.time_used_us = 0
        self.timer: Callable[[], int] = _monotonic_us

    def reset_stats(self) -> None:
        """CONFIG RESETSTAT's part (resetServerStats)."""
        self.stale_perc = 0.0
        self.time_cap_count = 0
        self.time_used_us = 0


def attach(srv: Server) -> ExpireCycle:
    srv.expire_cycle = ec = ExpireCycle()
    srv.expire_fast = False
    return ec


def may_run(srv: Server) -> bool:
    """Whether a key may expire actively now: DEBUG SET-ACTIVE-EXPIRE on, no CLIENT PAUSE, a master,
    no dataset loading (Redis runs neither cycle while it loads: no cron, no expiry in beforeSleep)."""
    return (srv.active_expire_enabled and not srv.pause_until_ms and srv.repl.masterhost is None
            and not srv.persistence.stats.get("loading"))


def slow(srv: Server, now_ms: int) -> bool:
    """The cron's cycle (ACTIVE_EXPIRE_CYCLE_SLOW); False when it may not run."""
    if not may_run(srv):
        return False
    _cycle(srv, srv.expire_cycle, now_ms, False)
    return True


def fast(srv: Server) -> None:
    """The before-sleep cycle (ACTIVE_EXPIRE_CYCLE_FAST), called while `srv.expire_fast` is set.

    It runs when the last cycle stopped at its time limit or the stale estimate is at least the
    acceptable share, as Redis decides it: Redis compares its estimate, a fraction, with the
    acceptable share in percent, so in effect only the time limit starts a fast cycle; kept so,
    which is how often Redis runs one."""
    ec = srv.expire_cycle
    if not may_run(srv):
        srv.expire_fast = False  # the next slow cycle sets it again if it is still wanted
        return
    _, duration, _, acceptable = params(srv.config.active_expire_effort)
    if not ec.timelimit_exit and ec.stale_perc < acceptable:
        srv.expire_fast = False
        return
    start = ec.timer()
    if start < ec.last_fast + duration * 2:
        return  # not yet: at most one fast cycle per twice its duration
    ec.last_fast = start
    _cycle(srv, ec, clock.tick(srv), True, start)


def _cycle(srv: Server, ec: ExpireCycle, now: int, is_fast: bool, start: int = -1) -> None:
    effort = srv.config.active_expire_effort
    keys_per_loop, duration, _, acceptable = params(effort)
    timer = ec.timer
    if start < 0:
        start = timer()
    dbs = srv.dbs
    dbnum = len(dbs)
    # every db after a cycle that ran out of time: some db has work, and its expired keys hold memory
    per_call = dbnum if CRON_DBS_PER_CALL > dbnum or ec.timelimit_exit else CRON_DBS_PER_CALL
    timelimit = duration if is_fast else slow_time_limit(effort, srv.config.hz)
    ec.timelimit_exit = False
    total_sampled = total_expired = 0
    iteration = 0
    j = 0
    while j < per_call and not ec.timelimit_exit:
        db = dbs[ec.current_db % dbnum]
        ec.current_db += 1  # moved on now, so a cycle out of time resumes at the next db
        j += 1
        if db.expire_paused:  # (a loading dataset: may_run is False all the while)
            continue
        while True:
            iteration += 1
            num = db.nexpires
            if not num:
                db.avg_ttl = 0
                break
            if num > keys_per_loop:
                num = keys_per_loop
            sampled, expired = db.active_expire(now, num, num * SLOTS_PER_KEY)
            total_sampled += sampled
            total_expired += expired
            if not iteration & TIME_CHECK_MASK and timer() - start > timelimit:
                ec.timelimit_exit = True
                ec.time_cap_count += 1
                break
            # on while the loop's sample was more than the acceptable share stale (or empty)
            if sampled and expired * 100 // sampled <= acceptable:
                break
    propagate.flush_alone(srv)
    elapsed = timer() - start
    ec.time_used_us += elapsed
    latency.add_sample_if_needed(srv, "expire-cycle", elapsed // 1000)
    current = total_expired / total_sampled if total_sampled else 0.0
    ec.stale_perc = current * 0.05 + ec.stale_perc * 0.95
    # the hot path's filter: a superset of `fast`'s own test, whatever the effort
    srv.expire_fast = ec.timelimit_exit or ec.stale_perc >= _MIN_ACCEPTABLE
