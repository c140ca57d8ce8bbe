"""The Structured Streaming job: page views per page per one-minute window of event time.

Two queries share the same source definition, each with its own checkpoint:
- `hashes`: update mode -> HSET counts:<window start> <page> <count> (one hash per window, always
  the current counts).  Spark's Python sinks take append and complete mode only, so the updated
  rows of each micro-batch are written with foreachBatch and the batch sink; its writeId
  `{queryId}:{batchId}:hashes` makes a batch replayed after a restart skip what it had written;
- `parquet`: append mode with a one-minute watermark -> only windows that can no longer change,
  as Parquet files (Spark's file sink is exactly-once through its own metadata log).

With the default Trigger.AvailableNow each query processes what the stream holds (in micro-batches
of at most `--batch` events) and stops; `--continuous` keeps them running every 5 seconds.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

import raxdb.spark


def spark_session(master: str = "local[*]") -> SparkSession:
    # Spark's Python workers must use this interpreter (the one that has pyspark and pipeline).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master(master).appName("raxdb-windowed-counts")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    raxdb.spark.register(spark)
    return spark


def windowed_counts(spark: SparkSession, connection: dict[str, str], stream: str,
                    max_per_trigger: int) -> DataFrame:
    events = (spark.readStream.format("raxdb")
              .schema("ms timestamp, page string")  # event time from the entry ID, one typed field
              .options(**connection)
              .option("streams", stream)
              .option("startingOffsets", "earliest")
              .option("maxRecordsPerTrigger", str(max_per_trigger))
              .load())
    return (events.withWatermark("ms", "1 minute")
            .groupBy(F.window("ms", "1 minute").alias("window"), "page")
            .count())


def start(spark: SparkSession, connection: dict[str, str], stream: str, out: Path,
          continuous: bool = False, max_per_trigger: int = 5000,
          prefix: str = "counts:") -> list[StreamingQuery]:
    counts = windowed_counts(spark, connection, stream, max_per_trigger)
    trigger = {"processingTime": "5 seconds"} if continuous else {"availableNow": True}
    def write_hashes(updated: DataFrame, batch_id: int) -> None:
        (updated
         .select(F.concat(F.lit(prefix), F.date_format("window.start", "yyyy-MM-dd'T'HH:mm"))
                 .alias("key"),
                 F.create_map("page", F.col("count").cast("string")).alias("fields"))
         .write.format("raxdb").mode("append").options(**connection)
         .option("command", "hset").option("key.column", "key").option("ttl", "86400")
         .option("writeId", "{queryId}:{batchId}:hashes")
         .save())

    hashes = (counts.writeStream.queryName("hashes").outputMode("update").foreachBatch(write_hashes)
              .option("checkpointLocation", str(out / "checkpoints" / "hashes"))
              .trigger(**trigger).start())
    parquet = (counts
               .select(F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                       "page", "count")
               .writeStream.queryName("parquet").outputMode("append").format("parquet")
               .option("path", str(out / "counts.parquet"))
               .option("checkpointLocation", str(out / "checkpoints" / "parquet"))
               .trigger(**trigger).start())
    return [hashes, parquet]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", default="6379")
    parser.add_argument("--stream", default="pageviews")
    parser.add_argument("--out", default="/tmp/raxdb-example", help="Parquet output and checkpoints")
    parser.add_argument("--batch", type=int, default=5000, help="maxRecordsPerTrigger")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--continuous", action="store_true", help="run every 5 s until Ctrl-C")
    args = parser.parse_args(argv)
    spark = spark_session(args.master)
    connection = {"host": args.host, "port": args.port}
    queries = start(spark, connection, args.stream, Path(args.out), args.continuous, args.batch)
    for query in queries:
        query.awaitTermination()
        batches = [p for p in query.recentProgress if p["numInputRows"]]
        print(f"query {query.name}: {len(batches)} micro-batches, "
              f"{sum(p['numInputRows'] for p in batches)} events")


if __name__ == "__main__":
    main()
