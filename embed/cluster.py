"""`raxdb.serve_cluster()`: a Redis Cluster of raxdb servers for a `with` block or a test session.

    with raxdb.serve_cluster(masters=3, replicas=1) as cluster:
        rc = redis.cluster.RedisCluster(host=cluster.host, port=cluster.port)
        cluster.simulate_failover(cluster.masters[0])

Rule: this module forms clusters of servers that serve() started (api.py) and watches their
roles; it talks to them only through control.call, one command a connection, no client library.
`form()` joins any servers with `cluster-enabled yes` and no slots yet, raxdb's or redis-server's
(the test suite's cluster builder, tests/support/cluster.py, uses it too).

How a cluster forms (what `redis-cli --cluster create` does, without its checks and its waits):
slots split evenly over the masters with CLUSTER ADDSLOTSRANGE, every pair of nodes met with CLUSTER
MEET (the bus port read from CONFIG GET cluster-port: a node's bus is on a free port, not port +
10000), each replica attached by CLUSTER REPLICATE once it knows its master, then a
bounded poll of every node until they agree.  A master turns `cluster_state:ok` no sooner than 2 s
after it started (Redis's CLUSTER_WRITABLE_DELAY, kept by raxdb): serve_cluster()'s masters are
told not to wait (DEBUG CLUSTER-WRITABLE-NOW, a test control: server/commands/t_testcluster.py).

Invariants:
- start() returns only once the cluster is settled: every node `cluster_state:ok`, every node's
  CLUSTER NODES lists the same nodes with the same roles, masters and slots (none failing or in a
  handshake), and every replica's link to its master is up.  simulate_failover() returns on the
  same condition, with the roles swapped.
- `.masters` and `.replicas` are the nodes' roles as started, updated by simulate_failover(); a
  failover the caller starts another way is not followed.
- stop() (or close()) may be called any number of times; every node is stopped and the cluster's temporary
  directory removed, also after a start that failed half-way.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, NamedTuple, Self

from raxdb.embed import control
from raxdb.embed.api import START_TIMEOUT, ConfigValue, EmbeddedServer, Mode, ServeError, free_port, serve

SLOTS = 16384
POLL_S = 0.01  # between two looks at the nodes' state while waiting for them to agree
NODE_TIMEOUT_MS = 5000  # cluster-node-timeout of the nodes (Redis's default, 15 s, is for real networks)
_BUS_ATTEMPTS = 3  # a node's start fails only if another process took its bus port meanwhile
Failover = Literal["", "FORCE", "TAKEOVER"]


class Address(NamedTuple):
    """A node's host and port, as client libraries take their startup nodes."""

    host: str
    port: int


def serve_cluster(masters: int = 3, replicas: int = 0, config: Mapping[str, ConfigValue] | None = None, *,
                  host: str = "127.0.0.1", mode: Mode = "process", timeout: float = START_TIMEOUT) -> EmbeddedCluster:
    """A cluster, not started yet: `with` / `async with` start and stop it, or start() and stop().

    `masters`: how many masters share the 16384 slots (1: one node with every slot, the
    "emulated" cluster, the quickest to start).  `replicas`: replicas of each master.  `config`:
    redis.conf options for every node (serve()'s `config`, over cluster-node-timeout 5000 and
    cluster-announce-ip `host`; `cluster-enabled` stays yes).  `mode`: serve()'s.  `timeout`:
    seconds allowed for each node to start, and for the cluster to settle."""
    return EmbeddedCluster(masters, replicas, config, host=host, mode=mode, timeout=timeout)


