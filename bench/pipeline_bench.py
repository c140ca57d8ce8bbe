"""Spark pipeline throughput against raxdb and redis-server side by side.

    .venv/bin/python bench/pipeline_bench.py [--entries 1000000] [--partitions 4] [--servers raxdb,redis]

For each server (started here on free ports, like the tests do): XADD `--entries` entries (three
fields each) with pipelined redis-py, then
- read: `spark.read.format("raxdb")` of the whole stream into a DataFrame, materialised with the
  `noop` sink (every row is built and handed to the JVM, nothing is collected) -> entries/s;
- sink: a DataFrame of the same size written with `df.write.format("raxdb")` (XADD, idempotent:
  one MULTI/EXEC per partition) -> entries/s, then the same with idempotent=false (plain pipeline).
Everything runs on one local[2] SparkSession; a small warm-up job runs first so JVM and Python
worker start-up are not charged to the first server.  Numbers on a shared machine are noisy: the
ratio between servers measured in the same run is the meaningful figure.
"""

from __future__ import annotations

import argparse
import os
import sys
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


def bench_server(spark, name: str, port: int, entries: int, partitions: int) -> dict[str, float]:
    conn = {"host": "127.0.0.1", "port": str(port)}
    key = "bench:events"
    results = {"xadd (redis-py pipeline)": entries / fill(port, key, entries)}

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
    redis.Redis(port=port).delete(key)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--servers", default="raxdb,redis")
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
    results: dict[str, dict[str, float]] = {}
    for i, name in enumerate(args.servers.split(",")):
        server = starters[name]()
        try:
            if i == 0:  # warm-up: JVM, Python workers, code paths
                bench_server(spark, name, server.port, 20_000, args.partitions)
            results[name] = bench_server(spark, name, server.port, args.entries, args.partitions)
        finally:
            server.stop()
    spark.stop()

    names = list(results)
    metrics = list(next(iter(results.values())))
    print(f"\n{args.entries:,} entries, local[2], {args.partitions} partitions (entries/s)")
    header = f"{'':40}" + "".join(f"{n:>14}" for n in names)
    if len(names) == 2:
        header += f"{names[0] + '/' + names[1]:>16}"
    print(header)
    for metric in metrics:
        line = f"{metric:40}" + "".join(f"{results[n][metric]:>14,.0f}" for n in names)
        if len(names) == 2:
            line += f"{results[names[0]][metric] / results[names[1]][metric]:>16.2f}"
        print(line)


if __name__ == "__main__":
    main()
