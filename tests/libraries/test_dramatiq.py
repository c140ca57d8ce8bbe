"""Dramatiq (RedisBroker + the Redis results backend) against raxdb and, to prove the test itself,
against redis-server.

Dramatiq runs its whole broker protocol as one Lua script (dispatch.lua: enqueue, fetch, ack, nack,
requeue, heartbeats and dead-worker maintenance, with a probe of Lua's unpack() limit), keeps delayed
and retried messages on a delay queue, and a caller waits for a result with BRPOPLPUSH on the
result key. The worker (one thread per queue) runs inside the test; every wait is
``get_result(block=True, timeout=...)``, an event with a bound.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

WAIT_MS = 20_000  # a bound on each result wait, never a pause


@pytest.fixture(params=["raxdb", pytest.param("oracle", marks=pytest.mark.oracle)])
def app(request):
    import dramatiq
    from dramatiq.brokers.redis import MAINTENANCE_SCALE, RedisBroker
    from dramatiq.results import Results
    from dramatiq.results.backends import RedisBackend

    server = request.getfixturevalue(request.param)
    url = f"redis://127.0.0.1:{server.port}"
    # maintenance (dead-worker and dead-letter sweeps inside the dispatch script) on every call, not 1 in 1000
    broker = RedisBroker(url=f"{url}/0", maintenance_chance=MAINTENANCE_SCALE)
    backend = RedisBackend(url=f"{url}/1")
    broker.add_middleware(Results(backend=backend))
    broker.client.flushall()
    dramatiq.set_broker(broker)  # pipelines find their results backend through the global broker

    def actor(fn, **options):
        return dramatiq.actor(fn, broker=broker, store_results=True, **options)

    def add(a, b):
        return a + b

    def boom():
        raise ValueError("boom")

    def flaky(key):
        attempt = broker.client.incr(key)
        if attempt < 3:
            raise RuntimeError("not yet")
        return attempt

    ns = SimpleNamespace(broker=broker, backend=backend, add=actor(add), boom=actor(boom, max_retries=0),
                         flaky=actor(flaky, max_retries=3, min_backoff=10, max_backoff=20))
    worker = dramatiq.Worker(broker, worker_threads=1, worker_timeout=100)
    worker.start()
    yield ns
    worker.stop()
    broker.close()
    backend.client.close()


def test_round_trip(app):
    from dramatiq.results import ResultFailure

    message = app.add.send(2, 3)
    assert message.get_result(backend=app.backend, block=True, timeout=WAIT_MS) == 5
    failed = app.boom.send()
    with pytest.raises(ResultFailure, match="boom"):
        failed.get_result(backend=app.backend, block=True, timeout=WAIT_MS)


def test_retry_delay_pipeline(app):
    import dramatiq

    # retries go through the delay queue, as does an explicitly delayed message
    assert app.flaky.send("flaky-counter").get_result(backend=app.backend, block=True, timeout=WAIT_MS) == 3
    later = app.add.send_with_options(args=(20, 22), delay=100)
    assert later.get_result(backend=app.backend, block=True, timeout=WAIT_MS) == 42
    pipe = dramatiq.pipeline([app.add.message(1, 2), app.add.message(10), app.add.message(100)],
                             broker=app.broker).run()
    assert pipe.get_result(block=True, timeout=WAIT_MS) == 113
    assert list(pipe.get_results(block=True, timeout=WAIT_MS)) == [3, 13, 113]
