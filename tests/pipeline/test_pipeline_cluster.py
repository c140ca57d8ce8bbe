"""raxdb.spark on a Redis Cluster, in real Spark jobs (the suite's one SparkSession): three masters
with a replica each, all raxdb, all redis-server 7.0, and mixed.  For each cluster: a batch read
(glob over every master, masters and replicas) and a Trigger.AvailableNow streaming query into the
exactly-once sink (several output streams, so one task writes several slots), its progress kept
in a consumer group of each source, while the slots of every stream involved keep migrating
(MIGRATE, ASK, MOVED); then a master holding source and sink streams is SIGKILLed and its
replica takes over while a batch read and a streaming run go on.  Every check is by content: each
entry read or written once, none missing.

The helpers of tests/support/cluster.py build the clusters and move the slots."""

# ruff: noqa: F811  (the spark fixture imported from tests/support/pipeline_fixtures.py is a parameter)

from __future__ import annotations

import threading
import uuid

import pytest
import redis

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from raxdb.spark.cluster import key_slot  # noqa: E402
from tests.support.cluster import SlotMover, create_cluster, redirections, slot_owners, until  # noqa: E402
from tests.support.pipeline_fixtures import spark  # noqa: E402,F401

pytestmark = pytest.mark.oracle

PER_STREAM = 600
KINDS = {
    "raxdb": (["raxdb"] * 3, ["raxdb"] * 3),
    "redis": (["redis"] * 3, ["redis"] * 3),
    "mixed": (["raxdb", "redis", "raxdb"], ["redis", "raxdb", "redis"]),
}


class Cluster:
    def __init__(self, kinds: list[str], replicas: list[str]) -> None:
        self.nodes = create_cluster(kinds, replicas, node_timeout=2000)
        self.masters = self.nodes[:3]
        self.rc = redis.RedisCluster(host="127.0.0.1", port=self.masters[0].port, protocol=2)
        self.ns = f"c{uuid.uuid4().hex[:8]}:"
        self.dead: list = []

    def options(self, **extra) -> dict[str, str]:
        return {"host": "127.0.0.1", "port": str(self.masters[0].port), "retryTimeout": "60",
                "nodes": ",".join(f"127.0.0.1:{n.port}" for n in self.masters[1:]),
                **{k: str(v) for k, v in extra.items()}}

    def owner_id(self, key: str) -> str:
        alive = next(n for n in self.nodes if n not in self.dead)
        return slot_owners(alive)[key_slot(key)]

    def keys_on_each_master(self, prefix: str) -> list[str]:
        """One key name per master (by its slot), so that reads and writes touch all three."""
        chosen: dict[str, str] = {}
        for i in range(200):
            name = f"{prefix}{i}"
            chosen.setdefault(self.owner_id(name), name)
            if len(chosen) == 3:
                return sorted(chosen.values())
        raise AssertionError("no key for every master")

    def close(self) -> None:
        self.rc.close()
        for n in self.nodes:
            if n not in self.dead:
                n.stop()


@pytest.fixture(scope="module", params=list(KINDS))
def cluster(request):
    c = Cluster(*KINDS[request.param])
    yield c
    c.close()


def fill(rc: redis.RedisCluster, key: str, start: int, count: int) -> None:
    pipe = rc.pipeline()
    for i in range(start, start + count):
        pipe.xadd(key, {"n": i, "src": key})
    pipe.execute()


def numbers(rc: redis.RedisCluster, key: str) -> list[int]:
    return sorted(int(f[b"n"]) for _, f in rc.xrange(key))


class Migrations(threading.Thread):
    """Moves the slots of `keys` round the masters, one after another, until stopped (each slot
    held open until a client met an ASK there, as SlotMover does)."""

    def __init__(self, c: Cluster, keys: list[str]) -> None:
        super().__init__(daemon=True)
        self.mover = SlotMover(c.masters)
        self.slots = sorted({key_slot(k) for k in keys})
        self.done = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            turn = 0
            while not self.done.is_set():
                slot = self.slots[turn % len(self.slots)]
                owner = self.mover.owner[slot]
                i = next(i for i, n in enumerate(self.mover.nodes) if n.id == owner)
                self.mover.move([slot], self.mover.nodes[(i + 1) % 3])
                turn += 1
        except BaseException as e:
            self.error = e

    def __enter__(self) -> Migrations:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.mover._stop_asked.set()  # ends the hold of the batch under way
        self.join(120)
        self.mover.close()
        assert not self.is_alive() and self.error is None, self.error


