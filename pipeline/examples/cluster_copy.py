"""The cluster example: streams sharded over a Redis Cluster, read by Spark and copied back, once.

    python -m raxdb.spark.examples.cluster_copy --host 127.0.0.1 --port 7000 [--streams 6] [--events 10000]

XADDs `--events` entries into each of `--streams` streams `orders:<n>` (spread over the masters by
their hash slots), counts them per stream with a batch read (one glob, SCANned on every master),
then copies every stream to `orders:<n>:copy` with a Trigger.AvailableNow streaming query into the
exactly-once sink (per-slot transactions) and prints both counts.  Run it twice: the second run's
query reads only the new entries (its checkpoint is in `--out`), so each copy stays equal to its
source.  Nothing here is cluster-specific: the data source finds out from the seed node
(`cluster=auto`); docker/compose.spark-cluster.yaml runs it against the six-node raxdb cluster of
docker/compose.cluster.yaml.
"""

from __future__ import annotations

import argparse
import time

import redis

from raxdb.spark.examples.windowed_counts import spark_session


def wait_for_cluster(host: str, port: int, seconds: float = 180) -> None:
    """Until the node answers with cluster_state:ok (a compose stack's cluster-create job may still
    be joining the nodes), checking every second."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if redis.Redis(host=host, port=port).cluster("info").get("cluster_state") == "ok":
                return
        except redis.RedisError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"{host}:{port} is not part of a working cluster after {seconds:.0f}s")
        time.sleep(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=7000)
    parser.add_argument("--streams", type=int, default=6)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--out", default="/tmp/raxdb-cluster-example")
    parser.add_argument("--master", default="local[*]")
    args = parser.parse_args()

    wait_for_cluster(args.host, args.port)
    rc = redis.RedisCluster(host=args.host, port=args.port, protocol=2)
    keys = [f"orders:{n}" for n in range(args.streams)]
    for key in keys:
        pipe = rc.pipeline()
        for i in range(args.events):
            pipe.xadd(key, {"order": i, "amount": i % 97})
        pipe.execute()
    print(f"1. XADDed {args.events} entries to each of {', '.join(keys)} "
          f"(on {len(rc.get_primaries())} masters)")

    spark = spark_session(args.master)
    connection = {"host": args.host, "port": str(args.port)}
    counts = (spark.read.format("raxdb").options(**connection).option("streams", "orders:*")
              .load().where("stream not like '%:copy'").groupBy("stream").count().orderBy("stream").collect())
    print("2. batch read, entries per stream:", {r.stream: r["count"] for r in counts})

    query = (spark.readStream.format("raxdb").options(**connection)
             .option("streams", ",".join(keys)).option("startingOffsets", "earliest")
             .option("maxRecordsPerTrigger", str(5 * args.events)).load()
             .selectExpr("concat(stream, ':copy') as target", "fields")
             .writeStream.format("raxdb").options(**connection).option("stream.column", "target")
             .option("checkpointLocation", f"{args.out}/checkpoint").trigger(availableNow=True).start())
    query.awaitTermination()
    print("3. copies (XLEN source / copy):",
          {k: (rc.xlen(k), rc.xlen(k + ":copy")) for k in keys})
    spark.stop()
    rc.close()


if __name__ == "__main__":
    main()
