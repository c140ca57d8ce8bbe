"""Replicas in a cluster: which master this node replicates, and following a master that moved.

What it is.  Redis 7.0's cluster.c replica handling, on top of the replication room
(server/replication/): `set_master` (clusterSetMaster: myself becomes a replica of a master, its
open slots closed, replicating from the master's data port), `replicate` (CLUSTER REPLICATE's
checks and errors), `slave_offset` (replicationGetSlaveOffset: how much of its master's stream
this replica has applied, what its bus header announces), `follow_slots` (the end of
clusterUpdateSlotsConfigWith: a master left without slots, or a replica whose master was left
without them, replicates the node that took them; a sub-replica goes to its grandmaster),
`ensure_replicating` (clusterCron: a replica whose replication is off starts it), and replica
migration (clusterHandleSlaveMigration: a replica of a master with more working replicas than
cluster-migration-barrier moves to an orphaned master).

Rule: the cluster's view (flags, slaveof, replicas lists) changes together with the replication
link, here; the bus and the commands call these functions rather than the replication room.

Invariants: myself is a replica exactly when `myself.slaveof` is set and the replication link
points at that node's address (restored by `ensure_replicating` when it is not); a node never
replicates itself; a master that becomes a replica serves no slot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raxdb.server.base.errors import CommandError
from raxdb.server.base.log import LOG
from raxdb.server.cluster.state import (
    FAIL,
    HANDSHAKE,
    MASTER,
    MIGRATE_TO,
    NOADDR,
    OK,
    PFAIL,
    SLAVE,
    Node,
    now_ms,
)
from raxdb.server.replication import replica

if TYPE_CHECKING:
    from raxdb.server.cluster.manager import Cluster

MIGRATION_DELAY_MS = 5000  # CLUSTER_SLAVE_MIGRATION_DELAY


def slave_offset(cluster: Cluster) -> int:
    """replicationGetSlaveOffset: the master's stream applied so far (its client's reploff, or
    the cached master's), 0 on a master."""
    repl = cluster.srv.repl
    if repl.masterhost is None or repl.link is None:
        return 0
    link = repl.link
    if link.master is not None:
        return max(link.master.reploff, 0)
    if link.cached is not None:
        return max(link.cached[1], 0)
    return 0


def my_offset(cluster: Cluster) -> int:
    """The offset a bus header announces: a replica's applied offset, a master's own."""
    if cluster.st.myself.is_replica():
        return slave_offset(cluster)
    return cluster.srv.repl.master_repl_offset


def set_master(cluster: Cluster, n: Node) -> None:
    """clusterSetMaster: myself replicates `n` (a master, not myself; myself serves no slot)."""
    st = cluster.st
    me = st.myself
    assert n is not me and me.numslots == 0
    if me.is_master():
        me.flags = (me.flags & ~(MASTER | MIGRATE_TO)) | SLAVE
        st.close_slots()
    elif me.slaveof is not None:
        st.remove_replica(me.slaveof, me)
    me.slaveof = n
    st.add_replica(n, me)
    replica.set_master(cluster.srv, n.ip, n.port)
    cluster.failover.reset_manual()


def gave_last_slot(cluster: Cluster, target: Node) -> None:
    """CLUSTER SETSLOT <slot> NODE <target> took myself's last slot: a master left without slots
    becomes `target`'s replica, when cluster-allow-replica-migration allows (clusterCommand)."""
    me = cluster.st.myself
    if me.numslots or target is me or cluster.values()["cluster-allow-replica-migration"] != "yes":
        return
    LOG.warning(f"Configuration change detected. Reconfiguring myself as a replica of {target.name}")
    set_master(cluster, target)
    cluster.changed(fsync=True)


def replicate(cluster: Cluster, n: Node | None, name: str) -> None:
    """CLUSTER REPLICATE <node-id>: the checks of clusterCommand, in its order, then
    clusterSetMaster."""
    st = cluster.st
    me = st.myself
    if n is None:
        raise CommandError(f"ERR Unknown node {name}")
    if n is me:
        raise CommandError("ERR Can't replicate myself")
    if n.is_replica():
        raise CommandError("ERR I can only replicate a master, not a replica.")
    if me.is_master() and (me.numslots or len(cluster.srv.dbs[0])):
        raise CommandError("ERR To set a master the node must be empty and without assigned slots.")
    set_master(cluster, n)
    cluster.changed()