def expected_rows(rc: redis.RedisCluster, keys: list[str]) -> list[tuple]:
    return sorted((k, i.decode(), int(f[b"n"])) for k in keys for i, f in rc.xrange(k))


def test_read_and_sink_while_slots_migrate(spark, cluster):
    c, ns = cluster, cluster.ns
    sources = c.keys_on_each_master(ns + "s")
    for j, key in enumerate(sources):
        fill(c.rc, key, j * 100_000, PER_STREAM)
    expected = expected_rows(c.rc, sources)
    outs = [k + ":out" for k in sources]
    for n in c.masters:
        n.conn.config_resetstat()

    with Migrations(c, sources + outs) as moving:
        rows = (spark.read.format("raxdb").options(**c.options(streams=ns + "s*", minPartitions=6, pageSize=100))
                .load().collect())
        assert sorted((r.stream, r.id, int(r.fields["n"])) for r in rows) == expected
        replica_rows = (spark.read.format("raxdb").options(**c.options(streams=",".join(sources),
                                                                         readFrom="replica")).load().collect())
        assert sorted((r.stream, r.id, int(r.fields["n"])) for r in replica_rows) == expected

        # The streaming query copies each source into <source>:out, exactly once, in micro-batches
        # of 700 while every source and output slot keeps moving; it publishes its progress as
        # consumer group "spark" of each source (XGROUP CREATE / SETID on the slot's master).
        query = (spark.readStream.format("raxdb")
                 .options(**c.options(streams=ns + "s*", startingOffsets="earliest", maxRecordsPerTrigger=700,
                                      pageSize=100, consumerGroup="spark")).load()
                 .selectExpr("concat(stream, ':out') as target", "fields")
                 .writeStream.format("raxdb").options(**c.options(**{"stream.column": "target", "batchSize": 100,
                                                                     "idempotency.prefix": ns + "m:"}))
                 .option("checkpointLocation", f"/tmp/{ns}ck").trigger(availableNow=True).start())
        query.awaitTermination()
        assert query.exception() is None
    assert moving.mover.slots_moved >= 1
    for j, (src, out) in enumerate(zip(sources, outs, strict=True)):
        assert numbers(c.rc, out) == list(range(j * 100_000, j * 100_000 + PER_STREAM)), src
    assert sum(p["numInputRows"] for p in query.recentProgress) == 3 * PER_STREAM
    for src in sources:  # each source's group, on whichever master holds it now, at its end
        group = c.rc.xinfo_groups(src)[0]
        assert (group["name"], group["last-delivered-id"], group["entries-read"], group["lag"]) == (
            b"spark", c.rc.xinfo_stream(src)["last-generated-id"], PER_STREAM, 0), src
    seen = redirections(c.masters)
    assert seen["MOVED"] + seen["ASK"] > 0, seen  # the clients did meet the migrations


