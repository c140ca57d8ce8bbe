"""Fixtures for the pipeline tests (imported by tests/test_pipeline*.py).

`server` runs each test against a real redis-server 7 and against raxdb (the session servers of
conftest.py).  `ns` gives each test its own key prefix instead of FLUSHALL, so a test never sees
another's streams.  `spark` is ONE SparkSession for the whole run (start-up costs tens of seconds):
local[2,2] = two task threads and two attempts per task, so an injected task failure is
retried as on a cluster.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest
import redis

ROOT = Path(__file__).resolve().parents[2]






@pytest.fixture(params=[pytest.param("redis", marks=pytest.mark.oracle), "raxdb"])
def server(request):
    if request.param == "redis":
        return request.getfixturevalue("oracle")
    return request.getfixturevalue("raxdb")


@pytest.fixture
def rc(server):
    """redis-py client (RESP2, bytes) on the server under test."""
    client = redis.Redis(port=server.port, protocol=2)
    yield client
    client.close()


@pytest.fixture
def ns() -> str:
    return f"t{uuid.uuid4().hex[:10]}:"


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    # Spark's Python workers must run this interpreter (the one with pyspark, pyarrow and this
    # checkout importable), not whatever `python3` is first on PATH.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    from pyspark.sql import SparkSession

    import raxdb.spark
    from tests.support import pipeline_faults

    session = (SparkSession.builder.master("local[2,2]").appName("raxdb-pipeline-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.driver.memory", "1g")
               .config("spark.sql.streaming.numRecentProgressUpdates", "1000")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    raxdb.spark.register(session)
    pipeline_faults.register(session)
    yield session
    session.stop()


def options(server, **extra) -> dict[str, str]:
    """Connection options for the server under test plus extras (Spark takes strings)."""
    return {"host": "127.0.0.1", "port": str(server.port), **{k: str(v) for k, v in extra.items()}}
