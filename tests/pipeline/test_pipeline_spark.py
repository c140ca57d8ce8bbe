"""The pipeline inside real Spark jobs (one shared local[2,4] SparkSession), against redis-server
and raxdb: batch reads equal XRANGE; the sink stays exactly-once under injected task failures; a
Trigger.AvailableNow query reads every entry exactly once over several triggers and, killed in
the middle of a batch, resumes from its checkpoint with no loss and no duplicate; failOnDataLoss
raises or skips when trimming passed the checkpoint, and when it removed part of a micro-batch
replayed from the offset log, or when the stream was deleted and re-created; SIGKILL+restarts of
the server during a read and during a sink write leave the query running and exactly-once.  Spark actions are slow, so each test packs
several checks into few jobs."""

# ruff: noqa: F811  (pytest fixtures imported from tests/support/pipeline_fixtures.py are parameters here)

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest
import redis

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from pyspark.errors import StreamingQueryException  # noqa: E402

from tests.support.pipeline_fixtures import ns, options, rc, server, spark  # noqa: E402,F401


def fill(rc, key: str, count: int, start: int = 0, ids=None) -> None:
    pipe = rc.pipeline(transaction=False)
    for i in range(start, start + count):
        pipe.xadd(key, {"n": i, "kind": "even" if i % 2 == 0 else "odd"},
                  id=ids(i) if ids else "*")
    pipe.execute()


def out_numbers(rc, key: str) -> list[int]:
    return sorted(int(fields[b"n"]) for _, fields in rc.xrange(key))


def test_batch_read_equals_xrange(spark, server, rc, ns):
    a, b = ns + "s:a", ns + "s:b"
    fill(rc, a, 300, ids=lambda i: f"{1000 + i // 3}-{i % 3}")
    fill(rc, b, 50, start=500, ids=lambda i: f"{i}-7")
    opts = options(server, streams=ns + "s:*", minPartitions=5,
                   startingOffsets=json.dumps({a: "1010-1"}), endingOffsets="1090")
    df = spark.read.format("raxdb").options(**opts).load()
    assert df.rdd.getNumPartitions() == 5
    rows = df.collect()
    expected = [(a, i.decode(), {k.decode(): v.decode() for k, v in f.items()})
                for i, f in rc.xrange(a, "(1010-1", "(1090-0")]
    expected += [(b, i.decode(), {k.decode(): v.decode() for k, v in f.items()})
                 for i, f in rc.xrange(b, "-", "(1090-0")]
    got = sorted(((r.stream, r.id, dict(r.fields)) for r in rows), key=lambda t: (t[0], t[1]))
    assert got == sorted(expected, key=lambda t: (t[0], t[1])) and len(got) == 50 + 238
    assert {(r.ms, r.seq) for r in rows if r.id == "1011-2"} == {(1011, 2)}

    typed = (spark.read.format("raxdb").schema("stream string, ms timestamp, n int, kind string")
             .options(**options(server, streams=a, startingOffsets="1099")).load().collect())
    assert [(r.stream, r.ms.timestamp(), r.n, r.kind) for r in typed] == [
        (a, 1.099, n, "odd" if n % 2 else "even") for n in (297, 298, 299)]


def test_batch_sink_exactly_once_under_task_failures(spark, server, rc, ns):
    rc.set(ns + "fault", 1)
    out = ns + "out"
    # Partition 0 fails after its transaction committed, partition 1 after queueing its commands
    # in MULTI but before EXEC; each is retried once.
    (spark.range(0, 1000, numPartitions=2).selectExpr("id as n", "concat('e', id) as name")
     .write.format("raxdb_faulty").mode("append")
     .options(**options(server, stream=out, batchSize=64, **{
         "idempotency.prefix": ns + "m:", "fault.key": ns + "fault", "fault.when": "mixed"}))
     .save())
    assert rc.get(ns + "fault:count") == b"2"  # every partition's first attempt failed
    assert out_numbers(rc, out) == list(range(1000))  # and the retries wrote each row once
    assert rc.keys(ns + "m:*") == []  # markers go when the job commits


