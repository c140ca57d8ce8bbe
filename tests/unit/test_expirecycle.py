"""The active expire cycle's arithmetic (server/events/expirecycle.py), in process on a simulated
clock: the server's clock frozen (deadlines) and the cycle's timer replaced by one where deleting a key takes a chosen
number of microseconds and nothing else takes any time (durations), so every figure is exact.

What is checked is Redis 7.0's activeExpireCycle: the effort's parameters, the slow cycle's time
limit and its stop at the acceptable stale share, the resume at the next db, the fast cycle's
conditions and spacing, the stats (stale estimate, time cap count, CPU time) and CONFIG RESETSTAT,
the latency monitor's expire-cycle event, and what stops the cycle (pause, replica, loading, the
switch).
"""

from __future__ import annotations

import pytest

from raxdb.server.base import clock, latency
from raxdb.server.events.expirecycle import params, slow_time_limit


class KeyCost:
    """The cycle's timer: `base` plus `per_key` us for every key expired so far."""

    def __init__(self, srv, per_key: int = 0) -> None:
        self.srv = srv
        self.per_key = per_key
        self.base = 1_000_000

    def __call__(self) -> int:
        return self.base + self.per_key * self.srv.stat_expired_keys


@pytest.fixture
def srv():
    import raxdb.server.commands  # noqa: F401  (the command table)
    from raxdb.server.config.options import Config
    from raxdb.server.core import Server

    s = Server(Config())
    clock.freeze(s)
    s.expire_cycle.timer = KeyCost(s)
    return s


def _fill(srv, db: int, n: int, expired: int, prefix: bytes = b"k") -> None:
    """`n` keys with a deadline in db `db`, the first `expired` of them already past it."""
    d = srv.dbs[db]
    now = srv.now_ms
    for i in range(n):
        key = prefix + b"%d" % i
        d.add(key, b"v", now)
        d.set_expire(key, now - 1 if i < expired else now + 100_000)


def _by_slot(d) -> list:
    """The keys of db `d` in the order of their deadline slots (None for a hole): where the
    cycle's loops look, in order (the slots' order follows the keys' hashes, not their writing)."""
    return [None if p < 0 else d._keys[p] for p in d._ttl_pos]


def test_params_scale_with_effort():
    assert params(1) == (20, 1000, 25, 10)
    assert params(2) == (25, 1250, 27, 9)
    assert params(10) == (65, 3250, 43, 1)
    assert slow_time_limit(1, 10) == 25_000
    assert slow_time_limit(10, 10) == 43_000
    assert slow_time_limit(1, 500) == 500
    assert slow_time_limit(1, 1) == 250_000


def test_slow_cycle_reclaims_every_expired_key_without_a_key_budget(srv):
    _fill(srv, 0, 5000, 5000)  # more than the old 2,000 keys a tick
    assert srv.active_expire_cycle(srv.now_ms)
    ec = srv.expire_cycle
    assert len(srv.dbs[0]) == 0
    assert srv.stat_expired_keys == 5000
    assert not ec.timelimit_exit and ec.time_cap_count == 0
    assert ec.stale_perc == pytest.approx(0.05)  # every key sampled was stale: 5% of 1.0
    assert not srv.expire_fast


def test_slow_cycle_stops_at_the_acceptable_stale_share(srv):
    _fill(srv, 0, 1000, 0)  # nothing due: one loop of 20 keys samples nothing stale
    srv.active_expire_cycle(srv.now_ms)
    assert len(srv.dbs[0]) == 1000
    assert srv.dbs[0]._ttl_cursor == 20
    # 2 of 20 stale is the acceptable 10%: the db's sampling stops after that loop
    _fill(srv, 1, 1000, 0)
    d = srv.dbs[1]
    order = _by_slot(d)
    for t in (0, 1):
        d.set_expire(order[t], srv.now_ms - 1)  # a deadline rewritten keeps its slot
    srv.active_expire_cycle(srv.now_ms)
    assert len(d) == 998 and d._ttl_cursor == 20
    # at effort 10 the acceptable share is 1%: the loops go on while any is found stale
    srv.config.active_expire_effort = 10
    for t in range(100, 110):
        d.set_expire(order[t], srv.now_ms - 1)
    d._ttl_cursor = 100
    srv.active_expire_cycle(srv.now_ms)
    assert len(d) == 988 and d._ttl_cursor == 100 + 65 * 2  # the second loop of 65 found none


def test_time_limit_counts_and_resumes_at_the_next_db(srv):
    ec = srv.expire_cycle
    _fill(srv, 0, 2000, 2000)
    _fill(srv, 1, 2000, 2000)
    ec.timer.per_key = 80  # the 16th loop's look at the time finds 320 keys: 25,600 us > 25,000 us
    srv.active_expire_cycle(srv.now_ms)
    assert ec.timelimit_exit and ec.time_cap_count == 1
    assert len(srv.dbs[0]) == 2000 - 16 * 20 and len(srv.dbs[1]) == 2000
    assert ec.current_db == 1  # the next cycle starts at db 1
    assert srv.expire_fast  # a fast cycle is wanted
    ec.timer.per_key = 0
    srv.active_expire_cycle(srv.now_ms)  # all 16 dbs, from db 1: both emptied
    assert len(srv.dbs[0]) == len(srv.dbs[1]) == 0
    assert ec.current_db == 17 and not ec.timelimit_exit and ec.time_cap_count == 1
    assert not srv.expire_fast


