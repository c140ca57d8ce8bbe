"""Spark pipeline throughput against raxdb and redis-server side by side.

    .venv/bin/python bench/pipeline_bench.py [--entries 1000000] [--partitions 4] [--servers raxdb,redis]
                                             [--modes batch,catchup] [--trigger-batch 100000]
                                             [--catchup-partitions 4]

For each server (started here on free ports, like the tests do): XADD `--entries` entries (three
fields each) with pipelined redis-py, then
- read: `spark.read.format("raxdb")` of the whole stream into a DataFrame, materialised with the
  `noop` sink (every row is built and handed to the JVM, nothing is collected) -> entries/s;
- sink: a DataFrame of the same size written with `df.write.format("raxdb")` (XADD, idempotent:
  one MULTI/EXEC per partition) -> entries/s, then the same with idempotent=false (plain pipeline);
- catch-up (`--modes catchup`): a Structured Streaming query from `startingOffsets=earliest` with
  `Trigger.AvailableNow` over the pre-filled stream, to the `noop` sink, timed from start() to its
  end (planning, the offset log and the commits included) -> entries/s; once as one micro-batch,
  once with `maxRecordsPerTrigger=--trigger-batch` (the backlog in several micro-batches, each
  planned with a driver-side scan).  By default a micro-batch reads one partition per stream, so
  one stream is read by one Python worker; a third catch-up row sets minPartitions to
  `--catchup-partitions` (0 skips it), so the one stream's backlog is read by that many tasks, as
  the batch read splits it into `--partitions`.  The number of rows each query read is checked
  against N.
Everything runs on one local[2] SparkSession; a small warm-up job runs first so JVM and Python
worker start-up are not charged to the first server.  Numbers on a shared machine are noisy: the
ratio between servers measured in the same run is the meaningful figure.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from tests.support.servers import start_raxdb, start_redis  # noqa: E402


def fill(port: int, key: str, entries: int) -> float:
    client = redis.Redis(port=port, protocol=2)
    client.delete(key)
    started = time.perf_counter()
    pipe = client.pipeline(transaction=False)
    for i in range(entries):
        pipe.execute_command("XADD", key, "*", "n", i, "kind", "even" if i % 2 == 0 else "odd",
                             "payload", "x" * 32)
        if len(pipe) == 5000:
            pipe.execute()
    pipe.execute()
    elapsed = time.perf_counter() - started
    assert client.xlen(key) == entries
    client.close()
    return elapsed


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def bench_server(spark, name: str, port: int, entries: int, partitions: int, modes: set[str],
                 trigger_batch: int, catchup_partitions: int) -> dict[str, float]:
    conn = {"host": "127.0.0.1", "port": str(port)}
    key = "bench:events"
    results = {"xadd (redis-py pipeline)": entries / fill(port, key, entries)}

    if "batch" in modes:
        results.update(batch_rows(spark, name, port, conn, key, entries, partitions))
    if "catchup" in modes:
        results["catch-up: AvailableNow, 1 micro-batch -> noop"] = entries / catch_up(
            spark, conn, key, entries, None)
        results[f"catch-up: AvailableNow, {trigger_batch:,}/trigger -> noop"] = entries / catch_up(
            spark, conn, key, entries, trigger_batch)
        if catchup_partitions:
            results[f"catch-up: AvailableNow, 1 micro-batch, minPartitions={catchup_partitions}"] = \
                entries / catch_up(spark, conn, key, entries, None, catchup_partitions)
    redis.Redis(port=port).delete(key)
    return results


def batch_rows(spark, name: str, port: int, conn: dict[str, str], key: str, entries: int,
               partitions: int) -> dict[str, float]:
    results = {}
    reader = (spark.read.format("raxdb").options(**conn).option("streams", key)
              .option("minPartitions", str(partitions)).load())
    results["read -> DataFrame"] = entries / timed(lambda: reader.write.format("noop").mode("overwrite").save())

    rows = spark.range(0, entries, numPartitions=partitions).selectExpr(
        "id as n", "if(id % 2 = 0, 'even', 'odd') as kind", "repeat('x', 32) as payload")
    for label, idempotent in (("sink XADD (MULTI/EXEC per partition)", "true"),
                              ("sink XADD (idempotent=false)", "false")):
        out = f"bench:out:{idempotent}"
        redis.Redis(port=port).delete(out)
        seconds = timed(lambda out=out, idempotent=idempotent: rows.write.format("raxdb").mode("append")
                        .options(**conn).option("stream", out).option("idempotent", idempotent).save())
        written = redis.Redis(port=port).xlen(out)
        assert written == entries, f"{name}: {written} entries written, expected {entries}"
        results[label] = entries / seconds
        redis.Redis(port=port).delete(out)
    return results


def catch_up(spark, conn: dict[str, str], key: str, entries: int, per_trigger: int | None,
             min_partitions: int | None = None) -> float:
    """Seconds for an AvailableNow query to read the whole stream from its start (a fresh
    checkpoint each time), to the noop sink."""
    reader = (spark.readStream.format("raxdb").options(**conn).option("streams", key)
              .option("startingOffsets", "earliest"))
    if per_trigger is not None:
        reader = reader.option("maxRecordsPerTrigger", str(per_trigger))
    if min_partitions is not None:
        reader = reader.option("minPartitions", str(min_partitions))
    with tempfile.TemporaryDirectory(prefix="raxdb-bench-ckpt-") as checkpoint:
        started = time.perf_counter()
        query = (reader.load().writeStream.format("noop").option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        seconds = time.perf_counter() - started
        assert query.exception() is None
        read = sum(p["numInputRows"] for p in query.recentProgress)
        assert read == entries, f"catch-up read {read} entries, expected {entries}"
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--servers", default="raxdb,redis")
    parser.add_argument("--modes", default="batch,catchup", help="batch, catchup or both")
    parser.add_argument("--trigger-batch", type=int, default=100_000,
                        help="maxRecordsPerTrigger of the second catch-up row")
    parser.add_argument("--catchup-partitions", type=int, default=4,
                        help="minPartitions of the third catch-up row (0: no such row)")
    args = parser.parse_args()

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    from pyspark.sql import SparkSession

    import raxdb.spark

    spark = (SparkSession.builder.master("local[2]").appName("raxdb-pipeline-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    raxdb.spark.register(spark)

    starters = {"raxdb": start_raxdb, "redis": start_redis}
    modes = set(args.modes.split(","))
    results: dict[str, dict[str, float]] = {}
    for i, name in enumerate(args.servers.split(",")):
        server = starters[name]()
        try:
            if i == 0:  # warm-up: JVM, Python workers, code paths
                bench_server(spark, name, server.port, 20_000, args.partitions, modes, 10_000,
                             args.catchup_partitions)
            results[name] = bench_server(spark, name, server.port, args.entries, args.partitions, modes,
                                         args.trigger_batch, args.catchup_partitions)
        finally:
            server.stop()
    spark.stop()

    names = list(results)
    metrics = list(next(iter(results.values())))
    load = os.getloadavg()
    print(f"\n{args.entries:,} entries, local[2], {args.partitions} partitions (entries/s);"
          f" load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    header = f"{'':50}" + "".join(f"{n:>14}" for n in names)
    if len(names) == 2:
        header += f"{names[0] + '/' + names[1]:>16}"
    print(header)
    for metric in metrics:
        line = f"{metric:50}" + "".join(f"{results[n][metric]:>14,.0f}" for n in names)
        if len(names) == 2:
            line += f"{results[names[0]][metric] / results[names[1]][metric]:>16.2f}"
        print(line)


if __name__ == "__main__":
    main()