def test_stream_available_now_restart_exactly_once(spark, server, rc, ns, tmp_path):
    src, out = ns + "src", ns + "out"
    fill(rc, src + ":a", 200)
    fill(rc, src + ":b", 100, start=1000)
    checkpoint = str(tmp_path / "checkpoint")

    def start(**fault):
        stream = (spark.readStream.format("raxdb")
                  .options(**options(server, streams=src + ":*", startingOffsets="earliest",
                                     maxRecordsPerTrigger=100, consumerGroup="spark")).load())
        return (stream.writeStream.format("raxdb_faulty")
                .options(**options(server, stream=out, **{"idempotency.prefix": ns + "m:"}, **fault))
                .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())

    # Run 1 dies in micro-batch 1, on every attempt, after the partitions' writes committed.
    rc.set(ns + "fault", 1)
    query = start(**{"fault.key": ns + "fault", "fault.batch": "1", "fault.attempts": 99})
    with pytest.raises(StreamingQueryException, match="injected failure"):
        query.awaitTermination()
    assert int(rc.get(ns + "fault:count")) >= 2
    assert rc.xlen(out) == 200  # batches 0 and 1 are in the sink; batch 1 is not checkpointed

    # More events arrive while the query is down; run 2 restarts from the checkpoint.
    fill(rc, src + ":a", 50, start=200)
    rc.delete(ns + "fault")
    query = start()
    query.awaitTermination()
    assert query.exception() is None
    assert out_numbers(rc, out) == list(range(250)) + list(range(1000, 1100))

    progress = [p for p in query.recentProgress if p["numInputRows"]]
    assert len(progress) >= 3 and all(p["numInputRows"] <= 100 for p in progress)
    assert sum(p["numInputRows"] for p in progress) == 250  # batch 1 replayed, then 150 new
    source = query.lastProgress["sources"][0]
    end = source["endOffset"] if isinstance(source["endOffset"], dict) else json.loads(source["endOffset"])
    assert end[src + ":a"]["entriesRead"] == 250 and end[src + ":b"]["entriesRead"] == 100
    for key, read in ((src + ":a", 250), (src + ":b", 100)):
        group = rc.xinfo_groups(key)[0]
        assert (group["entries-read"], group["lag"]) == (read, 0)


def test_stream_fail_on_data_loss(spark, server, rc, ns, tmp_path):
    key, out = ns + "t", ns + "out"
    fill(rc, key, 10)
    checkpoint = str(tmp_path / "checkpoint")

    def run(fail_on_data_loss: str):
        return (spark.readStream.format("raxdb")
                .options(**options(server, streams=key, startingOffsets="earliest",
                                   failOnDataLoss=fail_on_data_loss)).load()
                .writeStream.format("raxdb").options(**options(server, stream=out))
                .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())

    run("true").awaitTermination()
    assert out_numbers(rc, out) == list(range(10))

    fill(rc, key, 10, start=10)
    rc.xtrim(key, maxlen=4, approximate=False)  # entries 10..15 go before the query read them
    with pytest.raises(StreamingQueryException, match="6 entries .* were trimmed"):
        run("true").awaitTermination()
    assert out_numbers(rc, out) == list(range(10))

    run("false").awaitTermination()
    assert out_numbers(rc, out) == list(range(10)) + [16, 17, 18, 19]


