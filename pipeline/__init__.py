"""raxdb on Spark: a PySpark (4.2+) Python Data Source for Redis streams, named `raxdb`.

    import raxdb.spark
    raxdb.spark.register(spark)
    df = spark.read.format("raxdb").option("streams", "events").load()

Batch reads, Structured Streaming reads (checkpointed per-stream offsets, admission control,
Trigger.AvailableNow, failOnDataLoss, consumer-group progress) and an exactly-once sink (XADD,
HSET, SET) over redis-py; it works against raxdb and any Redis 7 server, alone or as a Redis
Cluster.  Modules: `options` (option parsing), `ids` (stream ID arithmetic), `connection`
(redis-py plumbing, retries), `cluster` (cluster mode, slots, MOVED / ASK routing),
`planning` (offsets, data loss, admission control, partitions), `convert` (XRANGE pages ->
Arrow), `source` (the DataSource and its readers), `sink` (the writers).  Documentation:
pipeline/README.md.  The name is not `redis` because a Scala data source of that name would win
the lookup.

Spark's Python workers import this package (they unpickle the source's classes), so it needs only
what `pip install 'raxdb[spark]'` installs (pyspark, pyarrow, redis-py; hiredis when present) and
never the server's modules; a worker without one of them gets one message saying what to install
or set, instead of a bare ModuleNotFoundError.
"""

from __future__ import annotations

import os
import sys

try:
    import pyarrow  # noqa: F401
    import redis  # noqa: F401
    from pyspark.sql.datasource import DataSource  # noqa: F401
except ImportError as e:
    raise ImportError(
        f"raxdb.spark needs {e.name or 'pyspark, pyarrow and redis'} in the Python that runs it "
        f"({sys.executable}): run `pip install 'raxdb[spark]'` there, or point Spark's Python workers at "
        f"an interpreter that has it with PYSPARK_PYTHON (or the spark.pyspark.python setting)") from e

from raxdb.spark.source import RaxdbDataSource  # noqa: E402

NAME = "raxdb"


def register(spark) -> None:
    """Make `format("raxdb")` available in this SparkSession (classic or Spark Connect).

    Spark starts its Python workers with PYSPARK_PYTHON (or spark.pyspark.python), or `python3`
    from PATH when neither is set, which usually lacks this package.  When neither is set and the master is local (the workers run
    on this machine), the source is registered with this interpreter as its workers' Python, so
    a session built the plain way works; Spark's other Python code keeps its own setting.  A Spark
    Connect session has no SparkContext on the client: the source is registered as it is, and the
    Connect server's workers run the Python its own PYSPARK_PYTHON names (pipeline/README.md)."""
    if _is_connect(spark):
        spark.dataSource.register(RaxdbDataSource)
        return
    sc = spark.sparkContext
    default = sc.pythonExec
    chosen = "PYSPARK_PYTHON" in os.environ or sc.getConf().get("spark.pyspark.python") is not None
    if not chosen and sc.master.startswith("local") and sys.executable:
        sc.pythonExec = sys.executable
    try:
        spark.dataSource.register(RaxdbDataSource)
    finally:
        sc.pythonExec = default


def _is_connect(spark) -> bool:
    # By the class's module, not isinstance: importing pyspark.sql.connect needs its extra deps.
    return type(spark).__module__.startswith("pyspark.sql.connect")


__all__ = ["NAME", "register"]
