"""Shared fixtures: one raxdb and one redis-server per test session (and a `fresh` pair per test),
the differential `diff` fixture (RESP2 and RESP3), and redis-py clients; and the markers each test
gets from its folder and fixtures (pyproject.toml lists them)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import settings  # noqa: E402

from tests.support.diff import Diff, RawConnection  # noqa: E402
from tests.support.servers import server_pair, start_raxdb, start_redis  # noqa: E402

# Property tests assert behaviour, never speed: no per-example deadline (on a loaded machine the
# default 200 ms failed a correct HLL merge example that took 357 ms once and 22 ms on replay).
settings.register_profile("raxdb", deadline=None)
settings.load_profile("raxdb")

# `make test-pure` runs all of tests/unit a second time, interpreted; to fit CI's budget it sets
# RAXDB_TEST_SAMPLE=n, and each property test there runs 1/n of its examples (at least 10): every
# test still runs, the model tests' long random walks run in full in the compiled run.
SAMPLE = int(os.environ.get("RAXDB_TEST_SAMPLE", "1"))


TESTS = Path(__file__).resolve().parent
# The folders that are layers, each its own marker (a test in unit/type/ is `unit` and `type`).
LAYERS = frozenset({"unit", "type", "storage", "integration", "fuzz", "libraries", "pipeline"})
# The fixtures below that start a real redis-server: a test needing any of them, directly or
# through another fixture (diff, diff2, aofdiff), is `oracle`.  Tests that start one themselves
# (start_redis, run_on_both, redis_binary) carry the marker in their own file.
REDIS_FIXTURES = frozenset({"oracle", "fresh", "aof_pair"})


@pytest.hookimpl(tryfirst=True)  # before -m selects on the markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = item.path.resolve()
        for folder in path.relative_to(TESTS).parts[:-1] if path.is_relative_to(TESTS) else ():
            if folder in LAYERS:
                item.add_marker(folder)
        needs = set(getattr(item, "fixturenames", ()))
        if needs & REDIS_FIXTURES:
            item.add_marker("oracle")
        if "spark" in needs:
            item.add_marker("spark")
        if SAMPLE > 1:
            _sample_examples(item)


def _sample_examples(item: pytest.Item) -> None:
    """A property test's examples divided by SAMPLE.  Hypothesis reads a test's settings from its
    wrapper when the test runs (the attribute @settings sets), so the wrapper gets new ones."""
    fn = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
    current = getattr(fn, "_hypothesis_internal_use_settings", None)
    if current is None or getattr(fn, "_raxdb_sampled", False):
        return
    fn._hypothesis_internal_use_settings = settings(current, max_examples=max(10, current.max_examples // SAMPLE))
    fn._raxdb_sampled = True


def pytest_configure(config: pytest.Config) -> None:
    """The suite tests the code as it stands: a compiled module older than its source would run
    old code in every server the tests start (setup.py, server/base/compiled.py)."""
    from raxdb.server.base.compiled import stale_modules

    stale = stale_modules()
    if stale:
        raise pytest.UsageError(f"compiled modules older than their source: {', '.join(stale)}; run `make build`")


@pytest.fixture(scope="session")
def raxdb():
    srv = start_raxdb()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def oracle():
    srv = start_redis()
    yield srv
    srv.stop()


@pytest.fixture
def fresh():
    """A new (raxdb, redis-server) pair for one test: for state the session's servers may still
    hold from earlier tests (counters, connections being closed, global monitors)."""
    with server_pair() as pair:
        yield pair


@pytest.fixture(scope="module")
def aof_pair():
    """raxdb and redis-server appending to AOFs (appendfsync always), per test module."""
    with server_pair("--appendonly", "yes", "--appendfsync", "always") as pair:
        yield pair


@pytest.fixture
def aofdiff(aof_pair):
    """tests/support/aofdiff.py: both servers FLUSHALLed (not in the files' comparison), then compared."""
    from tests.support.aofdiff import AofDiff

    for s in aof_pair:
        _flush(s.port)
    d = AofDiff(*aof_pair)
    yield d
    d.close()


def _flush(port: int) -> None:
    c = RawConnection(port)
    c.call("FLUSHALL")
    c.close()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def diff(request, raxdb, oracle):
    _flush(raxdb.port)
    _flush(oracle.port)
    d = Diff(raxdb.port, oracle.port, request.param)
    yield d
    d.close()


@pytest.fixture
def diff2(raxdb, oracle):
    """RESP2 only, for tests whose point is not the protocol."""
    _flush(raxdb.port)
    _flush(oracle.port)
    d = Diff(raxdb.port, oracle.port, 2)
    yield d
    d.close()


@pytest.fixture
def r(raxdb):
    """A redis-py client on raxdb (RESP2), flushed."""
    import redis

    client = redis.Redis(port=raxdb.port, protocol=2)
    client.flushall()
    yield client
    client.close()


@pytest.fixture
def raw(raxdb):
    """A raw connection to raxdb."""
    c = RawConnection(raxdb.port)
    yield c
    c.close()