@pytest.mark.parametrize("server", ["raxdb"], indirect=True)  # once per suite: Spark time is dear
def test_example_pipeline(spark, server, rc, ns, tmp_path):
    """pipeline/examples end to end: XADD events -> windowed counts -> hashes and Parquet."""
    from collections import Counter

    from raxdb.spark.examples.produce import produce
    from raxdb.spark.examples.windowed_counts import start

    stream = ns + "pageviews"
    produce(rc, stream, 3000, minutes=4)
    expected = Counter((int(i.split(b"-")[0]) // 60_000, f[b"page"].decode()) for i, f in rc.xrange(stream))
    for query in start(spark, options(server), stream, tmp_path, max_per_trigger=1000, prefix=ns + "counts:"):
        query.awaitTermination()
        assert query.exception() is None
    hashes = [rc.hgetall(k) for k in rc.keys(ns + "counts:*")]
    assert len(hashes) == len({minute for minute, _ in expected})
    per_page = Counter()
    for counts in hashes:
        per_page.update({page.decode(): int(n) for page, n in counts.items()})
    assert per_page == Counter(page for (_, page) in expected.elements())
    closed = spark.read.parquet(str(tmp_path / "counts.parquet")).collect()
    assert closed and all(expected[(int(r.window_start.timestamp()) // 60, r.page)] == r["count"]
                          for r in closed)
    # foreachBatch wrote with writeId {queryId}:{batchId}:hashes: only the last batch keeps markers
    ledgers = rc.keys("raxdb-sink:*:{queryId}:{batchId}:hashes:batches")
    assert len(ledgers) == 1 and len(rc.hkeys(ledgers[0])) == 1


def test_stream_replay_after_trim_is_data_loss(spark, server, rc, ns, tmp_path):
    """Run 1 dies in micro-batch 1 (entries 100..199 planned, nothing written); retention trims
    half of that range while the query is down; the replay from the offset log must say so."""
    key, out = ns + "src", ns + "out"
    fill(rc, key, 200)
    checkpoint = str(tmp_path / "checkpoint")

    def start(fail_on_data_loss: str = "true", **fault):
        return (spark.readStream.format("raxdb")
                .options(**options(server, streams=key, startingOffsets="earliest", maxRecordsPerTrigger=100,
                                   failOnDataLoss=fail_on_data_loss)).load()
                .writeStream.format("raxdb_faulty").options(**options(server, stream=out, **fault))
                .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())

    rc.set(ns + "fault", 1)
    query = start(**{"fault.key": ns + "fault", "fault.when": "mid-partition", "fault.batch": "1",
                     "fault.attempts": 99})
    with pytest.raises(StreamingQueryException, match="injected failure"):
        query.awaitTermination()
    assert out_numbers(rc, out) == list(range(100))

    rc.xtrim(key, maxlen=50, approximate=False)  # 100..149 of the planned batch go unread
    with pytest.raises(StreamingQueryException, match=r"DataLossError: 50 of the 100 entries of the micro-batch"):
        start().awaitTermination()
    assert out_numbers(rc, out) == list(range(100))

    query = start("false")
    query.awaitTermination()
    assert query.exception() is None
    assert out_numbers(rc, out) == list(range(100)) + list(range(150, 200))


def test_stream_recreated_stream_is_a_reset(spark, server, rc, ns, tmp_path):
    """A stream deleted and re-created with `*` IDs (all later than the checkpoint, fewer entries
    added than the checkpoint had read): failOnDataLoss=true fails, false reads the new stream
    from its start, in limited micro-batches (no negative backlog, no stall)."""
    key, out = ns + "src", ns + "out"
    fill(rc, key, 10)
    checkpoint = str(tmp_path / "checkpoint")

    def run(fail_on_data_loss: str):
        query = (spark.readStream.format("raxdb")
                 .options(**options(server, streams=key, startingOffsets="earliest", maxRecordsPerTrigger=2,
                                    failOnDataLoss=fail_on_data_loss)).load()
                 .writeStream.format("raxdb").options(**options(server, stream=out))
                 .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
        query.awaitTermination()
        return query

    run("true")
    assert out_numbers(rc, out) == list(range(10))
    rc.delete(key)
    fill(rc, key, 3, start=100)
    with pytest.raises(StreamingQueryException, match="was reset: it holds 3 entries ever added, fewer than the 10"):
        run("true")
    assert out_numbers(rc, out) == list(range(10))
    query = run("false")
    assert out_numbers(rc, out) == list(range(10)) + [100, 101, 102]
    assert sum(p["numInputRows"] for p in query.recentProgress) == 3


class RestartableServer:
    """A server of the test's own kind (raxdb or redis-server) with appendfsync always, that the
    test SIGKILLs and starts again on the same port and data, as a crash and a supervisor would."""

    def __init__(self, kind: str, directory) -> None:
        from tests.support.servers import free_port

        self.kind, self.dir, self.port = kind, str(directory), free_port()
        self.process = self._start()

    def _start(self):
        from tests.support.servers import start_raxdb, start_redis

        starter = start_raxdb if self.kind == "raxdb" else start_redis
        return starter("--appendonly", "yes", "--appendfsync", "always", "--port", str(self.port), cwd=self.dir)

    def restart(self) -> None:
        self.process.proc.kill()
        self.process.proc.wait()
        self.process = self._start()

    def restart_when_asked(self, signal_keys: list[str], times: int) -> threading.Thread:
        """A thread that restarts the server each time a task RPUSHes one of `signal_keys`."""
        def loop() -> None:
            for _ in range(times):
                client = redis.Redis(port=self.port, protocol=2, socket_timeout=None)
                try:
                    if client.blpop(signal_keys, timeout=300) is None:
                        return
                finally:
                    client.close()
                self.restart()

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self.process.stop()


def test_stream_survives_server_restarts(spark, server, ns, tmp_path):
    """The server is SIGKILLed and restarted while a micro-batch reads (after its first page) and
    while another writes (rows queued in MULTI, no EXEC yet): the query goes on without a task
    retry, and every entry reaches the sink exactly once."""
    own = RestartableServer(server.name, tmp_path)
    try:
        rc = redis.Redis(port=own.port, protocol=2)
        src, out = ns + "src", ns + "out"
        fill(rc, src, 400)
        rc.set(ns + "read", 1)
        rc.set(ns + "write", 1)
        restarter = own.restart_when_asked([ns + "read:restart", ns + "write:restart"], times=2)
        query = (spark.readStream.format("raxdb_faulty")
                 .options(**options(own, streams=src, startingOffsets="earliest", maxRecordsPerTrigger=200,
                                    pageSize=50, **{"fault.key": ns + "read", "fault.when": "restart",
                                                    "fault.batch": "0"})).load()
                 .writeStream.format("raxdb_faulty")
                 .options(**options(own, stream=out, batchSize=20, **{
                     "fault.key": ns + "write", "fault.when": "restart", "fault.batch": "1"}))
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
        query.awaitTermination()
        restarter.join(60)
        assert not restarter.is_alive()  # both restarts happened
        rc = redis.Redis(port=own.port, protocol=2)
        assert rc.exists(ns + "read", ns + "write") == 0  # both switches were used
        assert rc.get(ns + "read:retried") is None and rc.get(ns + "write:retried") is None
        assert out_numbers(rc, out) == list(range(400))
    finally:
        own.stop()


@pytest.mark.spark
@pytest.mark.parametrize("server", ["raxdb"], indirect=True)
def test_user_built_session_without_pyspark_python(server, rc, ns, tmp_path):
    """A job that builds its own SparkSession the plain way, with neither PYSPARK_PYTHON nor
    PYTHONPATH set and run outside the checkout, reads a stream (its workers would otherwise run
    the `python3` on PATH).  A process of its own: one JVM holds one SparkContext."""
    key = ns + "s"
    fill(rc, key, 25)
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(f"""
        from pyspark.sql import SparkSession

        import raxdb.spark

        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        raxdb.spark.register(spark)
        rows = (spark.read.format("raxdb").option("host", "127.0.0.1").option("port", {server.port})
                .option("streams", {key!r}).load().collect())
        print("ROWS", sorted(int(r.fields["n"]) for r in rows))
        spark.stop()
    """))
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH")}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert f"ROWS {list(range(25))}" in done.stdout, done.stdout + done.stderr[-3000:]


@pytest.mark.parametrize("server", ["raxdb"], indirect=True)  # client-side logic: one server is enough
def test_stream_min_records_waits_then_fires_and_max_delay_lets_less_through(spark, server, rc, ns, tmp_path):
    """minRecordsPerTrigger holds micro-batches back until enough entries have arrived; a short
    maxTriggerDelay lets a smaller batch through.  query.processAllAvailable() returns once a
    trigger started after the call found nothing to run: the event awaited here (no sleeps)."""
    out = ns + "out"

    def start(key: str, delay: str):
        return (spark.readStream.format("raxdb")
                .options(**options(server, streams=key, startingOffsets="earliest", minRecordsPerTrigger=50,
                                   maxTriggerDelay=delay)).load()
                .writeStream.format("raxdb").options(**options(server, stream=out))
                .option("checkpointLocation", str(tmp_path / key)).start())

    query = start(ns + "slow", "1 hour")
    try:
        query.processAllAvailable()  # the run's first trigger (no stream yet) starts the delay's clock
        fill(rc, ns + "slow", 20)
        query.processAllAvailable()  # a trigger saw the 20 entries and held them back
        assert rc.xlen(out) == 0
        fill(rc, ns + "slow", 30, start=20)
        query.processAllAvailable()
        assert out_numbers(rc, out) == list(range(50))
        assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [50]
    finally:
        query.stop()

    # A delay shorter than the pause between two triggers (Spark polls every 10 ms): every trigger
    # is past it, so 20 entries, fewer than the minimum, are read at once.
    query = start(ns + "fast", "1ms")
    try:
        query.processAllAvailable()
        fill(rc, ns + "fast", 20, start=100)
        query.processAllAvailable()
        assert out_numbers(rc, out) == list(range(50)) + list(range(100, 120))
    finally:
        query.stop()


def test_stream_min_partitions_reads_one_backlog_in_parallel(spark, server, rc, ns, tmp_path):
    """minPartitions in a streaming query: each micro-batch of one stream's backlog (cut by
    maxRecordsPerTrigger inside runs of IDs sharing a millisecond) runs as that many tasks, and
    every entry arrives exactly once."""
    from pyspark.sql import functions as F

    key = ns + "big"
    fill(rc, key, 1200, ids=lambda i: f"{7000 + i // 6}-{i % 6}")
    seen: list[list[tuple[int, int]]] = []

    def each(df, _batch_id):
        seen.append([(r.p, r.n) for r in df.select(F.spark_partition_id().alias("p"),
                                                  F.col("fields")["n"].cast("int").alias("n")).collect()])

    query = (spark.readStream.format("raxdb")
             .options(**options(server, streams=key, startingOffsets="earliest", minPartitions=4,
                                maxRecordsPerTrigger=500)).load()
             .writeStream.foreachBatch(each).option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None
    assert [len(rows) for rows in seen] == [500, 500, 200]
    assert [len({p for p, _ in rows}) for rows in seen] == [4, 4, 4]  # four non-empty tasks each
    assert sorted(n for rows in seen for _, n in rows) == list(range(1200))
