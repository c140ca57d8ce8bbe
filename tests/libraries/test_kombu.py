"""kombu's Redis transport (Celery's broker) restoring an unacknowledged message after its
visibility timeout, tried as a new user would, against raxdb and, to prove the test, redis-server.

What it leans on (issue #55): a consumer that drains with a timeout sends `BRPOP <queues> 1` and
polls its socket for its own timeout; it scans the unacked index for messages past their
visibility timeout only when its poll ends without a reply, so a server that answers the BRPOP
before its second is up starves the restore.  The visibility timeout is short (1 s) and the scan
runs on every empty poll (`unacked_restore_throttle` 1, as kombu's documentation advises for a
low visibility timeout); every wait is bounded, and the test ends as soon as the message is back.
"""

from __future__ import annotations

import time

import pytest

WAIT_S = 30  # a bound on the whole restore, never a pause


@pytest.fixture(params=["raxdb", pytest.param("oracle", marks=pytest.mark.oracle)])
def broker_url(request):
    server = request.getfixturevalue(request.param)
    import redis

    redis.Redis(port=server.port).flushall()
    return f"redis://127.0.0.1:{server.port}/0"


def test_an_unacked_message_is_restored_to_another_consumer(broker_url):
    from kombu import Connection

    options = {"visibility_timeout": 1, "unacked_restore_throttle": 1}
    with Connection(broker_url, transport_options=options) as producer:
        producer.SimpleQueue("kombu-vt").put({"n": 1})
    first = Connection(broker_url, transport_options=options)
    second = Connection(broker_url, transport_options=options)
    try:
        taken = first.SimpleQueue("kombu-vt").get(timeout=5)
        assert taken.payload == {"n": 1}  # consumed, never acked: the first consumer hangs on to it
        queue = second.SimpleQueue("kombu-vt")
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                again = queue.get(timeout=1)  # the user's loop: a short wait, again until it comes
                break
            except queue.Empty:
                assert time.monotonic() < deadline, "the unacked message was never restored"
        assert again.payload == {"n": 1}
        again.ack()
    finally:
        second.release()
        first.release()
