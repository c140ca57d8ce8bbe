"""A live Redis Cluster for the client tests: masters (raxdb, redis-server or a mix), with or
without a replica each, joined by `redis-cli --cluster create`; nodes that can be SIGKILLed and
restarted on their port and directory (their nodes.conf); and a SlotMover that keeps migrating
slots while clients work.

The SlotMover does what `redis-cli --cluster reshard` does for each slot (SETSLOT IMPORTING on the
target, MIGRATING on the source, GETKEYSINSLOT + MIGRATE until the slot is empty, SETSLOT NODE on
the target, the source, then the other masters), but for a batch of slots at a time, so that many
slots stay open long enough for a client's commands to meet them (an ASK for a key already moved or
not there yet, a MOVED once the slot is taken).  Its rule: it never uses REPLACE, so a key that
exists on both sides (a lost or duplicated write) stops it with the BUSYKEY error.

Every wait polls with a deadline; nothing here sleeps to let time pass.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import redis

from tests.support.servers import ServerProcess, free_port, start_raxdb, start_redis

DEADLINE_S = 60.0
HOLD_S = 5.0


@dataclass
class ClusterNode:
    srv: ServerProcess
    conn: redis.Redis
    id: str = ""

    @property
    def port(self) -> int:
        return self.srv.port

    def stop(self) -> None:
        self.conn.close()
        self.srv.stop()

    def kill(self) -> None:
        """SIGKILL: no goodbye on the bus, no last save."""
        self.conn.close()
        self.srv.kill()

    def restart(self) -> None:
        """The same command line, port and directory (so its nodes.conf)."""
        self.srv = self.srv.restarted()
        self.conn = redis.Redis(port=self.srv.port, decode_responses=True)

    def roles(self) -> dict[str, tuple[str, str]]:
        """Every node's (flags without "myself", master ID or "-") as this node sees it."""
        out = {}
        for line in self.conn.execute_command("CLUSTER", "NODES").splitlines():
            fields = line.split()
            out[fields[0]] = (",".join(f for f in fields[2].split(",") if f != "myself"), fields[3])
        return out

    def synced_with(self, offset: int) -> bool:
        """Is this replica's link up, with at least `offset` of its master's stream applied?"""
        rep = self.conn.info("replication")
        return rep.get("master_link_status") == "up" and int(rep.get("slave_repl_offset", -1)) >= offset


def until(what: str, cond: Callable[[], bool], deadline_s: float = DEADLINE_S) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def start_node(kind: str, *extra: str, node_timeout: int = 5000) -> ClusterNode:
    """A node with cluster-enabled yes, its bus on a free port (port + 10000 may not exist)."""
    start = start_raxdb if kind == "raxdb" else start_redis
    # no diskless-sync delay: a replica (a restarted master too) syncs at once
    srv = start("--cluster-enabled", "yes", "--cluster-port", str(free_port()), "--cluster-node-timeout",
                str(node_timeout), "--repl-diskless-sync-delay", "0", *extra)
    return ClusterNode(srv, redis.Redis(port=srv.port, decode_responses=True))


def create_cluster(kinds: list[str], replicas: list[str] | None = None, node_timeout: int = 5000) -> list[ClusterNode]:
    """One master per entry of `kinds` (and, with `replicas`, one replica per master, of the kinds
    listed, as redis-cli --cluster create --cluster-replicas 1 pairs them), every node ok and each
    replica synced."""
    assert replicas is None or len(replicas) == len(kinds)
    nodes: list[ClusterNode] = []
    try:
        for kind in [*kinds, *(replicas or [])]:
            nodes.append(start_node(kind, node_timeout=node_timeout))
        join_cluster(nodes, [f"127.0.0.1:{n.port}" for n in nodes], bool(replicas))
    except BaseException:
        for n in nodes:
            n.stop()
        raise
    return nodes


