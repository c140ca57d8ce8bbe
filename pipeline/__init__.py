"""raxdb on Spark: a PySpark (4.2+) Python Data Source for Redis streams, named `raxdb`.

    import raxdb.spark
    raxdb.spark.register(spark)
    df = spark.read.format("raxdb").option("streams", "events").load()

Batch reads, Structured Streaming reads (checkpointed per-stream offsets, admission control,
Trigger.AvailableNow, failOnDataLoss, consumer-group progress) and an exactly-once sink (XADD,
HSET, SET) over redis-py; it works against raxdb and any Redis 7 server.  Modules: `options`
(option parsing), `ids` (stream ID arithmetic), `connection` (redis-py plumbing), `planning`
(offsets, data loss, admission control, partitions), `convert` (XRANGE pages -> Arrow),
`source` (the DataSource and its readers), `sink` (the writers).  Documentation:
pipeline/README.md.  The name is not `redis` because a Scala data source of that name would win
the lookup.
"""

from __future__ import annotations

from raxdb.spark.source import RaxdbDataSource

NAME = "raxdb"


def register(spark) -> None:
    """Make `format("raxdb")` available in this SparkSession."""
    spark.dataSource.register(RaxdbDataSource)


__all__ = ["NAME", "register"]
