"""raxdb.spark from a Spark Connect session: a batch read, a batch write and a Trigger.AvailableNow
streaming copy through a local Connect server (`SparkSession.builder.remote("local[2]")`), against
raxdb.  The session runs in a child process: a Connect session cannot share this process with the
suite's classic SparkSession.  Skipped when pyspark's connect extra (pandas, grpcio, ...) is
missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import redis

pytest.importorskip("pyspark")
for module in ("pandas", "grpc", "google.rpc", "zstandard"):
    pytest.importorskip(module, reason="pyspark[connect] is not installed")

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent("""
    import json, os, sys, tempfile
    from pyspark.sql import SparkSession
    import raxdb.spark

    port, src, out, copy = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    conn = {"host": "127.0.0.1", "port": port}
    spark = SparkSession.builder.remote("local[2]").getOrCreate()
    raxdb.spark.register(spark)
    rows = spark.read.format("raxdb").options(**conn).option("streams", src).load().collect()
    (spark.range(0, 50, numPartitions=2).selectExpr("id as n").write.format("raxdb").options(**conn)
     .option("stream", out).mode("append").save())
    checkpoint = tempfile.mkdtemp()
    query = (spark.readStream.format("raxdb").options(**conn).option("streams", src)
             .option("startingOffsets", "earliest").option("maxRecordsPerTrigger", "40").load()
             .selectExpr("fields").writeStream.format("raxdb").options(**conn).option("stream", copy)
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    query.awaitTermination()
    print("RESULT " + json.dumps({"session": type(spark).__module__, "read": sorted(int(r.fields["n"]) for r in rows),
                                  "batches": len([f for f in os.listdir(os.path.join(checkpoint, "commits")) if f.isdigit()])}))
    spark.stop()
""")


@pytest.mark.spark
def test_connect_session_reads_and_writes(raxdb, tmp_path):
    r = redis.Redis(port=raxdb.port, protocol=2)
    src, out, copy = f"{tmp_path.name}:src", f"{tmp_path.name}:out", f"{tmp_path.name}:copy"
    for i in range(100):
        r.xadd(src, {"n": i})
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", CHILD, str(raxdb.port), src, out, copy], env=env,
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(lines[0][len("RESULT "):])
    assert result["session"].startswith("pyspark.sql.connect")
    assert result["read"] == list(range(100))
    assert sorted(int(f[b"n"]) for _, f in r.xrange(out)) == list(range(50))
    assert [int(f[b"n"]) for _, f in r.xrange(copy)] == list(range(100))
    assert result["batches"] == 3  # 40 + 40 + 20: admission control works through Connect too
    r.close()