def test_read_and_sink_through_failover(spark, cluster, tmp_path):
    c, ns = cluster, cluster.ns + "f:"
    sources = c.keys_on_each_master(ns + "s")
    for j, key in enumerate(sources):
        fill(c.rc, key, j * 100_000, PER_STREAM)
    expected = expected_rows(c.rc, sources)
    out = ns + "out"
    checkpoint = str(tmp_path / "ck")

    def stream_run():
        query = (spark.readStream.format("raxdb")
                 .options(**c.options(streams=ns + "s*", startingOffsets="earliest", maxRecordsPerTrigger=1000))
                 .load().selectExpr("fields")
                 .writeStream.format("raxdb").options(**c.options(stream=out, **{"idempotency.prefix": ns + "m:"}))
                 .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
        query.awaitTermination()
        assert query.exception() is None

    stream_run()
    # More entries, replicated (WAIT), then the master of the output stream dies: the next batch
    # read and streaming run plan, read and write while its replica takes over.
    for j, key in enumerate(sources):
        fill(c.rc, key, j * 100_000 + PER_STREAM, 200)
    victim = next(n for n in c.masters if n.id == c.owner_id(out))
    for m in c.masters:
        assert m.conn.execute_command("WAIT", 1, 10_000) == 1
    survivor = next(n for n in c.masters if n is not victim)
    victim.kill()
    c.dead.append(victim)

    rows = spark.read.format("raxdb").options(**c.options(streams=ns + "s*")).load().collect()
    assert sorted((r.stream, r.id, int(r.fields["n"])) for r in rows) == expected_rows(c.rc, sources)
    assert len(rows) == len(expected) + 600
    stream_run()
    until("a replica to take the dead master's slots", lambda: victim.id not in slot_owners(survivor))
    assert numbers(c.rc, out) == sorted(j * 100_000 + i for j in range(3) for i in range(PER_STREAM + 200))


# ---------------------------------------------------------------------------------------------
# Without Spark or a cluster: slots, tags, options


def test_key_slot_and_slot_tags():
    from redis.crc import key_slot as redis_py_slot

    from raxdb.spark.cluster import slot_tag, spread

    for key in (b"abc", b"{user1000}.following", b"a{}b", b"{}{a}", b"foo{bar}{zap}", b"\xff{z", b"", b"x" * 70):
        assert key_slot(key) == redis_py_slot(key), key
    assert key_slot("{tag}x") == key_slot(b"tag")
    assert all(key_slot("raxdb-sink:q:0:" + slot_tag(s)) == s for s in range(16384))
    assert spread(["a1", "a2", "a3", "b1", "c1", "c2"], lambda x: x[0]) == ["a1", "b1", "c1", "a2", "c2", "a3"]


def test_cluster_options(raxdb):
    from raxdb.spark.cluster import resolve
    from raxdb.spark.options import OptionError, ReadOptions

    base = {"streams": "s", "host": "127.0.0.1", "port": str(raxdb.port)}
    opts = ReadOptions.parse({**base, "nodes": "10.0.0.1:7000, [::1]:7001", "readFrom": "REPLICA"}, streaming=False)
    assert opts.connection.nodes == (("10.0.0.1", 7000), ("::1", 7001)) and opts.connection.read_from == "replica"
    assert opts.connection.cluster == "auto"
    for bad, match in (({"cluster": "maybe"}, "'cluster' must be one of"), ({"nodes": "h1"}, "'nodes' must be"),
                       ({"readFrom": "any"}, "'readFrom' must be one of")):
        with pytest.raises(OptionError, match=match):
            ReadOptions.parse({**base, **bad}, streaming=False)
    # A plain server: auto becomes false (one node, no cluster client), true is refused.
    assert resolve(ReadOptions.parse(base, streaming=False)).connection.cluster == "false"
    with pytest.raises(OptionError, match="is not a cluster node"):
        resolve(ReadOptions.parse({**base, "cluster": "true"}, streaming=False))


@pytest.mark.parametrize("kind", ["raxdb", "redis"])
def test_planning_waits_out_a_cluster_that_is_down(kind):
    """Between a master's death and its replica's promotion the survivors reply CLUSTERDOWN: the
    driver's planning (the XINFO pipeline) retries it as it retries a refused connection, instead
    of failing the query.  A node with no slots assigned gives the same reply until it has them."""
    from redis.exceptions import ClusterDownError

    from raxdb.spark import ids
    from raxdb.spark.connection import retrying
    from raxdb.spark.options import ReadOptions
    from raxdb.spark.planning import stream_infos
    from tests.support.cluster import start_node

    def written() -> bool:
        try:
            return node.conn.xadd("s", {"n": 1}, id="5-1") == "5-1"
        except ClusterDownError:  # a new master holds back for a moment before it turns ok
            return False

    node = start_node(kind)
    try:
        node.conn.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
        until("the node to serve its slots", written)
        node.conn.execute_command("CLUSTER", "DELSLOTSRANGE", 0, 16383)  # the key stays, unserved
        opts = ReadOptions.parse({"streams": "s", "port": str(node.port), "retryTimeout": "30"}, streaming=False)
        r = redis.Redis(port=node.port, protocol=2)
        with pytest.raises(ClusterDownError):
            stream_infos(r, ["s"])  # raised as itself, not folded into a ResponseError
        attempts = []

        def plan():
            attempts.append(1)
            if len(attempts) == 2:  # the cluster recovers between the first attempt and the second
                node.conn.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
            return stream_infos(r, ["s", "absent"])

        infos = retrying(opts.connection, "planning", plan)
        assert len(attempts) >= 2
        assert (infos["s"].last_id, infos["s"].length, infos["absent"].length) == (ids.parse("5-1"), 1, 0)
        r.close()
    finally:
        node.stop()
