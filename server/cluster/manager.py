"""The cluster of a server started with `cluster-enabled yes`: its configuration, its cron, its hooks.

What it is.  `Cluster` is what `srv.cluster` holds in cluster mode (None otherwise): the
ClusterState (state.py), loaded from cluster-config-file or created with a new node ID (and
saved at once, as clusterInit does), the file locked first (conflock.py); myself's announced
address from the configuration (port, tls-port, cluster-port, cluster-announce-*); the bus
(bus.py); elections and manual failover (failover.py); the cron (clusterCron, every 100 ms, then
its hooks: blocked.py's); saving nodes.conf after every configuration change; the slot index of
db 0, which CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT read; and PUBLISH / SPUBLISH to the other
nodes (pubsub.py).

Rule: the layers below reach the cluster only through the hooks core.py wires (`cluster_route`,
declared in base/interfaces.py); commands/t_cluster.py and admin/info.py read and change it here.

Invariants: after any change of nodes, slots or epochs, `changed()` has saved nodes.conf before
the command that made it replies (clusterSaveConfigOrDie in beforeSleep, which runs before
replies are written).  A save is fsynced when an epoch, a node's config epoch or myself's role
changed since the last fsynced one: the changes Redis saves with CLUSTER_TODO_FSYNC_CONFIG (epoch
bumps, votes, newer config epochs from the bus, failovers, myself turned replica, CLUSTER RESET);
the others (slots assigned or opened, flags, new nodes) are written without one, as Redis's.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from raxdb.server.base.log import LOG
from raxdb.server.cluster import nodesconf
from raxdb.server.cluster import pubsub as cluster_pubsub
from raxdb.server.cluster.conflock import ConfigLock
from raxdb.server.cluster.failover import Failover
from raxdb.server.cluster.state import MASTER, MYSELF, NOFAILOVER, OK, ClusterState, Node, now_ms
from raxdb.storage.slots import SlotIndex

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server

CRON_S = 0.1
PORT_INCR = 10000


class Cluster:
    def __init__(self, srv: Server) -> None:
        self.srv = srv
        values = srv.config.values
        self.path = values["cluster-config-file"]
        self.st = self._load()
        self.lock = ConfigLock(self.path)
        self.lock.acquire()  # before saving: a node that may not use the file must not write it
        self.fsynced: tuple[Any, ...] = ()  # _epochs() at the last fsynced save
        self.bus: Any = None  # bus.py's Bus, once serving
        self.failover = Failover(self)  # elections and manual failover (failover.py)
        self.cron_handle: Any = None
        self.cron_hooks: list[Callable[[], None]] = []  # run by the cron, after the bus's part
        self.iteration = 0
        self.announced_ip = ""
        self.drop_filter = -1  # DEBUG DROP-CLUSTER-PACKET-FILTER: the bus ignores messages of this type
        self.refresh_myself()
        srv.dbs[0].slot_keys = SlotIndex()
        cluster_pubsub.attach(self)
        self.save_or_die()
        on = srv.config.on_change.setdefault
        for name in ("cluster-announce-ip", "cluster-announce-port", "cluster-announce-bus-port",
                     "cluster-announce-tls-port", "cluster-announce-hostname", "cluster-replica-no-failover"):
            on(name, []).append(lambda _v: self._announce_changed())

    # ---- configuration -------------------------------------------------------------------------
    def _load(self) -> ClusterState:
        try:
            with open(self.path) as f:
                text = f.read()
        except FileNotFoundError:
            text = ""
        if not text.strip():
            myself = Node(None, MYSELF | MASTER)
            LOG.notice(f"No cluster configuration found, I'm {myself.name}")
            return ClusterState(myself)
        try:
            st = nodesconf.parse(text)
        except nodesconf.ConfigFileError as e:
            LOG.warning(str(e))
            raise SystemExit(1) from None
        LOG.notice(f"Node configuration loaded, I'm {st.myself.name[:40]}")
        return st

    def values(self) -> dict[str, str]:
        return self.srv.config.values

    def announced_ports(self) -> tuple[int, int, int]:
        """deriveAnnouncedPorts: (port, pport, cport) as the bus announces them."""
        v = self.values()
        tls = v.get("tls-cluster") == "yes"
        port = int(v["tls-port"]) if tls else self.srv.config.port
        pport = self.srv.config.port if tls else 0
        cport = self.bus_port()
        port = int(v["cluster-announce-tls-port" if tls else "cluster-announce-port"]) or port
        if tls:
            pport = int(v["cluster-announce-port"]) or pport
        cport = int(v["cluster-announce-bus-port"]) or cport
        return port, pport, cport

    def bus_port(self) -> int:
        """The port the bus listens on: cluster-port, else the data port's + 10000, the TLS port's
        under tls-cluster (clusterInit; a TLS-only node has port 0)."""
        v = self.values()
        port = int(v["tls-port"]) if v.get("tls-cluster") == "yes" else self.srv.config.port
        return int(v["cluster-port"]) or port + PORT_INCR

    def refresh_myself(self) -> None:
        """clusterUpdateMyselfAnnouncedPorts, ...Ip, ...Hostname, ...Flags."""
        me = self.st.myself
        me.port, me.pport, me.cport = self.announced_ports()
        v = self.values()
        ip = v["cluster-announce-ip"]
        if ip != self.announced_ip:  # clusterUpdateMyselfIp: none announced, learn it again
            me.ip = ip
            self.announced_ip = ip
        me.hostname = v["cluster-announce-hostname"]
        if v["cluster-replica-no-failover"] == "yes":
            me.flags |= NOFAILOVER
        else:
            me.flags &= ~NOFAILOVER

    def _announce_changed(self) -> None:
        """CONFIG SET of an announced address: myself's line and the next messages show it."""
        self.refresh_myself()
        self.save_or_die()

    def _epochs(self) -> tuple[Any, ...]:
        """What a save must fsync when it changed (see the module's invariants)."""
        st = self.st
        me = st.myself
        return (st.current_epoch, st.last_vote_epoch, me.name, me.slaveof and me.slaveof.name,
                sorted((n.name, n.config_epoch) for n in st.nodes.values()))

    def save(self, fsync: bool | None = None) -> str | None:
        """nodes.conf rewritten (fsynced if `fsync`, or when None if the epochs changed since
        the last fsync): None, or the error's text."""
        epochs = self._epochs()
        if fsync is None:
            fsync = epochs != self.fsynced
        try:
            nodesconf.save(self.st, self.path, fsync)
        except OSError as e:
            return e.strerror or str(e)
        if fsync:
            self.fsynced = epochs
        return None

    def save_or_die(self) -> None:
        err = self.save()
        if err is not None:
            LOG.warning(f"Fatal: can't update cluster config file: {err}")
            raise SystemExit(1)

    def changed(self, state: bool = True) -> None:
        """The configuration changed: update the state and save nodes.conf."""
        if state:
            self.update_state()
        self.save_or_die()

    def update_state(self) -> None:
        v = self.values()
        word = self.st.update_state(v["cluster-require-full-coverage"] == "yes", int(v["cluster-node-timeout"]))
        if word is not None:
            LOG.warning(f"Cluster state changed: {word}")

    def sendbuf_limit(self) -> int:
        """cluster-link-sendbuf-limit in bytes (0: none)."""
        return int(self.values()["cluster-link-sendbuf-limit"])

    def node_timeout(self) -> int:
        return int(self.values()["cluster-node-timeout"])

    def publish(self, channel: bytes, message: bytes, shard: bool) -> None:
        """PUBLISH / SPUBLISH ran here: the other nodes (of this shard, for SPUBLISH) get it."""
        cluster_pubsub.propagate(self, channel, message, shard)

    # ---- keys ----------------------------------------------------------------------------------
    def count_keys(self, slot: int) -> int:
        return self.srv.dbs[0].slot_keys.count(slot)

    def keys_in_slot(self, slot: int, limit: int) -> list[bytes]:
        return self.srv.dbs[0].slot_keys.keys(slot, limit)

    def delete_keys_in_slot(self, slot: int) -> int:
        """delKeysInSlot: the keys of a slot this node lost (as DELs to replicas and the AOF)."""
        db = self.srv.dbs[0]
        keys = self.keys_in_slot(slot, 1 << 62)
        for k in keys:
            db.delete(k)
        return len(keys)

    # ---- running -------------------------------------------------------------------------------
    async def start(self, socks: list[Any]) -> None:
        from raxdb.server.cluster.bus import Bus  # noqa: PLC0415 (the bus needs a running loop)

        self.bus = Bus(self)
        await self.bus.listen(socks)
        self.st.first_update_ms = now_ms()
        self._schedule()

    def _schedule(self) -> None:
        loop = self.srv.loop
        if loop is not None:
            self.cron_handle = loop.call_later(CRON_S, self._cron)

    def _cron(self) -> None:
        try:
            self.iteration += 1
            if self.bus is not None:
                self.bus.cron(self.iteration)  # updates the state itself when a node times out
                self.failover.cron()  # replication, elections, manual failover, replica migration
            if self.st.state != OK:  # clusterCron: an ok state changes only through an event
                self.update_state()
            for hook in self.cron_hooks:  # e.g. blocked.py's redirection of blocked clients
                hook()
        except Exception as e:  # the cron must go on
            LOG.warning(f"cluster cron: {e!r}")
        self._schedule()

    def close(self) -> None:
        if self.cron_handle is not None:
            self.cron_handle.cancel()
        if self.bus is not None:
            self.bus.close()
        if os.path.exists(self.path):
            self.save(fsync=True)
        self.lock.release()
