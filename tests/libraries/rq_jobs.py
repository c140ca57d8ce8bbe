"""Job functions for the RQ test: a worker imports them by dotted name, as in a real deployment."""


def add(a: int, b: int) -> int:
    return a + b


def fail() -> None:
    raise ValueError("boom")


def touch(key: str) -> str:
    from rq import get_current_job

    job = get_current_job()
    assert job is not None
    job.connection.incr(key)
    return job.id
