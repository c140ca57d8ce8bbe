"""huey (PriorityRedisHuey) against raxdb and, to prove the test itself, against redis-server.

What huey leans on: its priority queue is a sorted set an idle worker waits on with BZPOPMIN; delayed
tasks sit in a schedule sorted set that the scheduler drains with a Lua script (ZRANGEBYSCORE +
ZREMRANGEBYSCORE, atomically); results live in a hash, and with notify_result a waiting caller blocks
in BLPOP on a per-task notify list instead of polling; chords count their members with HINCRBY. The
consumer (one worker thread and the scheduler thread) runs inside the test; every wait is
``get(blocking=True, timeout=...)``, an event with a bound.
"""

from __future__ import annotations

import signal
from types import SimpleNamespace

import pytest

WAIT = 20  # seconds; a bound on each result wait, never a pause


@pytest.fixture(params=["raxdb", pytest.param("oracle", marks=pytest.mark.oracle)])
def app(request):
    from huey import PriorityRedisHuey

    server = request.getfixturevalue(request.param)
    huey = PriorityRedisHuey("raxdb", host="127.0.0.1", port=server.port, notify_result=True, read_timeout=0.2,
                             store_intermediate_errors=False)
    conn = huey.storage.conn
    conn.flushall()
    ran: list[int] = []

    @huey.task()
    def add(a, b):
        ran.append(a + b)
        return a + b

    @huey.task()
    def total(values):
        return sum(values)

    @huey.task()
    def boom():
        raise ValueError("boom")

    @huey.task(retries=2, retry_delay=0)
    def flaky(key):
        attempt = conn.incr(key)
        if attempt < 3:
            raise RuntimeError("not yet")
        return attempt

    yield SimpleNamespace(huey=huey, add=add, total=total, boom=boom, flaky=flaky, ran=ran)
    huey.storage.pool.disconnect()


def start_consumer(huey):
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    consumer = huey.create_consumer(workers=1, worker_type="thread", periodic=False, check_worker_health=False)
    consumer.start()
    for sig, handler in handlers.items():  # start() installs the consumer's own handlers: keep pytest's
        signal.signal(sig, handler)
    return consumer


def test_round_trip(app):
    from huey.exceptions import TaskException

    consumer = start_consumer(app.huey)
    try:
        assert app.add(2, 3).get(blocking=True, timeout=WAIT) == 5
        with pytest.raises(TaskException) as err:
            app.boom().get(blocking=True, timeout=WAIT)
        assert "ValueError" in err.value.metadata["error"]
        assert app.flaky("flaky-counter").get(blocking=True, timeout=WAIT) == 3
    finally:
        consumer.stop(graceful=True)


def test_priority_schedule_chord(app):
    from huey import group

    # queued before any worker runs: the worker must take the highest priority first
    pending = [app.add(n, 0, priority=n) for n in (1, 5, 3)]
    assert app.huey.pending_count() == 3
    consumer = start_consumer(app.huey)
    try:
        assert [r.get(blocking=True, timeout=WAIT) for r in pending] == [1, 5, 3]
        assert app.ran == [5, 3, 1]
        # a delayed task waits in the schedule until the scheduler's Lua pop hands it to the queue
        later = app.add.schedule((20, 22), delay=1)
        assert later.get(blocking=True, timeout=WAIT) == 42
        assert app.huey.scheduled_count() == 0
        chord = app.huey.enqueue(group([app.add.s(i, i) for i in range(4)]).then(app.total))
        assert chord.get(blocking=True, timeout=WAIT) == 12
    finally:
        consumer.stop(graceful=True)