def test_a_cycle_visits_sixteen_dbs_at_most(srv):
    srv.dbs.extend(type(srv.dbs[0])(i) for i in range(16, 20))
    for db in srv.dbs[16:]:
        db.expired_hook = srv.dbs[0].expired_hook
        db.clock = srv.dbs[0].clock
    _fill(srv, 17, 10, 10)
    srv.active_expire_cycle(srv.now_ms)
    assert len(srv.dbs[17]) == 10  # dbs 0..15 this time
    srv.active_expire_cycle(srv.now_ms)
    assert len(srv.dbs[17]) == 0 and srv.expire_cycle.current_db == 32


def test_time_is_looked_at_every_sixteen_loops(srv):
    ec = srv.expire_cycle
    _fill(srv, 0, 2000, 2000)
    ec.timer.per_key = 78  # 16 loops: 24,960 us, under the limit; 32 loops: over it
    srv.active_expire_cycle(srv.now_ms)
    assert len(srv.dbs[0]) == 2000 - 32 * 20 and ec.timelimit_exit


def test_fast_cycle_runs_after_a_time_limit_spaced_twice_its_duration(srv):
    ec = srv.expire_cycle
    _fill(srv, 0, 10_000, 10_000)
    ec.timer.per_key = 80
    srv.active_expire_cycle(srv.now_ms)
    left = len(srv.dbs[0])
    # the fast cycle's limit is 1000 us.  It visits all 16 dbs (the last cycle ran out of time)
    # from db 1: dbs 1..15, empty, count an iteration each as in Redis, so db 0's first loop is the
    # 16th (80 us at the look) and its 17th loop the 32nd (1360 us): that look ends it
    ec.timer.per_key = 4
    srv.flush_writes()  # the before-sleep step
    assert len(srv.dbs[0]) == left - 17 * 20
    assert ec.timelimit_exit and ec.time_cap_count == 2 and srv.expire_fast
    started = ec.last_fast
    left = len(srv.dbs[0])
    ec.timer.per_key = 0
    ec.timer.base = started + 1999 - 0  # within twice the duration of its start: no cycle
    srv.flush_writes()
    assert len(srv.dbs[0]) == left and ec.last_fast == started
    ec.timer.base = started + 2000
    srv.flush_writes()  # due: it runs, and with no time limit reached it empties the db
    assert ec.last_fast == started + 2000 and len(srv.dbs[0]) == 0
    assert not ec.timelimit_exit and not srv.expire_fast


def test_fast_cycle_duration_scales_with_effort(srv):
    ec = srv.expire_cycle
    srv.config.active_expire_effort = 5  # fast cycles of 2000 us, 40 keys a loop
    _fill(srv, 0, 10_000, 10_000)
    ec.timelimit_exit = srv.expire_fast = True
    ec.timer.per_key = 4  # the 16th loop's look: 640 keys, 2560 us > 2000 us
    srv.flush_writes()
    assert len(srv.dbs[0]) == 10_000 - 16 * 40 and ec.timelimit_exit
    # from db 1 now: db 0's loops are iterations 16.. (see above); at 3 us a key the look at
    # iteration 16 finds 120 us, the one at 32 (17 loops) 2040 us
    ec.timer.per_key = 3
    ec.timer.base = ec.last_fast + 4000 - 3 * srv.stat_expired_keys
    srv.flush_writes()
    assert len(srv.dbs[0]) == 10_000 - 16 * 40 - 17 * 40


def test_fast_cycle_is_not_started_below_the_limit_or_the_stale_share(srv):
    ec = srv.expire_cycle
    _fill(srv, 0, 100, 100)
    srv.expire_fast = True  # the filter let it through, the cycle's own test declines
    srv.flush_writes()
    assert len(srv.dbs[0]) == 100 and not srv.expire_fast
    # Redis compares the estimate (a fraction) with the share in percent: at effort 10 (1%) a
    # fraction of 1.0 is enough
    srv.config.active_expire_effort = 10
    ec.stale_perc = 1.0
    srv.expire_fast = True
    srv.flush_writes()
    assert len(srv.dbs[0]) == 0


def test_stale_estimate_is_a_running_average(srv):
    ec = srv.expire_cycle
    _fill(srv, 0, 20, 20)
    srv.active_expire_cycle(srv.now_ms)
    assert ec.stale_perc == pytest.approx(0.05)
    _fill(srv, 0, 40, 0, b"j")
    for key in _by_slot(srv.dbs[0])[:10]:  # 10 of 20 sampled stale in the first loop, 0 of 20 next: 10/40
        srv.dbs[0].set_expire(key, srv.now_ms - 1)
    srv.active_expire_cycle(srv.now_ms)
    assert ec.stale_perc == pytest.approx(0.05 * 0.95 + 0.05 * 0.25)
    srv.active_expire_cycle(srv.now_ms)  # 0 of 20 stale
    assert ec.stale_perc == pytest.approx((0.05 * 0.95 + 0.05 * 0.25) * 0.95)
    info = srv_info(srv)
    assert info["expired_stale_perc"] == "%.2f" % (ec.stale_perc * 100)


