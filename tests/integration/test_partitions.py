"""Network partitions of real (namespaced) networks (#58): each node on a host of its own
(tests/support/netns.py), clients writing through a link that is never cut, the schedule cutting
and healing the links between nodes, and the checker (tests/support/history.py) reading what the
clients were told against what the nodes hold after healing.

Every scenario runs under the same schedule (the same seed) on raxdb nodes, on redis-server 7.0
nodes and, for the cluster, on a mixed cluster; each property Redis keeps, raxdb must keep too
(`compare`), and the results table says where the counts differ.

- replication: a master and two replicas with min-replicas-to-write 1 / max-lag 2 s, clients
  writing SET + WAIT 2; the master is cut from both replicas: it must refuse writes (NOREPLICAS)
  once its replicas' ACKs are older than the lag, a replica is promoted (REPLICAOF NO ONE, the other
  replica follows it: what a sentinel does), the links heal and the old master follows the new
  one.  Promise: a write whose WAIT counted every replica asked for is never lost.
- cluster: 3 masters + 3 replicas, clients writing SET + WAIT 1 to each key's owner; one master
  (with, in the long mode, sometimes another master's replica) is cut from the rest: the minority's
  master must refuse writes (CLUSTERDOWN) once cluster-node-timeout has passed, the majority fails
  over to its replica, and after healing every node agrees on one owner per slot and on the roles,
  the old master being its successor's replica.  In the long mode's pair rounds the master is cut
  off with its own replica: the majority cannot fail over and, its slots uncovered, refuses writes
  too; healed, one of the pair is master (the replica may take over late, in Redis as in raxdb:
  counted).  Promise: a write whose WAIT 1 counted the replica is never lost.

Short mode (make test): one round each.  Long mode, by hand (docs/testing.md, Partitions):
PARTITION_ROUNDS=20 PARTITION_CLIENTS=4 PARTITION_REPORT=/tmp/partitions.md: more rounds on the same
nodes, random victims, minority sides, lossy and slowed links (seeded by PARTITION_SEED).

Every wait is for a state (INFO replication, CLUSTER INFO/NODES) with a deadline; nothing sleeps
to let time pass, nothing asserts on durations.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
from redis.crc import key_slot

from tests.support import netns
from tests.support.cluster import ClusterNode, join_cluster, slot_owners, until
from tests.support.history import Clients, History, Write, check
from tests.support.servers import free_port, start_raxdb, start_redis

ROUNDS = int(os.environ.get("PARTITION_ROUNDS", "1"))
CLIENTS = int(os.environ.get("PARTITION_CLIENTS", "2"))
SEED = int(os.environ.get("PARTITION_SEED", "58"))
NODE_TIMEOUT = int(os.environ.get("PARTITION_NODE_TIMEOUT", "1500"))
REPORT = os.environ.get("PARTITION_REPORT")
LONG = ROUNDS > 1
# by hand: the runs to make, e.g. PARTITION_ONLY=raxdb (the comparison needs redis, listed first)
ONLY = os.environ.get("PARTITION_ONLY", "redis,raxdb,mixed").split(",")
# writes under the promise each phase must see before the schedule moves on (events, not time)
PER_PHASE = 10 if LONG else 4


@pytest.fixture
def networks() -> Iterator[Callable[[], netns.Network]]:
    """Makes private networks (one per run, so the runs under comparison never meet); all deleted
    at the end, on failure too.  Skips where namespaces cannot be made."""
    reason = netns.unavailable()
    if reason:
        pytest.skip(reason)
    made: list[netns.Network] = []

    def make() -> netns.Network:
        made.append(netns.Network())
        return made[-1]

    try:
        yield make
    finally:
        for network in made:
            network.close()


def quiet(cond: Callable[[], bool]) -> Callable[[], bool]:
    """`cond`, False while a node cannot answer it (mid-failover, or behind a cut link)."""
    def probe() -> bool:
        try:
            return cond()
        except (redis.RedisError, OSError):
            return False
    return probe


@dataclass(eq=False)
class Placed:
    """A server on a host, with the test's admin connection to it (through the client host)."""
    host: netns.Host
    kind: str
    node: ClusterNode

    @property
    def addr(self) -> str:
        return f"{self.host.ip}:{self.node.port}"

    @property
    def conn(self) -> redis.Redis:
        return self.node.conn


