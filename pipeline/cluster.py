"""Redis Cluster support for raxdb.spark: finding out whether the server is a cluster, the driver's
cluster client, and where a read or write task sends one key's commands.

What it is.  The `cluster` option is `auto` by default: the driver asks the seed node (`host`,
`port`) `INFO cluster` once when Spark creates a reader or writer (`resolve`), and on a cluster
records every node CLUSTER SLOTS lists in the connection options it ships to the tasks (`nodes`),
so a task can still find the slot map when the seed is the node that died (the `nodes` option
adds seeds the driver tries when `host` does not answer).  The driver plans
through redis-py's RedisCluster (`driver_client`: key-routed XINFO / XRANGE / XGROUP, pipelines
split by node, MOVED / ASK followed, the map reloaded after a lost connection) and finds streams
by SCAN on every master (connection.scan_streams).  Tasks keep their own plain connections (the paged XRANGE
with one request in flight, the sink's MULTI/EXEC) and route them with `Route`: one key's (one
slot's) current node, started from the driver's plan, moved by MOVED, redirected for a command by
ASK (ASKING before it), and looked up again in a fresh CLUSTER SLOTS after a lost connection or a
TRYAGAIN / CLUSTERDOWN reply.

Rule: routing and discovery only; what is read or written, and the retry budget (Backoff,
retryTimeout), belong to the callers (source.py, sink.py).  No server module is imported.

Invariants: offsets and read ranges are per stream, never per node, so a stream that changes
owner between or during micro-batches is read from its new owner at the same position (a range
read is resumed after the last entry handed out, as after a restart); the sink's marker for a
partition's commands on one slot lives in that slot (`slot_tag`), so both move together and one
MULTI/EXEC per slot commits the commands with their marker.
"""

from __future__ import annotations

import binascii
import dataclasses
import random
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

import redis
from redis.exceptions import AskError, ClusterDownError, MovedError

from raxdb.spark.connection import RETRYABLE, TRANSIENT, client, decode_key, retrying
from raxdb.spark.options import ConnectionOptions, OptionError

SLOTS = 16384
Node = tuple[str, int]
Cmd = TypeVar("Cmd", bound=Sequence[Any])  # a command: its name, its key, its other arguments


def key_slot(key: bytes | str) -> int:
    """Redis Cluster's hash slot: CRC16 (XMODEM, which binascii.crc_hqx is) of the key, or of its
    hash tag (the part between the first `{` and the next `}`, when not empty), mod 16384."""
    if isinstance(key, str):
        key = key.encode("utf-8", "surrogateescape")
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1:end]
    return binascii.crc_hqx(key, 0) % SLOTS


_TAGS: list[str] = []


def slot_tag(slot: int) -> str:
    """A short hash tag `{t}` whose slot is `slot` (the first of base-36 counters to hash there;
    the table is built once per process, about 0.1 s)."""
    if not _TAGS:
        table: list[str | None] = [None] * SLOTS
        missing, i = SLOTS, 0
        while missing:
            tag = _base36(i)
            s = binascii.crc_hqx(tag.encode(), 0) % SLOTS
            if table[s] is None:
                table[s] = tag
                missing -= 1
            i += 1
        _TAGS.extend(t for t in table if t is not None)
    return "{" + _TAGS[slot] + "}"


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = digits[n % 36]
    while n >= 36:
        n //= 36
        out = digits[n % 36] + out
    return out


# ---------------------------------------------------------------------------------------------
# The driver: resolving the mode, the cluster client, discovery


def resolve(opts: Any) -> Any:
    """`opts` (ReadOptions / WriteOptions) with its connection's cluster mode decided: `auto`
    becomes `true` or `false` after INFO cluster on the seed; on a cluster, every node is recorded."""
    conn = opts.connection
    if conn.cluster == "false":
        return opts
    return dataclasses.replace(opts, connection=retrying(conn, "finding out whether the server is a cluster",
                                                         lambda: _resolve_connection(conn)))


def _resolve_connection(conn: ConnectionOptions) -> ConnectionOptions:
    """Asks the seed, or the first of the `nodes` seeds that answers when it does not."""
    error: Exception | None = None
    for host, port in dict.fromkeys([(conn.host, conn.port), *conn.nodes]):
        try:
            return _ask_seed(conn, host, port)
        except RETRYABLE as e:
            error = e
    assert error is not None
    raise error


def _ask_seed(conn: ConnectionOptions, host: str, port: int) -> ConnectionOptions:
    r = client(dataclasses.replace(conn, host=host, port=port))
    try:
        enabled = str(r.info("cluster").get("cluster_enabled")) == "1"
        if not enabled:
            if conn.cluster == "true":
                raise OptionError(f"option 'cluster' is true, but {host}:{port} is not a cluster "
                                  f"node (INFO cluster: cluster_enabled:0)")
            return dataclasses.replace(conn, cluster="false")
        if conn.db != 0:
            raise OptionError("option 'db': a Redis Cluster has only database 0")
        nodes = _slot_nodes(r.execute_command("CLUSTER", "SLOTS"), host)
        return dataclasses.replace(conn, cluster="true", nodes=tuple(sorted(
            set(nodes.values()) | {(host, port)} | set(conn.nodes))))
    finally:
        r.close()