class EmbeddedCluster:
    """A cluster serve_cluster() started: `.nodes` (masters first, then replicas, each an
    EmbeddedServer), `.masters`, `.replicas`, `.startup_nodes`, `.host` and `.port` (the first
    master's), `.url`."""

    def __init__(self, masters: int, replicas: int, config: Mapping[str, ConfigValue] | None, *, host: str,
                 mode: Mode, timeout: float) -> None:
        if masters < 1 or replicas < 0:
            raise ValueError("a cluster needs at least one master, and replicas cannot be negative")
        self.host = host
        self.mode: Mode = mode
        self.timeout = timeout
        self._shape = (masters, replicas)
        # announced: a node that never received a MEET would not know its own address
        self._config = {"cluster-node-timeout": NODE_TIMEOUT_MS, "cluster-announce-ip": host, **(config or {}),
                        "cluster-enabled": "yes"}
        if "requirepass" in self._config:  # the replicas authenticate to their masters
            self._config.setdefault("masterauth", self._config["requirepass"])
        self.masters: list[EmbeddedServer] = []
        self.replicas: list[EmbeddedServer] = []
        self._master_of: dict[EmbeddedServer, EmbeddedServer] = {}  # a replica -> its master
        self._in_start_order: list[EmbeddedServer] = []  # stopped in reverse (thread mode's cwd)
        self._root = ""  # the nodes' working directories are in it
        # a fresh node has nothing to learn before it serves: no 2 s wait, where the control is on
        self._writable_now = str(self._config.get("raxdb-test-controls", "yes")).lower() not in ("no", "false")
        self._started = False

    # ---- what the caller reads ----------------------------------------------------------------
    @property
    def nodes(self) -> list[EmbeddedServer]:
        return [*self.masters, *self.replicas]

    @property
    def startup_nodes(self) -> list[Address]:
        """Every node's (host, port), for a client library's list of startup nodes."""
        return [Address(n.host, n.port) for n in self.nodes]

    @property
    def port(self) -> int:
        return self.masters[0].port

    @property
    def url(self) -> str:
        """The first master's URL: `RedisCluster.from_url(cluster.url)` finds the others from it."""
        return self.masters[0].url

    @property
    def running(self) -> bool:
        return self._started and bool(self.masters) and all(n.running for n in self.nodes)

    def replicas_of(self, master: EmbeddedServer) -> list[EmbeddedServer]:
        return [r for r in self.replicas if self._master_of[r] is master]

    def master_of(self, replica: EmbeddedServer) -> EmbeddedServer:
        return self._master_of[replica]

    def __repr__(self) -> str:
        if not self.running:
            return f"<raxdb.EmbeddedCluster {self._shape[0]} masters, {self._shape[1]} replicas each (not running)>"
        return f"<raxdb.EmbeddedCluster {' '.join(f'{h}:{p}' for h, p in self.startup_nodes)}>"

    # ---- start and stop -----------------------------------------------------------------------
    def start(self) -> Self:
        """Start every node, form the cluster, and return once it is settled; ServeError if it
        cannot."""
        if self._started:
            raise RuntimeError("this cluster was started already: call serve_cluster() again for another one")
        self._started = True
        masters, replicas = self._shape
        try:
            self._root = tempfile.mkdtemp(prefix="raxdb-cluster-")
            self.masters = [self._start_node(i) for i in range(masters)]
            for i in range(masters * replicas):
                replica = self._start_node(masters + i)
                self.replicas.append(replica)
                self._master_of[replica] = self.masters[i % masters]
            form(*self._layout(), password=_password(self._config), writable_now=self._writable_now,
                 timeout=self.timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop every node (the last started first) and remove the nodes' directories.  Idempotent."""
        errors: list[BaseException] = []
        for node in reversed(self._in_start_order):
            try:
                node.stop()
            except Exception as exc:  # every node is stopped even if one fails to
                errors.append(exc)
        if self._root:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = ""
        if errors:
            raise errors[0]

    close = stop

    async def astart(self) -> Self:
        return await asyncio.to_thread(self.start)

    async def astop(self) -> None:
        await asyncio.to_thread(self.stop)

    def __enter__(self) -> Self:
        """Starts it; a cluster that runs already (raxdb_cluster_factory's) is entered as it is.
        Either way the block's end stops it."""
        return self if self.running else self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return self if self.running else await self.astart()

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.astop()

    def _layout(self) -> tuple[list[Address], list[tuple[Address, Address]]]:
        """The masters' addresses, and each replica's with its master's: form()'s arguments."""
        return ([_address(m) for m in self.masters],
                [(_address(r), _address(self._master_of[r])) for r in self.replicas])

    def _start_node(self, index: int) -> EmbeddedServer:
        """One node in its own directory; its bus on a free port, tried again should another
        process take that port before the node binds it."""
        node_dir = os.path.join(self._root, f"node-{index}")
        os.makedirs(node_dir, exist_ok=True)
        for attempt in range(_BUS_ATTEMPTS):
            bus = free_port(self.host)
            # an absolute nodes.conf: in thread mode every node shares the process's working directory
            config = {**self._config, "cluster-port": str(bus),
                      "cluster-config-file": os.path.join(node_dir, "nodes.conf")}
            node = serve(config, host=self.host, dir=node_dir, mode=self.mode, timeout=self.timeout)
            self._in_start_order.append(node)
            try:
                return node.start()
            except ServeError as exc:
                if str(bus) not in exc.log or attempt + 1 == _BUS_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    # ---- for tests ----------------------------------------------------------------------------
    def flush(self) -> None:
        """FLUSHALL on every master (their replicas follow, in order with later writes)."""
        for master in self.masters:
            _call(_address(master), _password(self._config), "FLUSHALL")

    def simulate_failover(self, master: EmbeddedServer | None = None, how: Failover = "") -> EmbeddedServer:
        """One of `master`'s replicas (default: the first master that has one) takes its place by
        `CLUSTER FAILOVER [FORCE|TAKEOVER]` sent to the replica, and is returned once every node
        agrees; the old master is its replica then.  `how`: "" (Redis's manual failover: the master
        holds its clients until the replica has its every write, so none is lost), "FORCE"
        (without the master's agreement: what a replica does when its master is down, with the
        other masters' votes), "TAKEOVER" (without any vote: a new epoch of its own); these two do
        not wait for the replica to catch up, so writes it had not received are lost, as in Redis
        (WAIT on the master first when a test needs them).  To see a master fail, stop it instead
        (`master.stop()`): its replica is elected after cluster-node-timeout, as in a real failure."""
        if master is None:
            master = next((m for m in self.masters if self.replicas_of(m)), None)
            if master is None:
                raise ValueError("no master of this cluster has a replica: serve_cluster(replicas=1)")
        if master not in self.masters:
            raise ValueError(f"{master!r} is not a master of this cluster")
        candidates = self.replicas_of(master)
        if not candidates:
            raise ValueError(f"{master!r} has no replica to take over")
        replica = candidates[0]
        password = _password(self._config)
        master_id, replica_id = (_text(_call(_address(n), password, "CLUSTER", "MYID")) for n in (master, replica))
        _call(_address(replica), password, "CLUSTER", "FAILOVER", *([how] if how else []))
        # the old master learns it lost (from the new master's PONGs, sent to all at once), then
        # tells the others it is a replica now
        def demoted() -> bool:
            view = _views(_address(master), password)
            return view[replica_id][1] == "-" and view[master_id][1] == replica_id

        _until(time.monotonic() + self.timeout, f"{master!r} to become a replica", demoted)
        nodes = [_address(n) for n in self.nodes]
        _announce(_address(master), nodes, {a: _bus_port(a, password) for a in nodes}, password)
        # the roles swap: the promoted replica takes the master's place in the lists
        for node in candidates[1:]:
            self._master_of[node] = replica
        del self._master_of[replica]
        self._master_of[master] = replica
        self.masters[self.masters.index(master)] = replica
        self.replicas[self.replicas.index(replica)] = master
        wait_settled(*self._layout(), password=password, timeout=self.timeout)
        return replica


# ---- forming and watching a cluster, any servers' ---------------------------------------------
def form(masters: Sequence[Address], replicas: Sequence[tuple[Address, Address]] = (), *,
         password: str | None = None, writable_now: bool = False, timeout: float = START_TIMEOUT) -> None:
    """Join running nodes (`cluster-enabled yes`, empty, not met yet) into one cluster: the slots
    split evenly over `masters` in their order, each (replica, its master) of `replicas` attached;
    returns once the cluster is settled (wait_settled), ServeError after `timeout` seconds.
    `writable_now`: the masters are raxdb's with test controls on, and may turn ok without
    Redis's 2 s CLUSTER_WRITABLE_DELAY (DEBUG CLUSTER-WRITABLE-NOW)."""
    nodes = [*masters, *(r for r, _ in replicas)]
    ids = {a: _text(_call(a, password, "CLUSTER", "MYID")) for a in nodes}
    for i, address in enumerate(masters):
        first, last = i * SLOTS // len(masters), (i + 1) * SLOTS // len(masters) - 1
        _call(address, password, "CLUSTER", "ADDSLOTSRANGE", first, last)
        if writable_now:
            _call(address, password, "DEBUG", "CLUSTER-WRITABLE-NOW")
    for epoch, address in enumerate(nodes, 1):  # distinct epochs: no collisions to resolve first
        _call(address, password, "CLUSTER", "SET-CONFIG-EPOCH", epoch)
    deadline = time.monotonic() + timeout
    buses = {a: _bus_port(a, password) for a in nodes}
    # Every pair met directly, so each node knows every other from the first exchange rather
    # than from the gossip of later pings, sent to one random node a second.  Then the replicas
    # attached, and each node meets every other again: a node takes a sender's slots and role only
    # from a packet whose sender it knew already, and the first MEET's sender was a stranger to its
    # receiver (the MEETs of known nodes are short handshakes, dropped at their first PONG).
    for i, address in enumerate(nodes):
        for other in nodes[i + 1:]:
            _call(address, password, "CLUSTER", "MEET", other.host, other.port, buses[other])
    _until(deadline, "the nodes to meet", lambda: all(_known(a, password) == set(ids.values()) for a in nodes))
    for replica, master in replicas:
        _call(replica, password, "CLUSTER", "REPLICATE", ids[master])
    for address in nodes:
        _announce(address, nodes, buses, password)
    wait_settled(masters, replicas, password=password, timeout=max(0.0, deadline - time.monotonic()))


def wait_settled(masters: Sequence[Address], replicas: Sequence[tuple[Address, Address]] = (), *,
                 password: str | None = None, timeout: float = START_TIMEOUT) -> None:
    """Until every node is `cluster_state:ok`, sees every node with the roles given here and the
    same slots as the others see (none failing, none in a handshake), and every replica's link to
    its master is up: a bounded poll, ServeError with the nodes' views after `timeout` seconds."""
    nodes = [*masters, *(r for r, _ in replicas)]
    ids = {a: _text(_call(a, password, "CLUSTER", "MYID")) for a in nodes}
    expected_roles = {ids[m]: "-" for m in masters} | {ids[r]: ids[m] for r, m in replicas}

    def settled() -> bool:
        first: dict[str, tuple[str, str, str]] | None = None
        for address in nodes:
            if b"cluster_state:ok" not in _call(address, password, "CLUSTER", "INFO"):
                return False
            view = _views(address, password)
            if {i: v[1] for i, v in view.items()} != expected_roles or any(v[0] != "ok" for v in view.values()):
                return False
            if first is not None and view != first:
                return False
            first = view
        return all(b"master_link_status:up" in _call(r, password, "INFO", "replication") for r, _ in replicas)

    def report() -> str:
        return "\n".join(f"{a.host}:{a.port} ({ids[a]}):\n{_text(_call(a, password, 'CLUSTER', 'NODES'))}"
                         for a in nodes)

    _until(time.monotonic() + timeout, "the cluster to settle", settled, report)


def _views(address: Address, password: str | None) -> dict[str, tuple[str, str, str]]:
    """Every node `address` knows, from its CLUSTER NODES: ID -> ("ok" or its trouble flags, its
    master's ID or "-", its slots).  A node whose bus link from `address` is down counts as
    trouble too ("disconnected"): a replica refuses CLUSTER FAILOVER while its link to its master
    is down ("Master is down or failed"), and links dropped by the MEETs of known nodes come back
    at the next cluster cron."""
    view = {}
    for line in _text(_call(address, password, "CLUSTER", "NODES")).splitlines():
        fields = line.split()
        trouble = [f for f in fields[2].split(",") if f in ("fail?", "fail", "handshake", "noaddr")]
        if "myself" not in fields[2] and fields[7] != "connected":
            trouble.append(fields[7])
        view[fields[0]] = (",".join(trouble) or "ok", fields[3], " ".join(fields[8:]))
    return view


def _announce(address: Address, nodes: Sequence[Address], buses: Mapping[Address, int], password: str | None) -> None:
    """`address` sends its role and slots to every other node at once, in the header of a MEET
    (dropped at its PONG, the node being known), rather than in the pings of the next seconds."""
    for other in nodes:
        if other != address:
            _call(address, password, "CLUSTER", "MEET", other.host, other.port, buses[other])


def _known(address: Address, password: str | None) -> set[str]:
    """The IDs of the nodes `address` knows, handshakes done."""
    return {i for i, v in _views(address, password).items() if "handshake" not in v[0]}


def _bus_port(address: Address, password: str | None) -> int:
    reply = _call(address, password, "CONFIG", "GET", "cluster-port")
    port = int(reply[1]) if reply else 0
    return port or address.port + 10000


def _until(deadline: float, what: str, cond: Callable[[], bool], report: Callable[[], str] | None = None) -> None:
    while True:
        if cond():
            return
        if time.monotonic() >= deadline:
            raise ServeError(f"timed out waiting for {what}", report() if report else "")
        time.sleep(POLL_S)


def _call(address: Address, password: str | None, *args: Any) -> Any:
    return control.call(address.host, address.port, None, password, *args)


def _address(node: EmbeddedServer) -> Address:
    return Address(node.host, node.port)


def _password(config: Mapping[str, Any]) -> str | None:
    value = config.get("requirepass")
    return str(value) if value else None


def _text(reply: Any) -> str:
    return reply.decode() if isinstance(reply, bytes) else str(reply)