def start_nodes(net: netns.Network, client: netns.Host, kinds: list[str], *extra: str) -> list[Placed]:
    """One server per kind, each on a new host, started in parallel; all stopped if one fails."""
    hosts = [net.add_host(f"n{i}") for i in range(len(kinds))]

    def one(host: netns.Host, kind: str) -> Placed:
        start = start_raxdb if kind == "raxdb" else start_redis
        srv = start("--protected-mode", "no", "--repl-diskless-sync-delay", "0", *extra,
                    bind=host.ip, prefix=host.exec_prefix())
        return Placed(host, kind, ClusterNode(srv, net.client(client, host.ip, srv.port, socket_timeout=30)))

    with ThreadPoolExecutor(len(kinds)) as pool:
        futures = [pool.submit(one, h, k) for h, k in zip(hosts, kinds, strict=True)]
    placed, errors = [], []
    for f in futures:
        try:
            placed.append(f.result())
        except Exception as e:  # noqa: BLE001 - re-raised below, after the others are stopped
            errors.append(e)
    if errors:
        stop_all(placed)
        raise errors[0]
    return placed


def stop_all(placed: list[Placed]) -> None:
    for p in placed:
        p.node.stop()


def read_values(conn: redis.Redis, keys: list[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    pipe = conn.pipeline(transaction=False)
    for k in keys:
        pipe.get(k)
    for k, v in zip(keys, pipe.execute(), strict=True):
        out[k] = v
    return out


@dataclass
class Result:
    """One scenario's run: the checker's verdict and the properties the schedule observed."""
    name: str
    rounds: int = 0
    verdict: dict[str, object] = field(default_factory=dict)
    props: dict[str, bool] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    rounds_by_kind: dict[bool, int] = field(default_factory=dict)  # cluster: {pair round?: count}
    swapped: int = 0  # cluster: pair rounds after which the replica had taken over anyway

    def row(self) -> str:
        v = self.verdict
        props = " ".join(f"{k}={'yes' if ok else 'NO'}" for k, ok in self.props.items())
        pairs = self.rounds_by_kind.get(True, 0)
        rounds = f"{self.rounds} ({pairs} pair, {self.swapped} swapped)" if pairs else str(self.rounds)
        return (f"| {self.name} | {rounds} | {v['acked']} | {v['promised']} | {v['lost']} | "
                f"{v['lost_unpromised']} | {v['refused']} | {v['verdict']} | {props} |")


def compare(results: list[Result]) -> None:
    """The first result is redis-server's: each property it kept (and its verdict, if ok), every
    other run must keep; the rows go to the report (and to pytest's output)."""
    theirs = results[0]
    rows = [r.row() for r in results]
    print("\n" + "\n".join(rows))
    if REPORT:
        with open(REPORT, "a") as f:
            f.write("\n".join(rows) + "\n")
    for ours in results[1:]:
        worse = [k for k, ok in theirs.props.items() if ok and not ours.props.get(k)]
        if theirs.verdict["verdict"] == "ok" and ours.verdict["verdict"] != "ok":
            worse.append(f"verdict {ours.verdict['verdict']}: {ours.notes}")
        assert not worse, f"{ours.name} differs from {theirs.name}: {worse}"
    for r in results:
        assert r.verdict["verdict"] == "ok", f"{r.name}: {r.notes}"


# ---- a master, two replicas, min-replicas-to-write and WAIT -------------------------------------
def replication_run(net: netns.Network, name: str, kinds: list[str], rng: random.Random) -> Result:
    client = net.add_host("client")
    nodes = start_nodes(net, client, kinds, "--min-replicas-to-write", "1", "--min-replicas-max-lag", "2")
    result = Result(f"replication {name}", ROUNDS)
    history = History()
    state: dict[str, Any] = {"master": nodes[0], "need": 2}

    def op(_client: int, key: str, value: str, w: Write) -> None:
        master, w.need = state["master"], state["need"]
        w.node = master.addr
        master.conn.set(key, value)
        try:
            w.acks = int(master.conn.execute_command("WAIT", w.need, 300))
        except redis.RedisError:
            w.acks = 0

    clients = Clients(CLIENTS, op, history)
    try:
        for r in nodes[1:]:
            r.conn.replicaof(nodes[0].host.ip, nodes[0].node.port)
        until("both replicas to sync", quiet(lambda: all(r.node.synced_with(0) for r in nodes[1:])))
        clients.start()
        refused_each_round = True
        for rnd in range(ROUNDS):
            master = state["master"]
            replicas = [n for n in nodes if n is not master]

            def promised_in(phase: str) -> int:
                return sum(1 for w in history.acked() if w.phase == phase and w.acks >= w.need > 0)

            clients.phase = f"before{rnd}"
            if LONG and rng.random() < 0.3:
                net.lossy(rng.choice(replicas).host, 10)
            until("promised writes before the cut", lambda p=clients.phase: promised_in(p) >= PER_PHASE)
            clients.phase = f"cut{rnd}"  # a lossy or slow link stays so through the cut, until the heal
            net.cut([master.host], [r.host for r in replicas])

            def refuses(master: Placed = master) -> bool:
                try:
                    master.conn.set("probe", "x")
                except redis.ResponseError as e:
                    return str(e).startswith("NOREPLICAS")
                return False

            try:
                until("the isolated master to refuse writes (NOREPLICAS)", refuses, deadline_s=30)
            except AssertionError as e:
                refused_each_round = False
                result.notes.append(str(e))
            clients.phase = f"refusing{rnd}"
            # the first refusal seen: no write to the old master is acknowledged from here on
            new, other = rng.sample(replicas, 2)
            new.conn.replicaof("NO", "ONE")
            other.conn.replicaof(new.host.ip, new.node.port)
            state.update(master=new, need=1)
            clients.phase = f"promoted{rnd}"
            until("promised writes on the promoted replica", lambda p=clients.phase: promised_in(p) >= PER_PHASE)
            net.heal()
            master.conn.replicaof(new.host.ip, new.node.port)
            state["need"] = 2
            clients.phase = f"healed{rnd}"
            until("promised writes with the old master back as a replica",
                  lambda p=clients.phase: promised_in(p) >= PER_PHASE)
        clients.stop()
        master = state["master"]
        end = int(master.conn.info("replication")["master_repl_offset"])
        until("the replicas to catch up", quiet(lambda: all(n.node.synced_with(end)
                                                           for n in nodes if n is not master)))
        keys = [w.key for w in history.writes]
        final = read_values(master.conn, keys)
        verdict = check(history, final, lambda w: w.acks >= w.need > 0)
        acked_while_refusing = sum(1 for w in history.acked() if w.phase.startswith("refusing"))
        agree = all(read_values(n.conn, keys) == final for n in nodes if n is not master)
        result.verdict = verdict.row()
        result.notes += verdict.lost_promised[:5] + verdict.phantoms[:5]
        result.props = {"refused-after-lag": refused_each_round, "no-ack-while-refusing": acked_while_refusing == 0,
                        "replicas-agree": agree}
        return result
    finally:
        clients.halt()
        stop_all(nodes)


# mixed: a raxdb master with a redis-server and a raxdb replica; the schedule's promotions then put
# either kind in either role (a redis-server master feeding a raxdb replica, and the other way).
REPLICATIONS = {
    "redis": ["redis"] * 3,
    "raxdb": ["raxdb"] * 3,
    "mixed": ["raxdb", "redis", "raxdb"],
}


@pytest.mark.oracle
@pytest.mark.partition
def test_replication_partition(networks: Callable[[], netns.Network]) -> None:
    """Same schedule (seed) on redis-server, raxdb and a mixed set; each in a network of its own."""
    compare([replication_run(networks(), name, kinds, random.Random(SEED)) for name, kinds in REPLICATIONS.items()
             if name in ONLY])


# ---- a cluster of 3 masters and 3 replicas, majority and minority sides -------------------------
class Router:
    """What a cluster client knows: each slot's owner, from a node's CLUSTER NODES, corrected by
    MOVED replies (and refreshed by the schedule after a failover, as a client's periodic
    refresh would)."""

    def __init__(self, placed: list[Placed]) -> None:
        self.by_id = {p.node.id: p for p in placed}
        self.by_addr = {p.addr: p for p in placed}
        self.owner: list[str] = []

    def refresh(self, p: Placed) -> None:
        self.owner = slot_owners(p.node)

    def route(self, key: str) -> tuple[int, Placed]:
        slot = key_slot(key.encode())
        return slot, self.by_id[self.owner[slot]]

    def moved(self, slot: int, target: str) -> None:
        self.owner[slot] = self.by_addr[target].node.id


def masters_of(p: Placed) -> dict[str, str]:
    """{master's ID: its replica's ID} as `p` sees the cluster."""
    roles = p.node.roles()
    return {mid: next((i for i, (f, m) in roles.items() if m == mid and "slave" in f), "")
            for mid, (flags, _) in roles.items() if "master" in flags}


def cluster_run(net: netns.Network, kinds: list[str], name: str, rng: random.Random) -> Result:
    client = net.add_host("client")
    nodes: list[Placed] = []
    result = Result(f"cluster {name}", ROUNDS)
    history = History()
    clients: Clients | None = None
    try:
        nodes = start_nodes(net, client, kinds, "--cluster-enabled", "yes", "--cluster-port", str(free_port()),
                            "--cluster-node-timeout", str(NODE_TIMEOUT))
        join_cluster([p.node for p in nodes], [p.addr for p in nodes], True, cli_prefix=client.exec_prefix())
        router = Router(nodes)
        router.refresh(nodes[0])

        def op(_client: int, key: str, value: str, w: Write) -> None:
            slot, p = router.route(key)
            w.node, w.need = p.addr, 1
            try:
                p.conn.set(key, value)
            except redis.exceptions.MovedError as e:
                router.moved(slot, str(e).split()[1])
                raise
            try:
                w.acks = int(p.conn.execute_command("WAIT", 1, 300))
            except redis.RedisError:
                w.acks = 0

        clients = Clients(CLIENTS, op, history)
        clients.start()
        props = {"minority-refused": True, "majority-failed-over": True, "converged": True,
                 "old-master-replica": True, "majority-down-uncovered": True, "pair-one-master": True}
        down: set[tuple[str, str]] = set()  # (phase, node): writes sent to that node in that phase must fail
        for rnd in range(ROUNDS):
            pairs = masters_of(nodes[0])
            victim = router.by_id[rng.choice(sorted(pairs))]
            heir = router.by_id[pairs[victim.node.id]]
            # a pair round (long mode): the victim is cut off with its own replica, so the majority
            # cannot fail over, holds a master FAIL whose slots nobody serves, and refuses writes too
            pair = LONG and rng.random() < 0.3
            minority = [victim, heir] if pair else [victim]
            others = [router.by_id[r] for m, r in pairs.items() if m != victim.node.id]
            if LONG and not pair and rng.random() < 0.5:
                minority.append(rng.choice(others))
            majority = [p for p in nodes if p not in minority]
            result.rounds_by_kind[pair] = result.rounds_by_kind.get(pair, 0) + 1

            def promised_to(phase: str, p: Placed, acks: int = 1) -> int:
                return sum(1 for w in history.acked() if w.phase == phase and w.node == p.addr and w.acks >= acks)

            clients.phase = f"before{rnd}"
            if LONG and rng.random() < 0.3:
                net.lossy(rng.choice(nodes).host, 10)
            if LONG and rng.random() < 0.3:
                net.slow(rng.choice(nodes).host)
            until("promised writes to the victim before the cut",
                  lambda p=clients.phase, v=victim: promised_to(p, v) >= PER_PHASE)
            clients.phase = f"cut{rnd}"  # a lossy or slow link stays so through the cut, until the heal
            net.cut([p.host for p in minority], [p.host for p in majority])
            down_now = [victim]
            if not refusing(victim, router, f"the minority's master {victim.addr}"):
                props["minority-refused"] = False
                result.notes.append(f"round {rnd}: {victim.addr} kept accepting writes")
            if pair:
                masters = [router.by_id[m] for m in pairs if m != victim.node.id]
                if all(refusing(m, router, f"the majority's master {m.addr}") for m in masters):
                    down_now += masters
                else:
                    props["majority-down-uncovered"] = False
                    result.notes.append(f"round {rnd}: the majority kept accepting writes, slots uncovered")
            clients.phase = f"refusing{rnd}"
            down.update((clients.phase, p.addr) for p in down_now)
            if pair:
                until("refusals recorded while every master is down",
                      lambda p=clients.phase: sum(1 for w in history.writes if w.phase == p) >= PER_PHASE)
            else:
                try:
                    until("the majority to fail over to the victim's replica", quiet(
                        lambda heir=heir, majority=majority: all(
                            p.node.roles()[heir.node.id][0] == "master"
                            and "cluster_state:ok" in p.conn.execute_command("CLUSTER", "INFO")
                            for p in majority)), deadline_s=60)
                    router.refresh(heir)
                    clients.phase = f"failedover{rnd}"
                    # acknowledged, not promised: the new master's replica (the old master) is cut off
                    until("writes acknowledged by the new master",
                          lambda p=clients.phase, h=heir: promised_to(p, h, acks=0) >= PER_PHASE)
                except AssertionError as e:
                    props["majority-failed-over"] = False
                    result.notes.append(str(e))
            # no write of the phases above still in flight when the links heal
            clients.phase = f"healing{rnd}"
            until("every client to start a write after the refusals",
                  lambda p=clients.phase: len({w.client for w in history.writes if w.phase == p}) == CLIENTS)
            net.heal()
            clients.phase = f"healed{rnd}"
            try:
                until("the cluster to converge", quiet(lambda: converged(nodes)), deadline_s=90)
            except AssertionError as e:
                props["converged"] = False
                result.notes.append(str(e) + ": " + "; ".join(
                    f"{p.addr} {p.conn.execute_command('CLUSTER', 'NODES')!r}" for p in nodes))
                break
            master, replica = heir, victim
            if pair and nodes[0].node.roles()[victim.node.id][0] == "master":
                # healed, the victim's replica may still fail over: it is told of its master's FAIL
                # before the FAIL is cleared (as in Redis; counted, not a property)
                master, replica = victim, heir
            elif pair:
                result.swapped += 1
            if nodes[0].node.roles()[replica.node.id] != ("slave", master.node.id):
                props["old-master-replica" if not pair else "pair-one-master"] = False
            else:  # the master replicated again: writes to it are promised again
                router.refresh(nodes[0])
                try:
                    until("promised writes to the master, its replica back",
                          lambda p=clients.phase, m=master: promised_to(p, m) >= PER_PHASE)
                except AssertionError:
                    mine = [w for w in history.writes if w.phase == clients.phase and w.node == master.addr]
                    raise AssertionError(
                        f"round {rnd} ({'pair' if pair else 'failover'}): no promised writes to {master.addr}; "
                        f"its writes: {[(w.outcome, w.acks, w.error) for w in mine[-5:]]}, "
                        f"{len(mine)} in all; INFO replication: {master.conn.info('replication')}") from None
            router.refresh(nodes[0])
        clients.stop()
        # every replica caught up with its master, then each key read from its slot's owner
        for m_id, r_id in masters_of(nodes[0]).items():
            end = int(router.by_id[m_id].conn.info("replication")["master_repl_offset"])
            until("the replicas to catch up", quiet(lambda r_id=r_id, end=end: router.by_id[r_id].node.synced_with(end)))
        router.refresh(nodes[0])
        by_owner: dict[str, list[str]] = {}
        for w in history.writes:
            by_owner.setdefault(router.route(w.key)[1].node.id, []).append(w.key)
        final: dict[str, str | None] = {}
        for owner, keys in by_owner.items():
            final.update(read_values(router.by_id[owner].conn, keys))
        verdict = check(history, final, lambda w: w.acks >= w.need > 0)
        acked_while_refusing = sum(1 for w in history.acked() if (w.phase, w.node) in down)
        result.verdict = verdict.row()
        result.notes += verdict.lost_promised[:5] + verdict.phantoms[:5]
        props["no-ack-while-down"] = acked_while_refusing == 0
        result.props = props
        return result
    finally:
        if clients is not None:
            clients.halt()
        stop_all(nodes)


def slots_view(p: Placed) -> list[tuple[int, int, str, tuple[str, ...]]]:
    """`p`'s CLUSTER SLOTS: (first, last, master's host:port, its replicas' host:port, sorted)."""
    ranges = p.conn.execute_command("CLUSTER", "SLOTS")
    return sorted((int(r[0]), int(r[1]), f"{r[2][0]}:{r[2][1]}", tuple(sorted(f"{x[0]}:{x[1]}" for x in r[3:])))
                  for r in ranges)


def refusing(p: Placed, router: Router, who: str) -> bool:
    """Does `p` come to refuse a write to one of its slots with CLUSTERDOWN (within a deadline)?"""
    probe = next(f"probe{i}" for i in range(100000) if router.owner[key_slot(f"probe{i}".encode())] == p.node.id)

    def refuses() -> bool:
        try:
            p.conn.set(probe, "x")
        except redis.exceptions.ClusterDownError:
            return True
        return False

    try:
        until(f"{who} to refuse writes (CLUSTERDOWN)", refuses, deadline_s=60)
    except AssertionError:
        return False
    return True


def converged(nodes: list[Placed]) -> bool:
    """Every node ok, every slot owned, and every node's view (CLUSTER NODES: slots and roles, no
    failure flags; CLUSTER SLOTS: ranges, masters, replicas) the same, the two views consistent."""
    if not all("cluster_state:ok" in p.conn.execute_command("CLUSTER", "INFO") for p in nodes):
        return False
    owners = slot_owners(nodes[0].node)
    roles = nodes[0].node.roles()
    if "" in owners or any(f not in ("master", "slave") for f, _ in roles.values()):
        return False
    if not all(slot_owners(p.node) == owners and p.node.roles() == roles for p in nodes[1:]):
        return False
    slots = slots_view(nodes[0])
    addr = {p.node.id: p.addr for p in nodes}
    consistent = all(addr[owners[s]] == master for lo, hi, master, _ in slots for s in (lo, hi)) and \
        sum(hi - lo + 1 for lo, hi, _, _ in slots) == 16384
    return consistent and all(slots_view(p) == slots for p in nodes[1:])


CLUSTERS = {
    "redis": ["redis"] * 6,
    "raxdb": ["raxdb"] * 6,
    "mixed": ["raxdb", "redis", "raxdb", "redis", "raxdb", "redis"],
}


@pytest.mark.oracle
@pytest.mark.partition
def test_cluster_partition(networks: Callable[[], netns.Network]) -> None:
    """Same schedule (seed) on a redis-server cluster, a raxdb one and a mixed one."""
    compare([cluster_run(networks(), kinds, name, random.Random(SEED)) for name, kinds in CLUSTERS.items()
             if name in ONLY])


def test_checker_finds_lost_and_phantom_writes() -> None:
    """The checker itself (no network): a promised write missing, an unpromised one missing (by
    design, counted), a refused one present (a phantom), an unknown one either way."""
    h = History()
    for w in (Write(0, "a", "1", "ok", acks=2, need=2), Write(0, "b", "2", "ok", acks=1, need=2),
              Write(0, "c", "3", "fail", error="NOREPLICAS"), Write(0, "d", "4", "unknown"),
              Write(0, "e", "5", "ok", acks=2, need=2)):
        h.record(w)
    promised = lambda w: w.acks >= w.need > 0  # noqa: E731
    v = check(h, {"a": None, "b": None, "c": "3", "d": "4", "e": "5"}, promised)
    assert (v.lost_promised, v.lost_unpromised, v.phantoms, v.verdict) == (["a=1 (acks 2, )"], 1, ["c (NOREPLICAS, )"],
                                                                           "LOST")
    v = check(h, {"a": "1", "b": "2", "e": "5"}, promised)
    assert v.row() == {"acked": 3, "promised": 2, "lost": 0, "lost_unpromised": 0, "phantoms": 0, "refused": 1,
                       "unknown": 1, "verdict": "ok"}
