"""RQ against raxdb: jobs are enqueued, a worker runs them, results and failures are read back.

RQ keeps its queues in lists, its registries in sorted sets, jobs in hashes, and talks to its
workers over pub/sub; the worker runs in burst mode (drain the queues, then exit).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rq_jobs  # noqa: E402


@pytest.fixture
def conn(raxdb):
    import redis

    r = redis.Redis(port=raxdb.port)
    r.flushall()
    yield r
    r.close()


@pytest.mark.parametrize("worker_class", ["SimpleWorker", "Worker"])
def test_enqueue_work_read_back(conn, worker_class):
    import rq

    q = rq.Queue("default", connection=conn)
    ok = q.enqueue(rq_jobs.add, 2, 3)
    bad = q.enqueue(rq_jobs.fail)
    dependent = q.enqueue(rq_jobs.add, 10, 20, depends_on=ok)
    touched = q.enqueue(rq_jobs.touch, "counter")
    assert q.count == 3  # the dependent job waits for its parent
    worker = getattr(rq, worker_class)([q], connection=conn)
    assert worker.work(burst=True)
    for job in (ok, bad, dependent, touched):
        job.refresh()
    assert ok.get_status() == rq.job.JobStatus.FINISHED and ok.return_value() == 5
    assert dependent.get_status() == rq.job.JobStatus.FINISHED and dependent.return_value() == 30
    assert touched.return_value() == touched.id and conn.get("counter") == b"1"
    assert bad.get_status() == rq.job.JobStatus.FAILED
    assert "ValueError: boom" in bad.latest_result().exc_string
    assert bad.id in q.failed_job_registry.get_job_ids()
    assert ok.id in q.finished_job_registry.get_job_ids()
    assert q.count == 0


def test_scheduled_and_requeued(conn):
    import rq

    q = rq.Queue("low", connection=conn)
    job = q.enqueue(rq_jobs.fail)
    rq.SimpleWorker([q], connection=conn).work(burst=True)
    assert q.failed_job_registry.count == 1
    q.failed_job_registry.requeue(job.id)
    assert q.count == 1
    job.refresh()
    assert job.get_status() == rq.job.JobStatus.QUEUED
    q.empty()
    assert q.count == 0
