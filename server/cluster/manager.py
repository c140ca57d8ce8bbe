"""The cluster of a server started with `cluster-enabled yes`: its configuration, its cron, its hooks.

What it is.  `Cluster` is what `srv.cluster` holds in cluster mode (None otherwise): the
ClusterState (state.py), loaded from cluster-config-file or created with a new node ID (and
saved at once, as clusterInit does), the file locked first (conflock.py); myself's announced
address from the configuration (port, tls-port, cluster-port, cluster-announce-*); the bus
(bus.py); elections and manual failover (failover.py); the cron (clusterCron, every 100 ms, then
its hooks: blocked.py's); the work deferred to the end of the event-loop pass (`todo`, Redis's
clusterDoBeforeSleep / clusterBeforeSleep: the cluster's state, nodes.conf); the slot index of
db 0, which CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT read; and PUBLISH / SPUBLISH to the other
nodes (pubsub.py).

Rule: the layers below reach the cluster only through the hooks core.py wires (`cluster_route`,
declared in base/interfaces.py); commands/t_cluster.py and admin/info.py read and change it here.
A change of nodes, slots or epochs calls `changed()` (or `do_before_sleep`), which only sets
`todo`: the state is updated and nodes.conf saved once per loop pass, fsynced only when a change
asked for it (an epoch, a vote, slots taken from another node), as Redis does.  Where Redis saves
at once (an epoch collision, a replica taking its master's place, CLUSTER SAVECONFIG) or where the
bus would send a message that Redis sends only after its beforeSleep has saved (a vote, an
election, the PONGs after an imported slot's epoch bump), `save_or_die` saves at once.

Invariants: `todo` is done before any reply is written (core.py's flush_writes and a closing
client's last flush run `before_sleep` first, as Redis's beforeSleep runs clusterBeforeSleep before
handleClientsWithPendingWrites), so a command that changed the configuration replies only once
nodes.conf holds the change; with `todo` set, a callback that runs it is scheduled (a change with
no reply behind it, e.g. from the bus or the cron, is saved at the end of its loop pass too).
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
from raxdb.server.cluster.state import (
    MASTER,
    MYSELF,
    NOFAILOVER,
    OK,
    TODO_FSYNC_CONFIG,
    TODO_HANDLE_FAILOVER,
    TODO_SAVE_CONFIG,
    TODO_UPDATE_STATE,
    ClusterState,
    Node,
    now_ms,
)
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
        self.bus: Any = None  # bus.py's Bus, once serving
        self.failover = Failover(self)  # elections and manual failover (failover.py)
        self.cron_handle: Any = None
        self.cron_hooks: list[Callable[[], None]] = []  # run by the cron, after the bus's part
        self.iteration = 0
        self.announced_ip = ""
        self.drop_filter = -1  # DEBUG DROP-CLUSTER-PACKET-FILTER: the bus ignores messages of this type
        self.todo = 0  # TODO_* flags: work for the end of this loop pass (before_sleep)
        self._todo_scheduled = False  # a callback that runs before_sleep is scheduled
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
        self.do_before_sleep(TODO_SAVE_CONFIG)

    def save(self, fsync: bool = True) -> str | None:
        """nodes.conf rewritten (clusterSaveConfig): None, or the error's text."""
        self.todo &= ~(TODO_SAVE_CONFIG | TODO_FSYNC_CONFIG) if fsync else ~TODO_SAVE_CONFIG
        try:
            replaced = nodesconf.save(self.st, self.path, fsync)
        except OSError as e:
            return e.strerror or str(e)
        if replaced:
            self.lock.follow()
        return None

    def save_or_die(self, fsync: bool = True) -> None:
        """clusterSaveConfigOrDie: saved now, or the fatal log line and exit 1."""
        err = self.save(fsync)
        if err is not None:
            LOG.warning(f"Fatal: can't update cluster config file: {err}")
            raise SystemExit(1)

    def changed(self, state: bool = True, fsync: bool = False) -> None:
        """The configuration changed: the state updated (`state`) and nodes.conf saved (fsynced
        with `fsync`) at the end of this loop pass, before any reply is written."""
        self.do_before_sleep((TODO_UPDATE_STATE if state else 0) | TODO_SAVE_CONFIG
                             | (TODO_FSYNC_CONFIG if fsync else 0))

    def do_before_sleep(self, flags: int) -> None:
        """clusterDoBeforeSleep: `flags` done by before_sleep, which a callback of the loop runs if
        no reply's flush does first (without a running loop, at once)."""
        self.todo |= flags
        if not self._todo_scheduled:
            self._todo_scheduled = True
            self.srv.call_soon(self._scheduled_before_sleep)

    def _scheduled_before_sleep(self) -> None:
        self._todo_scheduled = False
        self.before_sleep()

    def before_sleep(self) -> None:
        """clusterBeforeSleep: the failover's work, the state, nodes.conf, as `todo` asks."""
        flags = self.todo
        self.todo = 0
        if flags & TODO_HANDLE_FAILOVER:
            self.failover.before_sleep()
            flags |= self.todo  # what the failover changed is saved in this pass too
            self.todo = 0
        if flags & TODO_UPDATE_STATE:
            self.update_state()
        if flags & TODO_SAVE_CONFIG:
            self.save_or_die(bool(flags & TODO_FSYNC_CONFIG))

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
        self.bus.listen(socks)
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