def _slot_nodes(reply: list, default_host: str, replicas: bool = False) -> dict[int, Node]:
    """slot -> master (or, with `replicas`, -> a random replica where one is listed) from CLUSTER SLOTS."""
    owners: dict[int, Node] = {}
    for item in reply:
        lo, hi, master, *others = item
        chosen = master
        if replicas and others:
            chosen = random.choice(others)
        host = decode_key(chosen[0]) or default_host  # an empty / "?" endpoint: the node asked
        node = (default_host if host == "?" else host, int(chosen[1]))
        for slot in range(int(lo), int(hi) + 1):
            owners[slot] = node
    return owners


def driver_client(conn: ConnectionOptions) -> redis.Redis | redis.RedisCluster:
    """A plain client on the seed, or a RedisCluster (masters only: planning needs the newest data)."""
    if not conn.is_cluster:
        return client(conn)
    kwargs = _client_kwargs(conn)
    startup = [redis.cluster.ClusterNode(h, p) for h, p in conn.nodes or ((conn.host, conn.port),)]
    return redis.RedisCluster(startup_nodes=startup, **kwargs)


def _client_kwargs(conn: ConnectionOptions) -> dict[str, Any]:
    kwargs: dict[str, Any] = dict(
        username=conn.username, password=conn.password, socket_connect_timeout=conn.connect_timeout,
        socket_timeout=conn.socket_timeout, protocol=2)
    if conn.tls:
        kwargs.update(ssl=True, ssl_ca_certs=conn.tls_ca_cert, ssl_certfile=conn.tls_cert,
                      ssl_keyfile=conn.tls_key, ssl_cert_reqs="required" if conn.tls_verify else "none",
                      ssl_check_hostname=conn.tls_verify)
    return kwargs


def owners(r: redis.Redis | redis.RedisCluster, keys: Iterable[str]) -> dict[str, Node | None]:
    """Each key's master as the driver's client knows it (None when not a cluster)."""
    if not isinstance(r, redis.RedisCluster):
        return dict.fromkeys(keys)
    result: dict[str, Node | None] = {}
    for key in keys:
        node = r.get_node_from_key(key)
        result[key] = (node.host, int(node.port))
    return result


def spread(items: Sequence[Any], node_of) -> list[Any]:
    """Items reordered round-robin over their nodes (each node's items in their order), so that the
    tasks Spark runs side by side go to different masters."""
    by_node: dict[Any, list] = {}
    for item in items:
        by_node.setdefault(node_of(item), []).append(item)
    queues = list(by_node.values())
    out: list[Any] = []
    for i in range(max((len(q) for q in queues), default=0)):
        out.extend(q[i] for q in queues if i < len(q))
    return out


# ---------------------------------------------------------------------------------------------
# Tasks: where one slot's commands go


def slot_map(conn: ConnectionOptions, replicas: bool = False) -> dict[int, Node]:
    """slot -> node from CLUSTER SLOTS of the first known node that answers."""
    error: Exception | None = None
    for host, port in dict.fromkeys([*conn.nodes, (conn.host, conn.port)]):
        r = client(dataclasses.replace(conn, host=host, port=port))
        try:
            return _slot_nodes(r.execute_command("CLUSTER", "SLOTS"), host, replicas)
        except (*RETRYABLE, *TRANSIENT) as e:
            error = e
        finally:
            r.close()
    raise redis.ConnectionError(f"no node of the cluster answered CLUSTER SLOTS ({error})")


class Route:
    """Where one slot's commands go now: `node` (host, port), with `asking` when the last reply was
    an ASK (the slot is being imported there: each command must follow ASKING).  Not a cluster:
    always the seed."""

    def __init__(self, conn: ConnectionOptions, slot: int, node: Node | None = None,
                 replica: bool = False) -> None:
        self.conn = conn
        self.slot = slot
        self.replica = replica
        self.asking = False
        self.node: Node = node or (self._lookup() if conn.is_cluster else (conn.host, conn.port))

    def _lookup(self) -> Node:
        node = slot_map(self.conn, self.replica).get(self.slot)
        if node is None:
            raise ClusterDownError(f"CLUSTERDOWN slot {self.slot} is not served by any node")
        return node

    def follow(self, error: Exception) -> bool:
        """Take a MOVED / ASK reply into account; False when `error` is no redirection."""
        if not self.conn.is_cluster or not isinstance(error, AskError):
            return False
        self.node = (error.host or self.node[0], int(error.port))
        self.asking = not isinstance(error, MovedError)
        if isinstance(error, MovedError):
            self.replica = False  # a replica's MOVED points at its master: read there from now on
        return True

    def relearn(self) -> None:
        """After a lost connection or a TRYAGAIN / CLUSTERDOWN: the slot's node from a fresh map."""
        if self.conn.is_cluster:
            self.asking = False
            self.node = self._lookup()

    def options(self) -> ConnectionOptions:
        return self.conn if not self.conn.is_cluster else dataclasses.replace(
            self.conn, host=self.node[0], port=self.node[1])


def group_by_slot(commands: Iterable[Cmd]) -> dict[int, list[Cmd]]:
    """Commands (whose key is argument 1) by slot, each slot's in their order."""
    groups: dict[int, list[Cmd]] = {}
    for command in commands:
        groups.setdefault(key_slot(command[1]), []).append(command)
    return groups
