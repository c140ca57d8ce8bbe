"""`python -m raxdb.spark.examples`: produce events, run the windowed-counts job once, show results."""

from __future__ import annotations

import argparse
from pathlib import Path

import redis

from raxdb.spark.examples.produce import produce
from raxdb.spark.examples.windowed_counts import spark_session, start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split(":", 1)[1].strip())
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6379)
    parser.add_argument("--stream", default="pageviews")
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--out", default="/tmp/raxdb-example")
    args = parser.parse_args()

    client = redis.Redis(host=args.host, port=args.port, protocol=2, decode_responses=True)
    produce(redis.Redis(host=args.host, port=args.port, protocol=2), args.stream, args.events, args.minutes)
    print(f"1. XADDed {args.events} page views to {args.stream!r} (XLEN {client.xlen(args.stream)})")

    spark = spark_session()
    out = Path(args.out)
    for query in start(spark, {"host": args.host, "port": str(args.port)}, args.stream, out):
        query.awaitTermination()
        rows = sum(p["numInputRows"] for p in query.recentProgress)
        print(f"2. query {query.name!r} read {rows} events in {len(query.recentProgress)} micro-batches")

    windows = sorted(client.scan_iter("counts:*"))
    print(f"3. raxdb: {len(windows)} hashes, one per minute; the latest:")
    for key in windows[-3:]:
        counts = client.hgetall(key)
        print(f"   HGETALL {key} -> {dict(sorted(counts.items(), key=lambda kv: -int(kv[1])))}")
    finished = spark.read.parquet(str(out / "counts.parquet"))
    print(f"4. Parquet {out / 'counts.parquet'}: {finished.count()} (window, page) rows for closed windows "
          f"(the newest windows stay open until the watermark passes them)")
    finished.orderBy("window_start", "page").show(5, truncate=False)
    spark.stop()


if __name__ == "__main__":
    main()
