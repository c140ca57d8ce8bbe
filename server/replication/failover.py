"""FAILOVER: a master hands its role to one of its replicas without losing a write (Redis 6.2+'s
coordinated failover, replication.c's failoverCommand, updateFailoverStatus, abortFailover).

The steps, as Redis takes them:
1. FAILOVER [TO host port [FORCE]] [TIMEOUT ms] pauses writes (a pause of its own purpose,
   `Server.pause(..., "failover")`, as CLIENT PAUSE WRITE does: a CLIENT UNPAUSE leaves it) and
   enters waiting-for-sync;
2. the replicas keep sending REPLCONF ACK (their cron's, every second; Redis sends no GETACK
   while clients are paused, since it would move the offset); once the target's ACKed offset is
   the master's offset (any replica's, without TO), the state becomes failover-in-progress and
   this server becomes a replica of the target (replicationSetMaster);
3. its link sends PSYNC <replid> <offset> FAILOVER (server/replication/replica.py); the target, whose
   replid is ours, promotes itself (replicationUnsetMaster) and continues our stream with
   +CONTINUE; that reply (or a +FULLRESYNC) ends the failover and the pause.  Any other reply
   aborts it: this server is a master again.
TIMEOUT ends the wait with an abort, or with FORCE, with the failover anyway.  FAILOVER ABORT
ends it in either state.

Invariants: `state` is NO_FAILOVER exactly when no failover pause is held; `host` is the
target once one is chosen (TO, or the first caught-up replica); while the state is not
NO_FAILOVER, REPLICAOF and SYNC/PSYNC of new replicas are refused and the replication cron runs
every 100 ms (Server._cron), so the handshake moves on quickly.

The checks of step 2 run from the cron and, deferred to the end of the loop iteration (Redis's
beforeSleep), after an ACK or the FAILOVER command: becoming a replica closes clients, which must
not happen inside the command or the ACK that caused it.  Nothing here runs on a server that
never gets a FAILOVER.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raxdb.protocol import reply as R
from raxdb.server.base.clock import PAUSE_FOREVER
from raxdb.server.base.errors import SYNTAX, CommandError
from raxdb.server.base.log import LOG
from raxdb.server.replication.master import ONLINE
from raxdb.server.table.args import to_int

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Replica
    from raxdb.server.net.client import Client
    from raxdb.server.replication.state import Replication

NO_FAILOVER, WAIT_FOR_SYNC, IN_PROGRESS = "no-failover", "waiting-for-sync", "failover-in-progress"


class Failover:
    def __init__(self, repl: Replication) -> None:
        self.repl = repl
        self.state = NO_FAILOVER
        self.end_ms = 0  # failover_end_time (0: no TIMEOUT)
        self.force = False
        self.host: str | None = None  # target_replica_host
        self.port = 0
        self.check_pending = False
        self.cluster_mf = False  # a cluster manual failover pauses writers (server/cluster/failover.py)

    @property
    def active(self) -> bool:
        return self.state != NO_FAILOVER

    # ---- FAILOVER ---------------------------------------------------------------------------------
    def command(self, c: Client, argv: list[bytes]) -> bytes:
        """failoverCommand."""
        if len(argv) == 2 and argv[1].lower() == b"abort":
            if self.state == NO_FAILOVER:
                raise CommandError("ERR No failover in progress.")
            self.abort("Failover manually aborted")
            return R.OK
        timeout = port = 0
        force = False
        host: str | None = None
        j, n = 1, len(argv)
        while j < n:
            opt = argv[j].lower()
            if opt == b"timeout" and j + 1 < n and timeout == 0:
                timeout = to_int(argv[j + 1])
                if timeout <= 0:
                    raise CommandError("ERR FAILOVER timeout must be greater than 0")
                j += 1
            elif opt == b"to" and j + 2 < n and host is None:
                port = to_int(argv[j + 2])
                host = argv[j + 1].decode(errors="surrogateescape")
                j += 2
            elif opt == b"force" and not force:
                force = True
            else:
                raise CommandError(SYNTAX)
            j += 1
        repl = self.repl
        if self.state != NO_FAILOVER:
            raise CommandError("ERR FAILOVER already in progress.")
        if repl.masterhost is not None:
            raise CommandError("ERR FAILOVER is not valid when server is a replica.")
        if not repl.replicas:
            raise CommandError("ERR FAILOVER requires connected replicas.")
        if force and (not timeout or host is None):
            raise CommandError("ERR FAILOVER with force option requires both a timeout and target HOST and IP.")
        if host is not None:
            r = self.find(host, port)
            if r is None:
                raise CommandError("ERR FAILOVER target HOST and PORT is not a replica.")
            if r.state != ONLINE:
                raise CommandError("ERR FAILOVER target replica is not online.")
            self.host, self.port = host, port
            LOG.notice(f"FAILOVER requested to {host}:{port}.")
        else:
            LOG.notice("FAILOVER requested to any replica.")
        srv = repl.srv
        if timeout:
            self.end_ms = srv.now_ms + timeout
        self.force = force
        self.state = WAIT_FOR_SYNC
        srv.pause(PAUSE_FOREVER, True, "failover")
        self.check_soon()
        return R.OK

    def find(self, host: str, port: int) -> Replica | None:
        """findReplica: by the address it announced (or its peer's) and its listening port."""
        low = host.lower()
        return next((r for r in self.repl.replicas if r.ip().lower() == low and r.port == port), None)

    # ---- the wait (updateFailoverStatus) ----------------------------------------------------------
    def check_soon(self) -> None:
        """Check at the end of this loop iteration (beforeSleep's updateFailoverStatus)."""
        if self.state == WAIT_FOR_SYNC and not self.check_pending:
            self.check_pending = True
            self.repl.srv.call_soon(self._deferred_check)

    def _deferred_check(self) -> None:
        self.check_pending = False
        self.update()

    def update(self) -> None:
        """updateFailoverStatus: time out, or fail over to a replica that has ACKed all of our
        stream."""
        if self.state != WAIT_FOR_SYNC:
            return
        repl = self.repl
        srv = repl.srv
        if self.end_ms and self.end_ms <= srv.update_clock():
            if self.force:
                LOG.notice(f"FAILOVER to {self.host}:{self.port} time out exceeded, failing over.")
                self._start()
            else:
                self.abort("Replica never caught up before timeout")
            return
        offset = repl.master_repl_offset
        if self.host is not None:
            r = self.find(self.host, self.port)
        else:
            r = next((x for x in repl.replicas if x.ack_off == offset), None)
            if r is not None:
                self.host, self.port = r.ip(), r.port
        if r is not None and r.ack_off == offset:
            LOG.notice(f"Failover target {self.host}:{self.port} is synced, failing over.")
            self._start()

    def _start(self) -> None:
        from raxdb.server.replication import replica

        assert self.host is not None
        self.state = IN_PROGRESS
        replica.set_master(self.repl.srv, self.host, self.port)

    # ---- the end ----------------------------------------------------------------------------------
    def psync_replied(self, accepted: bool) -> bool:
        """The target answered our PSYNC ... FAILOVER: +CONTINUE or +FULLRESYNC end the failover,
        anything else aborts it (syncWithMaster).  True when the link goes on."""
        if self.state != IN_PROGRESS:
            return True
        if accepted:
            self.clear()
            return True
        self.abort("Failover target rejected psync request")
        return False

    def clear(self) -> None:
        """clearFailoverState: the failover is over, writes go on (on a replica now: they are
        refused as on any read-only replica)."""
        self.end_ms = 0
        self.force = False
        self.host, self.port = None, 0
        self.state = NO_FAILOVER
        self.repl.srv.unpause("failover")

    def abort(self, why: str) -> None:
        """abortFailover: a failover that had begun makes this server a master again."""
        if self.state == NO_FAILOVER:
            return
        if self.host is not None:
            LOG.notice(f"FAILOVER to {self.host}:{self.port} aborted: {why}")
        else:
            LOG.notice(f"FAILOVER to any replica aborted: {why}")
        if self.state == IN_PROGRESS:
            from raxdb.server.replication import replica

            replica.unset_master(self.repl.srv)
        self.clear()

    # ---- what else it changes ---------------------------------------------------------------------
    def pings_held(self) -> bool:
        """replicationCron's PING is skipped while a failover with a TIMEOUT, or a cluster's manual
        failover, holds clients paused (it would move the offset the replicas must reach)."""
        return (bool(self.end_ms) or self.cluster_mf) and self.repl.srv.paused()
