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
- cluster (`--modes cluster`, alone): the backlog sharded over three streams (N/3 each), each on
  its own master of a three-master cluster, read as above (batch into `noop` with `--partitions`,
  and an AvailableNow catch-up in one micro-batch) from one raxdb node, from a three-master raxdb
  cluster and from a three-master redis-server cluster (`--servers` is ignored).
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

STREAMS = 3


def fill_cluster(port: int, keys: list[str], entries: int) -> float:
    """entries / len(keys) entries into each key, through a RedisCluster (or a plain client)."""
    client = redis.RedisCluster(host="127.0.0.1", port=port, protocol=2) if len(keys) > 1 and \
        redis.Redis(port=port).info("cluster").get("cluster_enabled") else redis.Redis(port=port, protocol=2)
    started = time.perf_counter()
    for key in keys:
        client.delete(key)
        pipe = client.pipeline(transaction=False)
        for i in range(entries // len(keys)):
            pipe.execute_command("XADD", key, "*", "n", i, "kind", "even" if i % 2 == 0 else "odd",
                                 "payload", "x" * 32)
            if len(pipe) == 5000:
                pipe.execute()
        pipe.execute()
    elapsed = time.perf_counter() - started
    client.close()
    return elapsed


def bench_cluster(spark, name: str, port: int, keys: list[str], entries: int, partitions: int) -> dict:
    conn = {"host": "127.0.0.1", "port": str(port), "streams": ",".join(keys)}
    results = {f"xadd, {len(keys)} streams (redis-py pipelines)": entries / fill_cluster(port, keys, entries)}
    total = entries // len(keys) * len(keys)
    reader = spark.read.format("raxdb").options(**conn).option("minPartitions", str(partitions)).load()
    results["read -> DataFrame"] = total / timed(lambda: reader.write.format("noop").mode("overwrite").save())
    with tempfile.TemporaryDirectory(prefix="raxdb-bench-ckpt-") as checkpoint:
        started = time.perf_counter()
        query = (spark.readStream.format("raxdb").options(**conn).option("startingOffsets", "earliest").load()
                 .writeStream.format("noop").option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        seconds = time.perf_counter() - started
        assert sum(p["numInputRows"] for p in query.recentProgress) == total, name
    results["catch-up: AvailableNow, 1 micro-batch -> noop"] = total / seconds
    return results


def cluster_runs(spark, entries: int, partitions: int) -> dict[str, dict[str, float]]:
    """One raxdb node, then a three-master raxdb cluster and a three-master redis-server cluster,
    each holding the backlog in three streams (one per master on the clusters)."""
    from raxdb.spark.cluster import key_slot
    from tests.support.cluster import create_cluster, slot_owners

    results = {}
    single = start_raxdb()
    try:
        bench_cluster(spark, "warm-up", single.port, ["bench:w0", "bench:w1", "bench:w2"], 30_000, partitions)
        results["raxdb 1 node"] = bench_cluster(spark, "raxdb", single.port,
                                                [f"bench:s{i}" for i in range(STREAMS)], entries, partitions)
    finally:
        single.stop()
    for kind in ("raxdb", "redis"):
        nodes = create_cluster([kind] * 3)
        try:
            owners = slot_owners(nodes[0])
            keys: dict[str, str] = {}
            for i in range(500):
                keys.setdefault(owners[key_slot(f"bench:s{i}")], f"bench:s{i}")
            results[f"{kind} 3 masters"] = bench_cluster(spark, kind, nodes[0].port, sorted(keys.values()),
                                                         entries, partitions)
        finally:
            for n in nodes:
                n.stop()
    return results


def fill(port: int, key: str, entries: int) -> float:
    elapsed = fill_cluster(port, [key], entries)
    assert redis.Redis(port=port).xlen(key) == entries
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
    servers = [] if modes == {"cluster"} else args.servers.split(",")
    if "cluster" in modes:
        results = cluster_runs(spark, args.entries, args.partitions)
    for i, name in enumerate(servers):
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
    header = f"{'':50}" + "".join(f"{n:>16}" for n in names)
    if len(names) == 2:
        header += f"{names[0] + '/' + names[1]:>16}"
    print(header)
    for metric in metrics:
        line = f"{metric:50}" + "".join(f"{results[n][metric]:>16,.0f}" for n in names)
        if len(names) == 2:
            line += f"{results[names[0]][metric] / results[names[1]][metric]:>16.2f}"
        print(line)


if __name__ == "__main__":
    main()
