"""Replicas and failover in clusters that mix raxdb and redis-server 7.0 nodes.

`redis-cli --cluster create --cluster-replicas 1` builds 3 masters of one kind and 3 replicas of
the other; the replicas sync their masters' data and serve READONLY reads; every node lists the
same masters and replicas (CLUSTER NODES, SLOTS, SHARDS, REPLICAS).  A master killed with SIGKILL
is replaced by its replica (the election of the other kind's masters' votes), the cluster is ok
again on every node, and the old master, restarted, rejoins as the new master's replica.
CLUSTER FAILOVER moves a master's role to its replica with no acknowledged write lost, a raxdb
replica of a redis-server master and the reverse.  Where both kinds face the same situation their
error replies are compared.

Every wait polls the nodes with a deadline (no fixed sleeps)."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable

import pytest

from raxdb.storage.slots import key_hash_slot
from tests.integration.test_cluster_bus import Node as BusNode
from tests.support.diff import RawConnection, parse
from tests.support.servers import free_port, start_raxdb, start_redis

pytestmark = pytest.mark.oracle

DEADLINE_S = 40.0
NODE_TIMEOUT = "1500"  # small for fast failovers, not so small that a busy host fails nodes


class Node(BusNode):
    """A cluster node of either kind (its CLUSTER NODES, calls: test_cluster_bus.py's), which
    can be killed and started again on its port and directory."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        cport = free_port()
        start = start_raxdb if kind == "raxdb" else start_redis
        srv = start("--cluster-enabled", "yes", "--cluster-port", str(cport),
                    "--cluster-node-timeout", NODE_TIMEOUT, "--repl-diskless-sync-delay", "0")
        super().__init__(srv, cport)

    def info(self, section: str) -> dict[str, str]:
        text = parse(self.call("INFO", section)).decode()
        return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)

    def kill(self) -> None:
        """SIGKILL: no goodbye on the bus, no last save."""
        self.conn.close()
        self.srv.kill()

    def restart(self) -> None:
        """The same command line, port and directory (so its nodes.conf)."""
        self.srv = self.srv.restarted()
        self.conn = RawConnection(self.srv.port)