def srv_info(srv) -> dict[str, str]:
    from raxdb.server.admin import info

    text = info.generate(srv, [b"stats"]).decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def test_stats_and_reset(srv):
    ec = srv.expire_cycle
    _fill(srv, 0, 2000, 2000)
    ec.timer.per_key = 80
    srv.active_expire_cycle(srv.now_ms)
    assert ec.time_cap_count == 1 and ec.time_used_us == 25_600 and ec.stale_perc == pytest.approx(0.05)
    stats = srv_info(srv)
    assert stats["expired_time_cap_reached_count"] == "1"
    assert stats["expire_cycle_cpu_milliseconds"] == str(ec.time_used_us // 1000)
    srv.reset_stats()  # CONFIG RESETSTAT
    assert ec.time_cap_count == 0 and ec.time_used_us == 0 and ec.stale_perc == 0.0
    assert ec.timelimit_exit  # the cycle's own state is not a statistic


def test_latency_monitor_records_the_cycle(srv):
    srv.config.latency_monitor_threshold = 20
    _fill(srv, 0, 2000, 2000)
    srv.expire_cycle.timer.per_key = 80
    srv.active_expire_cycle(srv.now_ms)
    series = latency.events(srv).get("expire-cycle")
    assert series is not None  # 25.6 ms
    srv.expire_cycle.timer.per_key = 0
    latency.events(srv).clear()
    srv.active_expire_cycle(srv.now_ms)  # 0 ms: under the threshold
    assert "expire-cycle" not in latency.events(srv)


@pytest.mark.parametrize("how", ["paused", "replica", "disabled"])
def test_what_stops_the_cycle(srv, how):
    _fill(srv, 0, 100, 100)
    if how == "paused":
        srv.pause_until_ms = srv.now_ms + 10_000
    elif how == "replica":
        srv.repl.masterhost = "127.0.0.1"
    else:
        srv.active_expire_enabled = False
    srv.expire_fast = srv.expire_cycle.timelimit_exit = True
    assert not srv.active_expire_cycle(srv.now_ms)
    srv.flush_writes()
    assert len(srv.dbs[0]) == 100 and not srv.expire_fast
    assert srv.expire_cycle.stale_perc == 0.0


def test_no_cycle_while_loading(srv):
    """While a dataset loads neither cycle runs (the loading state as loading.started sets it),
    and the fast cycle's flag is cleared until a slow cycle after the load sets it again."""
    from raxdb.server.persistence import loading

    _fill(srv, 0, 100, 100)
    srv.expire_fast = True
    srv.expire_cycle.timelimit_exit = True
    loading.started(srv, 1, 0)
    assert not srv.active_expire_cycle(srv.now_ms)
    srv.flush_writes()
    assert len(srv.dbs[0]) == 100 and not srv.expire_fast
    assert srv.expire_cycle.time_used_us == 0
    loading.stopped(srv)
    assert srv.active_expire_cycle(srv.now_ms)
    assert len(srv.dbs[0]) == 0


def test_sparse_deadline_arrays_bound_a_loop(srv):
    """Deleted deadlines leave holes: a loop visits at most 20 slots per key it wants."""
    _fill(srv, 0, 2000, 0)
    d = srv.dbs[0]
    for t, key in enumerate(_by_slot(d)):
        if t % 100:
            d.persist(key)  # 20 deadlines left, 100 slots apart
    assert d.active_expire(srv.now_ms, 20, 400) == (4, 0)
    assert d._ttl_cursor == 400



def test_a_write_load_leaves_few_stale_keys(srv):
    """SET ... PX 100 of random keys among 50,000, 10,000 each 100 ms tick (one each 10 us), the
    slow cycle at every tick (no time limit): over 30 ticks after a warm-up the stale keys are a
    small share of the keys with a deadline (0.11-0.14 measured), as the loops' samples are spread
    over the keys whatever their writing order (Database._set_deadline's swap).  Sampled in the
    order of writing, a loop over the last tick's keys ended each cycle among stale ones: about
    0.8 stayed stale."""
    import random

    rnd = random.Random(1)
    d = srv.dbs[0]
    shares = []
    for tick in range(40):
        for _ in range(10_000):
            d.set(b"exp:%d" % rnd.randrange(50_000), b"v", when_ms=srv.now_ms + 100)
            clock.advance(srv, 10)
        srv.active_expire_cycle(srv.now_ms)
        if tick >= 10:
            shares.append(sum(1 for _, when in d.deadlines() if when <= srv.now_ms) / d.nexpires)
    assert sum(shares) / len(shares) < 0.3, shares