def join_cluster(nodes: list[ClusterNode], addrs: list[str], replicas: bool, cli_prefix: Sequence[str] = ()) -> None:
    """`redis-cli --cluster create` of these started nodes (at `addrs`, run behind `cli_prefix`,
    e.g. on another host: tests/support/netns.py), until every node is ok, all agree on the slot
    map, and (with `replicas`: one per master) each replica is listed everywhere and synced."""
    cli = shutil.which("redis-cli")
    assert cli, "redis-cli is required (installed with redis-server by `make test`)"
    out = subprocess.run([*cli_prefix, cli, "--cluster", "create", *addrs,
                          *(("--cluster-replicas", "1") if replicas else ()), "--cluster-yes"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "[OK] All 16384 slots covered." in out.stdout, out.stdout + out.stderr
    for n in nodes:
        n.id = n.conn.execute_command("CLUSTER", "MYID")
    wait_agreed(nodes)
    if replicas:
        until("every node to list every replica", lambda: all(
            sum(f.startswith("slave") for f, _ in n.roles().values()) == len(nodes) // 2 for n in nodes))
        for n in nodes:
            if n.conn.info("replication")["role"] == "slave":
                until("the replicas to sync", lambda n=n: n.synced_with(0))


def slot_owners(node: ClusterNode) -> list[str]:
    """The owner's ID of every slot as `node` sees it (its CLUSTER NODES, open slots skipped)."""
    owners = [""] * 16384
    for line in node.conn.execute_command("CLUSTER", "NODES").splitlines():
        fields = line.split()
        for item in fields[8:]:
            if not item.startswith("["):
                lo, _, hi = item.partition("-")
                owners[int(lo):int(hi or lo) + 1] = [fields[0]] * (int(hi or lo) - int(lo) + 1)
    return owners


def wait_agreed(nodes: list[ClusterNode]) -> None:
    """Until every node is ok and all agree on the owner of every slot."""
    def agreed() -> bool:
        if not all("cluster_state:ok" in n.conn.execute_command("CLUSTER", "INFO") for n in nodes):
            return False
        first = slot_owners(nodes[0])
        return "" not in first and all(slot_owners(n) == first for n in nodes[1:])

    until("the nodes to agree on the slot map", agreed)


def redirections(nodes: list[ClusterNode]) -> dict[str, int]:
    """MOVED and ASK replies sent by all nodes since their last CONFIG RESETSTAT (INFO errorstats)."""
    counts = {"MOVED": 0, "ASK": 0}
    for n in nodes:
        stats = n.conn.info("errorstats")
        for kind in counts:
            counts[kind] += stats.get(f"errorstat_{kind}", {}).get("count", 0)
    return counts


class SlotMover(threading.Thread):
    """Moves batches of `batch` slots (chosen at random, seeded) round the masters until stopped,
    with their keys; `slots_moved` and `keys_moved` count what it did, `error` holds what stopped it."""

    def __init__(self, nodes: list[ClusterNode], batch: int = 32, seed: int = 36) -> None:
        super().__init__(daemon=True, name="slot-mover")
        self.nodes = nodes
        self.batch = batch
        self.rng = random.Random(seed)
        self.owner = slot_owners(nodes[0])
        self.by_id = {n.id: n for n in nodes}
        self.slots_moved = 0
        self.keys_moved = 0
        self.error: BaseException | None = None
        self._stop_asked = threading.Event()
        # its own connections: the clients' commands and the test's INFO calls are elsewhere
        self._conns = {n.id: redis.Redis(port=n.port, decode_responses=True, socket_timeout=60) for n in nodes}

    def run(self) -> None:
        try:
            turn = 0
            while not self._stop_asked.is_set():
                src = self.nodes[turn % len(self.nodes)]
                dst = self.nodes[(turn + 1) % len(self.nodes)]
                mine = [s for s in range(16384) if self.owner[s] == src.id]
                self._move(self.rng.sample(mine, min(self.batch, len(mine))), src, dst)
                turn += 1
        except BaseException as e:  # reported by stop()
            self.error = e
        finally:
            for c in self._conns.values():
                c.close()

    def move(self, slots: list[int], dst: ClusterNode) -> None:
        """Moves these slots (of one master) to `dst` now, in the calling thread, held open as in
        run(); for a test that must move particular slots (its keys') rather than random ones."""
        self._move(slots, self.by_id[self.owner[slots[0]]], dst)

    def close(self) -> None:
        """The mover's connections, when it was only used through move()."""
        for c in self._conns.values():
            c.close()

    def _move(self, slots: list[int], src: ClusterNode, dst: ClusterNode) -> None:
        s_conn, d_conn = self._conns[src.id], self._conns[dst.id]
        for s in slots:
            d_conn.execute_command("CLUSTER", "SETSLOT", s, "IMPORTING", src.id)
            s_conn.execute_command("CLUSTER", "SETSLOT", s, "MIGRATING", dst.id)
        for s in slots:
            while keys := s_conn.execute_command("CLUSTER", "GETKEYSINSLOT", s, 50):
                s_conn.execute_command("MIGRATE", "127.0.0.1", dst.port, "", 0, 30000, "KEYS", *keys)
                self.keys_moved += len(keys)
        self._hold_open(s_conn)
        for s in slots:
            for conn in (d_conn, s_conn, *(c for i, c in self._conns.items() if i not in (src.id, dst.id))):
                conn.execute_command("CLUSTER", "SETSLOT", s, "NODE", dst.id)
            self.owner[s] = dst.id
            self.slots_moved += 1

    def _hold_open(self, s_conn: redis.Redis) -> None:
        """Keeps the batch open until the source has sent an ASK for it (a client came for a key
        that left), or for HOLD_S at most, or until stopped: a slot moved faster than any
        client's command would prove nothing about ASK."""
        start = self._asks(s_conn)
        end = time.monotonic() + HOLD_S
        while not self._stop_asked.is_set() and time.monotonic() < end and self._asks(s_conn) == start:
            time.sleep(0.05)

    @staticmethod
    def _asks(conn: redis.Redis) -> int:
        return conn.info("errorstats").get("errorstat_ASK", {}).get("count", 0)

    def stop(self) -> None:
        """Ends after the batch under way (every slot stable again); raises what stopped it early."""
        self._stop_asked.set()
        self.join(120)
        assert not self.is_alive(), "the slot mover did not finish its batch"
        if self.error is not None:
            raise AssertionError(f"the slot mover failed: {self.error!r}") from self.error