def _until(what: str, cond: Callable[[], bool], deadline_s: float = DEADLINE_S) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            if cond():
                return
        except (ConnectionError, OSError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def cluster(request):
    started: list[Node] = []

    def make(kinds: list[str]) -> list[Node]:
        nodes = [Node(k) for k in kinds]
        started.extend(nodes)
        return nodes

    failed = request.session.testsfailed
    yield make
    for n in started:
        if request.session.testsfailed > failed:  # what each node logged, for the report
            print(f"---- {n.kind} {n.srv.port} {n.id}\n" + "".join(n.srv.log[-60:]))
        try:
            n.close()
        except OSError:
            pass


def _cli() -> str:
    cli = shutil.which("redis-cli")
    if cli is None:
        pytest.skip("redis-cli not installed")
    return cli


def _create(nodes: list[Node]) -> None:
    """redis-cli --cluster create with one replica per master: the first three are masters."""
    out = subprocess.run([_cli(), "--cluster", "create", *(f"127.0.0.1:{n.srv.port}" for n in nodes),
                          "--cluster-replicas", "1", "--cluster-yes"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "[OK] All 16384 slots covered." in out.stdout


def _role(viewer: Node, n: Node) -> tuple[str, str]:
    """(flags without myself, master id) of `n` in `viewer`'s CLUSTER NODES."""
    line = viewer.nodes()[n.id]
    return line[2].replace("myself,", ""), line[3]


def _master_of(nodes: list[Node], n: Node) -> Node:
    name = _role(n, n)[1]
    return next(m for m in nodes if m.id == name)


def _agree(nodes: list[Node], masters: list[Node], pairs: dict[str, str]) -> bool:
    """Does every live node list `masters` as masters and each replica under its master
    (`pairs`: replica id -> master id), with the cluster ok?"""
    for viewer in nodes:
        if b"cluster_state:ok" not in viewer.call("CLUSTER", "INFO"):
            return False
        table = viewer.nodes()
        for m in masters:
            if "master" not in table[m.id][2] or "fail" in table[m.id][2].split(","):
                return False
        for r, m in pairs.items():
            if "slave" not in table[r][2] or table[r][3] != m:
                return False
    return True


def _owner(nodes: list[Node], key: bytes) -> Node:
    slot = key_hash_slot(key)
    for n in nodes:
        for item in n.nodes()[n.id][8:]:
            lo, _, hi = item.partition("-")
            if not item.startswith("[") and int(lo) <= slot <= int(hi or lo):
                return n
    raise AssertionError(f"nobody serves slot {slot}")


def _keys_of(master: Node, count: int, tag: str) -> list[bytes]:
    """`count` keys in the slots `master` serves (by its own CLUSTER NODES)."""
    ranges = []
    for item in master.nodes()[master.id][8:]:
        lo, _, hi = item.partition("-")
        ranges.append((int(lo), int(hi or lo)))
    out = []
    i = 0
    while len(out) < count:
        k = f"{tag}:{i}".encode()
        s = key_hash_slot(k)
        if any(lo <= s <= hi for lo, hi in ranges):
            out.append(k)
        i += 1
    return out


def _synced(replica: Node, master: Node) -> bool:
    rep = replica.info("replication")
    return rep.get("master_link_status") == "up" and \
        rep.get("slave_repl_offset") == master.info("replication")["master_repl_offset"]


def _check_topology(nodes: list[Node], masters: list[Node], replicas: list[Node]) -> dict[str, str]:
    """Each master has one replica, as every node sees it; the replicas sync, and are shown by
    CLUSTER REPLICAS, SLOTS and SHARDS on every node, and by their INFO replication."""
    pairs = {r.id: _role(r, r)[1] for r in replicas}
    assert sorted(pairs.values()) == sorted(m.id for m in masters)
    _until("every node to agree on masters and replicas", lambda: _agree(nodes, masters, pairs))
    by_id = {n.id: n for n in nodes}
    for r in replicas:
        master = by_id[pairs[r.id]]
        _until(f"{r.kind} replica to sync", lambda r=r, master=master: _synced(r, master))
        assert r.info("replication")["role"] == "slave"
        assert r.info("replication")["master_port"] == str(master.srv.port)
        for viewer in (master, r):
            listed = [parse(x).decode().split()[0] for x in _array(viewer.call("CLUSTER", "REPLICAS", master.id))]
            assert listed == [r.id]
    for viewer in nodes:
        for r in replicas:  # once its offset is known (isReplicaAvailable)
            _until("CLUSTER SLOTS to list the replica", lambda viewer=viewer, r=r:
                   r.id.encode() in viewer.call("CLUSTER", "SLOTS"))
        assert viewer.call("CLUSTER", "SLOTS").count(b"\r\n$40\r\n") == 6
        shards = viewer.call("CLUSTER", "SHARDS")
        assert shards.count(b"$7\r\nreplica\r\n") == 3 and shards.count(b"$6\r\nmaster\r\n") == 3
    # every node, of either kind, gives the same CLUSTER SLOTS, byte for byte, and the same
    # CLUSTER SHARDS but for the order of the shards and the offsets each node last heard
    assert len({viewer.call("CLUSTER", "SLOTS") for viewer in nodes}) == 1
    assert len({_shards(viewer) for viewer in nodes}) == 1
    return pairs


def _shards(viewer: Node) -> str:
    """CLUSTER SHARDS with the shards sorted and replication offsets left out."""
    out = []
    for shard in parse(viewer.call("CLUSTER", "SHARDS")):
        fields = dict(zip(shard[::2], shard[1::2], strict=True))
        nodes = [[x for pair in zip(n[::2], n[1::2], strict=True) if pair[0] != b"replication-offset" for x in pair]
                 for n in fields[b"nodes"]]
        out.append(repr((fields[b"slots"], nodes)))
    return "\n".join(sorted(out))


def _array(reply: bytes) -> list[bytes]:
    """The bulk strings of a flat RESP2 array reply, each as its raw frame."""
    lines = reply.split(b"\r\n")
    assert lines[0].startswith(b"*")
    out = []
    i = 1
    for _ in range(int(lines[0][1:])):
        out.append(lines[i] + b"\r\n" + lines[i + 1] + b"\r\n")
        i += 2
    return out


class Writer:
    """Writes key:N = N to the node serving `keys`' slots, following MOVED, in a thread; keeps
    the writes that were acknowledged (+OK)."""

    def __init__(self, target: Node, keys: list[bytes]) -> None:
        self.port = target.srv.port
        self.keys = keys
        self.acked: dict[bytes, bytes] = {}
        self.stop = threading.Event()
        self.errors: list[bytes] = []
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        conn = RawConnection(self.port)
        n = 0
        while not self.stop.is_set():
            k = self.keys[n % len(self.keys)]
            v = b"%d" % n
            reply = conn.call("SET", k, v)
            if reply == b"+OK\r\n":
                self.acked[k] = v
                n += 1
            elif reply.startswith(b"-MOVED"):
                conn.close()
                conn = RawConnection(int(reply.split(b":")[-1]))
            else:
                self.errors.append(reply)
                time.sleep(0.01)
        conn.close()

    def finish(self) -> dict[bytes, bytes]:
        self.stop.set()
        self.thread.join(30)
        return self.acked


def _manual_failover(nodes: list[Node], replica: Node) -> None:
    """CLUSTER FAILOVER on `replica` while a writer writes to its master's slots: the roles
    swap on every node, and every acknowledged write is on the new master."""
    master = _master_of(nodes, replica)
    keys = _keys_of(master, 50, f"mf{replica.srv.port}")
    writer = Writer(master, keys)
    try:
        _until("some writes", lambda: len(writer.acked) >= 20)
        assert replica.call("CLUSTER", "FAILOVER") == b"+OK\r\n"
        _until("the replica to be master everywhere", lambda: all(
            _role(v, replica)[0] == "master" and _role(v, master) == ("slave", replica.id) for v in nodes))
        acked_before = dict(writer.acked)
        _until("writes to the new master", lambda: len(writer.acked) > len(acked_before) or
               any(writer.acked[k] != v for k, v in acked_before.items()))
    finally:
        acked = writer.finish()
    assert not writer.errors, writer.errors[:3]
    for k, v in acked.items():
        assert replica.call("GET", k) == b"$%d\r\n%s\r\n" % (len(v), v), k
    _until("the old master to sync from its replica", lambda: _synced(master, replica))


def _same_error(rax: bytes, red: bytes, text: bytes) -> None:
    assert rax == red == b"-ERR " + text + b"\r\n", (rax, red)


@pytest.mark.parametrize(("masters_kind", "replicas_kind"), [("redis", "raxdb"), ("raxdb", "redis"), ("raxdb", "raxdb")])
def test_mixed_cluster_replicas_and_failover(cluster, masters_kind, replicas_kind):
    """3 masters of one kind, 3 replicas of the other (or all raxdb), made by redis-cli
    --cluster create: sync, READONLY, topology; a killed master replaced by its replica, the
    cluster ok on every node, the old master rejoining as a replica; manual failovers both ways;
    a raxdb replica restarted from its nodes.conf replicates again; CLUSTER RESET of a replica."""
    nodes = cluster([masters_kind] * 3 + [replicas_kind] * 3)
    masters, replicas = nodes[:3], nodes[3:]
    _create(nodes)
    pairs = _check_topology(nodes, masters, replicas)
    by_id = {n.id: n for n in nodes}
    # data written on the masters reaches the replicas; READONLY reads it there
    written: dict[bytes, Node] = {}
    for m in masters:
        for k in _keys_of(m, 20, "data"):
            assert m.call("SET", k, k) == b"+OK\r\n"
            written[k] = m
    for r in replicas:
        master = by_id[pairs[r.id]]
        _until("the replica to apply the writes", lambda r=r, master=master: _synced(r, master))
        k = next(k for k, m in written.items() if m is master)
        moved = b"-MOVED %d 127.0.0.1:%d\r\n" % (key_hash_slot(k), master.srv.port)
        assert r.call("GET", k) == moved
        assert r.call("READONLY") == b"+OK\r\n"
        assert r.call("GET", k) == b"$%d\r\n%s\r\n" % (len(k), k)
        assert r.call("SET", k, "x") == moved  # READONLY is for reads
        # a script's declared flags decide (getCommandFlags): one that may write is MOVED, a
        # no-writes one reads here
        assert r.call("EVAL", "#!lua\nreturn redis.call('del', KEYS[1])", "1", k) == moved
        assert r.call("EVAL", "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", "1", k) \
            == b"$%d\r\n%s\r\n" % (len(k), k)
        assert r.call("READWRITE") == b"+OK\r\n"
        assert r.call("REPLICAOF", "NO", "ONE") == b"-ERR REPLICAOF not allowed in cluster mode.\r\n"
    # SIGKILL a master: its replica (the other kind) is elected, the cluster is ok everywhere
    victim = masters[0]
    heir = by_id[next(r for r, m in pairs.items() if m == victim.id)]
    victim.kill()
    live = [n for n in nodes if n is not victim]
    _until("the replica to be promoted and the cluster ok on every node",
           lambda: _agree(live, [heir, *masters[1:]], {r: m for r, m in pairs.items() if r != heir.id}))
    for k, m in written.items():
        if m is victim:
            assert heir.call("GET", k) == b"$%d\r\n%s\r\n" % (len(k), k)
    # the old master comes back: a replica of its replacement
    victim.restart()
    _until("the old master to rejoin as a replica", lambda: all(_role(v, victim) == ("slave", heir.id) for v in nodes))
    _until("the old master to sync", lambda: _synced(victim, heir))
    # manual failovers: the old master takes its role back (a replica of the other kind than its
    # master), then a replica of the other kind on another shard.  (Not the heir again so soon:
    # a replica that won an election less than 4 s ago would count that election's votes again,
    # as Redis 7.0's clusterHandleSlaveFailover does, and lose to the newer config epoch.)
    _manual_failover(nodes, victim)
    _manual_failover(nodes, next(r for r in replicas if r is not heir))
    for n in nodes:
        assert b"cluster_state:ok" in n.call("CLUSTER", "INFO")
    # a raxdb replica killed and restarted: nodes.conf says whose replica it is, it syncs again
    rax_replica = next(n for n in nodes if n.kind == "raxdb" and _role(n, n)[0] == "slave")
    its_master = _master_of(nodes, rax_replica)
    # ... from its dump file, which names the master's history: loaded as a replica's (Redis's
    # loadDataFromDisk for a cluster replica), it continues with a partial resync
    assert rax_replica.call("SAVE") == b"+OK\r\n"
    partial = int(its_master.info("stats")["sync_partial_ok"])
    rax_replica.kill()
    rax_replica.restart()
    _until("the restarted replica to sync", lambda: _synced(rax_replica, its_master))
    assert _role(rax_replica, rax_replica) == ("slave", its_master.id)
    assert int(its_master.info("stats")["sync_partial_ok"]) == partial + 1
    assert rax_replica.info("replication")["master_replid"] == its_master.info("replication")["master_replid"]
    # CLUSTER RESET of a replica: a master again, its data and every other node forgotten
    assert parse(rax_replica.call("DBSIZE")) != 0
    assert rax_replica.call("CLUSTER", "RESET") == b"+OK\r\n"
    assert rax_replica.info("replication")["role"] == "master" and parse(rax_replica.call("DBSIZE")) == 0
    assert list(rax_replica.nodes()) == [rax_replica.id] and _role(rax_replica, rax_replica) == ("master", "-")


def _meet_all(nodes: list[Node]) -> None:
    for n in nodes[1:]:
        assert nodes[0].call("CLUSTER", "MEET", "127.0.0.1", n.srv.port, n.cport) == b"+OK\r\n"
    _until("every node to know every other", lambda: all(
        len(v.nodes()) == len(nodes) and not any("handshake" in f[2] for f in v.nodes().values()) for v in nodes))


def test_replicate_failover_force_takeover(cluster):
    """A cluster made by hand: CLUSTER REPLICATE on both kinds, the same errors from both kinds
    in the same roles, then with cluster-replica-no-failover (no automatic election):
    CLUSTER FAILOVER refused alike once the master is FAIL, FORCE elects a raxdb replica of a
    dead redis-server master (and a redis-server replica of a dead raxdb master), TAKEOVER
    makes a raxdb replica master without votes."""
    m_red, m_rax, m3, r1, r2, r3 = cluster(["redis", "raxdb", "redis", "raxdb", "redis", "raxdb"])
    nodes = [m_red, m_rax, m3, r1, r2, r3]
    for n, (lo, hi) in zip((m_red, m_rax, m3), ((0, 5460), (5461, 10922), (10923, 16383)), strict=True):
        assert n.call("CLUSTER", "ADDSLOTSRANGE", lo, hi) == b"+OK\r\n"
    _meet_all(nodes)
    # on masters with slots, each kind refuses alike
    for a, b in ((m_red, m_rax), (m_rax, m_red)):
        assert a.call("CLUSTER", "REPLICATE", b.id) == \
            b"-ERR To set a master the node must be empty and without assigned slots.\r\n"
        assert a.call("CLUSTER", "FAILOVER") == b"-ERR You should send CLUSTER FAILOVER to a replica\r\n"
        assert a.call("CLUSTER", "REPLICATE", a.id) == b"-ERR Can't replicate myself\r\n"
    # an empty master without slots may become a replica
    for r, m in ((r1, m_red), (r2, m_rax), (r3, m3)):
        assert r.call("CLUSTER", "REPLICATE", m.id) == b"+OK\r\n"
    _until("every node to see the replicas", lambda: _agree(nodes, [m_red, m_rax, m3],
                                                             {r1.id: m_red.id, r2.id: m_rax.id, r3.id: m3.id}))
    for r, m in ((r1, m_red), (r2, m_rax), (r3, m3)):
        _until("the replica to sync", lambda r=r, m=m: _synced(r, m))
    for a in (m_red, m_rax):
        for r in (r1, r2):
            assert a.call("CLUSTER", "REPLICATE", r.id) == b"-ERR I can only replicate a master, not a replica.\r\n"
            assert a.call("CLUSTER", "REPLICAS", r.id) == b"-ERR The specified node is not a master\r\n"
    for r in (r1, r2):
        assert r.call("CLUSTER", "FAILOVER", "foo") == b"-ERR syntax error\r\n"
        assert r.call("CLUSTER", "REPLICAS", r.id) == b"-ERR The specified node is not a master\r\n"
        # a replica may switch master without being empty
        assert r.call("CLUSTER", "REPLICATE", r.id) == b"-ERR Can't replicate myself\r\n"
    for n in nodes:
        lines = [parse(x).decode().split() for x in _array(n.call("CLUSTER", "REPLICAS", m_rax.id))]
        assert [line[0] for line in lines] == [r2.id] and lines[0][2].replace("myself,", "") == "slave"
    keys = {k: m for m in (m_red, m_rax) for k in _keys_of(m, 10, "f")}
    for k, m in keys.items():
        assert m.call("SET", k, k) == b"+OK\r\n"
    for r, m in ((r1, m_red), (r2, m_rax)):
        _until("the replica to sync", lambda r=r, m=m: _synced(r, m))
        assert r.call("CONFIG", "SET", "cluster-replica-no-failover", "yes") == b"+OK\r\n"
    _until("every node to see the nofailover flags", lambda: all(
        "nofailover" in v.nodes()[r.id][2] for v in nodes for r in (r1, r2)))
    # the redis-server master dies: its raxdb replica does not stand, CLUSTER FAILOVER needs FORCE
    m_red.kill()
    _until("its replica to see it FAIL", lambda: "fail" in r1.nodes()[m_red.id][2].split(","))
    down = r1.call("CLUSTER", "FAILOVER")
    assert down == b"-ERR Master is down or failed, please use CLUSTER FAILOVER FORCE\r\n"
    assert _role(r1, r1) == ("slave,nofailover", m_red.id)  # no election without FORCE
    assert r1.call("CLUSTER", "FAILOVER", "FORCE") == b"+OK\r\n"
    live = [m_rax, m3, r1, r2, r3]
    _until("the raxdb replica elected", lambda: _agree(live, [r1, m_rax, m3], {r2.id: m_rax.id, r3.id: m3.id}))
    # the raxdb master dies: its redis-server replica answers alike, then FORCE wins raxdb's votes
    m_rax.kill()
    _until("its replica to see it FAIL", lambda: "fail" in r2.nodes()[m_rax.id][2].split(","))
    assert r2.call("CLUSTER", "FAILOVER") == down
    assert r2.call("CLUSTER", "FAILOVER", "FORCE") == b"+OK\r\n"
    live = [m3, r1, r2, r3]
    _until("the redis-server replica elected", lambda: _agree(live, [r1, r2, m3], {r3.id: m3.id}))
    for k, m in keys.items():
        heir = r1 if m is m_red else r2
        assert heir.call("GET", k) == b"$%d\r\n%s\r\n" % (len(k), k)
    # TAKEOVER: a raxdb replica of a live redis-server master, with a new epoch and no vote
    assert r3.call("CLUSTER", "FAILOVER", "TAKEOVER") == b"+OK\r\n"
    _until("the taker to be master everywhere", lambda: _agree(live, [r1, r2, r3], {m3.id: r3.id}))
    epochs = {name: int(f[6]) for name, f in r3.nodes().items()
              if "master" in f[2].split(",") and "fail" not in f[2].split(",")}
    assert epochs[r3.id] > max(e for name, e in epochs.items() if name != r3.id)  # the greatest, unique
    assert r3.srv.wait_log("Taking over the master (user request).")


def test_replica_migration(cluster):
    """A master whose only replica fails is orphaned: one of the two raxdb replicas of another
    master (the one with the smaller name, as clusterHandleSlaveMigration picks it) moves to it,
    leaving its old master cluster-migration-barrier (1) replica."""
    a, a1, a2, b, b1, c, c1 = cluster(["raxdb", "raxdb", "raxdb", "redis", "redis", "redis", "redis"])
    nodes = [a, a1, a2, b, b1, c, c1]
    for n, (lo, hi) in zip((a, b, c), ((0, 5460), (5461, 10922), (10923, 16383)), strict=True):
        assert n.call("CLUSTER", "ADDSLOTSRANGE", lo, hi) == b"+OK\r\n"
    _meet_all(nodes)
    for r, m in ((a1, a), (a2, a), (b1, b), (c1, c)):
        assert r.call("CLUSTER", "REPLICATE", m.id) == b"+OK\r\n"
    _until("every node to see the replicas", lambda: _agree(
        nodes, [a, b, c], {a1.id: a.id, a2.id: a.id, b1.id: b.id, c1.id: c.id}))
    mover, stayer = sorted((a1, a2), key=lambda n: n.id)
    b1.kill()
    live = [n for n in nodes if n is not b1]
    _until("the replica with the smaller name to migrate to the orphaned master", lambda: _agree(
        live, [a, b, c], {mover.id: b.id, stayer.id: a.id, c1.id: c.id}))
    assert mover.srv.wait_log(f"Migrating to orphaned master {b.id}")
    _until("the migrated replica to sync", lambda: _synced(mover, b))


def test_replica_validity_factor(cluster):
    """cluster-replica-validity-factor: a raxdb replica that has had nothing from its master for
    longer than repl-ping-replica-period + node timeout * factor when the master fails (here the
    master hangs: the link stays up, silent) does not stand for election, and says why once its
    master has been failing for node timeout + 5 s; CLUSTER FAILOVER FORCE still promotes it,
    and the master, back, becomes its replica."""
    m1, m2, m3, r = cluster(["redis", "redis", "redis", "raxdb"])
    nodes = [m1, m2, m3, r]
    for n, (lo, hi) in zip((m1, m2, m3), ((0, 5460), (5461, 10922), (10923, 16383)), strict=True):
        assert n.call("CLUSTER", "ADDSLOTSRANGE", lo, hi) == b"+OK\r\n"
    _meet_all(nodes)
    for name, value in (("cluster-replica-validity-factor", "1"), ("repl-ping-replica-period", "1")):
        assert r.call("CONFIG", "SET", name, value) == b"+OK\r\n"
    assert r.call("CLUSTER", "REPLICATE", m1.id) == b"+OK\r\n"
    _until("the replica known everywhere", lambda: _agree(nodes, [m1, m2, m3], {r.id: m1.id}))
    k = _keys_of(m1, 1, "v")[0]
    assert m1.call("SET", k, "1") == b"+OK\r\n"
    _until("the replica to sync", lambda: _synced(r, m1))
    # the master sends nothing for 4 s (its own ping period is 10 s), then hangs
    _until("4 s without the master's stream", lambda: int(r.info("replication")["master_last_io_seconds_ago"]) >= 4)
    with m1.srv.stopped():
        assert r.srv.wait_log("Currently unable to failover: Disconnected from master for longer than allowed.")
        assert _role(r, r) == ("slave", m1.id) and "fail" in r.nodes()[m1.id][2].split(",")
        assert r.call("CLUSTER", "FAILOVER", "FORCE") == b"+OK\r\n"
        _until("the replica elected anyway", lambda: _agree([m2, m3, r], [r, m2, m3], {}))
        assert r.call("GET", k) == b"$1\r\n1\r\n"
    _until("the old master to follow", lambda: _agree(nodes, [r, m2, m3], {m1.id: r.id}))


def test_manual_failover_times_out(cluster):
    """A manual failover not done in 5 s is aborted on both sides: the masters of a raxdb replica
    and of a redis-server replica hang right after CLUSTER FAILOVER; each replica gives up
    ("Manual failover timed out.") and stays a replica; the masters, back, take the late MFSTART,
    pause their writers, and let them go when their own 5 s are over."""
    m_red, m_rax, m3, r_rax, r_red = cluster(["redis", "raxdb", "redis", "raxdb", "redis"])
    nodes = [m_red, m_rax, m3, r_rax, r_red]
    for n, (lo, hi) in zip((m_red, m_rax, m3), ((0, 5460), (5461, 10922), (10923, 16383)), strict=True):
        assert n.call("CLUSTER", "ADDSLOTSRANGE", lo, hi) == b"+OK\r\n"
    _meet_all(nodes)
    for r, m in ((r_rax, m_red), (r_red, m_rax)):
        assert r.call("CLUSTER", "REPLICATE", m.id) == b"+OK\r\n"
        assert r.call("CONFIG", "SET", "cluster-replica-no-failover", "yes") == b"+OK\r\n"
    _until("the replicas known everywhere", lambda: _agree(nodes, [m_red, m_rax, m3], {r_rax.id: m_red.id,
                                                                                        r_red.id: m_rax.id}))
    for r, m in ((r_rax, m_red), (r_red, m_rax)):
        _until("the replica to sync", lambda r=r, m=m: _synced(r, m))
    # two masters of three hang: no majority can flag them FAIL
    with m_red.srv.stopped(), m_rax.srv.stopped():
        for r in (r_rax, r_red):
            assert r.call("CLUSTER", "FAILOVER") == b"+OK\r\n"
        for r in (r_rax, r_red):
            assert r.srv.wait_log("Manual failover timed out.")
    for r, m in ((r_rax, m_red), (r_red, m_rax)):
        assert m.srv.wait_log("Manual failover requested by replica " + r.id)
        assert m.srv.wait_log("Manual failover timed out.")
        k = _keys_of(m, 1, "after")[0]
        assert m.call("SET", k, "1") == b"+OK\r\n"  # writers go again
        _until("the replica to sync", lambda r=r, m=m: _synced(r, m))
        assert _role(r, r)[1] == m.id and "slave" in _role(m, r)[0]
