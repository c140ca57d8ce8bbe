"""The master side's commands: SYNC, PSYNC, REPLCONF, WAIT and FAILOVER (replication.c's syncCommand,
replconfCommand, waitCommand, failoverCommand).  The logic is server/replication/master.py's and
server/replication/failover.py's; these parse and dispatch."""

from __future__ import annotations

from raxdb.server.base.errors import CommandError
from raxdb.server.net import blocking
from raxdb.server.table.args import to_int
from raxdb.server.table.registry import NO_REPLY, command


@command("sync")
@command("psync")
def sync(c, argv):
    """syncCommand serves both: the master side tells them apart by argv[0]."""
    return c.server.repl.master.sync(c, argv) or NO_REPLY


@command("replconf")
def replconf(c, argv):
    return c.server.repl.master.replconf(c, argv) or NO_REPLY


@command("failover")
def failover(c, argv):
    if c.server.cluster is not None:
        raise CommandError("ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead.")
    return c.server.repl.failover.command(c, argv)


@command("wait")
def wait(c, argv):
    """WAIT numreplicas timeout: the replicas that acknowledged the client's last write, once
    `numreplicas` did or the timeout passed; at once inside MULTI and scripts."""
    srv = c.server
    if srv.repl.masterhost is not None:
        raise CommandError("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 "
                           "if a replica is configured to be writable (which is not the default) writes to "
                           "replicas are just local and are not propagated.")
    numreplicas = to_int(argv[1])
    deadline = blocking.parse_timeout_ms(argv[2], srv.now_ms)
    return srv.repl.master.wait(c, numreplicas, deadline)
