"""Celery with the Redis broker (kombu) and the Redis result backend, against raxdb and, to prove the
test itself, against redis-server.

A worker with the solo pool runs in a thread of the test (celery.contrib.testing.worker). What the
round trips lean on: kombu's BRPOP over one list per priority step, its unacked hash and index sorted
set, the pidbox fanout over pub/sub; the backend's SET ... EX results read back through a pub/sub
subscription to the task's meta key (``AsyncResult.get``), and chords joined by the backend's Lua
part-return script (ZADD/ZCOUNT of the parts, a SET NX EX claim). Every wait is
``get(timeout=...)``: an event with a bound, not a sleep.
"""

from __future__ import annotations

import gc

import pytest

WAIT = 20  # seconds; a bound on each result wait, never a pause


@pytest.fixture(scope="module", params=["raxdb", pytest.param("oracle", marks=pytest.mark.oracle)])
def celery_app(request):
    # module scope: Celery keeps task names in a process-wide registry, so one app per server
    from celery import Celery

    server = request.getfixturevalue(request.param)
    url = f"redis://127.0.0.1:{server.port}"
    name = f"celery_{request.param}"
    app = Celery(name, broker=f"{url}/0", backend=f"{url}/1", set_as_current=False)
    app.conf.update(task_default_queue=name, worker_hijack_root_logger=False, broker_connection_retry=False,
                    broker_connection_retry_on_startup=False, result_expires=60)

    @app.task(name=f"{name}.add")
    def add(a, b):
        return a + b

    @app.task(name=f"{name}.total")
    def total(values):
        return sum(values)

    @app.task(name=f"{name}.boom")
    def boom():
        raise ValueError("boom")

    @app.task(name=f"{name}.flaky", bind=True, max_retries=3)
    def flaky(self, key):
        # a counter in the broker db: fails twice, then succeeds on the third delivery
        with self.app.connection_for_write() as conn:
            attempt = conn.default_channel.client.incr(key)
        if attempt < 3:
            raise self.retry(countdown=0)
        return attempt

    yield app
    # AsyncResult.__del__ unsubscribes from its result channel: collect the cycles holding them while the
    # server is still up, not at some later garbage collection after it has stopped
    gc.collect()
    app.close()


@pytest.fixture
def app(celery_app):
    with celery_app.connection_for_write() as conn:
        conn.default_channel.client.flushall()
    return celery_app


def task(app, short):
    return app.tasks[f"{app.main}.{short}"]


def test_task_round_trip(app):
    from celery.contrib.testing.worker import start_worker

    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        result = task(app, "add").delay(2, 3)
        assert result.get(timeout=WAIT) == 5
        assert result.state == "SUCCESS"
        failed = task(app, "boom").delay()
        with pytest.raises(ValueError, match="boom"):
            failed.get(timeout=WAIT)
        assert failed.state == "FAILURE"
        assert "ValueError" in failed.traceback


def test_group_chord_retry_countdown(app):
    from celery import chord, group
    from celery.contrib.testing.worker import start_worker

    add, total = task(app, "add"), task(app, "total")
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        assert group(add.s(i, i) for i in range(5))().get(timeout=WAIT) == [0, 2, 4, 6, 8]
        assert chord(add.s(i, 1) for i in range(4))(total.s()).get(timeout=WAIT) == 10
        assert task(app, "flaky").delay("flaky-counter").get(timeout=WAIT) == 3
        # an ETA task: the worker holds it, kombu keeps it in the unacked hash until it runs
        assert add.apply_async((20, 22), countdown=1).get(timeout=WAIT) == 42