def become_master(cluster: Cluster) -> None:
    """Myself a master again, its replication stopped (clusterSetNodeAsMaster(myself) and
    replicationUnsetMaster), as a promotion and CLUSTER RESET do."""
    cluster.st.set_master(cluster.st.myself)
    replica.unset_master(cluster.srv)


def follow_slots(cluster: Cluster, sender: Node, curmaster: Node | None, taken: int, claimed: int) -> bool:
    """The end of clusterUpdateSlotsConfigWith, after `sender` took `taken` of its `claimed`
    slots from `curmaster` (myself, or the master myself replicates): True when myself changed
    master (the keys of lost slots then go with the full resync, not one by one)."""
    st = cluster.st
    me = st.myself
    allow = cluster.values()["cluster-allow-replica-migration"] == "yes"
    if taken and curmaster is not None and curmaster.numslots == 0 and (allow or claimed == taken):
        LOG.warning(f"Configuration change detected. Reconfiguring myself as a replica of {sender.name}")
        set_master(cluster, sender)
        return True
    master = me.slaveof
    if master is not None and master.slaveof is not None and master.slaveof is not me:
        LOG.warning(f"I'm a sub-replica! Reconfiguring myself as a replica of grandmaster {master.slaveof.name}")
        set_master(cluster, master.slaveof)
        return True
    return False


def ensure_replicating(cluster: Cluster) -> None:
    """clusterCron: a replica whose replication is off (a restart from nodes.conf) starts it as
    soon as its master's address is known."""
    me = cluster.st.myself
    master = me.slaveof
    if me.is_replica() and master is not None and cluster.srv.repl.masterhost is None \
            and not master.flags & NOADDR and master.ip:
        replica.set_master(cluster.srv, master.ip, master.port)


def master_moved(cluster: Cluster, node: Node) -> None:
    """nodeUpdateAddressIfNeeded: my master's new address is where replication goes now."""
    me = cluster.st.myself
    if me.is_replica() and me.slaveof is node:
        replica.set_master(cluster.srv, node.ip, node.port)


def ok_replicas(n: Node) -> int:
    """clusterCountNonFailingSlaves."""
    return sum(1 for r in n.replicas if not r.flags & FAIL)


def migration_cron(cluster: Cluster) -> None:
    """clusterCron's orphaned-master count, then clusterHandleSlaveMigration when this replica
    is one of those of the masters with the most working replicas."""
    st = cluster.st
    me = st.myself
    if not me.is_replica() or cluster.values()["cluster-allow-replica-migration"] != "yes":
        return
    orphaned = max_replicas = mine = 0
    for node in st.nodes.values():
        if node is me or not node.is_master() or node.flags & (FAIL | NOADDR | HANDSHAKE):
            continue
        ok = ok_replicas(node)
        if ok == 0 and node.numslots and node.flags & MIGRATE_TO:
            orphaned += 1
        max_replicas = max(max_replicas, ok)
        if me.slaveof is node:
            mine = ok
    if orphaned and max_replicas >= 2 and mine == max_replicas:
        _migrate(cluster, max_replicas)


def _migrate(cluster: Cluster, max_replicas: int) -> None:
    """clusterHandleSlaveMigration: the candidate (the smallest name among the replicas of the
    masters with the most working replicas) moves to an orphaned master that stayed orphaned
    for MIGRATION_DELAY_MS, leaving its master at least cluster-migration-barrier replicas."""
    st = cluster.st
    me = st.myself
    master = me.slaveof
    if st.state != OK or master is None:
        return
    working = sum(1 for r in master.replicas if not r.flags & (FAIL | PFAIL))
    if working <= int(cluster.values()["cluster-migration-barrier"]):
        return
    candidate = me
    target: Node | None = None
    now = now_ms()
    for node in st.nodes.values():
        ok = ok_replicas(node) if node.is_master() else 0
        orphaned = node.is_master() and not node.flags & FAIL and node.flags & MIGRATE_TO and ok == 0
        if orphaned:
            if target is None and node.numslots:
                target = node
            if not node.orphaned_time:
                node.orphaned_time = now
        else:
            node.orphaned_time = 0
        if ok == max_replicas:
            for r in node.replicas:
                if r.name < candidate.name:
                    candidate = r
    if target is not None and candidate is me and now - target.orphaned_time > MIGRATION_DELAY_MS:
        LOG.warning(f"Migrating to orphaned master {target.name}")
        set_master(cluster, target)
        cluster.changed()
