"""Replica election and promotion, and manual failover (Redis 7.0's cluster.c, as is).

What it is.  `Failover` holds clusterState's failover_auth_* and mf_* fields and runs:
- the election of a replica whose master is FAIL (clusterHandleSlaveFailover): unless
  cluster-replica-no-failover is set or its data is older than cluster-replica-validity-factor
  allows, it waits 500 ms + random(0..500) + rank * 1000 (rank: the replicas of its master with
  a greater replication offset), then asks every node for a vote with currentEpoch + 1
  (FAILOVER_AUTH_REQUEST); with a majority of the masters' FAILOVER_AUTH_ACKs it takes that
  epoch as its config epoch and its master's slots, stops replicating and tells everyone
  (a PONG to every node).  An election expires after max(2 * node timeout, 2 s) and is retried
  after twice that;
- the vote a master gives (clusterSendFailoverAuthIfNeeded): one per epoch, only to a replica
  whose master is FAIL (or flagged FORCEACK), not twice for one master within 2 * node timeout,
  and only when none of the slots it claims is served with a greater config epoch;
- CLUSTER FAILOVER [FORCE|TAKEOVER] (`manual`) and the manual failover: the replica sends
  MFSTART; its master pauses writers for 2 * CLUSTER_MF_TIMEOUT and pings the replica with its
  offset, flagged PAUSED; once the replica has applied that much it is elected with FORCEACK
  (FORCE: elected at once; TAKEOVER: a new config epoch without votes).  A manual failover not
  done in CLUSTER_MF_TIMEOUT is aborted, which ends the master's pause.

Rule: decisions and log lines are Redis's; messages go through the bus (bus.py), replication
changes through replicas.py.  Work Redis defers to beforeSleep (CLUSTER_TODO_HANDLE_FAILOVER)
runs at the end of this loop iteration (`soon`, through the Cluster's before_sleep).  nodes.conf is
saved at once, fsynced, before a vote or an election's request goes out: the bus writes a message
at once, where Redis queues it and its beforeSleep has saved the epochs before the write.

Invariants: `mf_end` is 0 exactly when no manual failover is in progress; on a master, `mf_replica`
is set and writes are paused (purpose "cluster-failover") while it is; `auth_sent` means this
epoch's request went out and `auth_count` counts the distinct votes for it.
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING, Any

from raxdb.server.base.errors import SYNTAX, CommandError
from raxdb.server.base.log import LOG
from raxdb.server.cluster import replicas, wire
from raxdb.server.cluster.state import FAIL, HANDSHAKE, MYSELF, NOFAILOVER, TODO_HANDLE_FAILOVER, Node, now_ms
from raxdb.storage.slots import SLOTS

if TYPE_CHECKING:
    from raxdb.server.cluster.manager import Cluster

MF_TIMEOUT_MS = 5000  # CLUSTER_MF_TIMEOUT
MF_PAUSE_MULT = 2  # CLUSTER_MF_PAUSE_MULT
PAUSE_PURPOSE = "cluster-failover"
RELOG_PERIOD_S = 300  # CLUSTER_CANT_FAILOVER_RELOG_PERIOD

CANT_NONE, CANT_DATA_AGE, CANT_WAITING_DELAY, CANT_EXPIRED, CANT_WAITING_VOTES = range(5)
_CANT_TEXT = {
    CANT_DATA_AGE: "Disconnected from master for longer than allowed. Please check the "
                   "'cluster-replica-validity-factor' configuration option.",
    CANT_WAITING_DELAY: "Waiting the delay before I can start a new failover.",
    CANT_EXPIRED: "Failover attempt expired.",
    CANT_WAITING_VOTES: "Waiting for votes, but majority still not reached.",
}


class Failover:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.auth_time = 0  # when the election starts (or started)
        self.auth_count = 0
        self.auth_sent = False
        self.auth_rank = 0
        self.auth_epoch = 0
        self.voters: set[str] = set()  # the masters whose ACK counted (a duplicate counts once)
        self.cant_reason = CANT_NONE
        self.lastlog = 0.0
        self.mf_end = 0
        self.mf_can_start = False
        self.mf_replica: Node | None = None  # on a master: the replica that sent MFSTART
        self.mf_master_offset = -1

    # ---- helpers -------------------------------------------------------------------------------
    def soon(self) -> None:
        """clusterDoBeforeSleep(CLUSTER_TODO_HANDLE_FAILOVER): at the end of this iteration (not
        without a running loop: the cron's next tick does it)."""
        if self.cluster.srv.loop is not None:
            self.cluster.do_before_sleep(TODO_HANDLE_FAILOVER)

    def before_sleep(self) -> None:
        """clusterBeforeSleep's failover part."""
        if self.cluster.st.myself.is_replica():
            self.handle_manual()
            self.handle_replica()

    def header_flags(self) -> int:
        """mflags[0] of every message: PAUSED on a master whose writers a manual failover holds."""
        if self.mf_end and self.cluster.st.myself.is_master():
            return wire.FLAG0_PAUSED
        return 0

    # ---- the cron (clusterCron's part) -----------------------------------------------------------
    def cron(self) -> None:
        cluster = self.cluster
        st = cluster.st
        me = st.myself
        if self.mf_end and me.is_master() and self.mf_replica is not None:
            link = self.mf_replica.link  # the replica that asked is pinged continuously
            if link is not None and link.transport is not None:
                cluster.bus.send_ping(link, wire.PING)
        replicas.ensure_replicating(cluster)
        if self.mf_end and self.mf_end < now_ms():  # manualFailoverCheckTimeout
            LOG.warning("Manual failover timed out.")
            self.reset_manual()
        if me.is_replica():
            self.handle_manual()
            self.handle_replica()
            replicas.migration_cron(cluster)

    # ---- the replica's election (clusterHandleSlaveFailover) --------------------------------------
    def _rank(self) -> int:
        """clusterGetSlaveRank: the replicas of my master with a greater offset than mine."""
        me = self.cluster.st.myself
        master = me.slaveof
        if master is None:
            return 0
        mine = replicas.slave_offset(self.cluster)
        return sum(1 for r in master.replicas if r is not me and not r.flags & NOFAILOVER and r.repl_offset > mine)

    def _log_cant(self, reason: int) -> None:
        """clusterLogCantFailover: a reason logged when it changes or every 5 minutes, and only
        once the master has been failing for node timeout + 5 s."""
        now = time.time()
        if reason == self.cant_reason and now - self.lastlog < RELOG_PERIOD_S:
            return
        self.cant_reason = reason
        master = self.cluster.st.myself.slaveof
        if master is not None and master.flags & FAIL and \
                now_ms() - master.fail_time < self.cluster.node_timeout() + 5000:
            return
        self.lastlog = now
        LOG.warning(f"Currently unable to failover: {_CANT_TEXT.get(reason, 'Unknown reason code.')}")

    def _data_age(self) -> int:
        """How long (ms) this replica has been without its master's stream."""
        srv = self.cluster.srv
        link = srv.repl.link
        now = time.time()
        if link is None:
            return 1 << 62
        if srv.repl.master_link_up() and link.master is not None:
            return int((now - link.master.last_interaction / 1000) * 1000)
        return int((now - link.down_since) * 1000)

    def handle_replica(self) -> None:
        cluster = self.cluster
        st = cluster.st
        me = st.myself
        master = me.slaveof
        values = cluster.values()
        timeout = cluster.node_timeout()
        now = now_ms()
        auth_age = now - self.auth_time
        quorum = st.size // 2 + 1
        manual = bool(self.mf_end) and self.mf_can_start
        auth_timeout = max(timeout * 2, 2000)
        retry = auth_timeout * 2
        if me.is_master() or master is None or (not master.flags & FAIL and not manual) or \
                (values["cluster-replica-no-failover"] == "yes" and not manual) or master.numslots == 0:
            self.cant_reason = CANT_NONE
            return
        data_age = self._data_age()
        if data_age > timeout:
            data_age -= timeout
        factor = int(values["cluster-replica-validity-factor"])
        if factor and data_age > int(values["repl-ping-replica-period"]) * 1000 + timeout * factor and not manual:
            self._log_cant(CANT_DATA_AGE)
            return
        if auth_age > retry:
            self.auth_time = now + 500 + random.randrange(500)
            self.auth_count = 0
            self.voters.clear()
            self.auth_sent = False
            self.auth_rank = self._rank()
            self.auth_time += self.auth_rank * 1000
            if self.mf_end:
                self.auth_time = now
                self.auth_rank = 0
                self.soon()
            LOG.warning(f"Start of election delayed for {self.auth_time - now} milliseconds "
                        f"(rank #{self.auth_rank}, offset {replicas.slave_offset(cluster)}).")
            self._pong_local_replicas()
            return
        if not self.auth_sent and not self.mf_end:
            rank = self._rank()
            if rank > self.auth_rank:
                added = (rank - self.auth_rank) * 1000
                self.auth_time += added
                self.auth_rank = rank
                LOG.warning(f"Replica rank updated to #{rank}, added {added} milliseconds of delay.")
        if now < self.auth_time:
            self._log_cant(CANT_WAITING_DELAY)
            return
        if auth_age > auth_timeout:
            self._log_cant(CANT_EXPIRED)
            return
        if not self.auth_sent:
            st.current_epoch += 1
            self.auth_epoch = st.current_epoch
            LOG.warning(f"Starting a failover election for epoch {st.current_epoch}.")
            m = cluster.bus.header(wire.AUTH_REQUEST)
            if self.mf_end:
                m.mflags0 |= wire.FLAG0_FORCEACK
            cluster.update_state()
            cluster.save_or_die()  # the new currentEpoch on disk before the request leaves
            cluster.bus.broadcast(m)
            self.auth_sent = True
            return
        if self.auth_count >= quorum:
            LOG.warning("Failover election won: I'm the new master.")
            if me.config_epoch < self.auth_epoch:
                me.config_epoch = self.auth_epoch
                LOG.warning(f"configEpoch set to {me.config_epoch} after successful failover")
            self.replace_master()
        else:
            self._log_cant(CANT_WAITING_VOTES)

    def _pong_local_replicas(self) -> None:
        """clusterBroadcastPong(CLUSTER_BROADCAST_LOCAL_SLAVES): my offset to my master's
        other replicas, so that their ranks follow."""
        cluster = self.cluster
        me = cluster.st.myself
        for node in cluster.st.nodes.values():
            link = node.link
            if link is None or node.flags & (MYSELF | HANDSHAKE):  # a connecting link keeps it
                continue
            if node.is_replica() and node.slaveof is not None and node.slaveof in (me, me.slaveof):
                cluster.bus.send_ping(link, wire.PONG)

    def replace_master(self) -> None:
        """clusterFailoverReplaceYourMaster: myself a master with my old master's slots, the
        configuration saved and told to every node."""
        cluster = self.cluster
        st = cluster.st
        me = st.myself
        old = me.slaveof
        if me.is_master() or old is None:
            return
        replicas.become_master(cluster)
        for s in range(SLOTS):
            if old.has_slot(s):
                st.del_slot(s)
                st.add_slot(me, s)
        cluster.update_state()
        cluster.save_or_die()
        cluster.bus.broadcast_pong()
        self.reset_manual()

    # ---- a master's vote (clusterSendFailoverAuthIfNeeded) ----------------------------------------
    def auth_request(self, node: Node, m: wire.Message) -> None:
        cluster = self.cluster
        st = cluster.st
        me = st.myself
        master = node.slaveof
        force = m.mflags0 & wire.FLAG0_FORCEACK
        if me.is_replica() or me.numslots == 0:
            return
        if m.current_epoch < st.current_epoch:
            LOG.warning(f"Failover auth denied to {node.name}: reqEpoch ({m.current_epoch}) < "
                        f"curEpoch({st.current_epoch})")
            return
        if st.last_vote_epoch == st.current_epoch:
            LOG.warning(f"Failover auth denied to {node.name}: already voted for epoch {st.current_epoch}")
            return
        if node.is_master() or master is None or (not master.flags & FAIL and not force):
            if node.is_master():
                LOG.warning(f"Failover auth denied to {node.name}: it is a master node")
            elif master is None:
                LOG.warning(f"Failover auth denied to {node.name}: I don't know its master")
            else:
                LOG.warning(f"Failover auth denied to {node.name}: its master is up")
            return
        now = now_ms()
        wait = cluster.node_timeout() * 2
        if now - master.voted_time < wait:
            LOG.warning(f"Failover auth denied to {node.name}: can't vote about this master before "
                        f"{wait - (now - master.voted_time)} milliseconds")
            return
        slots = m.myslots
        for s in range(SLOTS):
            if not slots[s >> 3] & (1 << (s & 7)):
                continue
            owner = st.slots[s]
            if owner is None or owner.config_epoch <= m.config_epoch:
                continue
            LOG.warning(f"Failover auth denied to {node.name}: slot {s} epoch ({owner.config_epoch}) > "
                        f"reqEpoch ({m.config_epoch})")
            return
        st.last_vote_epoch = st.current_epoch
        master.voted_time = now
        cluster.save_or_die()
        if node.link is not None:  # a connecting link keeps it, as Redis's does
            cluster.bus.send(node.link, cluster.bus.header(wire.AUTH_ACK))
        LOG.warning(f"Failover auth granted to {node.name} for epoch {st.current_epoch}")

    def auth_ack(self, sender: Node, m: wire.Message) -> None:
        """A vote counts from a master serving slots, for this election's epoch or later."""
        if sender.is_master() and sender.numslots > 0 and m.current_epoch >= self.auth_epoch \
                and sender.name not in self.voters:
            self.voters.add(sender.name)
            self.auth_count += 1
            self.soon()

    # ---- manual failover ---------------------------------------------------------------------------
    def reset_manual(self) -> None:
        """resetManualFailover: a master that paused its writers for it lets them go."""
        if self.mf_replica is not None:
            self.cluster.srv.unpause(PAUSE_PURPOSE)
            self.cluster.srv.repl.failover.cluster_mf = False
        self.mf_end = 0
        self.mf_can_start = False
        self.mf_replica = None
        self.mf_master_offset = -1

    def mfstart(self, sender: Node, link: Any) -> None:
        """MFSTART from one of my replicas: pause writers, and ping it with my offset (PAUSED)."""
        cluster = self.cluster
        if sender.slaveof is not cluster.st.myself:
            return
        self.reset_manual()
        now = now_ms()
        self.mf_end = now + MF_TIMEOUT_MS
        self.mf_replica = sender
        srv = cluster.srv
        srv.repl.failover.cluster_mf = True  # replicationCron's PING would move the offset
        srv.pause(now + MF_TIMEOUT_MS * MF_PAUSE_MULT, True, PAUSE_PURPOSE)
        LOG.warning(f"Manual failover requested by replica {sender.name}.")
        cluster.bus.send_ping(link, wire.PING)

    def offset_seen(self, sender: Node, m: wire.Message) -> None:
        """My master's offset, sent while it is paused for my manual failover."""
        me = self.cluster.st.myself
        if self.mf_end and me.is_replica() and me.slaveof is sender and m.mflags0 & wire.FLAG0_PAUSED \
                and self.mf_master_offset == -1:
            self.mf_master_offset = sender.repl_offset
            LOG.warning(f"Received replication offset for paused master manual failover: {self.mf_master_offset}")
            self.soon()

    def handle_manual(self) -> None:
        """clusterHandleManualFailover: the election may start once this replica has applied
        its paused master's whole stream."""
        if not self.mf_end or self.mf_can_start or self.mf_master_offset == -1:
            return
        if self.mf_master_offset == replicas.slave_offset(self.cluster):
            self.mf_can_start = True
            LOG.warning("All master replication stream processed, manual failover can start.")
            self.soon()

    def manual(self, argv: list[bytes]) -> None:
        """CLUSTER FAILOVER [FORCE|TAKEOVER]: its checks and errors, then the failover begins."""
        force = takeover = False
        if len(argv) == 3:
            opt = argv[2].lower()
            if opt == b"force":
                force = True
            elif opt == b"takeover":
                takeover = force = True
            else:
                raise CommandError(SYNTAX)
        cluster = self.cluster
        me = cluster.st.myself
        master = me.slaveof
        if me.is_master():
            raise CommandError("ERR You should send CLUSTER FAILOVER to a replica")
        if master is None:
            raise CommandError("ERR I'm a replica but my master is unknown to me")
        if not force and (master.flags & FAIL or master.link is None):
            raise CommandError("ERR Master is down or failed, please use CLUSTER FAILOVER FORCE")
        self.reset_manual()
        self.mf_end = now_ms() + MF_TIMEOUT_MS
        if takeover:
            LOG.warning("Taking over the master (user request).")
            if cluster.st.bump_epoch():
                LOG.warning(f"New configEpoch set to {me.config_epoch}")
            self.replace_master()
        elif force:
            LOG.warning("Forced failover user request accepted.")
            self.mf_can_start = True
        else:
            LOG.warning("Manual failover user request accepted.")
            link = master.link
            if link is not None:  # a connecting link keeps it, as Redis's does
                cluster.bus.send(link, cluster.bus.header(wire.MFSTART))
        cluster.changed(state=False)
